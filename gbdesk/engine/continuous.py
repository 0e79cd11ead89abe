"""Continuous batching: live sequences in per-slot KV streams, refilled as they finish.

Imported only inside the worker process (`llama_worker`); no Qt, no gbdesk state.

What it does
------------
`ContinuousBatcher` keeps up to `slots` requests live. Every `step()` first retires the
sequences that finished (their results are returned at once), admits queued requests
into the free slots, decodes their prompts, then decodes one token for every live
sequence in a single ``llama_decode`` call and samples each from its own logits row with
its own seeded sampler chain (llama-cpp-python's chain, with the request's JSON-schema
grammar first when it has one). A finished sequence is replaced by the next request on
the next step, never waiting for the others. `drain()` drops the queued requests; the
live ones finish.

Prompt prefixes are shared. A slot's KV cells stay after its sequence finished (an
"idle" slot), so a request admitted into it keeps the cells of the prefix it shares with
the previous occupant and decodes only the rest (every chat prompt shares at least the
chat template's head). A request sharing at least `min_shared` tokens with a *live*
sequence (16 questions after the same role text) gets a copy of that sequence's cells
(`llama_memory_seq_cp`) and decodes only its own suffix; a request that would share
more with a slot whose prompt is not decoded yet waits for it. Many such groups can be
live at once: sharing is decided per request against every slot.

Why the text of a request never depends on the batch (same request + seed, same text,
for any slot count, order, neighbours and admission time)
-----------------------------------------------------------------------------
The context uses the scoring context's arithmetic (flash attention, f16 KV cache,
n_ubatch 48 < ggml's 64-row flash-attention tile; see `gbdesk.engine.scoring`): matrix
products are computed row by row, and flash attention's one-chunk kernel walks a
query's unmasked KV cells one by one *in cell order*. So a token's numbers depend only on
its own sequence's tokens provided that (a) its sequence's cells lie in position order
and (b) the kernel is the one-chunk kernel. llama.cpp guarantees neither by itself:

* (a) In one unified KV cache, `llama_memory_seq_rm` moves the cache's head down to the
  first freed cell, and the next tokens of *every* sequence go into the freed cells,
  below their earlier ones: reusing freed cells changes other sequences' arithmetic.
  So the cache is not unified: every slot is a KV *stream* of its own (``kv_unified =
  false``, ``n_seq_max = slots + 1``, stream = sequence id). A stream holds one sequence
  whose position p sits in cell p: freeing a whole sequence, or its positions from p on,
  moves the stream's head back to cell 0 (or p), and later tokens fill the cells upward
  again exactly as in a fresh context. A cross-stream `llama_memory_seq_cp` copies the
  stream's buffer cell for cell (llama.cpp only copies whole streams), keeping positions
  in their cells.
* (b) ggml's CPU flash attention takes a split-KV path, which sums in another order, for
  a micro-batch of exactly one query token once the KV view has 512 cells or more (a
  stream's view is its cells padded to a multiple of 256). So no decode call here has one
  token over more than 256 cells: a prompt is decoded in chunks of 2 to 48 tokens, a
  one-token remainder joins the generation step, and a generation step with one live
  sequence of more than 256 cells (`SPLIT_KV_FROM`) gets a dummy token in a spare stream
  (freed at once); a shorter one computes the same alone (tested) and costs half as much.

Long prompts: chunks aligned to fixed positions (issue 44)
----------------------------------------------------------
Chunks of 48 keep every prompt token on the one-chunk kernel, whose cost grows with the
cells it walks (6.5 ms a token at 2,600 cells against llama-cpp-python's 4.0). With
``prompt_chunk`` C ≥ 64 a prompt is read in chunks aligned to multiples of C — positions
kC..kC+C-1, the last cut at the prompt's end — whoever read its prefix: a chunk of 64
rows or more goes to ggml's tiled kernel (`FLASH_TILE_ROWS`), which computes each query
row from its own stream's cells in fixed 64-cell tiles starting at cell 0 (tile sums and
the online softmax per row, a fixed-shape 64×64 GEMM), so a row's numbers do not depend
on the chunk's other rows, but do depend on *which* kernel computed it. So every cell of
a prompt has a kind (`_prompt_kinds`: 1 where its aligned chunk has ≥ 64 rows, 0 where
it has fewer or the cell was generated), and a prompt keeps another's cells (idle or
copied) only up to where the kinds agree and the rest of the chunk at the cut can still
be read with its kind's kernel (`_reusable`: a kind-1 rest needs ≥ 64 rows, else the cut
moves back until it has 64, never before the chunk's start). Without flash attention
(``flash_attn=False``) the same holds with the switch at 2 rows: llamafile's tinyBLAS
computes Q·K and V·softmax for a micro-batch of ≥ 2 rows of a stream, each output from
its own row in a fixed order, ggml's vec_dot for one row (a generation step); there is
no split-KV kernel, so no dummy token. tests/engine/test_long_prompts.py checks both, to
the logits row, at 256 and 512 cells and at the chunk boundaries, with controls that
fail when a prompt is cut anywhere.

With separate streams llama.cpp splits a batch into micro-batches of *consecutive*
sequence ids ("equal split"), so the live sequences are kept in slots 0..n-1: when a
slot frees and no request takes it, the highest live sequence is moved into it (a stream
copy). A generation step is then a single micro-batch of n tokens.
tests/engine/test_continuous_batching.py checks all of this against sequences decoded alone.

Prompt formatting, stop strings, end-of-generation tokens and max_tokens follow
`LlamaGenerator.generate`. The texts are not `LlamaGenerator.generate`'s (other
arithmetic: flash attention on), but they are those of the earlier `generate_batch`
implementation whenever that one was batch-independent.
"""

