"""GenderBench 1.1 harness on this laptop: gbdesk's default path against a plain
llama-cpp-python loop, per probe, and the projected time of the whole harness.

For each probe (default: the eleven added for the whole harness), a seeded subset of its
``genderbench-1.1`` items that keeps its groups (`Probe.balanced_subset`, ``--items``
items) with every prompt of each item, one attempt per prompt, goes through

  plain   `Llama.create_chat_completion` in this process, one prompt after another, with
          the same seeds, sampling settings and max_tokens (300, temperature 1.0 as
          1.1.0's generators);
  gbdesk  `gbdesk run`'s path (`plan_run` + `execute_run` with the default backend: the
          model in a worker process, continuous batching with the automatic sequence
          count, prompt prefixes shared, every answer labelled and committed as it
          arrives).

Both sides generate the same number of answers; the texts differ (gbdesk's batched
arithmetic, see `gbdesk.engine.continuous`), so each side's answer lengths are printed.
Figures: generations per second of generating (model loaded; plain: the loop, gbdesk:
from the run's first request to its last commit) and their ratio — the goal is ≥ 2× on
the short-answer probes — and, from gbdesk's seconds per generation on each probe, the
projected time of the whole harness at 1.1.0's sizes (items × prompts × repetitions of
`DefaultHarness`, `sample_k` included).

    python benchmarks/harness.py [--items 6] [--probes bbq,gest] [--max-tokens 300]
                                 [--rounds 1] [--all]

`--all` adds the three probes gbdesk had before (inventories, jobs_lum, gest_creative).
Nothing that changes what is generated is used (same max_tokens, no early stop).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, attempt_seed
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import DEFAULT_N_CTX, default_threads
from gbdesk.engine.llama_compat import load_llama
from gbdesk.store import Store
from gbdesk.studies import get_harness, get_probe
from gbdesk.studies.base import prompt_index
from gbdesk.support.format import duration
from gbdesk.workflows.runs import (
    Progress,
    execute_run,
    llama_backend_factory,
    plan_run,
    resolve_model,
)

HARNESS = "genderbench-1.1"
OLD = ("inventories", "jobs_lum", "gest_creative")
#: probes whose answers are a word or a letter (yes/no, an option, a number, a name)
SHORT_ANSWER = {
    "bbq",
    "direct",
    "discrimination_tamkin",
    "diversity_med_qa",
    "dreaddit",
    "gest",
    "hiring_bloomberg",
    "isear",
    "relationship_levy",
}
SEED = 0


def workload(probe_name: str, n_items: int) -> tuple[dict, list[tuple[str, str, int, int]]]:
    """The run parameters and its (item, prompt, attempt, seed) list, one attempt per
    prompt, in the run loop's attempt numbering."""
    probe = get_probe(probe_name)
    params = probe.resolve_params(template=HARNESS, limit=n_items)
    out = []
    for item in probe.items(params):
        texts = [p.text for p in item.prompts] or [item.prompt]
        for a, text in enumerate(texts):
            assert prompt_index(a, 1) == a
            out.append((item.key, text, a, attempt_seed(SEED, item.key, a)))
    return params, out


def plain_loop(prompts, max_tokens: int) -> tuple[float, int, int]:
    """(seconds generating, generations, tokens) of the plain loop."""
    llm = load_llama(
        default_model_path(),
        n_ctx=DEFAULT_N_CTX,
        n_threads=default_threads(),
        n_threads_batch=default_threads(),
        chat_format="chat_template.default",
        verbose=False,
    )
    started = time.perf_counter()
    tokens = 0
    for _, prompt, _, seed in prompts:
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
    seconds = time.perf_counter() - started
    del llm
    return seconds, len(prompts), tokens


