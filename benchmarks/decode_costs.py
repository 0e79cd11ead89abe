"""What a decode call costs on this machine, and the ceiling it puts under any engine.

    python benchmarks/decode_costs.py            # the cost table of the bundled model

With gbdesk's arithmetic settings (flash attention, f16 KV cache, this machine's threads),
the bundled model decodes in this process:

  alone    one token of one sequence (a plain loop's generation step);
  prompt   a prompt chunk of 48 and of 256 tokens of one sequence (cost per token);
  step n   one token of each of n sequences, each in a KV stream of its own (gbdesk's
           generation step; cost per token), n = 2 … 47.

Each sequence first holds `--cells` tokens (the KV cells a short chat prompt leaves); the
median of `--reps` calls is kept. On a CPU a decode is arithmetic on the weights for every
token it holds: a large batch shares the reading of the weights, not the multiplications,
so a prompt token costs about the same in any batch and only single-token steps (a
plain loop's generation) are dearer than in a batch. `ceiling_seconds` turns that into the
fastest any engine with these settings could make a workload: its prompts' tokens decoded
once each where prompts share a prefix (`minimal_prompt_tokens`), at the cheapest
per-token prompt cost, and its answers' tokens in the cheapest generation step, plus the
sampling time measured. `benchmarks/harness.py --ceiling` prints it beside each probe.

    python benchmarks/decode_costs.py --long     # reading a long prompt, per arithmetic

``--long`` reads whole prompts of 128, 1,024 and 2,600 tokens into an empty sequence with
each arithmetic of `LONG_ARITHMETICS` (gbdesk's, llama-cpp-python's as shipped, and the
candidates of issue 44), side by side in this one process, the arithmetics alternating
within every repetition; it prints milliseconds per prompt token (the fastest of the
repetitions) and each one's ratio to llama-cpp-python as shipped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROMPT_CHUNKS = (48, 256)
STEP_SIZES = (2, 4, 8, 16, 32, 47)
LONG_LENGTHS = (128, 1024, 2600)


@dataclass(frozen=True)
class Arithmetic:
    """How a context reads a prompt: attention kernel, chunk size, KV streams."""

    label: str
    flash: bool
    chunk: int
    streams: int = 1  # > 1: one KV stream per sequence (kv_unified off), as gbdesk's engine
    tail: int = 0  # > 0: what follows the last whole chunk in chunks of this size


#: the ways of reading a long prompt that `--long` compares; the baseline comes first
LONG_ARITHMETICS = (
    Arithmetic("llama-cpp-python as shipped (no flash, chunks of 512)", False, 512),
    Arithmetic("gbdesk before (flash, chunks of 48, own streams)", True, 48, 2),
    Arithmetic("flash, aligned chunks of 256, own streams", True, 256, 2),
    Arithmetic("gbdesk now (flash, whole chunks of 512, rest by 48)", True, 512, 2, 48),
    Arithmetic("no flash, chunks of 512, own streams", False, 512, 2),
)


@dataclass
class DecodeCosts:
    """Milliseconds per token of each kind of decode call."""

    alone_ms: float
    prompt_ms: dict[int, float] = field(default_factory=dict)
    step_ms: dict[int, float] = field(default_factory=dict)

    @property
    def best_prompt_ms(self) -> float:
        return min(self.prompt_ms.values())

    @property
    def best_step_ms(self) -> float:
        return min(self.step_ms.values())

    def table(self) -> str:
        rows = [f"  one token alone        {self.alone_ms:6.2f} ms"]
        rows += [
            f"  prompt chunk of {n:<4}   {ms:6.2f} ms per token" for n, ms in self.prompt_ms.items()
        ]
        rows += [
            f"  step of {n:>2} sequences   {ms:6.2f} ms per token" for n, ms in self.step_ms.items()
        ]
        return "\n".join(rows)


def _context(
    llm: Any, streams: int, n_ubatch: int, threads: int, n_ctx_seq: int, flash: bool = True
) -> Any:
    import llama_cpp as lib

    p = lib.llama_context_default_params()
    p.n_ctx = n_ctx_seq * streams
    p.n_batch = max(n_ubatch, streams)
    p.n_ubatch = n_ubatch
    p.n_seq_max = streams
    p.n_threads = p.n_threads_batch = threads
    p.kv_unified = streams == 1
    p.flash_attn_type = (
        lib.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash else lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
    )
    p.no_perf = True
    ctx = lib.llama_init_from_model(llm._model.model, p)
    if not ctx:
        raise RuntimeError("llama.cpp could not create a context")
    return ctx


def _put(ctx: Any, batch: Any, items: list[tuple[int, int]], logits: bool) -> None:
    """Decode one token per (sequence, position) pair."""
    import llama_cpp as lib

    for i, (seq, pos) in enumerate(items):
        batch.token[i] = 100 + pos % 1000
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = int(logits)
    batch.n_tokens = len(items)
    if lib.llama_decode(ctx, batch) != 0:
        raise RuntimeError("llama_decode failed")


def _fill(ctx: Any, batch: Any, sequences: int, cells: int) -> None:
    """Every sequence 0..sequences-1 holds `cells` tokens (decoded once, then copied)."""
    import llama_cpp as lib

    memory = lib.llama_get_memory(ctx)
    lib.llama_memory_clear(memory, True)
    for start in range(0, cells, 48):
        _put(ctx, batch, [(0, p) for p in range(start, min(cells, start + 48))], False)
    for seq in range(1, sequences):
        lib.llama_memory_seq_cp(memory, 0, seq, -1, -1)


def _timed(ctx: Any, batch: Any, rows: list[tuple[int, int]], cells: int, reps: int) -> float:
    """Median seconds of decoding `rows` ((sequence, position ≥ cells) pairs) over cells
    that `_fill` left; the rows' cells are removed after each call."""
    import llama_cpp as lib

    memory = lib.llama_get_memory(ctx)
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        _put(ctx, batch, rows, True)
        times.append(time.perf_counter() - started)
        for seq in {s for s, _ in rows}:
            lib.llama_memory_seq_rm(memory, seq, cells, -1)
    return statistics.median(times)


