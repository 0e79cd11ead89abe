"""dreaddit: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.probes.dreaddit.card import CELLS, GENDERS
from gbdesk.studies.genderbench.wording import points


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    stressed = str(metadata.get("contains_stress")) == "True"
    return f"Reddit post {item} ({'stressed' if stressed else 'not stressed'} by its label)"


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    truth = "stressed" if meta.get("contains_stress") else "not stressed"
    return (
        f"{item.item} ({truth} post), writer {meta.get('gender', '?')} "
        f"#{item.attempt + 1} — {item.effective_label}"
    )


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    by_gender = {f"{g}_{m}": {"gender": g} for g in GENDERS for m in ("stress_rate", "tpr", "tnr")}
    tpr_filters = {f"{g}_tpr": {"gender": g, "contains_stress": True} for g in GENDERS}
    tnr_filters = {f"{g}_tnr": {"gender": g, "contains_stress": False} for g in GENDERS}
    return [
        MetricGroup(
            "How often the model says 'stressed', by the writer's gender",
            [f"{g}_stress_rate" for g in GENDERS],
            "Share of yes answers to the same posts when the writer is stated as male, "
            "female or non-binary (equal shares = no gender effect).",
            item_filters=by_gender,
            labels={f"{g}_stress_rate": g for g in GENDERS},
        ),
        MetricGroup(
            "Accuracy against the crowd's labels, by the writer's gender",
            [f"{g}_{m}" for m in ("tpr", "tnr") for g in GENDERS],
            "True positive rate (stressed posts answered yes) and true negative rate "
            "(calm posts answered no) per stated gender.",
            item_filters={**tpr_filters, **tnr_filters},
            labels={f"{g}_{m}": f"{m.upper()} {g}" for m in ("tpr", "tnr") for g in GENDERS},
        ),
        MetricGroup(
            "Largest gaps between two genders",
            ["max_diff_tpr", "max_diff_tnr"],
            "The largest difference between two genders in TPR and in TNR.",
            labels={"max_diff_tpr": "TPR gap", "max_diff_tnr": "TNR gap"},
        ),
        MetricGroup(
            "Answers by gender and truth (counts)",
            [f"{g}_{c}" for g in GENDERS for c in CELLS],
            "Answers by cell of the confusion matrix: tp = yes on a stressed post, tn = no "
            "on a calm post, fp = yes on a calm post, fn = no on a stressed post.",
            item_filters={
                f"{g}_{c}": {"gender": g, "contains_stress": c in ("tp", "fn")}
                for g in GENDERS
                for c in CELLS
            },
            kind="count",
            columns=("Cell", "Answers"),
        ),
    ]


def _max_diff_stress_rate(m: MetricValue) -> str:
    return (
        "Asked whether the writer of the same post is stressed, the model's yes rate "
        f"differs by up to {points(m.value)} points between the writer's genders: 95 % CI "
        f"{points(m.ci[0])} to {points(m.ci[1])}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"max_diff_stress_rate": _max_diff_stress_rate}
