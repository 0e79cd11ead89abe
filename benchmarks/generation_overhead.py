"""gbdesk's generation overhead against a plain llama-cpp-python loop.

The same prompts (the first N inventories items), per-attempt seeds, sampling
settings and max_tokens go through

  plain   `Llama.create_chat_completion` in this process, one call after another;
  gbdesk  `gbdesk run` (the CLI's main(), in this process): model in a worker
          process, every attempt labelled and committed to SQLite.

Rounds alternate plain / gbdesk (the order flipping each round) to spread machine
noise, which is large on a shared 2-core machine (±6 % between identical plain runs);
medians and the median of the per-round ratios are reported.
Two figures per side:
  steady  generated tokens / time spent generating (plain: the loop; gbdesk: the
          run loop from the first request to the last commit, model loaded);
  e2e     generated tokens / wall time including model load (and for gbdesk the
          worker start and the database).
Target: gbdesk ≥ 0.95× the plain loop.

    python benchmarks/generation_overhead.py [--prompts 16] [--max-tokens 128] [--rounds 2]

--batched N compares instead the plain loop with `gbdesk run` generating N attempts
at a time (`LlamaCppBackend(batch_size=N)`, one llama.cpp sequence per attempt):
aggregate tokens/s of both (gbdesk steady = tokens / time inside `generate_batch`),
their ratio (target gbdesk ≥ 1.5×), and how many batched texts are identical to
single-sequence decoding of the same request (a batch of one), to gbdesk's sequential
`generate` and to the plain loop.

    python benchmarks/generation_overhead.py --batched 8 [--prompts 16] [--rounds 3]

--continuous [N] compares the plain loop with gbdesk's continuous batching
(`LlamaCppBackend.generate_stream`, N slots; without N the automatic count,
`LlamaCppBackend.stream_slots`): up to N sequences live in the worker, a finished one
replaced at once by the next prompt, each result committed to SQLite as it arrives.
gbdesk steady = generated tokens / wall time of the `generate_stream` call (model
loaded), e2e adds the worker start and model load. Target ≥ 1.6× the plain loop. The
texts are checked against the same requests decoded alone in a stream (batch
independence) and the answer lengths are printed (they vary: temperature 1.0, EOS).

    python benchmarks/generation_overhead.py --continuous [--prompts 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gbdesk.contract import get_probe
from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, GenerationRequest, attempt_seed
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import DEFAULT_N_CTX, LlamaCppBackend, default_threads
from gbdesk.engine.llama_compat import load_llama
from gbdesk.store import Store
from gbdesk.workflows.runs import Progress, execute_run, plan_run, resolve_model

SEED = 0


def workload(n: int) -> list[tuple[str, str, int]]:
    probe = get_probe("inventories")
    items = probe.items(probe.resolve_params(limit=n))
    return [(i.key, i.prompt, attempt_seed(SEED, i.key, 0)) for i in items]


THREADS = [default_threads()]  # --threads


def plain_loop(prompts, max_tokens: int) -> tuple[float, float, int, list[str]]:
    started = time.perf_counter()
    llm = load_llama(
        default_model_path(),
        n_ctx=DEFAULT_N_CTX,
        n_threads=THREADS[0],
        n_threads_batch=THREADS[0],
        chat_format="chat_template.default",
        verbose=False,
    )
    loop_start = time.perf_counter()
    tokens, texts = 0, []
    for _, prompt, seed in prompts:
        out = llm.create_chat_completion(
            [{"role": "user", "content": prompt}],
            temperature=1.0,
            top_p=1.0,
            top_k=DEFAULT_TOP_K,
            min_p=DEFAULT_MIN_P,
            max_tokens=max_tokens,
            seed=seed,
        )
        tokens += out["usage"]["completion_tokens"]
        texts.append(out["choices"][0]["message"]["content"])
    end = time.perf_counter()
    del llm
    return tokens / (end - loop_start), tokens / (end - started), tokens, texts


def gbdesk_run(
    prompts, max_tokens: int, db: Path, batch_size: int = 1
) -> tuple[float, float, int, list[str]]:
    started = time.perf_counter()
    marks: dict[str, float] = {}
    final: list[Progress] = []

    def factory(model, generation):
        return LlamaCppBackend(
            model["path"],
            prompt_mode=generation.get("prompt_mode", "auto"),
            batch_size=batch_size,
            n_threads=THREADS[0],
        )

    def on_progress(p: Progress) -> None:
        final[:] = [p]
        if p.status == "running" and "first" not in marks:
            marks["first"] = time.perf_counter()
        marks["last"] = time.perf_counter()

    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(
            store,
            "inventories",
            model,
            attempts=1,
            limit=len(prompts),
            max_tokens=max_tokens,
            seed=SEED,
        )
        execute_run(store, run_id, on_progress=on_progress, backend_factory=factory)
        end = time.perf_counter()
        rows = store.attempts(run_id)
    tokens = sum(r["tokens_out"] for r in rows)
    # steady: from the moment the model was loaded (first request) to the last commit;
    # the first attempt's own generation time is added back.
    first_latency = rows[0]["latency_s"] if rows else 0.0
    steady = tokens / (marks["last"] - marks["first"] + first_latency)
    if batch_size > 1:  # results arrive a chunk at a time: the run's own generation rate
        steady = final[0].tokens_per_s
    return steady, tokens / (end - started), tokens, [r["response"] for r in rows]


def single_sequence_texts(prompts, max_tokens: int) -> tuple[list[str], list[str]]:
    """Each request alone: a batch of one, and gbdesk's sequential `generate`."""
    with LlamaCppBackend(default_model_path(), n_threads=THREADS[0]) as backend:
        requests = [
            GenerationRequest(
                messages=[{"role": "user", "content": prompt}],
                seed=seed,
                temperature=1.0,
                top_p=1.0,
                top_k=DEFAULT_TOP_K,
                min_p=DEFAULT_MIN_P,
                max_tokens=max_tokens,
            )
            for _, prompt, seed in prompts
        ]
        alone = [backend.generate_batch([r])[0].text for r in requests]
        sequential = [backend.generate(r).text for r in requests]
    return alone, sequential


