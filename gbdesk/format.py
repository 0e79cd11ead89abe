"""Number formatting and colours shared by the CLI, the app and the PDF report (no Qt)."""

from __future__ import annotations

import math

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
