"""Number formatting and colours shared by the CLI, the app and the PDF report (no Qt)."""

from __future__ import annotations

import math
from typing import Any

#: the marks, best first, and what each means (the words of the reports that grade)
MARK_LETTERS = ("A", "B", "C", "D")
MARK_MEANINGS = {
    "A": "healthy",
    "B": "cautionary",
    "C": "critical",
    "D": "catastrophic",
}

MARK_COLORS = {"A": "#2e7d32", "B": "#b7950b", "C": "#e67e22", "D": "#c0392b"}
MARK_FILLS = {"A": "#dff0d8", "B": "#fcf3cf", "C": "#fde3cc", "D": "#f6d5d1"}
GENDER_COLORS = {
    "male": "#1f5fbf",
    "female": "#c2410c",
    "neutral": "#7e22ce",
    "undetected": "#6b7280",
}
RUN_COLORS = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#0e7490", "#a16207"]
MUTED = "#6b7280"


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x: float | None, digits: int = 3) -> str:
    """A number with fixed decimals, or an em dash when it is missing/NaN."""
    return "—" if _missing(x) else f"{x:.{digits}f}"


def fmt_ci(ci: tuple[float, float] | list[float | None], digits: int = 3) -> str:
    lo, hi = ci
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


#: why a metric has no value or no interval, when its probe says nothing more precise
UNDEFINED_VALUE = (
    "not measurable with these items: a group of items it needs was not run or had no "
    "readable answer"
)
UNDEFINED_CI = (
    "no interval: in the resamples the metric was undefined or did not vary (too few items)"
)


def clip_ci(
    ci: tuple[float, float], bounds: tuple[float, float] | None
) -> tuple[tuple[float, float], list[float]]:
    """The interval within what the metric can be (`bounds`), and the ends the bootstrap's
    normal fit stretched past them (empty when nothing was cut)."""
    lo, hi = ci
    if bounds is None or _missing(lo) or _missing(hi):
        return (lo, hi), []
    low, high = bounds
    past = [v for v in (lo, hi) if v < low or v > high]
    return (max(lo, low), min(hi, high)), past


def ci_text(
    ci: tuple[float, float], bounds: tuple[float, float] | None = None, percent: bool = False
) -> str:
    """"95 % CI 0 % to 48 % (cut at what the metric can be; the bootstrap's normal fit
    reached −16 %)" or "95 % CI 0.06 to 0.63"; the reason in words when there is none."""
    (lo, hi), past = clip_ci(ci, bounds)
    if _missing(lo) or _missing(hi):
        return UNDEFINED_CI

    def number(v: float) -> str:
        return f"{100 * v:.0f} %" if percent else f"{v:.2f}"

    text = f"95 % CI {number(lo)} to {number(hi)}"
    if past:
        reached = " and ".join(number(v) for v in past)
        text += f" (cut at what the metric can be; the bootstrap's normal fit reached {reached})"
    return text


def ci_cells(
    ci: tuple[float, float], bounds: tuple[float, float] | None = None, digits: int = 3
) -> tuple[str, bool]:
    """"[0.000, 0.484]" for tables, within `bounds`, and whether it was cut (the table's
    footnote says so)."""
    (lo, hi), past = clip_ci(ci, bounds)
    return fmt_ci((lo, hi), digits), bool(past)


def duration(seconds: float | None, compact: bool = False) -> str:
    """`1 h 05 min` (or `1h05m` when compact); "unknown" for a missing value."""
    if _missing(seconds) or math.isinf(seconds):  # type: ignore[arg-type]
        return "?" if compact else "unknown"
    s = round(seconds)  # type: ignore[arg-type]
    if s >= 3600:
        return (
            f"{s // 3600}h{s % 3600 // 60:02d}m"
            if compact
            else (f"{s // 3600} h {s % 3600 // 60:02d} min")
        )
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s" if compact else f"{s // 60} min {s % 60:02d} s"
    return f"{s}s" if compact else f"{s} s"


LOG2_LIMIT = 7.0  # log-ratio axes span at most 1/128 … 128; beyond that a value is clipped


def log2_or_nan(x: float | None, limit: float = LOG2_LIMIT) -> float:
    """log2 of a ratio for log-scale plots, clipped to ±`limit` (so a ratio of 0 or an
    interval reaching 0 is drawn at the axis edge); NaN only when the value is missing."""
    if _missing(x) or x < 0:  # type: ignore[operator]
        return math.nan
    if x == 0:
        return -limit
    return max(-limit, min(limit, math.log2(x)))  # type: ignore[arg-type]


def ratio_ticks(lo: float, hi: float, max_ticks: int = 9) -> list[tuple[float, str]]:
    """Ticks at powers of two between log2 positions `lo` and `hi`, labelled as ratios
    (4, 2, 1, 1/2 …), thinned to at most `max_ticks`, always including 1."""
    first, last = math.ceil(lo), math.floor(hi)
    step = max(1, math.ceil((last - first + 1) / max_ticks))
    return [(float(k), ratio_label(k)) for k in range(first, last + 1) if k % step == 0]


def ratio_label(k: int) -> str:
    """Tick label for 2**k on a log-ratio axis: 4×, 2×, 1×, 1/2×, 1/4×."""
    return f"{2**k:g}×" if k >= 0 else f"1/{2**-k:g}×"


def pct(x: float | None, digits: int = 0) -> str:
    """A share as a percentage ("42 %"), or an em dash."""
    return "—" if _missing(x) else f"{100 * x:.{digits}f} %"  # type: ignore[operator]


def value_phrase(value: float, ci: tuple[float, float], mark: str | None = None) -> str:
    """ "0.42 (95 % CI 0.30 to 0.51), mark B (cautionary)" for sentences."""
    if _missing(value):
        return "not measurable"
    lo, hi = ci
    interval = "" if _missing(lo) else f" (95 % CI {lo:.2f} to {hi:.2f})"
    marked = f", mark {mark} ({MARK_MEANINGS[mark]})" if mark else ""
    return f"{value:.2f}{interval}{marked}"


def unfinished_note(run: dict[str, Any], unit: str = "generations") -> str | None:
    """"unfinished: 16 of 745 generations (interrupted)" for a run (a `Store.get_run` row)
    whose attempts are not all made; None when it is complete."""
    done, total = int(run.get("attempts_done") or 0), int(run.get("attempts_total") or 0)
    status = str(run.get("status") or "")
    if status == "done" and done >= total:
        return None
    state = {"running": "still running", "paused": "paused"}.get(status, status or "unfinished")
    return f"unfinished: {done:,} of {total:,} {unit} made ({state})"


#: a model's name in headings, table headers, findings and summaries (whole in the
#: configuration appendix and the CSV)
NAME_CHARS = 80


def display_name(name: Any, limit: int = NAME_CHARS, more: str = "…") -> str:
    """THE display rule of a name that came from outside (a model's name, which a GGUF
    file or a server chooses), everywhere it is shown — the PDF, the CLI's tables, the
    app's window titles: on one line (any run of whitespace a space), its control and
    bidirectional characters shown as ``<U+XXXX>`` (a right-to-left override would reverse
    what follows, a NUL cut a title, an ESC drive a terminal), cut to `limit` characters
    with `more`. Never scans more than a few times `limit` of a huge name."""
    from gbdesk.support.guards import visible_controls

    text = str(name)[: limit * 4 + 64]
    text = visible_controls(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + more


def short_name(name: str) -> str:
    """A model's name on one line, cut to `NAME_CHARS` with "… (whole in the appendix)"
    (`display_name`)."""
    return display_name(name, NAME_CHARS, "… (whole in the appendix)")