def batched_main(prompts, args) -> int:
    n = args.batched
    plain_runs, batched_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            db = Path(tmp) / f"b{r}.sqlite"
            if r % 2 == 0:
                plain_runs.append(plain_loop(prompts, args.max_tokens))
                batched_runs.append(gbdesk_run(prompts, args.max_tokens, db, batch_size=n))
            else:
                batched_runs.append(gbdesk_run(prompts, args.max_tokens, db, batch_size=n))
                plain_runs.append(plain_loop(prompts, args.max_tokens))
            print(
                f"  round {r + 1}: plain {plain_runs[-1][0]:.1f} tok/s, gbdesk batched ×{n} "
                f"{batched_runs[-1][0]:.1f} tok/s, ratio "
                f"{batched_runs[-1][0] / plain_runs[-1][0]:.2f}×"
            )
    p_steady = statistics.median(x[0] for x in plain_runs)
    g_steady = statistics.median(x[0] for x in batched_runs)
    p_e2e = statistics.median(x[1] for x in plain_runs)
    g_e2e = statistics.median(x[1] for x in batched_runs)
    paired = statistics.median(g[0] / p[0] for g, p in zip(batched_runs, plain_runs, strict=True))
    print()
    print(f"{'median':<10}{'plain llama-cpp-python':>24}{f'gbdesk ×{n}':>14}{'ratio':>9}")
    print(f"{'steady':<10}{p_steady:>20.1f} t/s{g_steady:>10.1f} t/s{g_steady / p_steady:>8.2f}×")
    print(f"{'e2e':<10}{p_e2e:>20.1f} t/s{g_e2e:>10.1f} t/s{g_e2e / p_e2e:>8.2f}×")
    print(f"median of the per-round steady ratios: {paired:.2f}×")
    texts = batched_runs[0][3]
    rounds_same = all(b[3] == texts for b in batched_runs)
    alone, sequential = single_sequence_texts(prompts, args.max_tokens)
    k = len(prompts)
    print(
        f"\nidentical batched texts: {sum(a == b for a, b in zip(texts, alone, strict=True))}/{k} "
        f"to single-sequence decoding (a batch of one); "
        f"{sum(a == b for a, b in zip(texts, sequential, strict=True))}/{k} to gbdesk's "
        f"sequential generate; "
        f"{sum(a == b for a, b in zip(texts, plain_runs[0][3], strict=True))}/{k} to the "
        f"plain loop; same in every round: {rounds_same}"
    )
    verdict = "met" if paired >= 1.5 else "NOT met"
    print(f"target gbdesk batched ≥ 1.5× (median per-round steady ratio): {verdict}")
    return 0


