"""Deprecated: the capabilities' old path for third-party studies. Import them from
`gbdesk.contract` or `gbdesk.contract.capabilities`."""

from __future__ import annotations

from gbdesk.contract.deprecated import old_path

__getattr__, __dir__ = old_path(
    __name__,
    {
        "gbdesk.contract.capabilities": (
            "AuditSizing",
            "Capabilities",
            "Coding",
            "DEFAULT_EXPORT_FILES",
            "Exporting",
            "FlatFacts",
            "Importing",
            "Labelling",
            "Parameters",
            "Ppi",
            "Presentation",
            "Ratings",
            "Resampling",
            "Review",
            "Running",
            "ScoreFrame",
            "attempt_title",
            "item_key",
            "label_string_unit",
            "label_strings_differ",
            "one_request",
            "prompts_times_attempts",
        ),
    },
)
