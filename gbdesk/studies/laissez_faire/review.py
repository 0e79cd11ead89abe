"""The Laissez-Faire review queue and raters' agreement: the probe's `Review` and `Ratings`
capabilities (no Qt; the views are in `_qt.views`).

Stories are reviewed least sure first (a character of unsure gender, then unspecified
ones), in a view that shows each character; a reviewer's corrections measure the
extractor as the paper's Table S8 does, and raters agree or disagree per character role
on its gender and its name.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

from gbdesk.contract.capabilities import AccuracyWords, Ratings, Review
from gbdesk.studies.laissez_faire.characters import (
    NO_NAME,
    TOO_LONG,
    character_gender,
    characters_from_data,
)
from gbdesk.studies.laissez_faire.report import character_gender_words, item_title


def review(base: Review) -> Review:
    """Characters of unsure gender first, then unspecified ones (or stories too long to
    label), each story in the character view, with the extractor's confidence and its
    Table S8 quality against the reviewers."""
    return base.with_(
        view="._qt.views:CharacterReviewView",
        filters={"undetected": "Unspecified or unsure gender"},
        category=category,
        undecided=undecided,
        confidence=confidence,
        title=title,
        quality=quality,
        quality_summary=quality_summary,
    )


def ratings(base: Ratings) -> Ratings:
    """Raters compare each character role's gender and name; the extractor's accuracy is
    counted per character."""
    return base.with_(
        kinds=lambda: {"gender": "Character gender", "name": "Character name"},
        units=rated_units,
        label_units=label_units,
        words=AccuracyWords(
            unit="character",
            units="characters",
            right="had name and gender right",
            share="share of characters with name and gender right",
            labeller="extractor",
            stories="stories",
            kinds=(("gender", "gender"), ("name", "name")),
        ),
    )


def undecided(label: str) -> bool:
    """A character of unspecified or unsure gender, or a story too long to label."""
    return "Unspecified" in label or "Unsure" in label or label == TOO_LONG


def category(label: str, data: dict[str, Any]) -> int:
    """0: a character of unsure gender; 1: unspecified (or too long); 2: decided."""
    if "Unsure" in label:
        return 0
    return 1 if "Unspecified" in label or label == TOO_LONG else 2


def confidence(label: str, data: dict[str, Any]) -> float | None:
    """The story's least confident character (the extractor's calibrated confidence)."""
    values = [c.get("confidence") for c in (data or {}).get("characters", [])]
    values = [float(v) for v in values if v is not None]
    return min(values) if values else None


def title(item: Any) -> str:
    """ "Love, power-laden: an American person who instructs friend — subject Elara
    Bard (gender unsure); object Malibu (gender not stated)"."""
    head = item_title(item.item, item.metadata or {})
    data = (item.human_data if item.reviewed else item.auto_data) or {}
    people = []
    for ch in characters_from_data(data):
        name = ch.name or "no name"
        people.append(f"{ch.role} {name} ({character_gender_words(character_gender(ch))})")
    who = "; ".join(people) if people else "no character found"
    return f"{head} — {who}"


def label_units(label: dict[str, Any], metadata: dict[str, Any]) -> dict[Hashable, Any]:
    """Each extracted character (by role) with the extractor's calibrated confidence
    that both its name and its gender are right."""
    return {
        c.get("role"): c.get("confidence") for c in (label.get("data") or {}).get("characters", [])
    }


def rated_units(label: dict[str, Any], metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per character role of the story: its gender (a role without a character is
    "Unspecified", as in the review quality) and its name (lower-cased; "(no name)")."""
    chars = {c.role: c for c in characters_from_data(label.get("data") or {})}
    roles = [r["key"] for r in metadata.get("roles", [])] or list(chars)
    gender, name = {}, {}
    for role in roles:
        ch = chars.get(role)
        gender[role] = character_gender(ch) if ch else "Unspecified"
        name[role] = (_norm_name(ch.name) if ch else None) or NO_NAME
    return {"gender": gender, "name": name}


def quality(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """The paper's Table S8 measures of the automatic characters against the reviewed ones:
    gender and name precision and recall."""
    g_tp = g_pred = g_gold = n_tp = n_pred = n_gold = 0
    for auto, human in pairs:
        auto_chars = {c.role: c for c in characters_from_data(auto.get("data") or {})}
        for gold in characters_from_data(human.get("data") or {}):
            pred = auto_chars.get(gold.role)
            gg = character_gender(gold)
            pg = character_gender(pred) if pred else "Unspecified"
            g_gold += gg != "Unspecified"
            g_pred += pg != "Unspecified"
            g_tp += pg != "Unspecified" and pg == gg
            gn, pn = _norm_name(gold.name), _norm_name(pred.name if pred else None)
            n_gold += gn is not None
            n_pred += pn is not None
            n_tp += pn is not None and pn == gn
    return {
        "gender_precision": g_tp / g_pred if g_pred else math.nan,
        "gender_recall": g_tp / g_gold if g_gold else math.nan,
        "name_precision": n_tp / n_pred if n_pred else math.nan,
        "name_recall": n_tp / n_gold if n_gold else math.nan,
        "characters": g_gold,
    }


def quality_summary(quality: dict[str, Any]) -> str | None:
    """Table S8's measures for the extractor against the reviewers' corrections."""
    if not quality:
        return None

    def pct(x: float) -> str:
        return "—" if x is None or math.isnan(x) else f"{100 * x:.1f} %"

    return (
        f"Against the reviewed characters ({quality['characters']} with a gender): "
        f"gender precision {pct(quality['gender_precision'])}, recall "
        f"{pct(quality['gender_recall'])}; name precision {pct(quality['name_precision'])}, "
        f"recall {pct(quality['name_recall'])} (the paper's Table S8 reports about 98 / 97 "
        "for gender and 98 / 99 for names for its labeler)."
    )


def _norm_name(name: str | None) -> str | None:
    if not name:
        return None
    cleaned = name.strip().strip(".,;:!?\"'").lower()
    return None if not cleaned or cleaned == "unspecified" else cleaned
