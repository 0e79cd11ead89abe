"""Batched sentence scoring (log-likelihood, perplexity) on llama.cpp's low-level API.

Imported only inside the worker process (`llama_worker`); no Qt, no gbdesk state.

What is computed
----------------
For a text, ``tokens = [BOS] + tokenize(text, add_bos=False, special=False)`` and every
token after the first is scored with the full softmax over the vocabulary::

    logprob_sum = sum_{i>=1} log P(tok_i | tok_<i)      (natural log)
    n_tokens    = len(tokens) - 1
    PPL         = exp(-logprob_sum / n_tokens)

which is HuggingFace's ``exp(model(ids, labels=ids).loss)`` for a BOS-prefixed input (the
`evaluate` perplexity metric prepends BOS the same way). BOS is prepended whenever the
vocabulary has one (``llama_vocab_bos() != -1``), even if the GGUF says not to add it
for chat prompts (SmolLM2: BOS ``<|im_start|>``, add_bos false). A model without a BOS
token gets no BOS: its first text token is then the context and is not scored
(``n_tokens = len(tokenize(text)) - 1``). Text is tokenized as plain text: special-token
strings inside it are not parsed.

How it is batched
-----------------
The texts of one call are put into a token trie. A trie node is evaluated once, in one
cell of a unified KV cache, with the sequence ids of every text that passes through it
(``batch.n_seq_id[i] > 1``), so a shared prefix ("My name is Adebayo, I", shared by 730
association-test sentences) costs its tokens once per decode group. Only nodes with children
are decoded, each with ``logits = 1``: its logits row scores every child token (a
sentence's last token is a target only and never decoded). Sequence ids are given to the
decoded nodes whose children are all leaves, in depth-first order, so every node's ids
form a contiguous range. Texts are packed greedily, in input order, into groups of at
most `n_batch` decoded tokens and `n_seq_max` texts; a group is one ``llama_decode``
call (llama.cpp splits it into ubatches of `n_ubatch`), after which the KV cache is
cleared. A single text longer than `n_batch` forms a group of its own, decoded in
slices of `n_batch` (the context grows to hold it, up to the model's training context).
Log-softmax runs in numpy, in float64, on a zero-copy view of llama.cpp's float32 logits
buffer (64 rows at a time); the target tokens' logits are picked by fancy indexing: no
Python loop over the vocabulary. On association-test sentences in their natural order a
sentence costs 2.0 decoded tokens instead of the 10.2 of one-at-a-time evaluation; the
same batches without prefix sharing decode 10.0 tokens per sentence and score 22
sentences/s instead of 95 (CPU time, 730 sentences of one name).

Settings, and why (measured on SmolLM2-135M-Instruct Q4_1, 2 cores, AVX-512)
--------------------------------------------------------------------------
This quantized model is numerically touchy: a 1-ulp difference in one attention weight
of the first layer grows, over 30 layers, into logit differences of up to ~0.8 and
logprob_sum differences of up to ~0.4 nats per sentence (most likely through the int8
rounding of activations for the quantized matmuls). So scores equal one-at-a-time
scoring only if every token gets *bit-identical* arithmetic whatever shares its batch,
and llama.cpp's CPU attention kernels differ in that:

* flash attention off (llama-cpp-python's default): the softmax sums exponentials in
  8/16-lane SIMD groups over the KV cells, so a token's result depends on *which cells*
  its sentence occupies. Shared-prefix batches then differ from one-at-a-time scoring by
  up to 0.38 nats per sentence (median 0, 90th percentile 0.08).
* flash attention on, ubatch >= 64 tokens: the tiled kernel (64-cell KV tiles) is also
  layout dependent: differences up to 1.45 nats.
* flash attention on, ubatch < 64 tokens: the one-chunk kernel walks the unmasked cells
  one by one in cell order, so the result depends only on the sentence's own tokens.
  (llama.cpp casts an f32 KV cache to f16 for flash attention: the KV type changes
  nothing here but memory.)

gbdesk therefore scores with **flash attention on, f16 KV cache, n_ubatch 48** (below the
64-row tile, ggml's compile-time GGML_FA_TILE_Q; tests/engine/test_scoring.py fails should a
llama.cpp update change the kernel choice) and n_threads = the worker's thread count (2
here). The logits are then bit-identical to one-at-a-time evaluation with the same
settings (`Llama(flash_attn=True)`), for any batch composition, n_batch (16 to 1024
tried), n_ubatch below 64 or thread count (1 to 3): scores agree to 3e-14 nats per
sentence (float64 summation order), so a text's score does not depend on its chunk.
Speed does not suffer: in one run flash attention off/on scored 64/71 sentences/s. By
CPU time on one association-test name (2,190 sentences), n_ubatch 48 scores 111 sentences/s,
32 and 63 101-104, 16 is ~25 % slower.

Accuracy. Against llama-cpp-python's *default* arithmetic (flash attention off)
one-at-a-time, scores differ by a median of 0.15-0.3 and at most 1.2-1.6 nats per
sentence (PPL up to ~16 %). Neither is clearly more accurate: against an exact float64
forward pass (the GGUF's dequantized weights in numpy) on 360 association-test sentences, every
llama.cpp variant is off by a median of ~0.35 nats per sentence (default 0.347, flash
attention 0.365, f32 KV cache without flash attention 0.352; max 1.2-1.6): llama.cpp's
reduced precision (int8 activations in the quantized matmuls, f16 K/V, float32), and the
mean log-PPL of a name × template (40
sentences) by at most 0.060 (default) and 0.084 (flash attention) nats per token. Compare
scores only between runs made with the same settings (`BatchScorer.settings()`, stored
in the engine info).

n_batch (tokens per decode group, also the KV size): 512. With n_seq_max 256 (llama.cpp's
maximum) a group holds ~250 association-test sentences (~500 tokens), so 1024 changes nothing;
256 decodes 3 % more tokens (prefixes re-evaluated per group) at the same speed.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

DEFAULT_N_BATCH = 512
DEFAULT_N_UBATCH = 48  # below ggml's 64-row flash-attention tile: the exact one-chunk kernel
DEFAULT_N_SEQ_MAX = 256  # llama_max_parallel_sequences() in llama.cpp
DEFAULT_MAX_LOGITS_BYTES = 128 << 20  # caps outputs per decode for large vocabularies
_LSE_BLOCK = 64  # logits rows per numpy log-sum-exp step (bounds the temporary)


class _Node:
    """A trie node: one token at one position, shared by every text through it."""

    __slots__ = ("children", "depth", "index", "parent", "row", "token")

    def __init__(self, token: int, depth: int, parent: _Node | None, index: int):
        self.token = token
        self.depth = depth
        self.parent = parent
        self.index = index
        self.children: dict[int, _Node] = {}
        self.row = -1  # position in the decode order (= logits row), -1 if not decoded


class BatchScorer:
    """Scores texts on a `llama_cpp.Llama`'s model, in a scoring context of its own.

    The context shares the model's weights (only the KV cache and compute buffers are
    new). Call `close()` before the `Llama` is freed. `n_batch` is the decoded tokens per
    ``llama_decode`` call (lowered so that its logits fit in `max_logits_bytes`);
    `flash_attn`, `n_ubatch` < 64 and the default f16 KV cache give batch-invariant
    scores (module docstring); `kv_f32` only matters without flash attention.
    """

    def __init__(
        self,
        llm: Any,
        *,
        n_threads: int = 2,
        n_batch: int = DEFAULT_N_BATCH,
        n_ubatch: int = DEFAULT_N_UBATCH,
        n_seq_max: int = DEFAULT_N_SEQ_MAX,
        flash_attn: bool = True,
        kv_f32: bool = False,
        max_logits_bytes: int = DEFAULT_MAX_LOGITS_BYTES,
    ):
        import llama_cpp

        self._lib = llama_cpp
        self.llm = llm
        vocab = llm._model.vocab
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        bos = int(llama_cpp.llama_vocab_bos(vocab))
        self.bos: int | None = bos if bos >= 0 else None
        max_outputs = max(1, max_logits_bytes // (4 * self.n_vocab))
        self.n_batch = max(1, min(int(n_batch), max_outputs))
        self.n_ubatch = max(1, min(int(n_ubatch), self.n_batch))
        # a sequence id per decoded leaf: never more than the tokens of a decode call
        self.n_seq_max = max(
            1, min(int(n_seq_max), self.n_batch, llama_cpp.llama_max_parallel_sequences())
        )
        self.n_threads = int(n_threads)
        self.flash_attn = bool(flash_attn)
        self.kv_f32 = bool(kv_f32)

        self.n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(llm._model.model))
        self.ctx: Any = None
        self._batch: Any = None
        self._open_context(self.n_batch)
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, self.n_seq_max)
        n = self.n_batch
        self._b_token = np.ctypeslib.as_array(self._batch.token, shape=(n,))
        self._b_pos = np.ctypeslib.as_array(self._batch.pos, shape=(n,))
        self._b_n_seq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(n,))
        self._b_logits = np.ctypeslib.as_array(self._batch.logits, shape=(n,))
        self._b_seq_ptrs = [
            ctypes.cast(self._batch.seq_id[i], ctypes.c_void_p).value for i in range(n)
        ]
        self._seq_range = np.arange(self.n_seq_max, dtype=np.int32)
        self.decode_calls = 0
        self.decoded_tokens = 0

    def _open_context(self, n_ctx: int) -> None:
        """(Re)create the scoring context with room for `n_ctx` decoded tokens."""
        lib = self._lib
        if self.ctx is not None:
            lib.llama_free(self.ctx)
            self.ctx = None
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx  # one decode group at a time lives in the KV cache
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_ubatch
        params.n_seq_max = self.n_seq_max
        params.n_outputs_max = self.n_batch
        params.n_outputs_max_per_seq = 0  # a sequence has one output per decoded token
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        params.kv_unified = True  # required for tokens that belong to several sequences
        params.flash_attn_type = (
            lib.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if self.flash_attn
            else lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        if self.kv_f32:
            params.type_k = lib.GGML_TYPE_F32
            params.type_v = lib.GGML_TYPE_F32
        params.no_perf = True
        self.ctx = lib.llama_init_from_model(self.llm._model.model, params)
        if not self.ctx:
            self.ctx = None
            raise RuntimeError("llama.cpp could not create the scoring context")
        self.n_ctx = int(lib.llama_n_ctx(self.ctx))
        self._memory = lib.llama_get_memory(self.ctx)

    # -- public ---------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The settings that determine the numbers (store them with the scores)."""
        return {
            "flash_attn": self.flash_attn,
            "kv_type": "f32" if self.kv_f32 else "f16",
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "n_seq_max": self.n_seq_max,
            "n_threads": self.n_threads,
            "bos": self.bos is not None,
        }

    def tokens(self, text: str) -> list[int]:
        """``[BOS] + tokenize(text)``; the first token is context, the rest are scored."""
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings, not {type(text).__name__}")
        if not text:
            body: list[int] = []
        else:
            body = list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
        return ([self.bos] if self.bos is not None else []) + body

    def score(self, texts: list[str]) -> list[tuple[int, float]]:
        """``(n_tokens, logprob_sum)`` for every text, in order."""
        if self.ctx is None or self._batch is None:
            raise RuntimeError("the scorer is closed")
        token_lists = [self.tokens(t) for t in texts]
        results: list[tuple[int, float]] = [(max(0, len(t) - 1), 0.0) for t in token_lists]
        for tokens in token_lists:
            if len(tokens) - 1 > self.n_ctx_train > 0:
                raise ValueError(
                    f"a text has {len(tokens)} tokens, more than the model's training "
                    f"context ({self.n_ctx_train})"
                )
        group = _Group()
        for index, tokens in enumerate(token_lists):
            if len(tokens) < 2:
                continue  # nothing to score
            cost = group.added_decoded(tokens)
            if group.texts and (
                group.decoded + cost > self.n_batch or len(group.texts) >= self.n_seq_max
            ):
                self._score_group(group, token_lists, results)
                group = _Group()
                cost = group.added_decoded(tokens)
            group.add(index, tokens, cost)  # a text longer than n_batch: a group of its own
        if group.texts:
            self._score_group(group, token_lists, results)
        return results

    def close(self) -> None:
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            self._lib.llama_free(self.ctx)
            self.ctx = None

    def __enter__(self) -> BatchScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- decoding -----------------------------------------------------------------------
    def _score_group(
        self, group: _Group, token_lists: list[list[int]], results: list[tuple[int, float]]
    ) -> None:
        roots = group.roots
        # depth-first order of the decoded nodes (those with children); every node's
        # sequence ids are the contiguous range of decoded "leaves" in its subtree
        order: list[_Node] = []
        seq_lo: list[int] = []
        seq_hi: list[int] = []
        n_seqs = 0
        stack: list[tuple[_Node, bool]] = [(n, False) for n in reversed(roots.values())]
        while stack:
            node, done = stack.pop()
            if not node.children:
                continue
            if done:
                row = node.row
                if seq_lo[row] == n_seqs:  # no decoded child: a sequence of its own
                    n_seqs += 1
                seq_hi[row] = n_seqs
                continue
            node.row = len(order)
            order.append(node)
            seq_lo.append(n_seqs)
            seq_hi.append(n_seqs)
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children.values()))
        n = len(order)
        assert n_seqs <= self.n_seq_max
        if n > self.n_ctx:  # one text longer than n_batch: make room for it
            self._open_context(-(-n // 256) * 256)

        nodes = group.nodes
        child_idx = [node.index for node in nodes if node.parent is not None]
        p_rows = np.fromiter(
            (nodes[i].parent.row for i in child_idx),  # type: ignore[union-attr]
            dtype=np.int64,
            count=len(child_idx),
        )
        c_tok = np.fromiter(
            (nodes[i].token for i in child_idx), dtype=np.int64, count=len(child_idx)
        )
        edge_lp = np.empty(len(child_idx), dtype=np.float64)
        tokens = np.fromiter((node.token for node in order), dtype=np.int32, count=n)
        positions = np.fromiter((node.depth for node in order), dtype=np.int32, count=n)
        counts = np.asarray(seq_hi, dtype=np.int32) - np.asarray(seq_lo, dtype=np.int32)

        lib = self._lib
        lib.llama_memory_clear(self._memory, False)
        try:
            # DFS order puts every node after its ancestors, so slices of n_batch tokens
            # (only a text longer than n_batch needs more than one) decode in order
            for a in range(0, n, self.n_batch):
                b = min(n, a + self.n_batch)
                logits = self._decode(a, b, tokens, positions, counts, seq_lo)
                lse = _log_sum_exp(logits)
                sel = np.nonzero((p_rows >= a) & (p_rows < b))[0]
                rows = p_rows[sel] - a
                edge_lp[sel] = logits[rows, c_tok[sel]].astype(np.float64) - lse[rows]
        finally:
            lib.llama_memory_clear(self._memory, False)
        # running sums along the paths; a parent is always created before its children
        cum = [0.0] * len(nodes)
        for i, lp in zip(child_idx, edge_lp.tolist(), strict=True):
            cum[i] = cum[nodes[i].parent.index] + lp  # type: ignore[union-attr]
        for i, end in zip(group.texts, group.ends, strict=True):
            results[i] = (len(token_lists[i]) - 1, cum[end.index])

    def _decode(
        self,
        a: int,
        b: int,
        tokens: np.ndarray,
        positions: np.ndarray,
        counts: np.ndarray,
        seq_lo: list[int],
    ) -> np.ndarray:
        """Decode rows [a, b) of a group, all with logits; a zero-copy view of them."""
        m = b - a
        self._b_token[:m] = tokens[a:b]
        self._b_pos[:m] = positions[a:b]
        self._b_n_seq[:m] = counts[a:b]
        self._b_logits[:m] = 1
        seq_range = self._seq_range
        for k in range(m):
            lo = seq_lo[a + k]
            ctypes.memmove(self._b_seq_ptrs[k], seq_range[lo:].ctypes.data, 4 * int(counts[a + k]))
        self._batch.n_tokens = m
        rc = self._lib.llama_decode(self.ctx, self._batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with status {rc}")
        self.decode_calls += 1
        self.decoded_tokens += m
        return np.ctypeslib.as_array(self._lib.llama_get_logits(self.ctx), shape=(m, self.n_vocab))


def _log_sum_exp(logits: np.ndarray) -> np.ndarray:
    """Row-wise log(sum(exp(row))) in float64, max-shifted; `_LSE_BLOCK` rows at a time."""
    out = np.empty(len(logits), dtype=np.float64)
    for a in range(0, len(logits), _LSE_BLOCK):
        rows = logits[a : a + _LSE_BLOCK].astype(np.float64)
        peak = rows.max(axis=1)
        rows -= peak[:, None]
        np.exp(rows, out=rows)
        out[a : a + _LSE_BLOCK] = np.log(rows.sum(axis=1)) + peak
    return out


class _Group:
    """The texts of one decode group and their token trie."""

    def __init__(self) -> None:
        self.roots: dict[int, _Node] = {}
        self.nodes: list[_Node] = []  # in creation order: parents before children
        self.texts: list[int] = []  # indices into the caller's list
        self.ends: list[_Node] = []  # each text's last node
        self.decoded = 0  # nodes with children: the tokens the group decodes

    def added_decoded(self, tokens: list[int]) -> int:
        """How many more tokens the group decodes once `tokens` is in its trie."""
        level, last, matched = self.roots, None, 0
        for token in tokens:
            node = level.get(token)
            if node is None:
                break
            last, level, matched = node, node.children, matched + 1
        if matched == len(tokens):
            return 0
        # the new nodes except the final one get children, as may the last shared node
        return (1 if last is not None and not last.children else 0) + len(tokens) - matched - 1

    def add(self, index: int, tokens: list[int], cost: int) -> None:
        level, parent, node = self.roots, None, None
        for depth, token in enumerate(tokens):
            node = level.get(token)
            if node is None:
                node = _Node(token, depth, parent, len(self.nodes))
                self.nodes.append(node)
                level[token] = node
            parent, level = node, node.children
        assert node is not None
        self.texts.append(index)
        self.ends.append(node)
        self.decoded += cost
