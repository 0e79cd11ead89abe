"""Intersectional-style chains: batched (one continuous stream) against sequential.

An attempt of the intersectional probe is a chain: one role text (the probe's role
prompt for a group, the run's temperature and max_tokens), then 16 answers "in
character" — each prompt is the role text followed by one category question, decoded
under an enum JSON schema, at most 24 tokens, temperature 0 — exactly the requests
`IntersectionalProbe.run_attempt` makes. Both sides run the same attempts (first N
groups, per-attempt seeds) on one model worker:

  sequential  `probe.run_attempt` with `backend.generate`, one request at a time (the
              run loop with --batch 1; prompts reuse cached 32-token chunks of the
              previous one);
  batched     `probe.attempt_chain` through `gbdesk.engine.chains.run_chains` (the
              default run loop): the attempts as generator chains in one
              continuous-batching stream; the 16 answer prompts of a role share its text
              (decoded once, copied), several chains in flight.

Rounds alternate the order (sequential first, then batched first, …); reported: wall
seconds per side, the median of the per-round ratios (target batched ≥ 2×), the stream's
sharing counters, and how many answers parsed as an option on each side (texts differ:
the stream computes with other arithmetic settings than `generate`).

    python benchmarks/chain.py [--attempts 6] [--role-tokens 160] [--rounds 3] [--slots N]

--copy-cost measures instead what a cross-stream KV copy costs in prompt tokens (the
basis of `gbdesk.engine.continuous.DEFAULT_MIN_SHARED`): a 2-token decode after copying
a 144-token stream against one without, and a 48-token prompt chunk, in this process.

    python benchmarks/chain.py --copy-cost
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from gbdesk.contract import get_probe
from gbdesk.contract.running import AttemptEngine
from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, attempt_seed
from gbdesk.engine.chains import run_chains
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import LlamaCppBackend


def generation(role_tokens: int) -> dict:
    return {
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": DEFAULT_TOP_K,
        "min_p": DEFAULT_MIN_P,
        "max_tokens": role_tokens,
        "seed": 0,
    }


def attempts(n: int) -> list[tuple[dict, int, str]]:
    probe = get_probe("intersectional_sdeg")
    items = probe.items(probe.resolve_params(limit=n))
    return [(i.metadata, attempt_seed(0, i.key, 0), i.prompt) for i in items]


def parsed_of(label: dict) -> int:
    return sum(a["option"] is not None for a in label["data"]["answers"].values())


def sequential(backend, gen: dict, work) -> tuple[float, int, int]:
    """`IntersectionalProbe.run_attempt` (the one-at-a-time run loop's path)."""
    probe = get_probe("intersectional_sdeg")
    engine = AttemptEngine(backend, gen)
    started = time.perf_counter()
    parsed = tokens = 0
    for metadata, seed, prompt in work:
        result, label = probe.run_attempt(engine.generate, metadata, seed, gen, prompt=prompt)
        parsed += parsed_of(label)
        tokens += result.tokens_out
    return time.perf_counter() - started, parsed, tokens


def batched(backend, gen: dict, work, slots: int | None) -> tuple[float, int, int, dict]:
    """`IntersectionalProbe.attempt_chain` through `run_chains` (the batched run loop's)."""
    probe = get_probe("intersectional_sdeg")
    engine = AttemptEngine(backend, gen)
    done: dict[int, tuple] = {}
    started = time.perf_counter()
    chains = (probe.attempt_chain(engine.request, m, s, gen, prompt=p) for m, s, p in work)
    outcome = run_chains(backend, chains, done.__setitem__, slots=slots)
    elapsed = time.perf_counter() - started
    parsed = sum(parsed_of(label) for _, label in done.values())
    tokens = sum(result.tokens_out for result, _ in done.values())
    return elapsed, parsed, tokens, outcome.stats


def copy_cost(reps: int = 15) -> int:
    import llama_cpp

    from gbdesk.engine.continuous import ContinuousBatcher
    from gbdesk.engine.llama_compat import load_llama
    from gbdesk.engine.llama_worker import LlamaGenerator

    llm = load_llama(default_model_path(), n_ctx=4096, n_threads=2, verbose=False)
    generator = LlamaGenerator(llm, "auto")
    for n_ctx_seq in (512, 1024, 2048):
        b = ContinuousBatcher(generator, slots=4, n_threads=2)
        b._open_context(n_ctx_seq)
        mem = b._memory

        def decode(seq: int, pos0: int, n: int, b=b) -> float:
            for r in range(n):
                b._b_token[r] = 1000 + r
                b._b_pos[r] = pos0 + r
                b._b_seq[r][0] = seq
                b._b_logits[r] = 1 if r == n - 1 else 0
            return b._decode(n)

        for p in range(0, 144, 48):
            decode(0, p, 48)
        copy, plain, chunk = [], [], []
        for _ in range(reps):
            llama_cpp.llama_memory_seq_cp(mem, 0, 1, -1, -1)
            llama_cpp.llama_memory_seq_rm(mem, 1, 144, -1)
            copy.append(decode(1, 144, 2))
            llama_cpp.llama_memory_seq_rm(mem, 1, -1, -1)
            decode(2, 0, 2)
            plain.append(decode(2, 2, 2))
            llama_cpp.llama_memory_seq_rm(mem, 2, -1, -1)
            chunk.append(decode(3, 0, 48))
            llama_cpp.llama_memory_seq_rm(mem, 3, -1, -1)
        c, p, k = (statistics.median(x) for x in (copy, plain, chunk))
        print(
            f"{b.n_ctx_seq} cells per stream: copy {1e3 * (c - p):.1f} ms, a prompt token "
            f"{1e3 * k / 48:.2f} ms: a copy costs {(c - p) / (k / 48):.1f} prompt tokens",
            flush=True,
        )
        b.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=6)
    parser.add_argument("--role-tokens", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--copy-cost", action="store_true")
    parser.add_argument("--threads", type=int, default=None, help="default: one per core")
    args = parser.parse_args()
    if args.copy_cost:
        return copy_cost()
    gen = generation(args.role_tokens)
    work = attempts(args.attempts)
    with LlamaCppBackend(default_model_path(), n_threads=args.threads) as backend:
        slots, why = backend.stream_slots()
        slots = args.slots or slots
        print(
            f"{len(work)} intersectional attempts (role ≤ {args.role_tokens} tokens, then 16 "
            f"answers ≤ 24 tokens under an enum schema), model {default_model_path().name}, "
            f"{backend.n_threads} threads; batched: {slots} slots ({why})"
        )
        seq_runs, bat_runs = [], []
        for r in range(args.rounds):
            if r % 2 == 0:
                seq_runs.append(sequential(backend, gen, work))
                bat_runs.append(batched(backend, gen, work, slots))
            else:
                bat_runs.append(batched(backend, gen, work, slots))
                seq_runs.append(sequential(backend, gen, work))
            s, b = seq_runs[-1], bat_runs[-1]
            print(
                f"  round {r + 1}: sequential {s[0]:6.1f} s, batched {b[0]:6.1f} s, "
                f"ratio {s[0] / b[0]:.2f}×",
                flush=True,
            )
    ratios = [s[0] / b[0] for s, b in zip(seq_runs, bat_runs, strict=True)]
    n_answers = 16 * len(work)
    stats = bat_runs[-1][3]
    print()
    print(f"median sequential {statistics.median(s[0] for s in seq_runs):.1f} s, "
          f"batched {statistics.median(b[0] for b in bat_runs):.1f} s")  # fmt: skip
    print(f"median of the per-round ratios: {statistics.median(ratios):.2f}×")
    print(
        f"answers parsed: sequential {seq_runs[0][1]}/{n_answers}, batched "
        f"{bat_runs[0][1]}/{n_answers}; generated tokens: sequential {seq_runs[0][2]}, "
        f"batched {bat_runs[0][2]}"
    )
    keys = ("admitted", "prompt_tokens", "shared_tokens", "prompt_decoded", "copies", "moves",
            "steps", "dummy_rows", "grammar_fast", "decode_s", "sample_s", "wall_s")  # fmt: skip
    print("stream counters (last round): " + json.dumps({k: stats.get(k) for k in keys}))
    same = all(b[1] == bat_runs[0][1] and b[2] == bat_runs[0][2] for b in bat_runs)
    print(f"batched results identical in every round: {same}")
    verdict = "met" if statistics.median(ratios) >= 2 else "NOT met"
    print(f"target batched ≥ 2× (median per-round ratio): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
