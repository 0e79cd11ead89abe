"""Batched generation of a fixed list of requests (`generate_batch`).

Imported only inside the worker process (`llama_worker`); no Qt, no gbdesk state.

Since the continuous engine (`gbdesk.engine.continuous`) this is a thin wrapper: all
requests of a call are queued at once in a `ContinuousBatcher` with one slot each, and
the results come back in request order. Texts therefore equal `generate_stream`'s for
the same request and seed (batch-independent), grammar-constrained requests are batched
too, and a sequence left alone at the end of a batch keeps its arithmetic.

The earlier implementation (one unified KV cache per call) was not batch-independent in
one case: once the last live sequence ran alone with 512 or more KV cells in view, ggml
switched to its split-KV attention kernel and its text could differ from the same request
in another batch (seen on a 420-token generation). Texts of shorter generations are the
same as before.
"""

from __future__ import annotations

from typing import Any

from gbdesk.engine.continuous import ContinuousBatcher
from gbdesk.engine.scoring import DEFAULT_N_UBATCH


class BatchGenerator:
    """`generate(requests)` → results in order, on the worker's `LlamaGenerator`."""

    def __init__(self, generator: Any, *, n_threads: int = 2, n_ubatch: int = DEFAULT_N_UBATCH):
        self.generator = generator
        self.n_threads = int(n_threads)
        self.n_ubatch = int(n_ubatch)
        self._batcher: ContinuousBatcher | None = None

    def settings(self) -> dict[str, Any]:
        if self._batcher is not None:
            return self._batcher.settings()
        return {"flash_attn": True, "kv_type": "f16", "kv_unified": False,
                "n_ubatch": self.n_ubatch, "n_threads": self.n_threads}  # fmt: skip

    def generate(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not requests:
            return []
        slots = ContinuousBatcher.clamp_slots(len(requests))
        if self._batcher is None or self._batcher.slots != slots:
            self.close()
            self._batcher = ContinuousBatcher(
                self.generator, slots=slots, n_threads=self.n_threads, n_ubatch=self.n_ubatch
            )
        else:
            self._batcher.reset()
        return self._batcher.generate_all(requests)

    def close(self) -> None:
        if self._batcher is not None:
            self._batcher.close()
            self._batcher = None
