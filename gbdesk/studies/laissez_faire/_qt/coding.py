"""Laissez-Faire stereotype coding view: the story with its identity-proxy terms and its
characters' names highlighted, the paper's codebook as number keys."""

from __future__ import annotations

import re

from gbdesk.people.coding import CodingItem
from gbdesk.studies.laissez_faire.characters import characters_from_data, first_name
from gbdesk.studies.laissez_faire.probe import load_identity_terms, term_pattern
from gbdesk.support.guards import html_text
from gbdesk.ui.coding_views import CodingView
from gbdesk.ui.review_views import highlight
from gbdesk.ui.theme import MUTED

TERM_COLOR = "#7e22ce"
NAME_COLOR = "#1f5fbf"


def story_spans(item: CodingItem) -> list[list]:
    """[start, end, kind] of every identity-proxy term ("term") and every occurrence of a
    character's name or first name ("name:name", drawn solid), without overlaps."""
    text = item.response or ""
    spans: list[list] = []
    for terms in load_identity_terms().values():
        for term in terms:
            spans += [[m.start(), m.end(), "term"] for m in term_pattern(term).finditer(text)]
    for ch in characters_from_data(item.label_data):
        for name in {ch.name, first_name(ch.name)} - {None, ""}:
            pattern = re.compile(r"(?<!\w)" + re.escape(str(name)) + r"(?!\w)")
            spans += [[m.start(), m.end(), "name:name"] for m in pattern.finditer(text)]
    kept: list[list] = []
    for span in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


class StoryCodingView(CodingView):
    """A story to code for stereotypes (paper §3.3): identity terms in purple, names in
    blue; the header says which selection drew it."""

    def story_html(self, item: CodingItem) -> str:
        return highlight(
            item.response, story_spans(item), {"term": TERM_COLOR, "name:name": NAME_COLOR}
        )

    def header_html(self, item: CodingItem) -> str:
        names = [
            f"{html_text(ch.role)}: {html_text(ch.name)}"
            for ch in characters_from_data(item.label_data)
            if ch.name
        ]
        meta = item.metadata
        return (
            super().header_html(item)
            + f"<br><span style='color:{MUTED}'>{html_text(str(meta.get('domain', '')))}, "
            f"{html_text(str(meta.get('condition', '')))} · characters: "
            f"{'; '.join(names) or 'none named'} · "
            f"<span style='color:{TERM_COLOR}'>identity terms</span> and "
            f"<span style='color:{NAME_COLOR}'>names</span> highlighted</span>"
        )
