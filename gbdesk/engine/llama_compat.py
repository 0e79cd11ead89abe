"""Loading llama.cpp models safely on every CPU.

llama.cpp repacks weights into an AMX buffer on CPUs that advertise Intel AMX
(Sapphire Rapids and later), and its AMX matrix multiplication crashes with SIGSEGV on
some of them as soon as more than one token is decoded at once
(ggml-org/llama.cpp#20824, closed without a fix; seen on this project's machines with
llama-cpp-python 0.3.36). gbdesk therefore loads models without llama.cpp's "extra
buffer types" (AMX, weight repacking) on such CPUs. Elsewhere nothing changes.
Setting ``GBDESK_LLAMA_EXTRA_BUFFERS=1`` (or ``0``) forces them on (or off).

llama-cpp-python's `Llama` has no argument for this model parameter, so `load_llama`
hands it `llama_model_default_params()` with ``use_extra_bufts`` switched off for the
duration of the constructor.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def cpu_has_amx() -> bool:
    """Does this (Linux) CPU advertise AMX tiles? False where it cannot be told."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return "amx_tile" in line.split()
    return False


def use_extra_buffers() -> bool:
    """Whether llama.cpp may use its extra buffer types (AMX, repacked weights)."""
    forced = os.environ.get("GBDESK_LLAMA_EXTRA_BUFFERS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return not cpu_has_amx()


@contextlib.contextmanager
def extra_buffers(enabled: bool) -> Iterator[None]:
    """While active, `Llama(...)` loads with ``use_extra_bufts = enabled``."""
    if enabled:
        yield
        return
    import llama_cpp.llama_cpp as lib

    with _lock:
        original = lib.llama_model_default_params

        def params() -> Any:
            p = original()
            p.use_extra_bufts = False
            return p

        lib.llama_model_default_params = params
        try:
            yield
        finally:
            lib.llama_model_default_params = original


def load_llama(model_path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """`llama_cpp.Llama(model_path, **kwargs)`, without AMX where it is unsafe."""
    import llama_cpp

    enabled = use_extra_buffers()
    if not enabled:
        log.debug("loading %s without llama.cpp's extra buffer types (AMX CPU)", model_path)
    with extra_buffers(enabled):
        return llama_cpp.Llama(model_path=str(model_path), **kwargs)
