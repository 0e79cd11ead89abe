"""The PDF's layout basics: its style sheet, the escaping of every outside text (`e`,
`_label`), the glyph check (`drawable`), the document being built (`_Doc`) and its
printing on A4 pages (`_print`, the data's digest attached)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, Qt, QUrl
from PySide6.QtGui import (
    QFont,
    QFontMetrics,
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPdfWriter,
    QTextDocument,
)

from gbdesk.report.content import ReportData
from gbdesk.support.atomic import check_pdf, write_bytes
from gbdesk.support.errors import UserError
from gbdesk.support.format import short_name
from gbdesk.support.guards import html_text, visible_controls

CSS = """
body { font-family: 'DejaVu Sans', sans-serif; font-size: 9pt; color: #111827; }
h1 { font-size: 18pt; margin-bottom: 2px; }
h2 { font-size: 13pt; margin-top: 14px; border-bottom: 1px solid #d1d5db; }
h3 { font-size: 10.5pt; margin-top: 10px; }
table { border-collapse: collapse; }
td, th { padding: 3px 5px; border: 1px solid #d1d5db; vertical-align: top; }
th { background: #f3f4f6; text-align: left; }
.muted { color: #6b7280; }
.notice { color: #92400e; }
.mono { font-family: 'DejaVu Sans Mono', monospace; font-size: 7.5pt; }
td.d, th.d { font-size: 7.5pt; padding: 2px 3px; }
td.m, th.m { font-size: 7pt; padding: 1px 3px; }
"""


def ensure_gui_app() -> QGuiApplication:
    """Qt needs an application object for fonts; headless runs use the offscreen platform."""
    app = QGuiApplication.instance()
    if app is None:
        if (
            sys.platform.startswith("linux")
            and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY")
        ):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(["gbdesk"])
    return app  # type: ignore[return-value]


#: Longest text the report shows whole; longer ones (a 10 MB response, a model name or a
#: template pasted by mistake) are cut with a note, so one text cannot stall the layout.
MAX_TEXT_CHARS = 3000


def cut(text: str, limit: int = MAX_TEXT_CHARS, full: str = "the CSV export") -> str:
    """`text`, or its first `limit` characters and "… (N characters cut; the full text is
    in <full>)"."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} characters cut; the full text is in {full})"


def e(text: Any, limit: int = MAX_TEXT_CHARS, full: str = "the CSV export") -> str:
    """Text cut to `limit` characters (`cut`), its control and bidirectional formatting
    characters shown as <U+XXXX> (a right-to-left override in a model name would reverse
    the figures after it), characters no installed font can draw (emoji, without an emoji
    font) by their names (`drawable`), HTML-escaped (`guards.html_text`)."""
    # controls first (shown as <U+XXXX>, as in every other view), then what no font draws
    return html_text(drawable(visible_controls(cut(str(text), limit, full))))


def model_name(text: Any) -> str:
    """A model's name for a heading, a header or a finding: cut to `NAME_CHARS` with "…"
    (the appendix has it whole, `content.short_name`), escaped as `e`."""
    return e(short_name(str(text)))


_GLYPHS: dict[int, bool] = {}  # code point → some installed font draws it
_RAW_FONTS: list[Any] = []


def _has_glyph(cp: int) -> bool:
    """Whether the report's font, or any installed font Qt may fall back to, draws `cp`."""
    if cp not in _GLYPHS:
        from PySide6.QtGui import QFontDatabase, QRawFont

        if not _RAW_FONTS:
            first = QRawFont.fromFont(QFont("DejaVu Sans"))
            others = [QRawFont.fromFont(QFont(f)) for f in QFontDatabase.families()]
            _RAW_FONTS.extend([first, *others])
        _GLYPHS[cp] = any(f.isValid() and f.supportsCharacter(cp) for f in _RAW_FONTS)
    return _GLYPHS[cp]


_JOINERS = {0x200D, 0xFE0E, 0xFE0F}  # zero-width joiner, text and emoji presentation


def drawable(text: str) -> str:
    """`text` with every character no installed font draws (an emoji on a machine without
    an emoji font would come out as an empty box) replaced by its name in brackets:
    "[grinning face]"; the joiners of emoji sequences go with them."""
    import unicodedata

    if text.isascii():
        return text
    ensure_gui_app()
    out = []
    for ch in text:
        cp = ord(ch)
        if cp < 0x2000 or ch.isspace():
            out.append(ch)
        elif cp in _JOINERS:
            continue
        elif _has_glyph(cp):
            out.append(ch)
        else:
            out.append(f"[{unicodedata.name(ch, f'U+{cp:04X}').lower()}]")
    return "".join(out)


def _label(text: Any, limit: int = 80) -> str:
    """A chart label on one line, cut with "…" (a chart has no room for a note)."""
    text = str(text)
    short = " ".join(drawable(visible_controls(text[: limit * 4])).split())
    if len(short) > limit or len(text) > limit * 4:
        return short[: limit - 1] + "…"
    return short


# -- document -------------------------------------------------------------------------------
class _Doc:
    def __init__(self) -> None:
        self.doc = QTextDocument()
        self.parts: list[str] = []
        self.images = 0

    def add(self, text: str) -> None:
        self.parts.append(text)

    def image(self, image: QImage, width_pt: int = 480) -> str:
        self.images += 1
        name = f"chart://{self.images}"
        self.doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
        return f"<img src='{name}' width='{width_pt}'>"


def _fit(title: str, font: QFont, width: int) -> str:
    """A chart title cut with "…" to the image's width (a centred title wider than the
    image loses both ends)."""
    return QFontMetrics(font).elidedText(title, Qt.TextElideMode.ElideRight, width - 24)


def _print(data: ReportData, doc: _Doc, out: Path, models: str) -> Path:
    """Lay out and print the document to `out` (whole or not at all)."""
    doc.doc.setDefaultStyleSheet(CSS)
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9)
    font.setFeature(QFont.Tag("liga"), 0)  # a digest or SHA-256 copies as printed ("ff", not "ﬀ")
    doc.doc.setDefaultFont(font)
    doc.doc.setHtml("<html><body>" + "".join(doc.parts) + "</body></html>")
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(_label(f"gbdesk bias audit — {models}", 200))
    writer.setCreator(f"gbdesk {data.app_version}")
    _attach_digest(data, writer)
    writer.setResolution(300)
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4),
            QPageLayout.Orientation.Portrait,
            QMarginsF(16, 14, 16, 14),
            QPageLayout.Unit.Millimeter,
        )
    )
    doc.doc.print_(writer)
    del writer  # ends the PDF (its trailer) in the buffer
    buffer.close()
    data_bytes = bytes(buffer.data().data())
    if not data_bytes:
        raise UserError(f"could not lay out the PDF for {out}")
    return write_bytes(out, data_bytes, check=check_pdf)


def _attach_digest(data: ReportData, writer: QPdfWriter) -> None:
    """The digest of the report's data (`report.digest`) as the PDF's attachment, read back
    by `gbdesk verify` (pypdf: `PdfReader(path).attachments`)."""
    from PySide6.QtCore import QByteArray

    from gbdesk.report.digest import ATTACHMENT

    if data.digest is None:
        return
    audit = data.audit.audit_id if data.audit is not None else None
    manifest = data.digest.manifest_bytes(
        gbdesk=data.app_version, made_at=data.created_at, audit_id=audit
    )
    writer.addFileAttachment(ATTACHMENT, QByteArray(manifest), "application/json")