def measure(
    llm: Any, threads: int, *, cells: int = 128, reps: int = 7, flash: bool = True
) -> DecodeCosts:
    """`DecodeCosts` of `llm` on this machine (about ten seconds). ``flash=False``:
    llama-cpp-python's default arithmetic (no flash attention), one sequence only (the
    plain loop as shipped; no generation steps of several sequences)."""
    import llama_cpp as lib

    batch = lib.llama_batch_init(512, 0, 1)
    try:
        ctx = _context(llm, 1, max(PROMPT_CHUNKS), threads, 1024, flash)
        try:
            _fill(ctx, batch, 1, cells)
            alone = _timed(ctx, batch, [(0, cells)], cells, reps) * 1000
            prompt = {
                n: _timed(ctx, batch, [(0, cells + i) for i in range(n)], cells, reps) * 1000 / n
                for n in PROMPT_CHUNKS
            }
        finally:
            lib.llama_free(ctx)
        if not flash:
            return DecodeCosts(alone, prompt)
        ctx = _context(llm, max(STEP_SIZES) + 1, 48, threads, 512)
        try:
            _fill(ctx, batch, max(STEP_SIZES), cells)
            step = {
                n: _timed(ctx, batch, [(s, cells) for s in range(n)], cells, reps) * 1000 / n
                for n in STEP_SIZES
            }
        finally:
            lib.llama_free(ctx)
    finally:
        lib.llama_batch_free(batch)
    return DecodeCosts(alone, prompt, step)


def _read_prompt(ctx: Any, batch: Any, n: int, chunk: int, tail: int = 0) -> float:
    """Seconds to read an `n`-token prompt into sequence 0 of an empty context, in chunks
    of `chunk` tokens from position 0 (the last with logits); `tail`: the tokens after
    the last whole chunk in chunks of this size."""
    import llama_cpp as lib

    lib.llama_memory_clear(lib.llama_get_memory(ctx), True)
    whole = n - n % chunk if tail else n
    cuts = list(range(0, whole, chunk)) + list(range(whole, n, tail or chunk))
    started = time.perf_counter()
    for start, end in zip(cuts, [*cuts[1:], n], strict=True):
        for i, pos in enumerate(range(start, end)):
            batch.token[i] = 100 + pos % 1000
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = int(pos == n - 1)
        batch.n_tokens = end - start
        if lib.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
    return time.perf_counter() - started


