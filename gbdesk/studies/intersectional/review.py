"""The Intersectional SDeg review queue and raters' agreement: the probe's `Review` and
`Ratings` capabilities (no Qt; the view is `_qt.views.RoleAnswersView`).

A role is reviewed with its answers; raters agree or disagree on the option chosen per
question.
"""

from __future__ import annotations

from typing import Any

from gbdesk.contract.capabilities import Ratings, Review
from gbdesk.studies.intersectional.report import item_title


def review(base: Review) -> Review:
    """Each role with its answers, titled by its group in words."""
    return base.with_(view="._qt.views:RoleAnswersView", title=title)


def ratings(base: Ratings) -> Ratings:
    """Raters compare the option chosen for each question."""
    return base.with_(kinds=lambda: {"option": "Answer option"}, units=rated_units)


def title(item: Any) -> str:
    """ "old White people, role 3 — answered": the group in words, not its key."""
    who = item_title(item.item, item.metadata or {})
    return f"{who}, role {item.attempt + 1} — {item.effective_label}"


def rated_units(label: dict[str, Any], metadata: dict[str, Any]) -> dict[str, dict]:
    """Per category id (1–16): the option chosen (an unparsed answer is not rated)."""
    answers = (label.get("data") or {}).get("answers") or {}
    return {"option": {str(c): (a or {}).get("option") for c, a in answers.items()}}
