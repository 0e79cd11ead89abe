"""Where gbdesk finds its shipped resources and keeps its data."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

import platformdirs

APP_NAME = "gbdesk"


@cache
def resources_dir() -> Path:
    """The shipped data folder, in a source checkout, a wheel or a PyInstaller bundle."""
    here = Path(__file__).resolve().parent.parent  # gbdesk/
    candidates = [
        here / "resources",  # installed wheel (force-included)
        here.parent / "resources",  # source checkout / editable install
    ]
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        candidates.insert(0, Path(frozen) / "resources")
    for candidate in candidates:
        if (candidate / "README.md").is_file():
            return candidate
    raise FileNotFoundError("gbdesk's resources folder is missing from this installation")


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)


def data_dir() -> Path:
    """Per-user data folder (database, added model list)."""
    override = os.environ.get("GBDESK_DATA_DIR")
    path = Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME, False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    override = os.environ.get("GBDESK_DB")
    return Path(override) if override else data_dir() / "gbdesk.sqlite"


def models_dirs() -> list[Path]:
    """Folders scanned for GGUF files: the project's `models/` and the per-user one."""
    dirs = []
    here = Path(__file__).resolve().parent.parent  # gbdesk/
    for candidate in (here.parent / "models", data_dir() / "models"):
        if candidate.is_dir():
            dirs.append(candidate)
    extra = os.environ.get("GBDESK_MODELS_DIR")
    if extra:
        dirs.insert(0, Path(extra))
    return dirs