from __future__ import annotations

import collections
import ctypes
import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gbdesk.engine.scoring import DEFAULT_N_UBATCH
from gbdesk.engine.streaming import emit_delta

#: Best-scored tokens a greedy grammar-constrained sequence asks its grammar about, one at
#: a time, before the grammar is applied to the whole vocabulary (`_grammar_first_allowed`).
GRAMMAR_PROBES = 32

log = logging.getLogger(__name__)

# ggml's CPU flash attention takes its split-KV kernel for one query token of one stream
# once the KV view has 512 cells; llama.cpp pads a stream's view to a multiple of 256 cells,
# so a sequence of at most 256 cells never reaches it and needs no dummy token.
SPLIT_KV_FROM = 256

# A copied prefix must save at least this many prompt tokens, and n_ctx_seq / 128: a
# cross-stream copy moves the whole stream. Measured on SmolLM2-135M, 2 threads (shared
# machine): a copy costs what decoding ~2.3 prompt tokens does at 512 cells per stream,
# ~5.3 at 1024 (benchmarks/chain.py --copy-cost).
DEFAULT_MIN_SHARED = 16
_CTX_ROUND = 256
_MIN_CTX_SEQ = 512
MAX_SLOTS = DEFAULT_N_UBATCH  # a generation step must fit one micro-batch

# ggml's CPU flash attention computes a micro-batch of this many query rows of one stream
# or more with its tiled kernel (GGML_FA_TILE_Q), fewer with its one-chunk kernel; without
# flash attention, llamafile's tinyBLAS multiplies Q·K and V·softmax for 2 rows or more,
# ggml's vec_dot for one. Either way a row's numbers depend on which of the two computed
# it, never on the other rows (module docstring).
FLASH_TILE_ROWS = 64
PLAIN_GEMM_ROWS = 2
#: prompt tokens are read in chunks aligned to multiples of this position; with flash
#: attention a whole chunk takes the tiled kernel (docstring: "Long prompts")
DEFAULT_PROMPT_CHUNK = 512


@dataclass
class _Item:
    key: Any
    request: dict[str, Any]
    tokens: list[int] | None = None
    stops: list[bytes] = field(default_factory=list)
    max_tokens: int = 0
    error: str | None = None


class _Slot:
    """One sequence (live, or idle with its cells kept for prefix reuse)."""

    __slots__ = (
        "admitted",
        "completion",
        "cost",
        "done",
        "finish_reason",
        "grammar",
        "history",
        "item",
        "kinds",
        "max_tokens",
        "n_past",
        "next_token",
        "pending",
        "sampler",
        "shared",
        "stop_bytes",
        "streamed",
        "text_bytes",
        "tokens",
    )

    def __init__(self) -> None:
        self.item: _Item | None = None  # None: idle
        self.history: list[int] = []  # the tokens whose KV cells the stream holds, in order
        self.n_past = 0  # cells filled (positions 0..n_past-1)
        self.tokens: list[int] = []
        self.kinds = b""  # the prompt's cell kinds (`_prompt_kinds`); generated cells are 0
        self.completion: list[int] = []
        self.pending: list[int] = []  # prompt tokens still to decode
        self.next_token: int | None = None  # the token the next generation step decodes
        self.sampler: Any = None
        self.grammar: Any = None  # borrowed from `sampler` (see `_greedy_grammar`)
        self.stop_bytes: list[bytes] = []
        self.max_tokens = 0
        self.text_bytes = b""
        self.finish_reason = "length"
        self.done = False
        self.cost = 0.0
        self.shared = 0
        self.streamed = 0
        self.admitted = 0

    @property
    def live(self) -> bool:
        return self.item is not None


