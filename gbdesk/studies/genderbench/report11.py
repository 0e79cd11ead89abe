"""GenderBench Report 1.1 over several models (1.1.0 `report_generation/report.py`).

What 1.1.0's report shows, for the runs of a gbdesk report:

* the three harm sections (`chart_config`: outcome disparity, stereotypical reasoning,
  representational harms), one chart per (probe, metric) with every model's interval
  over the metric's mark bands;
* the verdict tables: each model's marks per section, sorted best first (1.1.0's emoji
  tables; here coloured letters), for the three sections and for "all";
* the normalized table (`calculate_normalized_table`): one row per model, columns
  ``<ProbeClass without "Probe">.<metric>`` in section order, each value the metric's
  interval reduced to its midpoint (``statistics.mean`` of the two ends, as
  `normalized_table_row` reads logged intervals) and passed through
  `metric_normalizations`, then the Average column (`np.mean` of the row: undefined —
  NaN — when a value is missing, as in 1.1.0).

gbdesk's choices where 1.1.0 has none (it reads one log file per model): a model is a
run's model name; when a model has several runs of a probe, the report uses the latest
run made with the ``genderbench-1.1`` preset, else the latest run; a probe a model did
not run is missing (NaN in the table, no point in its chart).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import mean
from typing import Any

import numpy as np

from gbdesk.analysis.shown import (
    ci_missing_reason,
    cut_ends,
    metric_verdict,
    shown_ci,
    undefined_reason,
)
from gbdesk.maths.stats import MARK_LETTERS, MARK_MEANINGS
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.studies.genderbench.metric import (
    HARM_SECTIONS,
    absolute,
    class_name,
    from_half,
    identity,
    positive,
    positive_half,
    report_metrics,
)
from gbdesk.studies.genderbench.probes.bbq.probe import BbqProbe
from gbdesk.studies.genderbench.probes.business_vocabulary.probe import BusinessVocabularyProbe
from gbdesk.studies.genderbench.probes.direct.probe import DirectProbe
from gbdesk.studies.genderbench.probes.discrimination_tamkin.probe import DiscriminationTamkinProbe
from gbdesk.studies.genderbench.probes.diversity_med_qa.probe import DiversityMedQaProbe
from gbdesk.studies.genderbench.probes.dreaddit.probe import DreadditProbe
from gbdesk.studies.genderbench.probes.gest.probe import GestProbe
from gbdesk.studies.genderbench.probes.gest_creative.probe import GestCreativeProbe
from gbdesk.studies.genderbench.probes.hiring_an.probe import HiringAnProbe
from gbdesk.studies.genderbench.probes.hiring_bloomberg.probe import HiringBloombergProbe
from gbdesk.studies.genderbench.probes.inventories.probe import InventoriesProbe
from gbdesk.studies.genderbench.probes.isear.probe import IsearProbe
from gbdesk.studies.genderbench.probes.jobs_lum.probe import JobsLumProbe
from gbdesk.studies.genderbench.probes.relationship_levy.probe import RelationshipLevyProbe
from gbdesk.support.blocks import (
    Block,
    ChartRow,
    Heading,
    IntervalChart,
    MarkCells,
    Paragraph,
    StudyReport,
    StudyRun,
    Table,
)
from gbdesk.support.format import UNDEFINED_CI, short_name

PRESET = "genderbench-1.1"

#: DefaultHarness's probes, in its order
HARNESS = (
    BbqProbe,
    BusinessVocabularyProbe,
    DirectProbe,
    DiscriminationTamkinProbe,
    DiversityMedQaProbe,
    DreadditProbe,
    GestProbe,
    GestCreativeProbe,
    HiringAnProbe,
    HiringBloombergProbe,
    InventoriesProbe,
    IsearProbe,
    JobsLumProbe,
    RelationshipLevyProbe,
)
#: DefaultHarness's probes, in its order (gbdesk ids)
HARNESS_PROBES = tuple(p.name for p in HARNESS)
#: 1.1.0's probe class names without "Probe" (the normalized table's column prefixes)
CLASS_NAMES = {p.name: class_name(p) for p in HARNESS}
SECTIONS = tuple(HARM_SECTIONS)
#: 1.1.0's `chart_config`, from the probes' declared metrics: each harm section, and "all"
CHART_CONFIG: dict[str, list[tuple[str, str]]] = {
    **{
        section: [
            (p.name, m.name) for p in HARNESS for m in report_metrics(p) if m.section == section
        ]
        for section in SECTIONS
    },
    "all": [(p.name, m.name) for p in HARNESS for m in report_metrics(p)],
}
#: 1.1.0's `metric_normalizations`, from the probes' declared metrics
NORMALIZATIONS: dict[tuple[str, str], Callable[[float], float]] = {
    (p.name, m.name): m.normalization for p in HARNESS for m in report_metrics(p)
}

NORMALIZATION_WORDS = {
    identity: "as measured",
    positive: "below 0 counts as 0",
    absolute: "its distance from 0, either way",
    from_half: "its distance from 0.5, either way",
    positive_half: "below 0 counts as 0, then halved",
}
#: 1.1.0's lambdas, for the caption that names them
NORMALIZATION_FORMULAS = {
    identity: "x",
    positive: "max(0, x)",
    absolute: "|x|",
    from_half: "|x − 0.5|",
    positive_half: "max(0, x) / 2",
}



#: the normalized CSV's last column (`values`), on every row
NORMALIZED_NOTE = (
    "normalized, not the metrics of metrics.csv: GenderBench's normalized table (its "
    "report's calculate_normalized_table) — per model each graded metric's interval "
    "midpoint normalized so that 0 is an unbiased model and larger is more biased, and "
    "Average, their mean; an empty cell is a value not measured"
)

def normalized_columns() -> list[str]:
    """The normalized table's columns (without the model and Average), 1.1.0's order."""
    return [f"{CLASS_NAMES[p]}.{m}" for s in SECTIONS for p, m in CHART_CONFIG[s]]


def _midpoint(metric: Any) -> float:
    """A logged interval's value in 1.1.0's table: the mean of its two ends."""
    if metric is None:
        return math.nan
    lo, hi = metric.ci
    return float(mean([float(lo), float(hi)]))


def _normalized(p: str, m: str, x: float) -> float:
    """1.1.0's normalization of one midpoint; a missing value stays missing (NaN) for every
    normalization — 1.1.0's `max(0, nan)` is 0, a zero that was never measured."""
    return math.nan if math.isnan(x) else float(NORMALIZATIONS[p, m](x))


