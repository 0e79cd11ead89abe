"""What an undecided verdict's "To decide" cell says (`audit_findings.more_text`): a few
words from the audit's forecast, never a claim the forecast did not make."""

from __future__ import annotations

from gbdesk.report.audit_findings import more_text


def test_a_forecast_reads_as_answers_and_time_at_this_speed():
    forecast = "≈474 more answers (237 items, about 4 h 11 min) would likely decide it"
    entry = {"more_items": 237, "more_answers": 474, "more_seconds": 15071.0, "forecast": forecast}
    assert more_text(entry, decided=False) == "≈474 more answers (≈4 h 11 min at this speed)"
    assert more_text(entry, decided=True) == ""


def test_a_pool_too_small_is_said_and_an_unknown_forecast_says_nothing():
    beyond = {"more_answers": None, "forecast": "cannot be decided within this probe's pool"}
    assert more_text(beyond, decided=False) == "cannot be decided within this probe's items"
    assert more_text({"decidable": False}, decided=False).startswith("cannot be decided")
    # too few items to forecast: nothing, not "cannot be decided"
    unknown = {"more_items": None, "more_answers": None, "more_seconds": None, "forecast": ""}
    assert more_text(unknown, decided=False) == ""
