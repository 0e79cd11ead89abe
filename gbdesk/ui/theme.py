"""Colours and small formatting helpers shared by the panes and the PDF report."""

from __future__ import annotations

import math

MARK_COLORS = {"A": "#2e7d32", "B": "#b7950b", "C": "#e67e22", "D": "#c0392b"}
MARK_FILLS = {"A": "#dff0d8", "B": "#fcf3cf", "C": "#fde3cc", "D": "#f6d5d1"}
MARK_TEXT = {"A": "healthy", "B": "cautionary", "C": "critical", "D": "catastrophic"}
GENDER_COLORS = {
    "male": "#1f5fbf",
    "female": "#c2410c",
    "neutral": "#7e22ce",
    "undetected": "#6b7280",
}
RUN_COLORS = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#0e7490", "#a16207"]
MUTED = "#6b7280"


def fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:.{digits}f}"


def fmt_ci(ci: tuple[float, float] | list[float | None]) -> str:
    lo, hi = ci
    return f"[{fmt(lo)}, {fmt(hi)}]"


def duration(seconds: float | None) -> str:
    if seconds is None or math.isinf(seconds) or math.isnan(seconds):
        return "unknown"
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"
