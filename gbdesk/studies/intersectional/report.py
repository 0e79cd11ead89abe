"""The intersectional stereotypes summary and report blocks, in plain words (no Qt)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

from gbdesk.contract import Finding, MetricGroup, MetricKey
from gbdesk.contract.capabilities import Presentation
from gbdesk.contract.running import default_metric_title
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.intersectional.data import load_groups
from gbdesk.studies.intersectional.groups import people_phrase
from gbdesk.support.blocks import Block, Heading, Paragraph, Table
from gbdesk.support.format import pct, value_phrase

DESIGN_WORDS = {
    "paper": "design 'paper' (as Ma et al. §3.2: each group was asked only the questions of "
    "the categories its stereotypes fall in)",
    "all16": "design 'all16' (every group was asked every question of the bank — all 16 "
    "categories; the paper asked a group only about its own stereotypes' categories)",
}


def summary(m: dict[str, MetricValue], params: dict[str, Any] | None = None) -> str:
    groups = sorted(
        (
            (MetricKey.parse(k, max_parts=1).part(0), v)
            for k, v in m.items()
            if MetricKey.parse(k).family == "sdeg_group"
        ),
        key=lambda kv: -kv[1].value if not math.isnan(kv[1].value) else 0,
    )
    top = "; ".join(f"{g} {value_phrase(v.value, v.ci)}" for g, v in groups[:3])
    unparsed = m.get("unparsed_answers")
    overall = m["sdeg_overall"]
    design = (params or {}).get("design") or "all16"
    scope = "each group's own categories" if design == "paper" else "every question for every group"
    return (
        f"overall stereotype degree {value_phrase(overall.value, overall.ci)} over "
        f"{len(groups)} groups"
        + (f"; most uniform: {top}" if top else "")
        + f"; {pct(unparsed.value) if unparsed else '—'} of answers named no option"
        + f" (design {design}: {scope})."
    )


def findings(
    m: dict[str, MetricValue], extra: dict[str, Any], people: dict[str, str]
) -> list[Finding]:
    """The three most stereotyped groups (highest SDeg) with the category behind each, and
    the overall degree as a note. `people` maps a group key to its words ("old White
    people")."""
    groups = sorted(
        (
            (MetricKey.parse(k, max_parts=1).part(0), v)
            for k, v in m.items()
            if MetricKey.parse(k).family == "sdeg_group" and not math.isnan(v.value)
        ),
        key=lambda kv: -kv[1].value,
    )
    categories = extra.get("categories") or []
    rows = dict(zip(extra.get("groups") or [], extra.get("sdeg") or [], strict=False))
    out = []
    for group, v in groups[:3]:
        row = rows.get(group) or []
        finite = [(x, c) for x, c in zip(row, categories, strict=False) if x == x]
        where = ""
        if finite:
            _, category = max(finite, key=lambda t: t[0])
            where = f", most of all in answers about {category.lower()}"
        lo, hi = v.ci
        interval = "" if math.isnan(lo) else f" (95 % CI {lo:.2f} to {hi:.2f})"
        out.append(
            Finding(
                f"The model imagines {people.get(group, group)} most uniformly{where}: "
                f"stereotype degree {v.value:.2f}{interval}, where 0 means varied answers.",
                importance=min(90.0, 30.0 + 80.0 * v.value),
                metric=MetricKey.of("sdeg_group", group),
                value=v.value,
                ci=v.ci,
                evidence={"group": group},
                evidence_title=f"the imagined {people.get(group, group)}",
            )
        )
    overall = m.get("sdeg_overall")
    if overall is not None and not math.isnan(overall.value):
        out.append(
            Finding(
                f"Over all {len(groups)} groups the stereotype degree is "
                f"{value_phrase(overall.value, overall.ci)}.",
                importance=min(60.0, 20.0 + 60.0 * overall.value),
                metric="sdeg_overall",
                value=overall.value,
                ci=overall.ci,
                evidence={},
                evidence_title="every imagined person",
            )
        )
    return out


def _figure(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _share(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.2f} %"


def dataset_paragraphs(info: dict[str, Any]) -> list[Block]:
    """What a dataset is made of: provenance, counts, validators' agreement."""
    prov = info.get("provenance") or {}
    counts = info.get("counts") or {}
    agreement = info.get("agreement") or {}
    where = (
        f"dataset {info.get('id')} of the database"
        if info.get("source") == "database"
        else f"the dataset file {prov.get('file', '')}"
    )
    blocks: list[Block] = [
        Paragraph(
            f"Stereotypes: {where}. Elicited by {prov.get('elicited_by') or 'an unknown model'}"
            + (
                f" (elicitation run {prov['elicitation_run']})"
                if prov.get("elicitation_run")
                else ""
            )
            + f", filtered by {prov.get('filtered_by') or 'an unknown model'}"
            + (f", imported from {prov['imported_from']}" if prov.get("imported_from") else "")
            + f". {counts.get('stereotypes', 0)} stereotypes screened for "
            f"{counts.get('groups_elicited', 0)} groups; the filter moved "
            f"{counts.get('moved', 0)} to a broader intersectional group and "
            f"{counts.get('out', 0)} out of the dataset; "
            f"{counts.get('in_dataset', 0)} remain in {counts.get('groups', 0)} groups. "
            f"Validators: {', '.join(counts.get('validators') or []) or 'none'}; "
            f"{counts.get('kept', 0)} stereotypes kept by their majority "
            f"({counts.get('kept_groups', 0)} groups), {counts.get('rejected', 0)} rejected, "
            f"{counts.get('not_yet_decided', 0)} without a majority yet. This run used "
            f"{info.get('stereotypes_used', '—')} stereotypes."
        )
    ]
    rows = []
    for name, title in (("commonality", "commonality (yes/no)"),
                        ("group_specificity", "group-specificity (a/b)")):  # fmt: skip
        a = agreement.get(name) or {}
        rows.append(
            [
                title,
                str(a.get("validators", 0)),
                str(a.get("stereotypes_rated", 0)),
                _figure(a.get("fleiss_kappa")),
                _share(a.get("share_majority")),
            ]
        )
    blocks.append(
        Table(
            [
                "Validation question",
                "Validators",
                "Stereotypes rated",
                "Fleiss' κ",
                "Majority yes / a",
            ],
            rows,
            title="Human validation (paper: 98.33 % / κ 0.78 and 80.21 % / κ 0.66)",
            caption="Fleiss' κ over the stereotypes in the dataset (statsmodels; undefined — "
            "'—' — unless every stereotype has the same number of ratings); the last column "
            "is the share of rated stereotypes whose majority judged them common (yes) or "
            "exclusive to their group (a), the figures the paper reports.",
        )
    )
    if info.get("groups_without_questions"):
        blocks.append(
            Paragraph(
                "Groups left out (no question in their stereotypes' categories): "
                + ", ".join(info["groups_without_questions"]),
                "notice",
            )
        )
    return blocks


def sdeg_blocks(extra: dict[str, Any], params: dict[str, Any]) -> list[Block]:
    design = params.get("design") or "all16"
    blocks: list[Block] = [
        Heading("Examination design"),
        Paragraph(
            "This run used "
            + DESIGN_WORDS.get(design, design)
            + f"; questions: {params.get('question_bank') or 'paper'} bank"
            + f" ({len(params.get('questions') or []) or 16} questions)."
            + (
                ""
                if params.get("dataset_info")
                else " Groups: the 106 of Table 1 (no stereotype dataset), so a group's SDeg "
                "is a maximum over categories the paper did not ask it about."
            ),
            "muted",
        ),
    ]
    if params.get("dataset_info"):
        blocks += dataset_paragraphs(params["dataset_info"])
        blocks.append(
            Paragraph(
                "Method and deviations: the elicitation and filtering prompts are "
                "reconstructions from §2.2 and §2.4 (the paper's Figures 1 and 2 are images); "
                "the filter judged one stereotype per prompt; all of a category's questions "
                "were asked (the paper chose those pertaining to each stereotype); roles were "
                "generated one per request.",
                "muted",
            )
        )
    cells = extra.get("cells") or []
    if cells:
        shown = cells[:60]
        blocks.append(
            Table(
                ["Group", "Category", "Questions", "Roles", "SDeg"],
                [
                    [
                        c["group"],
                        c["category"],
                        ", ".join(c["questions"]),
                        str(c["roles"]),
                        _figure(c["sdeg"]),
                    ]
                    for c in shown
                ],
                title="SDeg per group and category",
                caption="Groups ranked by their degree (their highest category). "
                + (
                    f"First {len(shown)} of {len(cells)} rows; all in the CSV export."
                    if len(cells) > len(shown)
                    else ""
                ),
            )
        )
    return blocks


def elicitation_blocks(params: dict[str, Any]) -> list[Block]:
    groups = params.get("groups") or []
    return [
        Heading("Elicitation (dataset step 1)"),
        Paragraph(
            f"{len(groups)} target groups; at most {params.get('max_stereotypes', 8)} "
            "stereotypes per reply, decoded under a JSON schema. The prompt is a "
            "reconstruction of the paper's Figure 1 from §2.2 (problem statement, regulation, "
            "disclaimer): the figure is an image, its wording not in the text. Replies are kept "
            "raw; the triples parsed from them are in triples.csv.",
            "muted",
        ),
    ]


def filter_blocks(params: dict[str, Any]) -> list[Block]:
    prov = params.get("provenance") or {}
    return [
        Heading("Filtering and categories (dataset step 2)"),
        Paragraph(
            f"Stereotypes elicited by {prov.get('elicited_by') or 'an unknown model'}"
            + (f" (run {prov['elicitation_run']})" if prov.get("elicitation_run") else "")
            + ". Each was asked, one at a time, whether it also applies to a broader group "
            "(the paper's Figure 2, reconstructed from §2.4: the figure is an image, its "
            "wording not in the text); flagged ones were moved to the broader intersectional "
            "group the model named, or out of the dataset (single-attribute or unnamed group) — "
            "kept in the "
            "run, marked. The model also suggested one of the 16 categories. Validators' "
            "decisions and their agreement: gbdesk dataset agreement / export.",
            "muted",
        ),
    ]


# -- presentation: metric titles, items in words, metric groups ------------------------------
def presentation(probe: Any, base: Presentation) -> Presentation:
    """Groups named in words (in metric titles and items), the SDeg heat map and cells in
    the report, and the SDeg table below the Results pane's plots."""
    return base.with_(
        metric_title=functools.partial(metric_title, probe),
        item_title=item_title,
        report_blocks=sdeg_blocks,
        result_view="._qt.views:SDegResultsView",
    )


def metric_title(probe: Any, name: str) -> str:
    """A group's SDeg names the group in words; other metrics their `metric_titles`."""
    key = MetricKey.parse(name, max_parts=1)
    if key.family == "sdeg_group":
        group = next((g for g in load_groups() if g["group"] == key.part(0)), None)
        return f"Stereotype degree of {people_phrase(group, 2) if group else key.part(0)}"
    return default_metric_title(probe, name)


def item_title(item: str, metadata: dict[str, Any]) -> str:
    """ "old White people": the group in words, not its key."""
    group = next((g for g in load_groups() if g["group"] == metadata.get("group")), None)
    return people_phrase(group, 2) if group else item


def metric_groups(present: Iterable[str] | None = None) -> list[MetricGroup]:
    """Overall SDeg, groups ranked, categories, and the answer mapping."""
    names = list(present or [])
    groups = [
        MetricGroup(
            "Overall SDeg (mean over groups)",
            [n for n in ("sdeg_overall",) if n in names],
            kind="unit",
        ),
        MetricGroup(
            "Groups ranked by SDeg (max over categories, 95 % bootstrap CI)",
            [n for n in names if n.startswith("sdeg_group/")],
            "0 = the group's imagined members answer every question in varied ways.",
            labels={n: _label(n) for n in names if n.startswith("sdeg_group/")},
            kind="unit",
        ),
        MetricGroup(
            "Mean SDeg per category",
            [n for n in names if n.startswith("sdeg_category/")],
            labels={n: _label(n) for n in names if n.startswith("sdeg_category/")},
            kind="unit",
        ),
        MetricGroup(
            "Answer mapping", [n for n in ("unparsed_answers",) if n in names], kind="count"
        ),
    ]
    return [g for g in groups if g.metrics]


def _label(metric: str) -> str:
    """The group or category a metric name is about."""
    return MetricKey.parse(metric, max_parts=1).part(0)
