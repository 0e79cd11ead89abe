"""Streaming a generation's text as it grows (worker process, no llama.cpp).

Shared by the one-at-a-time generator (`llama_worker.LlamaGenerator`) and continuous
batching (`continuous.ContinuousBatcher`) so that both stream exactly the same pieces.
"""

from __future__ import annotations

from collections.abc import Callable


def emit_delta(
    text_bytes: bytes, streamed: int, stop_bytes: list[bytes], emit: Callable[[str], None]
) -> int:
    """Send the newly completed characters, holding back a possible stop prefix."""
    try:
        text = text_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return streamed  # a multi-byte character is still incomplete
    hold = 0
    for stop in stop_bytes:
        stop_text = stop.decode("utf-8", errors="ignore")
        for k in range(min(len(stop_text), len(text)), 0, -1):
            if text.endswith(stop_text[:k]):
                hold = max(hold, k)
                break
    safe = len(text) - hold
    if safe > streamed:
        emit(text[streamed:safe])
        return safe
    return streamed
