"""The contract's classes and functions under their documented path for studies (kept for
third-party studies): they live in `gbdesk.contract` (`items`, `probe`, `running`, and
the values of `capabilities`)."""

from __future__ import annotations

from gbdesk.contract.capabilities import (  # noqa: F401
    AUDIT_ITEM_STEPS,
    AccuracyWords,
    AuditSize,
    CodingCandidates,
    LabellingPass,
    Precision,
    PrecisionRule,
    z95,
)
from gbdesk.contract.items import (  # noqa: F401
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
from gbdesk.contract.probe import (  # noqa: F401
    ChainProbe,
    GenerationProbe,
    Harness,
    Probe,
    ScoringProbe,
    Study,
)
from gbdesk.contract.running import (  # noqa: F401
    SAMPLE_SEED,
    AttemptEngine,
    LabelFunction,
    ProbeLike,
    RunItems,
    attempt_count,
    attempt_item,
    balanced_subset,
    default_audit_sizes,
    default_capabilities,
    default_findings,
    default_human_label,
    default_human_label_from_rows,
    default_label_units,
    default_metric_bounds,
    default_metric_description,
    default_metric_title,
    default_params,
    default_ppi_evaluator,
    default_ppi_resampled,
    default_template_samples,
    describe,
    draw_order,
    drawn_subset,
    label_values,
    new_item_result,
    resolve_template,
    sample_and_limit,
    score_block,
    size_bounded,
    view_class,
)
