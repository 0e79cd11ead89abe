"""The built-in studies (`gbdesk.studies.<study>`), each registering a `Study` in the
``gbdesk.studies`` entry-point group. The catalogue that finds them is
`gbdesk.contract.registry`; its functions are re-exported here for older callers."""

from __future__ import annotations

from gbdesk.contract import (  # noqa: F401
    BUILT_IN,
    ENTRY_POINT_GROUP,
    AuditSize,
    ChainProbe,
    Finding,
    GenerationProbe,
    Harness,
    Item,
    ItemResult,
    MetricGroup,
    MetricKey,
    Precision,
    Probe,
    ProbeCard,
    ScoringProbe,
    Study,
    get_harness,
    get_probe,
    get_study,
    harnesses,
    probe_names,
    probe_table_markdown,
    reload,
    studies,
    study_reports,
)
from gbdesk.contract.registry import _instances, _load, _probes  # noqa: F401 (tests)