def normalized_row(probe_metrics: dict[str, dict[str, Any]]) -> list[float]:
    """One model's normalized values (1.1.0 `normalized_table_row`), NaN where missing (a
    probe not run, a metric undefined on its answers); `probe_metrics`: probe id → its
    metrics (`MetricValue`s)."""
    return [
        _normalized(p, m, _midpoint(probe_metrics.get(p, {}).get(m)))
        for s in SECTIONS
        for p, m in CHART_CONFIG[s]
    ]


def normalized_table(models: dict[str, dict[str, dict[str, Any]]]) -> tuple[list[str], list]:
    """(columns, rows) of 1.1.0's `calculate_normalized_table`: each row the model, its
    normalized values and their mean ("Average", NaN when any is missing)."""
    columns = [*normalized_columns(), "Average"]
    rows = []
    for model, metrics in models.items():
        values = normalized_row(metrics)
        rows.append([model, *values, float(np.mean(values))])
    return columns, rows


def pick_runs(runs: list[StudyRun]) -> tuple[dict[str, dict[str, StudyRun]], list[str]]:
    """model → probe → the run the report uses (the latest one made with the
    genderbench-1.1 preset, else the latest), and notes on the choices made."""
    chosen: dict[str, dict[str, StudyRun]] = {}
    notes = []
    for run in sorted(runs, key=lambda r: r.run_id):
        have = chosen.setdefault(run.model, {}).get(run.probe)
        preset = run.params.get("template_name") == PRESET
        if have is not None and have.metrics and not run.metrics:
            continue  # a run without answers never replaces one with answers
        if have is not None and run.metrics and not have.metrics:
            have = None
        if have is None or preset or have.params.get("template_name") != PRESET:
            if have is not None:
                notes.append(
                    f"{run.model}: {run.probe} from run {run.run_id}, not run {have.run_id}"
                )
            chosen[run.model][run.probe] = run
    return chosen, notes


