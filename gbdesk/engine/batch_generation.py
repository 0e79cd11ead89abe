"""Batched generation: several sequences decoded together, one sequence id each.

Imported only inside the worker process (`llama_worker`); no Qt, no gbdesk state.

Like llama-server's parallel slots, every request of a batch is a sequence of its own
in one unified KV cache: the prompts are decoded first (packed into decode calls of at
most `n_batch` tokens, logits only for each prompt's last token; the prefix all prompts
share, typically the chat template's system turn, is decoded once with every sequence's
id, as `BatchScorer` shares prefixes), then every step
decodes one token for every live sequence in a single ``llama_decode`` call. Each
sequence samples from its own logits row with its own llama.cpp sampler chain, built
like llama-cpp-python's ``Llama.generate`` builds it (top_k, typical 1.0, top_p,
min_p, temp, dist(seed); greedy at temperature 0), so a sequence's random numbers
depend only on its own seed.

Batch independence: the context uses the scoring context's settings (flash attention,
f16 KV cache, n_ubatch below ggml's 64-row flash-attention tile; see
`gbdesk.engine.scoring`), under which a token's arithmetic depends only on its own
sequence's tokens, never on what else shares the decode call or where its KV cells are.
KV cells are never freed during a call (the cache is cleared at its end), so every
sequence's cells stay in position order. The same request and seed therefore give the
same text whatever the batch holds, and in whatever order. The texts are *not* those of
`LlamaGenerator.generate`, which runs in the main context (flash attention off): the
arithmetic differs, and this model family is sensitive to it.

Prompts are formatted exactly as `LlamaGenerator.prompt_tokens` formats them, and stop
strings, end-of-generation tokens and max_tokens are handled as in
`LlamaGenerator.generate`. Requests with a json_schema (grammar-constrained) are passed
to `LlamaGenerator.generate` one at a time.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import numpy as np

from gbdesk.engine.scoring import DEFAULT_N_UBATCH

DEFAULT_N_BATCH = 512
_CTX_ROUND = 256


class _Seq:
    __slots__ = (
        "completion",
        "done",
        "finish_reason",
        "index",
        "latency",
        "max_tokens",
        "n_past",
        "sampler",
        "stop_bytes",
        "text_bytes",
        "tokens",
    )

    def __init__(self, index: int, tokens: list[int], stops: list[str], max_tokens: int):
        self.index = index
        self.tokens = tokens
        self.stop_bytes = [s.encode("utf-8") for s in stops]
        self.max_tokens = max_tokens
        self.completion: list[int] = []
        self.text_bytes = b""
        self.finish_reason = "length"
        self.done = max_tokens <= 0
        self.n_past = len(tokens)
        self.sampler: Any = None
        self.latency = 0.0


class BatchGenerator:
    """Generates several requests at once in a context of its own on the generator's model.

    `generator` is the worker's `LlamaGenerator` (prompt formatting, the model, and the
    fallback for grammar-constrained requests). Call `close()` before the model is freed.
    """

    def __init__(
        self,
        generator: Any,
        *,
        n_threads: int = 2,
        n_batch: int = DEFAULT_N_BATCH,
        n_ubatch: int = DEFAULT_N_UBATCH,
    ):
        import llama_cpp

        self._lib = llama_cpp
        self.generator = generator
        self.llm = generator.llm
        self.vocab = self.llm._model.vocab
        self.n_threads = int(n_threads)
        self.n_batch = int(n_batch)
        self.n_ubatch = max(1, min(int(n_ubatch), self.n_batch))
        self.n_seq_max = 0
        self.n_ctx = 0
        self.ctx: Any = None
        self._memory: Any = None
        self._max_seqs = int(llama_cpp.llama_max_parallel_sequences())
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, self._max_seqs)
        n = self.n_batch
        self._b_token = np.ctypeslib.as_array(self._batch.token, shape=(n,))
        self._b_pos = np.ctypeslib.as_array(self._batch.pos, shape=(n,))
        self._b_n_seq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(n,))
        self._b_logits = np.ctypeslib.as_array(self._batch.logits, shape=(n,))
        int_ptr = ctypes.POINTER(ctypes.c_int32)
        self._b_seq = [
            np.ctypeslib.as_array(
                ctypes.cast(self._batch.seq_id[i], int_ptr), shape=(self._max_seqs,)
            )
            for i in range(n)
        ]
        self._b_n_seq[:] = 1
        self.decode_calls = 0

    # -- context --------------------------------------------------------------------
    def _ensure_context(self, n_seqs: int, n_cells: int) -> None:
        if self.ctx is not None and n_seqs <= self.n_seq_max and n_cells <= self.n_ctx:
            return
        lib = self._lib
        if self.ctx is not None:
            lib.llama_free(self.ctx)
            self.ctx = None
        n_seq_max = max(n_seqs, self.n_seq_max, 1)
        n_seq_max = min(n_seq_max, lib.llama_max_parallel_sequences())
        n_ctx = max(n_cells, self.n_ctx, self.n_batch)
        n_ctx = -(-n_ctx // _CTX_ROUND) * _CTX_ROUND
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_ubatch
        params.n_seq_max = n_seq_max
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        params.kv_unified = True  # one cache; every sequence's cells in position order
        params.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_ENABLED
        params.no_perf = True
        ctx = lib.llama_init_from_model(self.llm._model.model, params)
        if not ctx:
            raise RuntimeError("llama.cpp could not create the batched generation context")
        self.ctx = ctx
        self.n_ctx = int(lib.llama_n_ctx(ctx))
        self.n_seq_max = n_seq_max
        self._memory = lib.llama_get_memory(ctx)

    def settings(self) -> dict[str, Any]:
        return {
            "flash_attn": True,
            "kv_type": "f16",
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "n_threads": self.n_threads,
        }

    def close(self) -> None:
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            self._lib.llama_free(self.ctx)
            self.ctx = None

    # -- generation -----------------------------------------------------------------
    def _sampler(self, request: dict[str, Any]) -> Any:
        lib = self._lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        temp = float(request["temperature"])
        seed = int(request["seed"]) & 0xFFFFFFFF
        if temp < 0.0:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(seed))
        elif temp == 0.0:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        else:
            add = lib.llama_sampler_chain_add
            add(chain, lib.llama_sampler_init_top_k(int(request.get("top_k", 0))))
            add(chain, lib.llama_sampler_init_typical(1.0, 1))
            add(chain, lib.llama_sampler_init_top_p(float(request["top_p"]), 1))
            add(chain, lib.llama_sampler_init_min_p(float(request.get("min_p", 0.0)), 1))
            add(chain, lib.llama_sampler_init_temp(temp))
            add(chain, lib.llama_sampler_init_dist(seed))
        return chain

    def generate(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The results of `requests`, in order (the dicts `LlamaGenerator.generate` returns)."""
        results: list[dict[str, Any] | None] = [None] * len(requests)
        n_ctx_main = self.llm.n_ctx()
        seqs: list[_Seq] = []
        for i, request in enumerate(requests):
            if request.get("json_schema"):
                continue
            tokens, stops = self.generator.prompt_tokens(request["messages"])
            if len(tokens) >= n_ctx_main:
                raise ValueError(
                    f"the prompt has {len(tokens)} tokens but the context holds {n_ctx_main}; "
                    "raise n_ctx or shorten the prompt"
                )
            max_tokens = min(int(request["max_tokens"]), n_ctx_main - len(tokens))
            seqs.append(_Seq(i, list(tokens), stops, max_tokens))
        for a in range(0, len(seqs), self._max_seqs):
            self._run(seqs[a : a + self._max_seqs], requests)
        if seqs:
            mode = self.generator.prompt_mode
            for s in seqs:
                results[s.index] = {
                    "text": s.text_bytes.decode("utf-8", errors="ignore"),
                    "tokens_in": len(s.tokens),
                    "tokens_out": len(s.completion),
                    "latency_s": s.latency,
                    "finish_reason": s.finish_reason,
                    "prompt_mode": mode,
                }
        for i, request in enumerate(requests):
            if results[i] is None:
                results[i] = self.generator.generate(request)
        return results  # type: ignore[return-value]

    def _run(self, seqs: list[_Seq], requests: list[dict[str, Any]]) -> None:
        lib = self._lib
        n_cells = sum(len(s.tokens) + max(0, s.max_tokens) for s in seqs)
        self._ensure_context(len(seqs), n_cells)
        lib.llama_memory_clear(self._memory, True)
        started = time.perf_counter()
        try:
            for s in seqs:
                s.sampler = self._sampler(requests[s.index])
            # prompts: packed into decode calls; each prompt's last token gives logits.
            # The prefix all prompts share (the chat template's) is decoded once, its
            # cells belonging to every sequence; each prompt keeps at least one token.
            shared = self._common_prefix([s.tokens for s in seqs])
            all_ids = np.arange(len(seqs), dtype=np.int32)
            rows = [(t, p, None) for p, t in enumerate(seqs[0].tokens[:shared])]
            for seq_id, s in enumerate(seqs):
                rows.extend((t, p, seq_id) for p, t in enumerate(s.tokens) if p >= shared)
            pending: list[tuple[_Seq, int]] = []  # (sequence, row) to sample after decoding
            m = 0
            for token, pos, seq_id in rows:
                if m == self.n_batch:
                    self._flush(m, pending)
                    m, pending = 0, []
                self._b_token[m] = token
                self._b_pos[m] = pos
                if seq_id is None:
                    self._b_n_seq[m] = len(seqs)
                    self._b_seq[m][: len(seqs)] = all_ids
                    self._b_logits[m] = 0
                else:
                    self._b_n_seq[m] = 1
                    self._b_seq[m][0] = seq_id
                    last = pos == len(seqs[seq_id].tokens) - 1
                    self._b_logits[m] = 1 if last else 0
                    if last:
                        pending.append((seqs[seq_id], m))
                m += 1
            if m:
                self._flush(m, pending)
            # one token per live sequence per step
            while True:
                live = [(seq_id, s) for seq_id, s in enumerate(seqs) if not s.done]
                if not live:
                    break
                for row, (seq_id, s) in enumerate(live):
                    self._b_token[row] = s.completion[-1]
                    self._b_pos[row] = s.n_past
                    self._b_n_seq[row] = 1
                    self._b_seq[row][0] = seq_id
                    self._b_logits[row] = 1
                    s.n_past += 1
                self._decode(len(live))
                for row, (_, s) in enumerate(live):
                    self._take(s, row)
        finally:
            for s in seqs:
                if s.sampler is not None:
                    lib.llama_sampler_free(s.sampler)
                    s.sampler = None
            lib.llama_memory_clear(self._memory, True)
        # latency: the batch's wall time shared out by generated tokens, so that summed
        # latencies are the time spent and tokens / latency sums give the throughput
        elapsed = time.perf_counter() - started
        total = sum(len(s.completion) for s in seqs)
        for s in seqs:
            share = len(s.completion) / total if total else 1 / len(seqs)
            s.latency = elapsed * share

    @staticmethod
    def _common_prefix(token_lists: list[list[int]]) -> int:
        """Tokens every list starts with, leaving each list at least one of its own."""
        n = min(len(t) for t in token_lists) - 1
        first = token_lists[0]
        for tokens in token_lists[1:]:
            k = 0
            while k < n and tokens[k] == first[k]:
                k += 1
            n = k
        return max(0, n)

    def _flush(self, m: int, pending: list[tuple[_Seq, int]]) -> None:
        self._decode(m)
        for s, row in pending:
            if not s.done:
                self._take(s, row)

    def _decode(self, m: int) -> None:
        self._batch.n_tokens = m
        rc = self._lib.llama_decode(self.ctx, self._batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with status {rc}")
        self.decode_calls += 1

    def _take(self, s: _Seq, row: int) -> None:
        """Sample sequence `s` from logits row `row`; apply EOG, stop strings, max_tokens."""
        lib = self._lib
        token = int(lib.llama_sampler_sample(s.sampler, self.ctx, row))
        if lib.llama_vocab_is_eog(self.vocab, token):
            s.finish_reason = "stop"
            s.done = True
            return
        s.completion.append(token)
        text_bytes = self.llm.detokenize(s.completion, prev_tokens=s.tokens)
        hit = next((b for b in s.stop_bytes if b in text_bytes), None)
        if hit is not None:
            s.text_bytes = text_bytes[: text_bytes.index(hit)]
            s.finish_reason = "stop"
            s.done = True
            return
        s.text_bytes = text_bytes
        if len(s.completion) >= s.max_tokens:
            s.done = True
