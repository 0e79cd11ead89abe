"""The contract between gbdesk's core and its studies, in a package of its own.

A study author reads `items` (what a probe builds and returns) and `probe` (the `Probe`
classes, `Harness`, `Study`), and the optional capabilities they need (`capabilities`);
`running` is what only the core does with a probe, `importing` the shared import
helpers, `registry` the catalogue of studies found through entry points. This package is
the one import path of the contract; the built-in studies live in `gbdesk.studies`, whose
old paths (`gbdesk.studies`, `.base`, `.capabilities`, `.importing`) are deprecated
aliases (`deprecated`).
"""

from __future__ import annotations

from gbdesk.contract.capabilities import (
    AUDIT_ITEM_STEPS,
    AccuracyWords,
    AuditSize,
    CodingCandidates,
    LabellingPass,
    Precision,
    PrecisionRule,
    Wording,
    wording_id,
    z95,
)
from gbdesk.contract.items import (
    Finding,
    Item,
    ItemResult,
    LabelOption,
    MetricGroup,
    MetricKey,
    Performed,
    ProbeCard,
    ProbeOption,
    Prompt,
    multi_prompt_item,
    prompt_index,
)
from gbdesk.contract.probe import (
    ChainProbe,
    GenerationProbe,
    Harness,
    Probe,
    ScoringProbe,
    Study,
)
from gbdesk.contract.registry import (
    BUILT_IN,
    ENTRY_POINT_GROUP,
    get_harness,
    get_probe,
    get_study,
    harnesses,
    metric_sections,
    probe_names,
    probe_table_markdown,
    reload,
    studies,
    study_reports,
)

__all__ = [
    "AUDIT_ITEM_STEPS",
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "AccuracyWords",
    "AuditSize",
    "ChainProbe",
    "CodingCandidates",
    "Finding",
    "GenerationProbe",
    "Harness",
    "Item",
    "ItemResult",
    "LabelOption",
    "LabellingPass",
    "MetricGroup",
    "MetricKey",
    "Performed",
    "Precision",
    "PrecisionRule",
    "Probe",
    "ProbeCard",
    "ProbeOption",
    "Prompt",
    "ScoringProbe",
    "Study",
    "Wording",
    "get_harness",
    "get_probe",
    "get_study",
    "harnesses",
    "metric_sections",
    "multi_prompt_item",
    "probe_names",
    "probe_table_markdown",
    "prompt_index",
    "reload",
    "studies",
    "study_reports",
    "wording_id",
    "z95",
]
