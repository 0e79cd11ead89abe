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
GlobalBias sentences) costs its tokens once per decode group. Only nodes with children
are decoded, each with ``logits = 1``: its logits row scores every child token (a
sentence's last token is a target only and never decoded). Sequence ids are given to the
decoded nodes whose children are all leaves, in depth-first order, so every node's ids
form a contiguous range. Texts are packed greedily, in input order, into groups of at
most `n_batch` decoded tokens and `n_seq_max` texts; a group is one ``llama_decode``
call (llama.cpp splits it into ubatches of `n_ubatch`), after which the KV cache is
cleared. Log-softmax runs in numpy on a zero-copy view of llama.cpp's logits buffer
(row max in float32, sum of exponentials accumulated in float64).

Settings, and why (measured on SmolLM2-135M-Instruct Q4_1, 2 cores, AVX-512)
--------------------------------------------------------------------------
This quantized model is numerically touchy: a 1-ulp difference in an attention
weight changes the int8 rounding of later activations (Q8_1, for the Q4_1 matmuls), and
after 30 layers a sentence's logprob_sum moves by up to ~0.4 nats. So "the same
numbers as one-at-a-time scoring" only holds if every token gets *bit-identical*
arithmetic whatever else shares its batch. llama.cpp's CPU attention paths differ:

* flash attention off (llama-cpp-python's default): the softmax sums exponentials in
  8/16-lane SIMD groups over the KV cells, so the result depends on *which cells* a
  sentence occupies. Shared-prefix batches then differ from one-at-a-time scoring by up
  to 0.38 nats per sentence (median 0, 90th percentile 0.08).
* flash attention on, ubatch >= 64 tokens: the tiled kernel (64-cell KV tiles) is also
  layout dependent: differences up to 1.45 nats.
* flash attention on, ubatch < 64 tokens: the one-chunk kernel walks the unmasked cells
  one by one in cell order: the result depends only on the sentence's own tokens. With
  an f16 KV cache it accumulates V in f16; with an **f32 KV cache** everything is f32.

gbdesk therefore scores with **flash attention on, f32 K and V cache, n_ubatch 32** (half
the 64-row tile, with room to spare), n_threads = the worker's thread count (2 here):
batched scores equal one-at-a-time scores computed with the same settings to 7e-8
nats per sentence (only the float64 log-softmax rounding differs), for any batch
composition, n_batch or thread count. Speed is the same as with the default attention
(all three variants run at ~70 sentences/s here; n_ubatch 16 is ~25 % slower, 32-63 are
equal). Against llama-cpp-python's *default* arithmetic (flash attention off, f16 KV
cache) one-at-a-time, the scores differ by a median of 0.15 and at most ~1.2 nats per
sentence (PPL up to ~10 %): that is the rounding noise of this quantized model between
two valid kernels, not an error of the batching; the f32 path rounds less (f16 K/V and
f16 attention weights in the default path). Compare scores only between runs made with
the same settings (they are reported in `BatchScorer.settings()`).

n_batch (tokens per decode group, also the KV size): 512 by default; 256 loses some
prefix sharing, 1024 gains little and the one-chunk kernel's per-query scan of the KV
mask grows with the cells in use (see benchmarks/scoring.py).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

DEFAULT_N_BATCH = 512
DEFAULT_N_UBATCH = 32  # below ggml's 64-row flash-attention tile: the exact one-chunk kernel
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
    new). Call `close()` before the `Llama` is freed.
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
        kv_f32: bool = True,
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
        self.n_seq_max = max(1, min(int(n_seq_max), llama_cpp.llama_max_parallel_sequences()))
        self.n_threads = int(n_threads)
        self.flash_attn = bool(flash_attn)
        self.kv_f32 = bool(kv_f32)

        params = llama_cpp.llama_context_default_params()
        params.n_ctx = self.n_batch  # one decode group at a time lives in the KV cache
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_ubatch
        params.n_seq_max = self.n_seq_max
        params.n_outputs_max = self.n_batch
        params.n_outputs_max_per_seq = 0  # a sequence has one output per decoded token
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        params.kv_unified = True  # required for tokens that belong to several sequences
        params.flash_attn_type = (
            llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if self.flash_attn
            else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        if self.kv_f32:
            params.type_k = llama_cpp.GGML_TYPE_F32
            params.type_v = llama_cpp.GGML_TYPE_F32
        params.no_perf = True
        self.ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create the scoring context")
        self._memory = llama_cpp.llama_get_memory(self.ctx)
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
        if self.ctx is None:
            raise RuntimeError("the scorer is closed")
        token_lists = [self.tokens(t) for t in texts]
        results: list[tuple[int, float]] = [(max(0, len(t) - 1), 0.0) for t in token_lists]
        group: list[int] = []
        roots: dict[int, _Node] = {}
        counter = [0]
        decoded = 0
        for index, tokens in enumerate(token_lists):
            if len(tokens) < 2:
                continue  # nothing to score
            if len(tokens) - 1 > self.n_batch:
                raise ValueError(
                    f"a text has {len(tokens)} tokens; the scorer evaluates at most "
                    f"{self.n_batch + 1} per text (raise n_batch)"
                )
            cost = self._added_decoded(roots, tokens)
            if group and (decoded + cost > self.n_batch or len(group) >= self.n_seq_max):
                self._score_group(group, token_lists, results)
                group, roots, counter, decoded = [], {}, [0], 0
                cost = self._added_decoded(roots, tokens)
            self._insert(roots, tokens, counter)
            decoded += cost
            group.append(index)
        if group:
            self._score_group(group, token_lists, results)
        return results

    def close(self) -> None:
        if self.ctx is not None:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self.ctx)
            self.ctx = None

    def __enter__(self) -> BatchScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the trie -----------------------------------------------------------------------
    @staticmethod
    def _added_decoded(roots: dict[int, _Node], tokens: list[int]) -> int:
        """How many more tokens the group decodes once `tokens` is in its trie."""
        level, last, matched = roots, None, 0
        for token in tokens:
            node = level.get(token)
            if node is None:
                break
            last, level, matched = node, node.children, matched + 1
        if matched == len(tokens):
            return 0
        # the new nodes except the final one get children, as may the last shared node
        return (1 if last is not None and not last.children else 0) + len(tokens) - matched - 1

    @staticmethod
    def _insert(roots: dict[int, _Node], tokens: list[int], counter: list[int]) -> _Node:
        level, parent, node = roots, None, None
        for depth, token in enumerate(tokens):
            node = level.get(token)
            if node is None:
                node = _Node(token, depth, parent, counter[0])
                counter[0] += 1
                level[token] = node
            parent, level = node, node.children
        assert node is not None
        return node

    def _score_group(
        self, group: list[int], token_lists: list[list[int]], results: list[tuple[int, float]]
    ) -> None:
        roots: dict[int, _Node] = {}
        counter = [0]
        ends = [self._insert(roots, token_lists[i], counter) for i in group]
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
        assert n_seqs <= self.n_seq_max and len(order) <= self.n_batch

        n = len(order)
        tokens = np.fromiter((node.token for node in order), dtype=np.int32, count=n)
        self._b_token[:n] = tokens
        self._b_pos[:n] = np.fromiter((node.depth for node in order), dtype=np.int32, count=n)
        counts = np.asarray(seq_hi, dtype=np.int32) - np.asarray(seq_lo, dtype=np.int32)
        self._b_n_seq[:n] = counts
        self._b_logits[:n] = 1
        seq_range = self._seq_range
        for row in range(n):
            lo = seq_lo[row]
            ctypes.memmove(self._b_seq_ptrs[row], seq_range[lo:].ctypes.data, 4 * int(counts[row]))
        self._batch.n_tokens = n

        lib = self._lib
        lib.llama_memory_clear(self._memory, False)
        try:
            rc = lib.llama_decode(self.ctx, self._batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed with status {rc}")
            self.decode_calls += 1
            self.decoded_tokens += n
            logits = np.ctypeslib.as_array(lib.llama_get_logits(self.ctx), shape=(n, self.n_vocab))
            lse = np.empty(n, dtype=np.float64)
            for a in range(0, n, _LSE_BLOCK):
                rows = logits[a : a + _LSE_BLOCK]
                peak = rows.max(axis=1)
                total = np.exp(rows - peak[:, None]).sum(axis=1, dtype=np.float64)
                lse[a : a + _LSE_BLOCK] = np.log(total) + peak
            # the log-probability of every trie edge, then running sums along the paths
            nodes: list[_Node] = [None] * counter[0]  # type: ignore[list-item]
            for node in _walk(roots):
                nodes[node.index] = node
            parents = [node.parent for node in nodes]
            has_parent = np.fromiter((p is not None for p in parents), dtype=bool)
            child_idx = np.nonzero(has_parent)[0]
            p_rows = np.fromiter(
                (parents[i].row for i in child_idx),  # type: ignore[union-attr]
                dtype=np.int64,
                count=len(child_idx),
            )
            c_tok = np.fromiter(
                (nodes[i].token for i in child_idx), dtype=np.int64, count=len(child_idx)
            )
            edge_lp = logits[p_rows, c_tok].astype(np.float64) - lse[p_rows]
        finally:
            lib.llama_memory_clear(self._memory, False)
        cum = [0.0] * len(nodes)
        for i, lp in zip(child_idx.tolist(), edge_lp.tolist(), strict=True):
            cum[i] = cum[parents[i].index] + lp  # type: ignore[union-attr]  # parents first
        for i, end in zip(group, ends, strict=True):
            results[i] = (len(token_lists[i]) - 1, cum[end.index])


def _walk(roots: dict[int, _Node]):
    stack = list(roots.values())
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children.values())
