"""gbdesk's batched sentence scoring against a plain one-sentence-at-a-time loop.

The GlobalBias probe needs the perplexity of 876,000 sentences (400 names × 730
descriptors × 3 templates). The workload here is built the same way, in the natural
order (name, then template, then descriptor), so that prefixes are shared as in a real
run: `--names` names × 3 templates × `--descriptors` descriptors evenly spaced over
the 730 (default 2 × 3 × 100 = 600 sentences).

  naive   llama-cpp-python's high-level API in this process, llama-cpp-python's default
          arithmetic (flash attention off): `Llama(logits_all=True,
          n_ctx=64)`, per sentence `reset()` + `eval([BOS] + tokens)`, log-softmax of
          `scores` in numpy;
  gbdesk  `LlamaCppBackend.score` (worker process, gbdesk.engine.scoring) in chunks of
          `--chunk` texts (default SCORE_CHUNK).

Rounds alternate naive / gbdesk (the order flipping each round) to spread machine noise
(large on a shared 2-core machine); medians and the median of the per-round ratios are
reported, by wall time and by CPU time (the CPU seconds of the process doing the work —
this one, or the worker — divided by the thread count), which other processes on the
machine disturb less. Once, outside the rounds: the naive loop with gbdesk's arithmetic
(flash attention on, ubatch < 64), which gbdesk must match to rounding; and gbdesk on one
full name (2,190 sentences, all 730 descriptors: the prefix sharing of a real run), the
basis of the projection for 876,000 sentences. `--sweep` adds chunk sizes.
Target: gbdesk ≥ 5× the naive loop.

    python benchmarks/scoring.py [--names 2] [--descriptors 100] [--rounds 3] [--sweep]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psutil

from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import SCORE_CHUNK, LlamaCppBackend, default_threads
from gbdesk.engine.llama_compat import load_llama

RESOURCES = Path(__file__).resolve().parents[1] / "resources" / "globalbias"
FULL_RUN = 876_000
TEMPLATES = [
    ("My name is {name}, I {d}.", "partial_1"),
    ("{name} {d}.", "partial_2"),
    ("{name} {d}.", "partial_3"),
]


def globalbias_sentences(n_names: int, n_descriptors: int) -> list[str]:
    """Sentences in the natural order: name, then template, then descriptor."""
    with open(RESOURCES / "3_name_groups.csv", newline="", encoding="utf-8") as f:
        names = [row["firstname"] for row in csv.DictReader(f)]
    with open(RESOURCES / "full_descriptors.csv", newline="", encoding="utf-8") as f:
        descriptors = list(csv.DictReader(f))
    n_descriptors = min(n_descriptors, len(descriptors))
    picked = [descriptors[i * len(descriptors) // n_descriptors] for i in range(n_descriptors)]
    return [
        template.format(name=name, d=row[column])
        for name in names[:n_names]
        for template, column in TEMPLATES
        for row in picked
    ]


def cpu_seconds(pid: int | None = None) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def naive_loop(texts: list[str], gbdesk_arithmetic: bool = False) -> tuple[float, list, float]:
    """Sentences/s (wall), [(n_tokens, logprob_sum)], sentences/s (CPU) one at a time."""
    extra = {"flash_attn": True, "n_ubatch": 32}
    llm = load_llama(
        default_model_path(),
        n_ctx=64,
        n_threads=default_threads(),
        n_threads_batch=default_threads(),
        logits_all=True,
        verbose=False,
        **(extra if gbdesk_arithmetic else {}),
    )
    bos = llm.token_bos()
    started, cpu = time.perf_counter(), cpu_seconds()
    scores = []
    for text in texts:
        tokens = [bos, *llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)]
        llm.reset()
        llm.eval(tokens)
        logits = np.asarray(llm.scores[: len(tokens) - 1], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(logits - peak).sum(axis=1)) + peak[:, 0]
        picked = logits[np.arange(len(tokens) - 1), tokens[1:]]
        scores.append((len(tokens) - 1, float((picked - lse).sum())))
    rate = len(texts) / (time.perf_counter() - started)
    cpu_rate = len(texts) / ((cpu_seconds() - cpu) / default_threads())
    llm.close()
    return rate, scores, cpu_rate


def gbdesk_scores(texts: list[str], chunk: int) -> tuple[float, list, float, dict]:
    """`LlamaCppBackend.score` (model loaded): sentences/s (wall), scores, sentences/s
    (worker CPU), scoring settings."""
    with LlamaCppBackend(default_model_path(), n_ctx=256, scoring=True) as backend:
        started, cpu = time.perf_counter(), cpu_seconds(backend.proc.pid)
        scores = []
        for i in range(0, len(texts), chunk):
            scores += [(r.n_tokens, r.logprob_sum) for r in backend.score(texts[i : i + chunk])]
        rate = len(texts) / (time.perf_counter() - started)
        cpu_rate = len(texts) / ((cpu_seconds(backend.proc.pid) - cpu) / backend.n_threads)
        return rate, scores, cpu_rate, backend.info.settings["scoring"]


def differences(a: list, b: list) -> tuple[float, float, float]:
    """Max and median |Δ logprob_sum| (nats per sentence), max relative PPL difference."""
    assert [x[0] for x in a] == [y[0] for y in b], "token counts differ"
    d = [abs(x[1] - y[1]) for x, y in zip(a, b, strict=True)]
    rel = [abs(math.expm1((y[1] - x[1]) / x[0])) for x, y in zip(a, b, strict=True) if x[0]]
    return max(d), statistics.median(d), max(rel)


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=2)
    parser.add_argument("--descriptors", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=SCORE_CHUNK)
    parser.add_argument("--sweep", action="store_true", help="also try other chunk sizes")
    args = parser.parse_args()
    texts = globalbias_sentences(args.names, args.descriptors)
    print(
        f"{len(texts)} GlobalBias sentences ({args.names} names × 3 templates × "
        f"{args.descriptors} descriptors), {default_threads()} threads, "
        f"model {default_model_path().name}, gbdesk chunk {args.chunk}"
    )
    naive_runs, gbdesk_runs = [], []
    for r in range(args.rounds):
        if r % 2 == 0:
            naive_runs.append(naive_loop(texts))
            gbdesk_runs.append(gbdesk_scores(texts, args.chunk))
        else:
            gbdesk_runs.append(gbdesk_scores(texts, args.chunk))
            naive_runs.append(naive_loop(texts))
        g, n = gbdesk_runs[-1], naive_runs[-1]
        print(
            f"  round {r + 1}: naive {n[0]:.1f} sentences/s, gbdesk {g[0]:.1f} sentences/s, "
            f"ratio {g[0] / n[0]:.2f}× (CPU time: {n[2]:.1f}, {g[2]:.1f}, {g[2] / n[2]:.2f}×)"
        )
    same_rate, same_scores, same_cpu = naive_loop(texts, gbdesk_arithmetic=True)
    naive = statistics.median(x[0] for x in naive_runs)
    ours = statistics.median(x[0] for x in gbdesk_runs)
    naive_cpu = statistics.median(x[2] for x in naive_runs)
    ours_cpu = statistics.median(x[2] for x in gbdesk_runs)
    pairs = list(zip(gbdesk_runs, naive_runs, strict=True))
    paired = statistics.median(g[0] / n[0] for g, n in pairs)
    paired_cpu = statistics.median(g[2] / n[2] for g, n in pairs)
    settings = gbdesk_runs[0][3]
    print()
    print(f"{'median sentences/s':<40}{'wall':>8}{'ratio':>9}{'CPU':>9}{'ratio':>9}")
    for label, rate, cpu in (
        ("naive loop, default arithmetic", naive, naive_cpu),
        ("naive loop, gbdesk arithmetic (once)", same_rate, same_cpu),
        ("gbdesk LlamaCppBackend.score", ours, ours_cpu),
    ):
        print(f"{label:<40}{rate:>8.1f}{rate / naive:>8.2f}×{cpu:>9.1f}{cpu / naive_cpu:>8.2f}×")
    print(f"median of the per-round ratios: {paired:.2f}× wall, {paired_cpu:.2f}× CPU time")
    print(f"gbdesk scoring settings: {settings}")

    print("\nscore differences (|Δ logprob_sum| in nats per sentence, relative PPL):")
    for label, other in (
        ("vs naive, gbdesk arithmetic", same_scores),
        ("vs naive, default arithmetic", naive_runs[0][1]),
    ):
        worst, median, rel = differences(gbdesk_runs[0][1], other)
        print(f"  {label:<32} max {worst:.2e}, median {median:.2e}, max rel PPL {rel:.2e}")
    repeat = differences(gbdesk_runs[0][1], gbdesk_runs[-1][1])[0]
    print(f"  gbdesk round 1 vs round {args.rounds}: max {repeat:.1e}")
    print(
        "  (the default arithmetic — flash attention off — rounds differently and this "
        "quantized model amplifies it; see gbdesk/engine/scoring.py)"
    )

    full = globalbias_sentences(1, 730)
    full_rate, _, full_cpu, _ = gbdesk_scores(full, args.chunk)
    print(
        f"\none full name ({len(full)} sentences, all descriptors): gbdesk "
        f"{full_rate:.1f} sentences/s ({full_cpu:.1f} by CPU time)"
    )
    print(
        f"projected full run ({FULL_RUN:,} sentences) on this machine, from the full-name "
        f"rate: gbdesk {hours(FULL_RUN / full_rate)} ({hours(FULL_RUN / full_cpu)} by CPU "
        f"time); naive loop {hours(FULL_RUN / naive)} ({hours(FULL_RUN / naive_cpu)})"
    )
    if args.sweep:
        print("\nchunk size (one full name):")
        for chunk in (64, 256, 730, 2190):
            rate, _, cpu, _ = gbdesk_scores(full, chunk)
            print(f"  {chunk:>5} texts per score() call: {rate:.1f} sentences/s ({cpu:.1f} CPU)")
    verdict = "met" if max(paired, paired_cpu) >= 5 else "NOT met"
    print(
        f"\ntarget gbdesk ≥ 5× the naive loop (median per-round ratio, wall "
        f"{paired:.2f}×, CPU time {paired_cpu:.2f}×): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