def gbdesk_path(probe_name: str, n_items: int, max_tokens: int, db: Path) -> tuple[float, int, int]:
    """(seconds generating, generations, tokens) of gbdesk's default path."""
    marks: dict[str, float] = {}

    def factory(model, generation):
        backend = llama_backend_factory(model, generation)
        backend.info  # noqa: B018 — waits for the worker to load the model
        marks["loaded"] = time.perf_counter()
        return backend

    def on_progress(p: Progress) -> None:
        marks["last"] = time.perf_counter()

    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(
            store,
            probe_name,
            model,
            attempts=1,
            seed=SEED,
            max_tokens=max_tokens,
            template=HARNESS,
            limit=n_items,
        )
        execute_run(store, run_id, on_progress=on_progress, backend_factory=factory)
        rows = store.attempts(run_id)
    # from the model loaded (worker started, weights read) to the last answer committed
    seconds = marks["last"] - marks["loaded"]
    return seconds, len(rows), sum(r["tokens_out"] or 0 for r in rows)


def harness_generations(probe_name: str) -> int:
    """Generations of the probe at 1.1.0's DefaultHarness sizes."""
    probe = get_probe(probe_name)
    items = probe.items(probe.resolve_params(template=HARNESS))
    return probe.work_units(items, probe.default_attempts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=6, help="items per probe (default 6)")
    parser.add_argument("--probes", help="comma-separated probe ids (default: the new eleven)")
    parser.add_argument("--all", action="store_true", help="the whole harness (fourteen)")
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    harness = get_harness(HARNESS).probes
    names = (
        args.probes.split(",") if args.probes else [p for p in harness if args.all or p not in OLD]
    )
    print(
        f"{'probe':<22}{'gens':>5}{'plain tok':>10}{'gbdesk tok':>11}"
        f"{'plain gen/s':>12}{'gbdesk gen/s':>13}{'ratio':>7}"
    )
    rates: dict[str, float] = {}
    ratios_short, ratios_long = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            _, prompts = workload(name, args.items)
            plain, ours = [], []
            for r in range(args.rounds):
                db = Path(tmp) / f"{name}-{r}.sqlite"
                if r % 2 == 0:
                    plain.append(plain_loop(prompts, args.max_tokens))
                    ours.append(gbdesk_path(name, args.items, args.max_tokens, db))
                else:
                    ours.append(gbdesk_path(name, args.items, args.max_tokens, db))
                    plain.append(plain_loop(prompts, args.max_tokens))
            p_rate = statistics.median(g / s for s, g, _ in plain)
            g_rate = statistics.median(g / s for s, g, _ in ours)
            ratio = g_rate / p_rate
            rates[name] = g_rate
            (ratios_short if name in SHORT_ANSWER else ratios_long).append(ratio)
            p_tok = statistics.median(t / g for _, g, t in plain)
            g_tok = statistics.median(t / g for _, g, t in ours)
            print(
                f"{name:<22}{len(prompts):>5}{p_tok:>10.0f}{g_tok:>11.0f}"
                f"{p_rate:>12.2f}{g_rate:>13.2f}{ratio:>6.2f}×",
                flush=True,
            )
    if ratios_short:
        print(
            f"\nshort-answer probes: median ratio {statistics.median(ratios_short):.2f}× "
            f"(goal ≥ 2×), lowest {min(ratios_short):.2f}×"
        )
    if ratios_long:
        print(f"long-answer probes: median ratio {statistics.median(ratios_long):.2f}×")
    print("\nprojected time of the whole harness at 1.1.0's sizes on this machine:")
    total = 0.0
    fallback = statistics.median(rates.values()) if rates else None
    for name in harness:
        n = harness_generations(name)
        rate = rates.get(name, fallback)
        seconds = n / rate if rate else float("nan")
        total += seconds
        basis = "" if name in rates else " (rate of the median probe: not measured here)"
        print(f"  {name:<22}{n:>8,} generations  {duration(seconds):>14}{basis}")
    print(f"  {'total':<22}{sum(harness_generations(n) for n in harness):>8,} generations  "
          f"{duration(total):>14}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