def _section_cells(metrics: dict[str, dict[str, Any]], section: str) -> MarkCells:
    """The model's marks in a section as 1.1.0 sorts them (`_section_marks`), each with
    the marks its interval allows and whether that decides it (`verdicts.verdict`)."""
    from gbdesk.contract import get_probe

    pairs = []
    for p, name in CHART_CONFIG[section]:
        m = metrics.get(p, {}).get(name)
        if m is None or m.mark not in MARK_LETTERS:
            continue
        v = metric_verdict(get_probe(p), name, m)
        allowed = v.marks if v is not None and v.measured else MARK_LETTERS
        pairs.append((m.mark, allowed, bool(v is not None and v.decided)))
    pairs.sort(key=lambda t: MARK_LETTERS.index(t[0]))
    ran = any(metrics.get(p) for p, _ in CHART_CONFIG[section])
    return MarkCells(
        tuple(t[0] for t in pairs),
        tuple(tuple(t[1]) for t in pairs),
        tuple(t[2] for t in pairs),
        empty="not measured" if ran else "not run",
    )


def _section_marks(metrics: dict[str, dict[str, Any]], section: str) -> list[str]:
    """The model's marks in a section, best first (1.1.0 `section_emojis`)."""
    letters = [
        m.mark
        for p, name in CHART_CONFIG[section]
        if (m := metrics.get(p, {}).get(name)) is not None and m.mark in MARK_LETTERS
    ]
    return sorted(letters, key=MARK_LETTERS.index)


def _fmt(x: float) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:.3f}"


def _opening_blocks(runs: list[StudyRun], ran: set[str]) -> list[Block]:
    """What the report is, how many of the harness's probes ran (with answers), and which
    runs are unfinished or have no answers yet."""
    blocks: list[Block] = [
        Paragraph(
            "GenderBench's own summary of its harness (Report 1.1): each model's marks by harm, "
            "the charts of the metrics it grades, and its normalized table. "
            f"{len(ran)} of the harness's {len(HARNESS_PROBES)} probes ran"
            + (
                " (a probe counts once some run of it has answers; the others are “not run” below)"
                if len(ran) < len(HARNESS_PROBES)
                else ""
            )
            + ".",
            "muted",
        )
    ]
    empty = [r for r in runs if not r.metrics]
    if empty:
        blocks.append(
            _runs_notice("No answers yet (nothing of these is measured or counted)", empty)
        )
    unfinished = [r for r in runs if r.status != "done" and r.metrics]
    if unfinished:
        blocks.append(
            _runs_notice(
                "Unfinished runs (their numbers cover only the items done so far)", unfinished
            )
        )
    return blocks


def _runs_notice(words: str, runs: list[Any]) -> Paragraph:
    """A notice naming `runs` after `words`: "…: run 3 (bbq, interrupted), run 4 (…)."."""
    listed = ", ".join(f"run {r.run_id} ({r.probe}, {r.status})" for r in runs)
    return Paragraph(f"{words}: {listed}.", "notice")


def _verdict_table(models: dict[str, dict[str, Any]]) -> Table:
    """Each model's marks per harm section and over all graded metrics."""
    legend = ", ".join(f"{k} {v}" for k, v in MARK_MEANINGS.items())
    return Table(
        ["Model", *(HARM_SECTIONS[s] for s in SECTIONS), "All graded metrics"],
        [
            [
                short_name(model),
                *(_section_cells(metrics, s) for s in SECTIONS),
                _section_cells(metrics, "all"),
            ]
            for model, metrics in models.items()
        ],
        title="Verdict by harm",
        caption="Each model's marks in each harm section, best first (one letter per "
        f"graded metric; {legend}): GenderBench's own mark, the best band the metric's 95 % "
        "interval touches. A letter is coloured only when it is decided — the interval lies "
        f"within that one band and rests on at least {MIN_ITEMS} items; otherwise the marks "
        "the interval allows follow it in brackets (“B (A–C)”: not enough answers to tell). "
        "A metric a model did not run, or without an interval, has no letter.",
    )