class ContinuousBatcher:
    """Continuous batching on the worker's `LlamaGenerator` (its model and prompt format).

    `add(key, request)` queues a request (the dict of `GenerationRequest.to_json()`);
    each `step()` returns events: ``("item", key, result)`` when a request finished (the
    dict `LlamaGenerator.generate` returns), ``("item_error", key, message)`` when it
    could not be generated (prompt too long, bad schema), and, if `watch` is on,
    ``("token", key, text)`` for the watched sequence: the most recently admitted one
    when the previous watched sequence finished (its text so far comes as one delta).
    Call `close()` before the model is freed.
    """

    # pad a one-sequence generation step with a dummy token once the sequence holds more
    # than this many cells (`SPLIT_KV_FROM`); None: never (tests, to show that it matters),
    # 0: always
    pad_from: int | None = SPLIT_KV_FROM

    def __init__(
        self,
        generator: Any,
        *,
        slots: int,
        n_threads: int = 2,
        n_ubatch: int = DEFAULT_N_UBATCH,
        n_ctx_seq: int | None = None,
        min_shared: int = DEFAULT_MIN_SHARED,
        watch: bool = False,
        prompt_chunk: int = DEFAULT_PROMPT_CHUNK,
        flash_attn: bool = True,
    ):
        import llama_cpp

        self._lib = llama_cpp
        self.generator = generator
        self.llm = generator.llm
        self.vocab = self.llm._model.vocab
        self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        # one-token candidate array for `_grammar_first_allowed`
        self._probe_cell = llama_cpp.llama_token_data()
        self._probe_array = llama_cpp.llama_token_data_array(
            ctypes.pointer(self._probe_cell), 1, -1, False
        )
        self.n_threads = int(n_threads)
        self.n_ubatch = max(2, min(int(n_ubatch), DEFAULT_N_UBATCH))
        self.slots = min(self.clamp_slots(slots), self.n_ubatch)
        self.flash_attn = bool(flash_attn)
        self.prompt_chunk = max(2, int(prompt_chunk))
        # a one-sequence micro-batch of this many rows or more takes the other kernel
        self.tile_rows = FLASH_TILE_ROWS if self.flash_attn else PLAIN_GEMM_ROWS
        if not self.flash_attn:
            self.pad_from = None  # no split-KV kernel without flash attention
        self.n_ctx_main = int(self.llm.n_ctx())
        self.n_ctx_seq = 0
        self._want_ctx_seq = int(n_ctx_seq or 0)
        self.min_shared = max(1, int(min_shared))
        self.watch = bool(watch)
        self.ctx: Any = None
        self._memory: Any = None
        self._queue: collections.deque[_Item] = collections.deque()
        self._slots = [_Slot() for _ in range(self.slots)]
        self._events: list[tuple[Any, ...]] = []
        self._watched: _Slot | None = None
        self._admissions = 0
        self._grammars: dict[str, str] = {}
        self.draining = False
        n = self._batch_capacity()
        self._batch = llama_cpp.llama_batch_init(n, 0, 1)
        self._b_token = np.ctypeslib.as_array(self._batch.token, shape=(n,))
        self._b_pos = np.ctypeslib.as_array(self._batch.pos, shape=(n,))
        self._b_n_seq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(n,))
        self._b_logits = np.ctypeslib.as_array(self._batch.logits, shape=(n,))
        self._b_seq = [self._batch.seq_id[i] for i in range(n)]
        self._b_n_seq[:] = 1
        self.stats = collections.Counter()

    # -- public -------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The settings that determine the texts (store them with the results)."""
        return {
            "flash_attn": self.flash_attn,
            "kv_type": "f16",
            "kv_unified": False,
            "n_ubatch": self.n_ubatch,
            "prompt_chunk": self.prompt_chunk,
            "n_threads": self.n_threads,
        }

    def info(self) -> dict[str, Any]:
        return {"slots": self.slots, "n_ctx_seq": self.n_ctx_seq, "settings": self.settings()}

    @staticmethod
    def clamp_slots(slots: int) -> int:
        """The slot count a batcher asked for `slots` gets."""
        import llama_cpp

        cap = min(MAX_SLOTS, int(llama_cpp.llama_max_parallel_sequences()) - 1)
        return max(1, min(int(slots), cap))

    def reset(self, *, watch: bool = False) -> None:
        """Ready for a new stream: nothing queued or live; the context and the idle
        slots' cells stay (later prompts may share their prefixes)."""
        self.abort()
        self.draining = False
        self.watch = bool(watch)
        self._watched = None
        self._events = []
        self.stats = collections.Counter()

    def abort(self) -> list[Any]:
        """Drop the queued requests and the live sequences at once (their keys)."""
        dropped = self.drain()
        for slot in self._slots:
            if slot.live:
                assert slot.item is not None
                dropped.append(slot.item.key)
                self._free_sampler(slot)
                slot.item = None
                slot.next_token = None
                slot.pending = []
                slot.done = False
                if self._memory is not None:  # partial work: its cells are not reusable
                    self._seq_rm(self._slots.index(slot), 0)
                slot.history, slot.n_past = [], 0
        self._events = [e for e in self._events if e[0] != "token"]
        return dropped

    def generate_all(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every request to the end; the results in request order (`generate_batch`)."""
        results: list[dict[str, Any] | None] = [None] * len(requests)
        for i, request in enumerate(requests):
            self.add(i, request)
        while self.has_work:
            for kind, key, payload in self.step():
                if kind == "item":
                    results[key] = payload
                elif kind == "item_error":
                    self.abort()
                    raise ValueError(payload)
        return results  # type: ignore[return-value]

    def add(self, key: Any, request: dict[str, Any]) -> None:
        if self.draining:
            self._events.append(("item_error", key, "the stream is draining"))
            return
        self._queue.append(_Item(key, request))

    def drain(self) -> list[Any]:
        """Stop admitting: drop the queued requests (returned); live sequences finish."""
        self.draining = True
        dropped = [item.key for item in self._queue]
        self._queue.clear()
        return dropped

    @property
    def live(self) -> int:
        return sum(1 for s in self._slots if s.live)

    def progress(self) -> dict[str, int]:
        """`gbdesk.engine.base.StreamProgress` as JSON: live sequences, the tokens they
        generated so far, every token generated since `reset` (finished answers too) and
        the requests still queued."""
        live = [s for s in self._slots if s.live]
        live_tokens = sum(len(s.completion) for s in live)
        return {
            "live": len(live),
            "live_tokens": live_tokens,
            "tokens": int(self.stats["generated_tokens"]) + live_tokens,
            "queued": len(self._queue),
        }

    @property
    def has_work(self) -> bool:
        return bool(self._queue) or any(s.live for s in self._slots) or bool(self._events)

    def step(self) -> list[tuple[Any, ...]]:
        """Retire, admit, decode prompts, then one generation step; the events."""
        while True:
            self._retire()
            progressed = self._admit()
            if any(s.live and s.done for s in self._slots):
                continue  # finished during its prompt: free it and admit again
            if not progressed:
                break
        self._compact()
        live = [s for s in self._slots if s.live]
        if live:
            self._generation_step(live)
            self._retire()
        events, self._events = self._events, []
        return events

    def close(self) -> None:
        for s in self._slots:
            self._free_sampler(s)
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            self._lib.llama_free(self.ctx)
            self.ctx = None

    # -- context ------------------------------------------------------------------------
    def _open_context(self, n_ctx_seq: int) -> None:
        lib = self._lib
        if self.ctx is not None:
            lib.llama_free(self.ctx)
            self.ctx = None
        n_ctx_seq = -(-max(n_ctx_seq, _MIN_CTX_SEQ) // _CTX_ROUND) * _CTX_ROUND
        n_streams = self.slots + 1  # the last stream holds the one-live-sequence dummy
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx_seq * n_streams
        params.n_batch = self._batch_capacity()
        params.n_ubatch = self._batch_capacity()
        params.n_seq_max = n_streams
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        params.kv_unified = False  # one KV stream per slot: cells stay in position order
        params.flash_attn_type = (
            lib.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if self.flash_attn
            else lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        params.no_perf = True
        ctx = lib.llama_init_from_model(self.llm._model.model, params)
        if not ctx:
            raise RuntimeError("llama.cpp could not create the continuous batching context")
        self.ctx = ctx
        self._memory = lib.llama_get_memory(ctx)
        self.n_ctx_seq = int(lib.llama_n_ctx_seq(ctx))
        for s in self._slots:
            s.history, s.n_past = [], 0
        self.stats["contexts"] += 1

    def _batch_capacity(self) -> int:
        return max(self.n_ubatch, self.prompt_chunk, self.slots + 1)

    def _prepare(self, item: _Item) -> None:
        if item.tokens is not None or item.error is not None:
            return
        request = item.request
        try:
            tokens, stops = self.generator.prompt_tokens(request["messages"])
        except Exception as exc:  # a malformed message list or template error
            item.error = f"cannot format the prompt: {exc}"
            return
        if len(tokens) >= self.n_ctx_main:
            item.error = (
                f"the prompt has {len(tokens)} tokens but the context holds "
                f"{self.n_ctx_main}; raise n_ctx or shorten the prompt"
            )
            return
        item.tokens = list(tokens)
        item.stops = [s.encode("utf-8") for s in stops]
        item.max_tokens = min(int(request["max_tokens"]), self.n_ctx_main - len(tokens))

    def _ensure_context(self) -> bool:
        """A context whose streams hold the queued requests; False while one must grow
        but sequences are still live (admission waits for them)."""
        need = self._want_ctx_seq
        for item in list(self._queue)[: 4 * self.slots]:
            self._prepare(item)
            if item.tokens is not None:
                need = max(need, len(item.tokens) + max(0, item.max_tokens))
        if self.ctx is not None and need <= self.n_ctx_seq:
            return True
        if self.ctx is not None and any(s.live for s in self._slots):
            return False
        self._open_context(max(need, self.n_ctx_seq))
        return True

    # -- admission ----------------------------------------------------------------------
    def _admit(self) -> bool:
        """Admit queued requests into free slots and decode their prompts."""
        if self.draining or not self._queue:
            return False
        if not self._ensure_context():
            return False
        admitted: list[_Slot] = []
        while self._queue:
            item = self._queue[0]
            self._prepare(item)
            if item.error is not None:
                self._queue.popleft()
                self._events.append(("item_error", item.key, item.error))
                continue
            assert item.tokens is not None
            if len(item.tokens) + max(0, item.max_tokens) > self.n_ctx_seq:
                break  # the context must grow first (when nothing is live)
            if item.max_tokens <= 0:
                self._queue.popleft()
                self._events.append(("item", item.key, self._result_of_empty(item)))
                continue
            free = [i for i, s in enumerate(self._slots) if not s.live]
            if not free:
                break
            choice = self._place(item.tokens, free)
            if choice is None:
                break  # it shares more with a prompt not decoded yet: decode that first
            slot_id, source, keep = choice
            self._queue.popleft()
            slot = self._slots[slot_id]
            try:
                sampler = self._sampler(item.request)
            except Exception as exc:
                self._events.append(("item_error", item.key, str(exc) or repr(exc)))
                continue
            self._occupy(slot_id, source, keep)
            self._start(slot, item, sampler, keep)
            admitted.append(slot)
        for slot in admitted:
            self._prefill(slot)
        return bool(admitted)

    def _place(self, tokens: list[int], free: list[int]) -> tuple[int, int, int] | None:
        """(slot, source slot or -1, tokens kept) for a prompt, or None to wait.

        An idle slot keeps its cells for the prefix it shares with the prompt (no copy);
        a live slot sharing at least `min_shared` tokens is copied into a free slot.
        """
        limit = len(tokens) - 1  # at least one token decoded, for its logits
        kinds = self._prompt_kinds(len(tokens))
        best_idle, best_idle_keep = free[0], 0
        for i in free:
            keep = min(_common_prefix(self._slots[i].history, tokens), limit)
            keep = self._reusable(keep, self._slots[i], kinds)
            if keep > best_idle_keep:
                best_idle, best_idle_keep = i, keep
        best_live, best_live_keep, waiting = -1, 0, 0
        for i, s in enumerate(self._slots):
            if not s.live:
                continue
            known = s.history + s.pending
            share = self._reusable(min(_common_prefix(known, tokens), limit), s, kinds)
            keep = self._reusable(min(share, s.n_past), s, kinds)
            if share > keep:  # its prompt is not decoded that far yet
                waiting = max(waiting, share)
            if keep > best_live_keep:
                best_live, best_live_keep = i, keep
        if waiting - max(best_idle_keep, best_live_keep) >= self._copy_threshold():
            # wait for it, even when a shorter prefix could be copied now: a prompt's two
            # wordings share ~450 tokens, the items only their first 52 (HiringBloomberg:
            # copying the 52 at once lost 1,300 of 8 prompts' 2,060 shareable tokens)
            return None
        if best_live_keep - best_idle_keep >= self._copy_threshold():
            # copy into a free slot whose own cells are the least use
            target = min(free, key=lambda i: (self._slots[i].n_past > 0, i))
            return target, best_live, best_live_keep
        if best_idle_keep > 0:
            return best_idle, -1, best_idle_keep
        return min(free), -1, 0

    def _copy_threshold(self) -> int:
        return max(self.min_shared, self.n_ctx_seq // 128)

    def _occupy(self, slot_id: int, source: int, keep: int) -> None:
        """Make slot `slot_id`'s stream hold exactly the first `keep` tokens it will use."""
        lib = self._lib
        slot = self._slots[slot_id]
        if source >= 0:
            src = self._slots[source]
            # whole-stream copy (llama.cpp copies streams only whole), then cut to `keep`
            lib.llama_memory_seq_cp(self._memory, source, slot_id, -1, -1)
            slot.history = src.history[:keep]
            slot.n_past = src.n_past
            self.stats["copies"] += 1
        if keep < slot.n_past:
            self._seq_rm(slot_id, keep)
        slot.history = slot.history[:keep]
        slot.n_past = keep

    def _start(self, slot: _Slot, item: _Item, sampler: Any, keep: int) -> None:
        assert item.tokens is not None
        slot.item = item
        slot.tokens = item.tokens
        slot.kinds = self._prompt_kinds(len(item.tokens))
        slot.stop_bytes = item.stops
        slot.max_tokens = item.max_tokens
        slot.pending = item.tokens[keep:]
        slot.completion = []
        slot.text_bytes = b""
        slot.finish_reason = "length"
        slot.done = False
        slot.sampler = sampler
        slot.grammar = self._greedy_grammar(item.request, sampler)
        slot.cost = 0.0
        slot.shared = keep
        slot.streamed = 0
        slot.next_token = None
        self._admissions += 1
        slot.admitted = self._admissions
        self.stats["admitted"] += 1
        self.stats["prompt_tokens"] += len(item.tokens)
        self.stats["shared_tokens"] += keep
        if self.watch and (self._watched is None or not self._watched.live):
            self._watched = slot

    def _prefill(self, slot: _Slot) -> None:
        """Decode a slot's pending prompt tokens in one-sequence chunks (`_pieces`); a last
        piece of one token is left to the next generation step (with its logits)."""
        pending = slot.pending
        slot.pending = []
        sizes = self._pieces(slot.n_past, len(pending), slot.kinds)
        if sizes and sizes[-1] == 1:
            slot.next_token = pending[-1]
            sizes.pop()
        if not sizes:
            return
        slot_id = self._slots.index(slot)
        a = 0
        for size in sizes:
            chunk = pending[a : a + size]
            last = slot.next_token is None and a + size == len(pending)
            for row, token in enumerate(chunk):
                self._b_token[row] = token
                self._b_pos[row] = slot.n_past + row
                self._b_seq[row][0] = slot_id
                self._b_logits[row] = 1 if (last and row == size - 1) else 0
            elapsed = self._decode(size)
            slot.cost += elapsed
            self.stats["prefill_s"] += elapsed
            slot.history.extend(chunk)
            slot.n_past += size
            self.stats["prompt_decoded"] += size
            a += size
        if slot.next_token is None:
            self._take(slot, sizes[-1] - 1)  # the logits row of the prompt's last token

    # -- how prompts are cut (batch independence, module docstring) --------------------
    def _prompt_kinds(self, n: int) -> bytes:
        """Which kernel computes each cell of an `n`-token prompt read alone: 1 where its
        aligned chunk (positions kC..kC+C-1, cut at the prompt's end) has `tile_rows` rows
        or more — with flash attention only a whole chunk: the rest of a prompt after its
        last whole chunk stays on the one-chunk kernel, so that a prompt shorter than C
        computes as with chunks of 48 and shares its prefix anywhere — else 0 (the kernel
        of a generation step)."""
        c, out = self.prompt_chunk, bytearray(n)
        for start in range(0, n, c):
            end = min(n, start + c)
            rows = end - start
            if rows >= self.tile_rows and (rows == c or not self.flash_attn):
                out[start:end] = b"\x01" * rows
        return bytes(out)

    def _reusable(self, keep: int, slot: _Slot, kinds: bytes) -> int:
        """The longest of a slot's first `keep` cells (tokens equal to the prompt's) that
        a prompt of cell kinds `kinds` can keep and still compute every later cell as it
        would alone: the kept cells' kinds equal the prompt's, and the rest of the chunk
        at the cut can still be read with its kind's kernel."""
        if keep <= 0:
            return 0
        own = slot.kinds[:keep]
        if own != kinds[: len(own)]:
            keep = next(i for i, (a, b) in enumerate(zip(own, kinds, strict=False)) if a != b)
        if len(own) < keep and any(kinds[len(own) : keep]):
            # generated cells are of kind 0; cut before the first kind-1 cell among them
            keep = len(own) + kinds[len(own) : keep].index(1)
        c = self.prompt_chunk
        start = keep - keep % c
        if keep > start and kinds[start]:
            end = min(len(kinds), start + c)
            if end - keep < self.tile_rows:
                # the cut moves back until the chunk's rest has the tiled kernel's rows
                # (a row's numbers depend only on its kernel, not on the chunk's other
                # rows): 448 of a 466-token shared prefix kept, not 0
                keep = max(start, end - self.tile_rows)
        return keep

    def _pieces(self, n_past: int, n: int, kinds: bytes) -> list[int]:
        """The chunk sizes that read prompt cells n_past..n_past+n-1 with their kinds'
        kernels: a run of kind-1 cells in its aligned chunks (each piece ≥ `tile_rows`
        rows, `_reusable` saw to it), a run of kind-0 cells in pieces of 2 to
        min(n_ubatch, tile_rows - 1) rows (one row only as a last piece of one token)."""
        sizes: list[int] = []
        c, pos, end = self.prompt_chunk, n_past, n_past + n
        while pos < end:
            if kinds[pos]:
                stop = min(end, pos - pos % c + c)
                sizes.append(stop - pos)
            else:
                stop = pos
                while stop < end and not kinds[stop]:
                    stop += 1
                limit = max(1, min(self.n_ubatch, self.tile_rows - 1))
                sizes.extend(_chunk_sizes(stop - pos, limit))
            pos = stop
        return sizes

    # -- generation ---------------------------------------------------------------------
    def _generation_step(self, live: list[_Slot]) -> None:
        n = len(live)
        for row, slot in enumerate(live):
            assert slot.next_token is not None and self._slots[row] is slot
            self._b_token[row] = slot.next_token
            self._b_pos[row] = slot.n_past
            self._b_seq[row][0] = row
            self._b_logits[row] = 1
        m = n
        pad = n == 1 and self.pad_from is not None and live[0].n_past + 1 > self.pad_from
        if pad:  # no one-token micro-batch over 512 cells (ggml's split-KV attention path)
            # a dummy token in the next stream (llama.cpp batches consecutive sequence
            # ids only), after whatever cells that stream keeps, removed right after
            dummy = 1 if self.slots > 1 else self.slots
            dummy_pos = self._slots[dummy].n_past if dummy < self.slots else 0
            self._b_token[m] = int(live[0].next_token)  # type: ignore[arg-type]
            self._b_pos[m] = dummy_pos
            self._b_seq[m][0] = dummy
            self._b_logits[m] = 0
            m += 1
        started = time.perf_counter()
        self.stats["step_s"] += self._decode(m)
        if pad:
            self._seq_rm(dummy, dummy_pos)
            self.stats["dummy_rows"] += 1
        self.stats["steps"] += 1
        for row, slot in enumerate(live):
            slot.history.append(int(slot.next_token))  # type: ignore[arg-type]
            slot.n_past += 1
            self._take(slot, row)
        # a sequence's latency is its share of the step's wall time (decode and sampling),
        # so that a run's summed latencies are its busy time (the estimate's speed)
        share = (time.perf_counter() - started) / n
        for slot in live:
            slot.cost += share

    def _take(self, slot: _Slot, row: int) -> None:
        """Sample `slot` from logits row `row`; EOG, stop strings, max_tokens as generate."""
        lib = self._lib
        started = time.perf_counter()
        token = self._grammar_first_allowed(slot, row) if slot.grammar is not None else None
        if token is None:
            token = int(lib.llama_sampler_sample(slot.sampler, self.ctx, row))
        self.stats["sample_s"] += time.perf_counter() - started
        slot.next_token = None
        if lib.llama_vocab_is_eog(self.vocab, token):
            slot.finish_reason = "stop"
            slot.done = True
            return
        slot.completion.append(token)
        text_bytes = self.llm.detokenize(slot.completion, prev_tokens=slot.tokens)
        hit = next((b for b in slot.stop_bytes if b in text_bytes), None)
        if hit is not None:
            slot.text_bytes = text_bytes[: text_bytes.index(hit)]
            slot.finish_reason = "stop"
            slot.done = True
            return
        slot.text_bytes = text_bytes
        if slot is self._watched:
            self._stream_delta(slot)
        if len(slot.completion) >= slot.max_tokens:
            slot.done = True
            return
        slot.next_token = token

    def _stream_delta(self, slot: _Slot) -> None:
        assert slot.item is not None
        key = slot.item.key

        def emit(text: str) -> None:
            self._events.append(("token", key, text))

        slot.streamed = emit_delta(
            slot.text_bytes, slot.streamed, slot.stop_bytes, emit
        )

    # -- retiring and compaction -------------------------------------------------------
    def _retire(self) -> None:
        for slot in self._slots:
            if slot.live and slot.done:
                assert slot.item is not None
                text = slot.text_bytes.decode("utf-8", errors="ignore")
                if slot is self._watched and len(text) > slot.streamed:
                    self._events.append(("token", slot.item.key, text[slot.streamed :]))
                result = {
                    "text": text,
                    "tokens_in": len(slot.tokens),
                    "tokens_out": len(slot.completion),
                    "latency_s": slot.cost,
                    "finish_reason": slot.finish_reason,
                    "prompt_mode": self.generator.prompt_mode,
                    "token_ids": list(slot.completion),  # to name a first difference
                }
                self._events.append(("item", slot.item.key, result))
                self.stats["generated_tokens"] += len(slot.completion)
                self._free_sampler(slot)
                slot.item = None  # idle: its cells stay for a request sharing a prefix
                slot.next_token = None
                slot.pending = []
        if self.watch and (self._watched is None or not self._watched.live):
            live = [s for s in self._slots if s.live]
            self._watched = max(live, key=lambda s: s.admitted) if live else None
            if self._watched is not None:
                self._stream_delta(self._watched)

    def _compact(self) -> None:
        """Keep the live sequences in slots 0..n-1 (one micro-batch per generation step)."""
        lib = self._lib
        while True:
            live_ids = [i for i, s in enumerate(self._slots) if s.live]
            holes = [i for i in range(len(live_ids)) if not self._slots[i].live]
            if not holes:
                return
            lo, hi = holes[0], live_ids[-1]
            src, dst = self._slots[hi], self._slots[lo]
            lib.llama_memory_seq_cp(self._memory, hi, lo, -1, -1)
            self._seq_rm(hi, 0)
            self._slots[lo], self._slots[hi] = src, dst
            dst.history, dst.n_past = [], 0
            self.stats["moves"] += 1

    # -- llama.cpp calls ----------------------------------------------------------------
    def _seq_rm(self, seq_id: int, p0: int) -> None:
        """Free a stream's cells from position `p0` on (its head moves back to cell p0)."""
        if not self._lib.llama_memory_seq_rm(self._memory, seq_id, p0, -1):
            raise RuntimeError(f"llama.cpp could not free the cells of sequence {seq_id}")

    def _decode(self, m: int) -> float:
        started = time.perf_counter()
        self._batch.n_tokens = m
        rc = self._lib.llama_decode(self.ctx, self._batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with status {rc}")
        self.stats["decode_calls"] += 1
        elapsed = time.perf_counter() - started
        self.stats["decode_s"] += elapsed
        return elapsed

    def _grammar(self, schema: Any) -> str:
        text = json.dumps(schema, sort_keys=True)
        gbnf = self._grammars.get(text)
        if gbnf is None:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            gbnf = json_schema_to_gbnf(json.dumps(schema))
            self._grammars[text] = gbnf
        return gbnf

    def _sampler(self, request: dict[str, Any]) -> Any:
        """llama-cpp-python's chain for `Llama.generate`: grammar, then the samplers."""
        lib = self._lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        add = lib.llama_sampler_chain_add
        if request.get("json_schema"):
            gbnf = self._grammar(request["json_schema"])
            grammar = lib.llama_sampler_init_grammar(self.vocab, gbnf.encode("utf-8"), b"root")
            if not grammar:
                lib.llama_sampler_free(chain)
                raise ValueError("llama.cpp could not parse the grammar of the JSON schema")
            add(chain, grammar)
        temp = float(request["temperature"])
        seed = int(request["seed"]) & 0xFFFFFFFF
        if temp < 0.0:
            add(chain, lib.llama_sampler_init_dist(seed))
        elif temp == 0.0:
            add(chain, lib.llama_sampler_init_greedy())
        else:
            add(chain, lib.llama_sampler_init_top_k(int(request.get("top_k", 0))))
            add(chain, lib.llama_sampler_init_typical(1.0, 1))
            add(chain, lib.llama_sampler_init_top_p(float(request["top_p"]), 1))
            add(chain, lib.llama_sampler_init_min_p(float(request.get("min_p", 0.0)), 1))
            add(chain, lib.llama_sampler_init_temp(temp))
            add(chain, lib.llama_sampler_init_dist(seed))
        return chain

    def _greedy_grammar(self, request: dict[str, Any], chain: Any) -> Any:
        """The grammar sampler of a greedy, schema-constrained chain ([grammar, greedy]),
        for `_grammar_first_allowed`; None for any other chain."""
        if not request.get("json_schema") or float(request["temperature"]) != 0.0:
            return None
        return self._lib.llama_sampler_chain_get(chain, 0)

    def _grammar_first_allowed(self, slot: _Slot, row: int) -> int | None:
        """The token the [grammar, greedy] chain would pick, found by asking the grammar
        about the best-scored tokens one at a time; None when none of the first
        `GRAMMAR_PROBES` is allowed (then the chain applies the grammar to the whole
        vocabulary, as before).

        Applying a JSON-schema grammar to all 49k tokens costs about 6 ms per token on
        this CPU — more than a whole batched decode step of 16 sequences — while asking
        it about one token costs microseconds. Same token as the chain: greedy picks the
        highest logit among the allowed tokens, the lowest id among equals; the probes go
        in that order (logit descending, id ascending), and a token tied with the last
        probed logit falls back to the chain (a lower id of the same logit may lie outside
        the probes). The chain then accepts the token (the grammar advances)."""
        lib = self._lib
        if GRAMMAR_PROBES <= 0:
            return None
        n_vocab = self._n_vocab
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(self.ctx, row), shape=(n_vocab,))
        k = min(GRAMMAR_PROBES, n_vocab)
        top = np.argpartition(-logits, k - 1)[:k]
        top = top[np.lexsort((top, -logits[top]))]
        floor = float(logits[top[-1]])
        cell = self._probe_cell
        array = self._probe_array
        for token in top.tolist():
            value = float(logits[token])
            if value <= floor and k < n_vocab:
                return None
            cell.id, cell.logit, cell.p = token, value, 0.0
            array.size, array.selected, array.sorted = 1, -1, False
            lib.llama_sampler_apply(slot.grammar, ctypes.byref(array))
            if math.isfinite(cell.logit):
                lib.llama_sampler_accept(slot.sampler, token)
                self.stats["grammar_fast"] += 1
                return token
        return None

    def _free_sampler(self, slot: _Slot) -> None:
        if slot.sampler is not None:
            self._lib.llama_sampler_free(slot.sampler)
            slot.sampler = None
        slot.grammar = None

    def _result_of_empty(self, item: _Item) -> dict[str, Any]:
        return {
            "text": "",
            "tokens_in": len(item.tokens or []),
            "tokens_out": 0,
            "latency_s": 0.0,
            "finish_reason": "length",
            "prompt_mode": self.generator.prompt_mode,
        }


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n])
    y = np.asarray(b[:n])
    diff = np.nonzero(x != y)[0]
    return int(diff[0]) if len(diff) else n


def _chunk_sizes(n: int, limit: int) -> list[int]:
    """`n` ≥ 2 tokens in chunks of 2..limit (never one token: see the module docstring)."""
    if n <= 0:
        return []
    sizes = [limit] * (n // limit)
    rest = n - limit * len(sizes)
    if rest:
        sizes.append(rest)
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes[-2] -= 1
        sizes[-1] = 2
    return sizes