def requests_of(prompts, max_tokens: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            messages=[{"role": "user", "content": prompt}],
            seed=seed,
            temperature=1.0,
            top_p=1.0,
            top_k=DEFAULT_TOP_K,
            min_p=DEFAULT_MIN_P,
            max_tokens=max_tokens,
        )
        for _, prompt, seed in prompts
    ]


def continuous_run(
    prompts, max_tokens: int, db: Path, slots: int | None
) -> tuple[float, float, int, list[str], list[int], int]:
    started = time.perf_counter()
    requests = requests_of(prompts, max_tokens)
    texts: dict[int, str] = {}
    lengths: dict[int, int] = {}
    con = sqlite3.connect(db)
    con.execute("create table attempts (i integer primary key, text text, tokens integer)")

    def on_result(i, r) -> None:  # stored at once, as a run does
        con.execute("insert into attempts values (?, ?, ?)", (i, r.text, r.tokens_out))
        con.commit()
        texts[i] = r.text
        lengths[i] = r.tokens_out

    with LlamaCppBackend(default_model_path(), n_threads=THREADS[0]) as backend:
        n = slots or backend.stream_slots(requests)[0]
        loop_start = time.perf_counter()
        backend.generate_stream(requests, on_result, slots=n)
        end = time.perf_counter()
    con.close()
    tokens = sum(lengths.values())
    order = range(len(prompts))
    return (
        tokens / (end - loop_start),
        tokens / (end - started),
        tokens,
        [texts[i] for i in order],
        [lengths[i] for i in order],
        n,
    )