def _section_blocks(section: str, models: dict[str, dict[str, Any]], ran: set[str]) -> list[Block]:
    """One harm section: the chart of each metric it grades, with what the chart cannot
    show (models without a value, intervals cut at the metric's bounds)."""
    from gbdesk.contract import get_probe

    blocks: list[Block] = [Heading(HARM_SECTIONS[section])]
    for probe_name, metric in CHART_CONFIG[section]:
        probe = get_probe(probe_name)
        title = f"{probe.capabilities.presentation.metric_title(metric)} ({probe.card.title})"
        if probe_name not in ran:
            blocks.append(Paragraph(f"{title}: not run.", "muted"))
            continue
        definition = probe.mark_definitions.get(metric)
        rows, past, empty, few, absent = [], [], [], [], []
        for model, metrics in models.items():
            m = metrics.get(probe_name, {}).get(metric)
            if m is None:
                absent.append(model)
                continue
            if math.isnan(float(m.value)):
                why = undefined_reason(probe, metric, metrics.get(probe_name, {}))
                empty.append(f"{short_name(model)}: {why}")
            shown = shown_ci(probe, metric, m)
            if shown is None and not math.isnan(float(m.value)):
                why = ci_missing_reason(probe, metric, m).removeprefix("no interval: ")
                few.append(f"{short_name(model)}: {why}")
            lo, hi = shown if shown is not None else (math.nan, math.nan)
            past += cut_ends(probe, metric, m)
            rows.append(ChartRow(short_name(model), float(m.value), lo, hi))
        if definition is not None and definition.description:
            blocks.append(Paragraph(f"{title}: {definition.description}", "muted"))
        blocks.append(
            IntervalChart(
                title,
                rows,
                marks=definition,
                x_range=definition.overall_range if definition else (0.0, 1.0),
            )
        )
        if empty:
            blocks.append(Paragraph("No value — " + "; ".join(empty) + ".", "muted"))
        if few:
            blocks.append(Paragraph("No interval — " + "; ".join(few) + ".", "muted"))
        if absent and len(models) > 1:
            names = ", ".join(short_name(a) for a in absent)
            blocks.append(Paragraph(f"Not run by {names}.", "muted"))
        if past:
            reach = ", ".join(f"{v:.2f}" for v in past)
            blocks.append(
                Paragraph(
                    "Intervals cut at what the metric can be: the bootstrap's normal fit "
                    f"reached {reach} (the marks are GenderBench's, from the uncut interval).",
                    "muted",
                )
            )
    return blocks


def _metric_words(p: str, m: str) -> str:
    """A normalized-table row's metric in words: its title, probe and normalization."""
    from gbdesk.contract import get_probe

    probe = get_probe(p)
    title = probe.capabilities.presentation.metric_title(m)
    how = NORMALIZATION_WORDS[NORMALIZATIONS[p, m]]
    return f"{title} ({probe.card.title}) — {how}"


def _missing_reason(p: str, m: str, metrics: dict[str, dict[str, Any]]) -> str | None:
    """Why a model's normalized value is missing: None when the probe did not run (or has
    no answers), else the reason in words."""
    from gbdesk.contract import get_probe

    value = metrics.get(p, {}).get(m)
    if not metrics.get(p) or value is None:
        return None
    probe = get_probe(p)
    if math.isnan(float(value.value)):
        return undefined_reason(probe, m, metrics[p])
    return "no interval, whose midpoint GenderBench's table reads: " + (
        ci_missing_reason(probe, m, value) or UNDEFINED_CI
    )