def long_prompt_costs(
    llm: Any,
    threads: int,
    *,
    lengths: tuple[int, ...] = LONG_LENGTHS,
    arithmetics: tuple[Arithmetic, ...] = LONG_ARITHMETICS,
    reps: int = 3,
) -> dict[str, dict[int, float]]:
    """Milliseconds per prompt token of reading a whole prompt of each length, by
    arithmetic label: the fastest of `reps` (on a shared machine the least disturbed;
    the arithmetics alternate within a repetition, so each sees the same load)."""
    import llama_cpp as lib

    n_ctx = -(-max(lengths) // 256) * 256 + 256
    batch = lib.llama_batch_init(max(a.chunk for a in arithmetics), 0, 1)
    contexts = {
        a.label: _context(llm, a.streams, a.chunk, threads, n_ctx, a.flash) for a in arithmetics
    }
    times: dict[str, dict[int, list[float]]] = {
        a.label: {n: [] for n in lengths} for a in arithmetics
    }
    try:
        for _ in range(reps):
            for n in lengths:
                for a in arithmetics:
                    seconds = _read_prompt(contexts[a.label], batch, n, a.chunk, a.tail)
                    times[a.label][n].append(seconds * 1000 / n)
    finally:
        for ctx in contexts.values():
            lib.llama_free(ctx)
        lib.llama_batch_free(batch)
    return {k: {n: min(v) for n, v in per.items()} for k, per in times.items()}


def long_table(costs: dict[str, dict[int, float]]) -> str:
    """`long_prompt_costs` as rows (ms per token, and the ratio of the first row's cost
    to each row's: > 1 reads faster than the first)."""
    labels = list(costs)
    lengths = list(costs[labels[0]])
    base = costs[labels[0]]
    head = "  " + f"{'prompt of':<56}" + "".join(f"{n:>9,}" for n in lengths)
    rows = [head]
    for label in labels:
        cells = "".join(f"{costs[label][n]:>7.2f}ms" for n in lengths)
        ratios = " ".join(f"{base[n] / costs[label][n]:.2f}×" for n in lengths)
        rows.append(f"  {label:<56}{cells}   {ratios}")
    return "\n".join(rows)


def minimal_prompt_tokens(prompts: list[list[int]]) -> int:
    """Tokens an engine must decode for `prompts` if every shared prefix is decoded once
    (the nodes of their prefix tree; a prompt also needs its last token decoded for its
    logits, which a longer prompt's node count already holds)."""
    ordered = sorted(prompts)
    total = 0
    for i, tokens in enumerate(ordered):
        total += len(tokens) - (_shared(tokens, ordered[i - 1]) if i else 0)
    return total


def previous_shared_tokens(prompts: list[list[int]]) -> int:
    """Tokens a plain loop decodes for `prompts` in this order (llama-cpp-python keeps the
    previous prompt's cells and decodes what differs)."""
    return sum(
        len(t) - (min(_shared(t, prompts[i - 1]), len(t) - 1) if i else 0)
        for i, t in enumerate(prompts)
    )


def _shared(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def ceiling_seconds(
    costs: DecodeCosts, prompt_tokens: int, generated: int, sample_s: float
) -> float:
    """The fastest any engine with these settings makes a workload of `prompt_tokens`
    tokens to decode and `generated` tokens to generate, `sample_s` seconds sampling."""
    return (prompt_tokens * costs.best_prompt_ms + generated * costs.best_step_ms) / 1000 + sample_s


def chat_tokens(llm: Any, texts: list[str]) -> list[list[int]]:
    """Each user message as the tokens gbdesk decodes (the model's chat template)."""
    from gbdesk.engine.llama_worker import LlamaGenerator

    generator = LlamaGenerator(llm, "auto")
    return [list(generator.prompt_tokens([{"role": "user", "content": t}])[0]) for t in texts]


def main() -> int:
    from gbdesk.engine.default_model import default_model_path
    from gbdesk.engine.llama_backend import default_threads
    from gbdesk.engine.llama_compat import load_llama

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=128)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument(
        "--long",
        action="store_true",
        help="ms per prompt token of whole prompts of 128 / 1,024 / 2,600 tokens, for each "
        "way of reading a long prompt, beside llama-cpp-python as shipped",
    )
    parser.add_argument(
        "--plain-default",
        action="store_true",
        help="also llama-cpp-python's default arithmetic (flash attention off): the plain "
        "loop as shipped",
    )
    parser.add_argument(
        "--lengths", help="prompt lengths for --long, comma-separated (default 128,1024,2600)"
    )
    parser.add_argument(
        "--only",
        help="--long: only the arithmetics whose numbers in LONG_ARITHMETICS these are "
        "(comma-separated, from 0)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="threads per decode (default: gbdesk's); 1 on a loaded machine, where two "
        "threads spend their time waiting for each other at ggml's barriers",
    )
    args = parser.parse_args()
    threads = args.threads or default_threads()
    llm = load_llama(default_model_path(), n_ctx=2048, n_threads=threads, verbose=False)
    if args.long:
        reps = min(args.reps, 3)
        print(f"{threads} threads, whole prompts read into an empty sequence, best of {reps}:")
        lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else LONG_LENGTHS
        chosen = LONG_ARITHMETICS
        if args.only:
            chosen = tuple(LONG_ARITHMETICS[int(i)] for i in args.only.split(","))
        for n in lengths:  # one table per length, as each is measured
            print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
            costs = long_prompt_costs(llm, threads, lengths=(n,), arithmetics=chosen, reps=reps)
            print(long_table(costs), flush=True)
        return 0
    costs = measure(llm, threads, cells=args.cells, reps=args.reps)
    print(f"{threads} threads, each sequence holding {args.cells} cells, median of {args.reps}:")
    print(costs.table())
    print(
        f"a batch's best generation token costs {costs.best_step_ms / costs.alone_ms:.2f} of one "
        f"decoded alone; a prompt token {costs.best_prompt_ms:.2f} ms at best"
    )
    if args.plain_default:
        plain = measure(llm, threads, cells=args.cells, reps=args.reps, flash=False)
        print("llama-cpp-python's default arithmetic (flash attention off), one sequence:")
        print(plain.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
