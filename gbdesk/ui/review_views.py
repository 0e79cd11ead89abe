"""Review views: how an attempt and its evidence are shown to a reviewer.

A probe names its own `ReviewView` subclass in `Review.view` (a study's private
`_qt` package); probes without one get `GenericReviewView`, which highlights the
evidence spans stored with the automatic label.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QTextBrowser, QVBoxLayout, QWidget

from gbdesk.contract import Probe
from gbdesk.contract.running import view_class
from gbdesk.people.review import ReviewItem
from gbdesk.support.guards import html_text
from gbdesk.ui.theme import MUTED


def tint(color: str, strength: float = 0.14) -> str:
    """`#rrggbb` blended into white — a light background for text in that colour. (Qt
    reads 8-digit hex as #AARRGGBB, so CSS's #rrggbbaa would give the wrong colour.)"""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * strength):02x}" for c in (r, g, b))


def highlight(text: str, spans: list[list[Any]], colors: dict[str, str]) -> str:
    """HTML of `text` with each [start, end, kind] or [start, end] span coloured (kinds
    ending in ":name" drawn solid, others tinted; no kind: the muted colour); everything
    escaped."""
    out, pos = [], 0
    for span in sorted(spans, key=lambda s: (s[0], s[1])):
        start, end = span[0], span[1]
        kind = span[2] if len(span) > 2 else None
        if start < pos or end > len(text):
            continue  # overlapping or stale evidence: skip rather than garble the text
        out.append(html_text(text[pos:start]))
        color = colors.get(kind, MUTED)
        style = (
            f"background:{color}; color:white"  # a name: solid
            if str(kind).endswith(":name")
            else f"background:{tint(color)}; color:{color}"
        )
        out.append(
            f"<span style='{style}; font-weight:bold; border-bottom:2px solid {color}'>"
            f"{html_text(text[start:end])}</span>"
        )
        pos = end
    out.append(html_text(text[pos:]))
    return "".join(out).replace("\n", "<br>")


class ReviewView(QWidget):
    """Base class: shows one attempt; the pane handles labels and navigation."""

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        raise NotImplementedError

    def set_reviewer(self, name: str) -> None:
        """Who is reviewing (the pane's "Reviewer"), before each `show_item`: views where
        several people label the same attempt independently show that person's own label."""


class TextReviewView(ReviewView):
    """A header line over a rich-text browser (subclasses fill both)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.text, 1)

    def show_empty(self) -> None:
        self.header.setText("")
        self.text.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")


class GenericReviewView(TextReviewView):
    """The prompt and the response with the automatic label's evidence highlighted (for
    probes without a view of their own)."""

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.show_empty()
            return
        meta = ", ".join(f"{k}: {v}" for k, v in item.metadata.items())
        self.header.setText(
            f"<b>{html_text(item.item)}</b>, attempt {item.attempt + 1} "
            f"<span style='color:{MUTED}'>({html_text(meta)})</span><br>"
            f"Automatic label: <b>{html_text(item.auto_label)}</b>"
        )
        self.text.setHtml(
            f"<p style='color:{MUTED}'><b>Prompt:</b> {html_text(item.prompt)}</p><hr>"
            f"<p style='font-size:12pt; line-height:140%'>"
            f"{highlight(item.response, item.evidence, {})}</p>"
        )


def review_view_for(probe: Probe) -> type[ReviewView]:
    """The probe's own review view (`Review.view` of its capabilities), or the generic one."""
    return view_class(probe, probe.capabilities.review.view) or GenericReviewView
