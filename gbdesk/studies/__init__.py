"""The built-in studies (`gbdesk.studies.<study>`), each registering a `Study` in the
``gbdesk.studies`` entry-point group; the catalogue that finds them is
`gbdesk.contract.registry`. The contract's names this package once re-exported are
deprecated aliases (`gbdesk.contract.deprecated`): import them from `gbdesk.contract`."""

from __future__ import annotations

from gbdesk.contract.deprecated import old_path

__getattr__, __dir__ = old_path(
    __name__,
    {
        "gbdesk.contract": (
            "AuditSize",
            "BUILT_IN",
            "ChainProbe",
            "ENTRY_POINT_GROUP",
            "Finding",
            "GenerationProbe",
            "Harness",
            "Item",
            "ItemResult",
            "MetricGroup",
            "MetricKey",
            "Precision",
            "Probe",
            "ProbeCard",
            "ScoringProbe",
            "Study",
            "get_harness",
            "get_probe",
            "get_study",
            "harnesses",
            "probe_names",
            "probe_table_markdown",
            "reload",
            "studies",
            "study_reports",
        ),
    },
)