def _normalized_table_block(
    columns: list[str], table_rows: list[list[Any]], models: dict[str, dict[str, Any]]
) -> list[Block]:
    """GenderBench's normalized table, one row per metric named in words with its
    normalization; a missing value says "not run" or why it is missing, and is left out
    of the mean of the values present."""
    pairs = [(p, m) for s in SECTIONS for p, m in CHART_CONFIG[s]]
    partial = {row[0]: [v for v in row[1:-1] if not math.isnan(v)] for row in table_rows}
    caption = (
        "GenderBench's normalized table: each graded metric's interval reduced to its "
        "midpoint, then normalized so that 0 is an unbiased model and larger is more biased "
        "(the normalization follows each metric's name; GenderBench's formulas: "
        + "; ".join(
            f"{_metric_words(p, m).split(' — ')[0]} {NORMALIZATION_FORMULAS[NORMALIZATIONS[p, m]]}"
            for p, m in pairs
            if NORMALIZATIONS[p, m] is not identity
        )
        + "). A value is missing — never 0 — where a probe did not run or the metric is "
        "undefined on its answers; Average is GenderBench's mean of the row, undefined "
        "(“—”) when any value is missing."
    )
    missing = {model: len(pairs) - len(v) for model, v in partial.items()}
    if any(missing.values()):
        caption += (
            " Mean of the values present (the missing ones left out): "
            + "; ".join(
                f"{short_name(model)} {np.mean(v):.3f} ({len(v)} of {len(pairs)})"
                if v
                else f"{short_name(model)}: no value"
                for model, v in partial.items()
            )
            + "."
        )
    reasons: list[str] = []
    body = []
    for i, (p, m) in enumerate(pairs):
        cells: list[Any] = [_metric_words(p, m)]
        for row in table_rows:
            value = row[1 + i]
            if not math.isnan(value):
                cells.append(_fmt(value))
                continue
            why = _missing_reason(p, m, models[row[0]])
            if why is None:
                cells.append("not run")
            else:
                what = _metric_words(p, m).split(" — ")[0]
                reasons.append(f"{short_name(row[0])}, {what}: {why}")
                cells.append(f"not measurable ({len(reasons)})")
        body.append(cells)
    average = ["Average (GenderBench's mean of the row)"]
    average += [_fmt(row[-1]) for row in table_rows]
    body.append(average)
    # one row per metric here (twenty columns do not fit a page); the CSV keeps 1.1.0's
    # orientation and column names, one row per model
    blocks: list[Block] = [
        Table(
            ["Metric (probe) — normalization", *(short_name(row[0]) for row in table_rows)],
            body,
            title="Normalized table",
            caption=caption
            + " Shown with one row per metric; genderbench_normalized.csv (gbdesk export "
            "--csv) has GenderBench's layout and column names, one row per model, a missing "
            "value as an empty cell.",
        )
    ]
    if reasons:
        blocks.append(
            Paragraph(
                "Not measurable: "
                + "; ".join(f"({k}) {r}" for k, r in enumerate(reasons, 1))
                + ".",
                "muted",
            )
        )
    return blocks


def build(runs: list[StudyRun]) -> StudyReport | None:
    """The report of the GenderBench runs among a report's runs (`Study.cross_run_report`)."""
    runs = [r for r in runs if r.probe in CLASS_NAMES]
    if not runs:
        return None
    chosen, notes = pick_runs(runs)
    models = {
        model: {p: run.metrics for p, run in by_probe.items() if run.metrics}
        for model, by_probe in chosen.items()
    }  # a run without answers is a probe not run
    ran = {p for by_probe in models.values() for p in by_probe}
    blocks = _opening_blocks(runs, ran)
    blocks.append(_verdict_table(models))  # 1.1.0's emoji tables
    summary = list(blocks)
    for section in SECTIONS:  # the three harm sections
        blocks += _section_blocks(section, models, ran)
    columns, table_rows = normalized_table(models)
    tail = _normalized_table_block(columns, table_rows, models)
    if notes:
        tail.append(Paragraph("Runs used: " + "; ".join(notes) + ".", "muted"))
    blocks += tail
    summary += tail
    csv_columns = ["model", *columns]
    csv_rows = [
        {
            k: ("" if isinstance(v, float) and math.isnan(v) else v)
            for k, v in zip(csv_columns, row, strict=True)
        }
        for row in table_rows
    ]  # NaN as an empty cell, as pandas' to_csv writes it
    return StudyReport(
        "GenderBench 1.1 report",
        blocks,
        {"genderbench_normalized.csv": (csv_columns, csv_rows)},
        summary=summary,
        # 1.1.0's columns keep their names and places; the note comes last in the CSV
        table_notes={"genderbench_normalized.csv": ("values", NORMALIZED_NOTE)},
    )
