"""People validating the stereotypes of a filter run (the paper's §2.5): the
`intersectional_filter` probe's `Labelling` and `Review` capabilities (no Qt; the view is
`_qt.views.StereotypeValidationView`).

Each validator answers, per stereotype, whether it is commonly associated with the group
(yes/no), whether it is exclusive to the group or also applies to broader groups (a/b),
and optionally its category; the filter's own verdict is the automatic label.
"""

from __future__ import annotations

import functools
from typing import Any

from gbdesk.contract.capabilities import Labelling, Review
from gbdesk.contract.running import default_human_label_from_rows
from gbdesk.studies.intersectional.data import human_labels_by_validator
from gbdesk.studies.intersectional.questions import find_category
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import loads_json


def validation_labelling(probe: Any, base: Labelling) -> Labelling:
    """The filter's verdict as the automatic label ("filter/"); validators' decisions as
    "yes/a" text, JSON or rows with common, specific and category."""
    return base.with_(
        source_prefix=lambda: "filter/",
        detector_title=lambda params: "the model's filter verdict",
        human_label=human_label,
        from_rows=functools.partial(human_label_from_rows, probe),
        labels_differ=labels_differ,
    )


def validation_review(base: Review) -> Review:
    """Stereotypes in the dataset first, each validator shown their own decisions, and the
    filter's agreement with the validators as its quality."""
    return base.with_(
        view="._qt.views:StereotypeValidationView",
        category=review_category,
        undecided=undecided,
        extras=review_extras,
        quality=review_quality,
        quality_summary=quality_summary,
    )


def validation_import_hint() -> str:
    """What to use instead of `gbdesk import` for a stereotype dataset."""
    return (
        " (a stereotype dataset goes out and in with gbdesk dataset export and "
        "gbdesk dataset import)"
    )


def review_category(label: str, data: dict[str, Any]) -> int:
    """Stereotypes in the dataset first, ones the filter moved out last."""
    return {"kept": 0, "moved": 0, "unparsed": 1}.get(label, 2)


def undecided(label: str) -> bool:
    """A stereotype without a readable verdict."""
    return label == "unparsed"


def review_extras(store: Any, run_id: int) -> dict[int, dict[str, Any]]:
    """Every validator's latest decision per stereotype, so that the Review pane shows
    each validator their own (not whoever decided last)."""
    return {
        attempt_id: {"validations": {name: e["data"] for name, e in by.items()}}
        for attempt_id, by in human_labels_by_validator(store, run_id).items()
    }


def human_label(
    response: str, metadata: dict[str, Any], value: str, reviewer: str
) -> dict[str, Any]:
    """A validator's decision as "yes/a" (commonality/specificity, either may be "?"),
    optionally "/category" ("no/b/Religiosity"), or a JSON object with common,
    specific and category."""
    parsed: Any
    try:
        parsed = loads_json(value)
    except (ValueError, TypeError):
        parsed = None
    if isinstance(parsed, dict):
        parts = (parsed.get("common"), parsed.get("specific"), parsed.get("category"))
    else:
        pieces = [p.strip() for p in str(value).split("/")]
        pieces = [("" if p == "?" else p) for p in pieces] + ["", "", ""]
        parts = (pieces[0], pieces[1], pieces[2])
    data, problems = human_decision(*parts)
    if problems:
        raise UserError("; ".join(problems) + " (e.g. yes/a, no/b/Religiosity)")
    return {"label": decision_text(data), "data": data, "evidence": None}


def human_label_from_rows(
    probe: Any, response: str, metadata: dict[str, Any], rows: list[dict[str, Any]], rater: str
) -> dict[str, Any] | None:
    """Rows with `common` (yes/no), `specific` (a/b) and optional `category`."""
    if "common" not in rows[0] and "specific" not in rows[0]:
        return default_human_label_from_rows(probe, response, metadata, rows, rater)
    if len(rows) > 1:
        raise UserError("a stereotype has several rows")
    row = rows[0]
    if not str(row.get("common") or "").strip() and not str(row.get("specific") or "").strip():
        return None
    data, problems = human_decision(row.get("common"), row.get("specific"), row.get("category"))
    if problems:
        raise UserError("; ".join(problems))
    return {"label": decision_text(data), "data": data, "evidence": None}


def labels_differ(auto: dict[str, Any], human: dict[str, Any]) -> bool:
    """Whether a validator's group-specificity answer differs from the filter's verdict."""
    return auto_specific(auto) != (human.get("data") or {}).get("specific")


def review_quality(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """How often the filter's verdict matches a validator's group-specificity answer."""
    judged = [
        (auto_specific(a), (h.get("data") or {}).get("specific"))
        for a, h in pairs
        if (h.get("data") or {}).get("specific") and auto_specific(a)
    ]
    same = sum(1 for x, y in judged if x == y)
    return {"filter_matches": same, "filter_judged": len(judged)}


def quality_summary(quality: dict[str, Any]) -> str | None:
    """`review_quality` in one sentence."""
    n = quality.get("filter_judged", 0)
    if not n:
        return None
    k = quality["filter_matches"]
    return (
        f"The filter's verdict matches the latest validator's group-specificity answer for "
        f"{k} of {n} stereotypes ({k / n:.0%}). Agreement between validators: "
        "gbdesk dataset agreement."
    )


def human_decision(
    common: Any, specific: Any, category: Any = None
) -> tuple[dict[str, Any], list[str]]:
    """A validator's decision from its parts ("yes"/"no", "a"/"b", a category name or 1–16;
    empty parts are left undecided) and the problems found."""
    problems = []
    c = str(common or "").strip().casefold()
    s = str(specific or "").strip().casefold()
    if c not in ("", "yes", "no"):
        problems.append(f"common must be yes or no, not {short_repr(common)}")
    if s not in ("", "a", "b"):
        problems.append(f"specific must be a or b, not {short_repr(specific)}")
    if not c and not s:
        problems.append("neither common nor specific is given")
    cat = None
    if category not in (None, ""):
        found = find_category(category)
        if found is None:
            problems.append(f"{short_repr(category)} is no category (a name or 1–16)")
        else:
            cat = found["category"]
    data = {"common": c or None, "specific": s or None, "category": cat}
    return data, problems


def decision_text(data: dict[str, Any]) -> str:
    """The label value of a decision: "yes/a", "no/b", "yes/?" …"""
    return f"{data.get('common') or '?'}/{data.get('specific') or '?'}"


def auto_specific(auto: dict[str, Any]) -> str | None:
    """The filter's verdict as a group-specificity answer: a (kept) or b (moved, out)."""
    status = (auto.get("data") or {}).get("status") or auto.get("label")
    return {"kept": "a", "moved": "b", "out": "b"}.get(str(status))
