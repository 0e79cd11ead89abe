"""Small widgets shared by the panes."""

from __future__ import annotations

import html
from typing import ClassVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from gbdesk.ui.theme import MARK_COLORS, MARK_TEXT


def pane_header(title: str, text: str) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 4)
    heading = QLabel(f"<h2 style='margin:0'>{html.escape(title)}</h2>")
    blurb = QLabel(text)
    blurb.setWordWrap(True)
    blurb.setStyleSheet("color: #4b5563;")
    layout.addWidget(heading)
    layout.addWidget(blurb)
    return box


class Banner(QLabel):
    """An inline message (instead of modal dialogs, which block keyboard flow)."""

    STYLES: ClassVar[dict[str, str]] = {
        "info": "background:#eef2ff; color:#1e3a8a; border:1px solid #c7d2fe;",
        "error": "background:#fdecea; color:#7f1d1d; border:1px solid #f5c2c0;",
        "ok": "background:#e8f5e9; color:#14532d; border:1px solid #bbf7d0;",
        "warn": "background:#fff7e6; color:#7c2d12; border:1px solid #fde68a;",
    }

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setVisible(False)
        self.kind = ""

    def show_message(self, kind: str, text: str, rich: bool = False) -> None:
        self.kind = kind
        self.setStyleSheet(self.STYLES[kind] + " padding:6px; border-radius:4px;")
        self.setText(text if rich else html.escape(text))
        self.setVisible(True)

    def info(self, text: str) -> None:
        self.show_message("info", text)

    def error(self, text: str) -> None:
        self.show_message("error", text)

    def ok(self, text: str) -> None:
        self.show_message("ok", text)

    def warn(self, text: str) -> None:
        self.show_message("warn", text)

    def clear(self) -> None:  # type: ignore[override]
        super().clear()
        self.kind = ""
        self.setVisible(False)


def mark_html(mark: str | None) -> str:
    if not mark:
        return "<span style='color:#6b7280'>—</span>"
    return (
        f"<span style='background:{MARK_COLORS[mark]}; color:white; padding:0 4px; "
        f"font-weight:bold' title='{MARK_TEXT[mark]}'>{mark}</span>"
    )


class Separator(QFrame):
    def __init__(self) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.HLine)
        self.setStyleSheet("color:#e5e7eb")
