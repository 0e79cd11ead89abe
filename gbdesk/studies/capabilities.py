"""Kept for third-party studies: the capabilities live in `gbdesk.contract.capabilities`."""

from __future__ import annotations

from gbdesk.contract.capabilities import (  # noqa: F401
    DEFAULT_EXPORT_FILES,
    AuditSizing,
    Capabilities,
    Coding,
    Exporting,
    FlatFacts,
    Importing,
    Labelling,
    Parameters,
    Ppi,
    Presentation,
    Ratings,
    Resampling,
    Review,
    Running,
    ScoreFrame,
    attempt_title,
    item_key,
    label_string_unit,
    label_strings_differ,
    one_request,
    prompts_times_attempts,
)
