"""Continuous batching throughput against the number of slots (live sequences).

The same prompts (the first N inventories items, per-attempt seeds, temperature 1.0,
max_tokens) go through `ContinuousBatcher` in this process with each slot count; rounds
visit the slot counts in alternating order (forward, backward) to spread machine noise.
Printed: generated tokens per second of decoding (median over rounds) and its ratio to
one slot. `gbdesk.engine.slots.CPU_SLOT_CAP` is where the gain levels off.

    python benchmarks/slots.py [--prompts 32] [--max-tokens 96] [--rounds 2] \
        [--slots 1,2,4,8,12,16,24,32] [--threads N] [--clock wall|cpu]

On a machine shared with other work, wall-clock rates follow the neighbours' load more
than the slot count, and ggml's spinning thread barriers make contention worse for
small batches. ``--threads 1 --clock cpu`` measures instead generated tokens per second
of this process's CPU time with one thread: how the compute per token falls as slots
are added, robust to neighbours (the crossover is per core, so it carries over to more
threads to first order).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from gbdesk.probes import get_probe

from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, GenerationRequest, attempt_seed
from gbdesk.engine.continuous import ContinuousBatcher
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import default_threads
from gbdesk.engine.llama_compat import load_llama
from gbdesk.engine.llama_worker import LlamaGenerator


def requests(n: int, max_tokens: int) -> list[dict]:
    probe = get_probe("inventories")
    items = probe.items(probe.resolve_params(limit=n))
    return [
        GenerationRequest(
            messages=[{"role": "user", "content": i.prompt}],
            seed=attempt_seed(0, i.key, 0),
            temperature=1.0,
            top_p=1.0,
            top_k=DEFAULT_TOP_K,
            min_p=DEFAULT_MIN_P,
            max_tokens=max_tokens,
        ).to_json()
        for i in items
    ]


def run(
    generator, reqs: list[dict], slots: int, threads: int, clock=time.perf_counter
) -> tuple[float, int, list[str]]:
    batcher = ContinuousBatcher(generator, slots=slots, n_threads=threads)
    try:
        for i, r in enumerate(reqs):
            batcher.add(i, r)
        texts: dict[int, str] = {}
        tokens = 0
        started = clock()
        while batcher.has_work:
            for kind, key, payload in batcher.step():
                if kind == "item":
                    texts[key] = payload["text"]
                    tokens += payload["tokens_out"]
        elapsed = clock() - started
    finally:
        batcher.close()
    return tokens / elapsed, tokens, [texts[i] for i in range(len(reqs))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--slots", default="1,2,4,8,12,16,24,32")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    counts = [int(x) for x in args.slots.split(",")]
    threads = args.threads or default_threads()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    llm = load_llama(default_model_path(), n_ctx=4096, n_threads=threads, verbose=False)
    generator = LlamaGenerator(llm, "auto")
    reqs = requests(args.prompts, args.max_tokens)
    print(
        f"{len(reqs)} prompts × max_tokens {args.max_tokens}, {threads} threads, "
        f"model {default_model_path().name}, {args.clock} clock"
    )
    rates: dict[int, list[float]] = {c: [] for c in counts}
    reference: list[str] | None = None
    same = True
    for r in range(args.rounds):
        for c in counts if r % 2 == 0 else counts[::-1]:
            rate, tokens, texts = run(generator, reqs, c, threads, clock)
            rates[c].append(rate)
            reference = reference or texts
            same = same and texts == reference
            print(f"  round {r + 1}: {c:>3} slots {rate:7.1f} tok/s ({tokens} tokens)", flush=True)
    base = statistics.median(rates[counts[0]])
    print(f"\n{'slots':>6}{'tok/s':>10}{'× ' + str(counts[0]) + ' slot':>12}")
    for c in counts:
        m = statistics.median(rates[c])
        print(f"{c:>6}{m:>10.1f}{m / base:>11.2f}×")
    print(f"\nsame texts for every slot count and round: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
