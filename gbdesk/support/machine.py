"""What a test log says about the machine and the engine build (no Qt, no model loaded):
the CPU's name and its cores, and the llama.cpp build inside the installed llama-cpp-python.

Recorded with each run when it starts (`gbdesk.workflows.runs.execution`), so a report
names what the answers were made on, not what is installed when the report is read.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import logging
import platform
from pathlib import Path

log = logging.getLogger(__name__)


@functools.cache
def cpu_name() -> str:
    """The processor's name ("Intel(R) Xeon(R) Platinum 8488C"), else the machine type."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_cores() -> dict[str, int | None]:
    """Logical and physical cores (psutil; None where it cannot tell)."""
    import psutil

    return {"logical": psutil.cpu_count(logical=True), "physical": psutil.cpu_count(logical=False)}


def _library(folder: Path, stem: str) -> Path | None:
    """The shared library `stem` in llama-cpp-python's lib folder, as each OS names it."""
    for pattern in (f"lib{stem}.so", f"lib{stem}.dylib", f"{stem}.dll", f"lib{stem}.so.*"):
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    return None


def _call(lib: Path, name: str) -> str | None:
    try:
        fn = getattr(ctypes.CDLL(str(lib)), name)
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    try:
        value = fn()
    except Exception:  # a foreign build: no version rather than no run
        return None
    return value.decode("utf-8", "replace") if value else None


@functools.cache
def llama_cpp_build() -> str | None:
    """The llama.cpp inside the installed llama-cpp-python, e.g. "llama.cpp 0.5.0-dev, ggml
    0.25.3 (commit 0c1e570)" — read from its shared libraries (`llama_version`,
    `ggml_version`, `ggml_commit`) without importing llama_cpp or loading a model; None
    when llama-cpp-python is not installed or its build says nothing."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "lib"
    if not folder.is_dir():
        return None
    parts = []
    ggml = _library(folder, "ggml-base")
    llama = _library(folder, "llama")
    if llama is not None and (version := _call(llama, "llama_version")):
        parts.append(f"llama.cpp {version}")
    if ggml is not None and (version := _call(ggml, "ggml_version")):
        commit = _call(ggml, "ggml_commit")
        parts.append(f"ggml {version}" + (f" (commit {commit})" if commit else ""))
    if not parts:
        log.info("no llama.cpp version found in %s", folder)
        return None
    return ", ".join(parts)