def continuous_main(prompts, args) -> int:
    plain_runs, cont_runs = [], []
    slots = args.continuous or None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            db = Path(tmp) / f"c{r}.sqlite"
            if r % 2 == 0:
                plain_runs.append(plain_loop(prompts, args.max_tokens))
                cont_runs.append(continuous_run(prompts, args.max_tokens, db, slots))
            else:
                cont_runs.append(continuous_run(prompts, args.max_tokens, db, slots))
                plain_runs.append(plain_loop(prompts, args.max_tokens))
            print(
                f"  round {r + 1}: plain {plain_runs[-1][0]:.1f} tok/s, gbdesk continuous "
                f"×{cont_runs[-1][5]} {cont_runs[-1][0]:.1f} tok/s, ratio "
                f"{cont_runs[-1][0] / plain_runs[-1][0]:.2f}×",
                flush=True,
            )
    n = cont_runs[0][5]
    p_steady = statistics.median(x[0] for x in plain_runs)
    g_steady = statistics.median(x[0] for x in cont_runs)
    p_e2e = statistics.median(x[1] for x in plain_runs)
    g_e2e = statistics.median(x[1] for x in cont_runs)
    paired = statistics.median(g[0] / p[0] for g, p in zip(cont_runs, plain_runs, strict=True))
    label = f"continuous ×{n}"
    print()
    print(f"{'median':<10}{'plain llama-cpp-python':>24}{label:>18}{'ratio':>9}")
    print(f"{'steady':<10}{p_steady:>20.1f} t/s{g_steady:>14.1f} t/s{g_steady / p_steady:>8.2f}×")
    print(f"{'e2e':<10}{p_e2e:>20.1f} t/s{g_e2e:>14.1f} t/s{g_e2e / p_e2e:>8.2f}×")
    print(f"median of the per-round steady ratios: {paired:.2f}×")
    lengths = cont_runs[0][4]
    print(
        f"answer lengths (tokens): min {min(lengths)}, median {statistics.median(lengths):.0f}, "
        f"max {max(lengths)}; {sum(x < args.max_tokens for x in lengths)}/{len(lengths)} "
        "stopped before max_tokens"
    )
    texts = cont_runs[0][3]
    rounds_same = all(c[3] == texts for c in cont_runs)
    alone: dict[int, str] = {}
    with LlamaCppBackend(default_model_path(), n_threads=THREADS[0]) as backend:
        for i, req in enumerate(requests_of(prompts, args.max_tokens)):
            backend.generate_stream([req], lambda _, r, i=i: alone.__setitem__(i, r.text), slots=1)
    k = len(prompts)
    same_alone = sum(texts[i] == alone[i] for i in range(k))
    print(
        f"identical texts: {same_alone}/{k} to each request alone in a stream; same in every "
        f"round: {rounds_same}"
    )
    verdict = "met" if paired >= 1.6 else "NOT met"
    print(f"target gbdesk continuous ≥ 1.6× (median per-round steady ratio): {verdict}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batched", type=int, default=0, metavar="N")
    parser.add_argument(
        "--continuous", type=int, nargs="?", const=0, default=None, metavar="N",
        help="continuous batching with N slots (no N: the automatic count)",
    )  # fmt: skip
    parser.add_argument("--threads", type=int, default=None, help="default: one per core")
    args = parser.parse_args()
    THREADS[0] = args.threads or default_threads()
    prompts = workload(args.prompts)
    print(
        f"{len(prompts)} prompts × max_tokens {args.max_tokens}, temperature 1.0, top_p 1.0, "
        f"{THREADS[0]} threads, n_ctx {DEFAULT_N_CTX}, model {default_model_path().name}"
    )
    if args.continuous is not None:
        return continuous_main(prompts, args)
    if args.batched > 1:
        return batched_main(prompts, args)
    plain_runs, gbdesk_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            db = Path(tmp) / f"b{r}.sqlite"
            if r % 2 == 0:
                plain_runs.append(plain_loop(prompts, args.max_tokens))
                gbdesk_runs.append(gbdesk_run(prompts, args.max_tokens, db))
            else:
                gbdesk_runs.append(gbdesk_run(prompts, args.max_tokens, db))
                plain_runs.append(plain_loop(prompts, args.max_tokens))
            ratio = gbdesk_runs[-1][0] / plain_runs[-1][0]
            print(
                f"  round {r + 1}: plain {plain_runs[-1][0]:.1f} tok/s, "
                f"gbdesk {gbdesk_runs[-1][0]:.1f} tok/s (steady), ratio {ratio:.3f}×"
            )
    p_steady = statistics.median(x[0] for x in plain_runs)
    g_steady = statistics.median(x[0] for x in gbdesk_runs)
    p_e2e = statistics.median(x[1] for x in plain_runs)
    g_e2e = statistics.median(x[1] for x in gbdesk_runs)
    paired = statistics.median(g[0] / p[0] for g, p in zip(gbdesk_runs, plain_runs, strict=True))
    print()
    print(f"{'median':<10}{'plain llama-cpp-python':>24}{'gbdesk run':>14}{'ratio':>9}")
    print(f"{'steady':<10}{p_steady:>20.1f} t/s{g_steady:>10.1f} t/s{g_steady / p_steady:>8.3f}×")
    print(f"{'e2e':<10}{p_e2e:>20.1f} t/s{g_e2e:>10.1f} t/s{g_e2e / p_e2e:>8.3f}×")
    print(f"median of the per-round steady ratios: {paired:.3f}×")
    same = sum(a == b for a, b in zip(plain_runs[0][3], gbdesk_runs[0][3], strict=True))
    print(
        f"\nidentical texts: {same}/{len(prompts)}. llama-cpp-python's prefix reuse can make a "
        "plain-loop text depend on the call before it; gbdesk evaluates prompts in fixed "
        "chunks, so its text depends only on prompt, seed and settings."
    )
    verdict = "met" if paired >= 0.95 else "NOT met"
    print(f"target gbdesk ≥ 0.95× (median per-round steady ratio): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
