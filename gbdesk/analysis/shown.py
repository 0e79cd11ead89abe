"""What every view shows of one metric — the Results pane, its charts, the PDF, the CLI,
the CSV and the JSON all read it here, so that one metric reads the same everywhere:

* **the interval shown** (`shown_ci`): the interval to quote — `MetricValue.ci_shown`, the
  95 % interval that holds its level (`gbdesk.analysis.intervals`), where the study has
  one (its probes' `Intervals` capability); else the study's own 95 %
  interval cut at what the metric can be (`Presentation.metric_bounds`: 0–1 for a share),
  widened to hold the value, and none at all when it has zero width from fewer than
  `MIN_ITEMS` items (one answer is not certainty) or is not finite. The study's own
  interval (`MetricValue.ci`, as the study's reference code computes it) stays beside
  it, unchanged;
* **the verdict** (`metric_verdict`): for a metric with mark bands, the marks the shown
  interval allows beside the study's own mark (from its own interval,
  `gbdesk.maths.verdicts`), never a decided mark from fewer than `MIN_ITEMS` items;
* **why there is no value** (`undefined_reason`): the probe's words, else the general ones.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from gbdesk.maths.stats import MetricValue
from gbdesk.maths.verdicts import MIN_ITEMS, Verdict, marks_phrase, shown_interval, verdict
from gbdesk.support.format import MARK_MEANINGS, UNDEFINED_CI, UNDEFINED_VALUE, clip_ci

#: what a table prints where an interval would be, when its items are too few for one
TOO_FEW_FOR_CI = "too few items for an interval"


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def bounds_of(probe: Any, name: str) -> tuple[float, float] | None:
    """What the metric can be (`Presentation.metric_bounds`), None when it says nothing."""
    try:
        return probe.capabilities.presentation.metric_bounds(name)
    except Exception:  # a study's bug must not hide the number: shown uncut
        return None


def shown_ci(probe: Any, name: str, m: MetricValue) -> tuple[float, float] | None:
    """The interval every view prints (see the module): `ci_shown` when the metric has
    one, else `ci` cut at the metric's bounds and holding its value; None without one (no
    value, an undefined interval, or zero width from fewer than `MIN_ITEMS` items)."""
    if _nan(m.value):
        return None
    if m.ci_shown is not None and not (_nan(m.ci_shown[0]) or _nan(m.ci_shown[1])):
        return (float(m.ci_shown[0]), float(m.ci_shown[1]))
    (lo, hi), _ = clip_ci((m.ci[0], m.ci[1]), bounds_of(probe, name))
    if not (_nan(lo) or _nan(hi)) and math.isfinite(m.value):
        lo, hi = min(lo, m.value), max(hi, m.value)
    return shown_interval((lo, hi), int(m.n or 0))


def cut_ends(probe: Any, name: str, m: MetricValue) -> list[float]:
    """The ends of the bootstrap's interval past what the metric can be (cut in views);
    none when the view shows `ci_shown`, which never passes them."""
    if _nan(m.value) or m.ci_shown is not None:
        return []
    return clip_ci((m.ci[0], m.ci[1]), bounds_of(probe, name))[1]


def ci_missing_reason(probe: Any, name: str, m: MetricValue) -> str:
    """Why `shown_ci` is None, in words ("" when there is an interval)."""
    if _nan(m.value):
        return undefined_reason(probe, name, {name: m})
    if shown_ci(probe, name, m) is not None:
        return ""
    if _nan(m.ci[0]) or _nan(m.ci[1]):
        return UNDEFINED_CI
    item = "item" if m.n == 1 else "items"
    return f"{TOO_FEW_FOR_CI} (only {m.n} {item}; an interval needs {MIN_ITEMS})"


def undefined_reason(probe: Any, name: str, metrics: dict[str, MetricValue]) -> str:
    """Why the metric has no value, in the probe's words when it has some."""
    try:
        why = probe.capabilities.presentation.why_undefined(name, metrics)
    except Exception:
        why = None
    return why or UNDEFINED_VALUE


def metric_verdict(probe: Any, name: str, m: MetricValue) -> Verdict | None:
    """The verdict of a metric the probe grades (`gbdesk.maths.verdicts.verdict`) on the
    interval shown (`ci_shown` where there is one), the study's mark from its own
    interval (`ci`); None for a metric without mark bands."""
    definition = probe.mark_definitions.get(name)
    if definition is None:
        return None
    ci = None if _nan(m.value) else (m.ci_shown or m.ci)
    v = verdict(definition, ci, int(m.n or 0), study_ci=None if ci is None else m.ci)
    if m.mark and v.measured and m.mark != v.study_mark:
        # the study's own mark as it stored it (e.g. from an interval rule of its own)
        v = replace(v, study_mark=m.mark)
    return v


def allowed_range(marks: tuple[str, ...] | list[str]) -> str:
    """ "A", "A–C": the allowed marks for a narrow cell."""
    marks = list(marks)
    if not marks:
        return ""
    return marks[0] if len(marks) == 1 else f"{marks[0]}–{marks[-1]}"


def mark_cell(v: Verdict | None) -> str:
    """A verdict for a table cell: "A (healthy)" when decided; "study's mark B · allows
    A–C: not enough answers to tell"; "no mark: no interval"; "" for an ungraded metric."""
    if v is None:
        return ""
    if not v.measured:
        return "no mark: no interval"
    if v.decided:
        return v.words()
    gb = f"study's mark {v.study_mark} · " if v.study_mark else ""
    if v.too_few:
        return f"{gb}{v.words()}"
    return f"{gb}allows {allowed_range(v.marks)}: not enough answers to tell"


def mark_short(v: Verdict | None) -> str:
    """A verdict in a few characters (CLI tables): "A", "B (A–C)", "D (A–D, n<10)", "—"."""
    if v is None or not v.measured:
        return "—"
    if v.decided:
        return v.marks[0]
    gb = v.study_mark or "?"
    few = f", n<{MIN_ITEMS}" if v.too_few else ""
    return f"{gb} ({allowed_range(v.marks)}{few})"


def verdict_sentence(v: Verdict, whose: str = "the study's") -> str:
    """How a finding ends: "mark D, catastrophic"; "between A and C — not enough answers
    to tell (the study's mark: A, the best band its interval touches)" (`whose`: how the
    study names its own mark)."""
    if v.decided:
        return f"mark {v.marks[0]}, {MARK_MEANINGS[v.marks[0]]}"
    if v.too_few:
        return v.words()
    gb = (
        f" ({whose} mark: {v.study_mark}, the best band its interval touches)"
        if v.study_mark
        else ""
    )
    return f"{marks_phrase(v.marks)} — not enough answers to tell{gb}"
