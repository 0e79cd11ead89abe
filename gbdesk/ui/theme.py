"""Colours and formatting for the panes (shared with the CLI and the PDF report)."""

from __future__ import annotations

from gbdesk.support.format import (
    GENDER_COLORS,
    MARK_COLORS,
    MARK_FILLS,
    MUTED,
    RUN_COLORS,
    duration,
    fmt,
    fmt_ci,
)

MARK_TEXT = {"A": "healthy", "B": "cautionary", "C": "critical", "D": "catastrophic"}

__all__ = [
    "GENDER_COLORS",
    "MARK_COLORS",
    "MARK_FILLS",
    "MARK_TEXT",
    "MUTED",
    "RUN_COLORS",
    "duration",
    "fmt",
    "fmt_ci",
]
