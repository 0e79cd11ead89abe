"""What drives a run from outside: pause, resume and cancel, and the backend it runs on
(no Qt)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from gbdesk.engine.base import (
    Backend,
)


class RunControl:
    """Pause, resume and cancel a run from another thread (checked between attempts).

    `cancel(now=True)` also stops the model worker, so a long generation does not have
    to finish first; the attempt in flight is simply not stored.
    """

    def __init__(self) -> None:
        self._running = threading.Event()
        self._running.set()
        self._cancelled = threading.Event()
        self.cancel_now = False  # `cancel(now=True)` was asked
        self._backend: Any = None
        #: answers under way now (the run loops keep it: what a stop waits for, or drops)
        self.under_way = 0

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def cancel(self, now: bool = False) -> None:
        self._cancelled.set()
        self._running.set()
        self.cancel_now = self.cancel_now or now
        if now and self._backend is not None and hasattr(self._backend, "abort"):
            self._backend.abort()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def wait_while_paused(self, on_pause: Callable[[], None] | None = None) -> None:
        if not self._running.is_set() and on_pause is not None:
            on_pause()
        self._running.wait()


class BackendFactory(Protocol):
    def __call__(self, model: dict[str, Any], generation: dict[str, Any]) -> Backend: ...


def llama_backend_factory(
    model: dict[str, Any],
    generation: dict[str, Any],
    *,
    on_wait: Callable[[str], None] | None = None,
) -> Backend:
    """The default factory: llama.cpp for GGUF files, `HttpBackend` for endpoint models
    (`on_wait`: told while the endpoint is silent as it is connected to)."""
    if model.get("kind") == "endpoint":
        return http_backend_factory(model, generation, on_wait=on_wait)
    from gbdesk.engine.llama_backend import LlamaCppBackend

    return LlamaCppBackend(
        model["path"],
        prompt_mode=generation.get("prompt_mode", "auto"),
        batch_size=int(generation.get("batch_size", 1)),  # older runs: one at a time
    )


def http_backend_factory(
    model: dict[str, Any],
    generation: dict[str, Any],
    *,
    on_wait: Callable[[str], None] | None = None,
) -> Backend:
    """An OpenAI-compatible endpoint (model row of kind "endpoint"); probes it first.
    `on_wait(line)`: told while the server is silent (the run loop then takes it over and
    reports it as `Progress.waiting`)."""
    from gbdesk.engine.http import HttpBackend

    return HttpBackend.from_model_row(
        model, prompt_mode=generation.get("prompt_mode", "auto"), on_wait=on_wait
    )
