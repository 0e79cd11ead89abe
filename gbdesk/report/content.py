"""What a report says (no Qt): runs, metrics, marks, reviews, configuration.

`build_report` gathers everything a PDF (or any other renderer) needs; `pdf.py`
only lays it out.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gbdesk import __version__
from gbdesk.analysis.group_rates import GroupTable, group_tables
from gbdesk.analysis.label_accuracy import ReviewStats, review_stats
from gbdesk.analysis.results import (
    compute_metrics,
    ensure_auto_labels,
    open_run,
)
from gbdesk.analysis.shown import shown_ci
from gbdesk.contract import Probe, study_reports
from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.maths.stats import MetricValue
from gbdesk.people.raters import agreement_blocks, labels_agreement, mode_counts
from gbdesk.report.audit_findings import audit_findings, with_audit
from gbdesk.report.audit_report import AuditReport
from gbdesk.report.digest import ReportDigest, report_digest
from gbdesk.report.groups import group_blocks as group_table_blocks
from gbdesk.report.rewording import FamilyView, depends_lines, family_views
from gbdesk.report.run_results import run_extra_results
from gbdesk.report.test_log import TestLog, build_test_log
from gbdesk.store import Store
from gbdesk.support.blocks import (
    Block,
    ChartRow,
    Heading,
    IntervalChart,
    Paragraph,
    StudyReport,
    StudyRun,
    Table,
)
from gbdesk.support.errors import UserError
from gbdesk.support.format import UNDEFINED_VALUE, fmt, short_name, unfinished_note
from gbdesk.support.paths import resource

if TYPE_CHECKING:
    from gbdesk.analysis.compare import Comparison
    from gbdesk.analysis.findings import RunFinding

log = logging.getLogger(__name__)


@dataclass
class RunSection:
    run: dict[str, Any]
    model: dict[str, Any]
    probe: Probe
    metrics: dict[str, MetricValue]
    review: ReviewStats
    detector: str  # the labels' source keys (the appendix's reproducibility record)
    extra: dict[str, Any] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)  # the metric groups, then the study's
    label_counts: dict[str, int] = field(default_factory=dict)  # several raters (`mode_counts`)
    findings: list[RunFinding] = field(default_factory=list)
    #: the group tables of a probe that decides about people (`gbdesk.analysis.group_rates`)
    groups: list[GroupTable] = field(default_factory=list)

    @property
    def run_id(self) -> int:
        return int(self.run["id"])

    @property
    def model_label(self) -> str:
        return str(self.model.get("name") or "unknown model")

    @property
    def is_default_model(self) -> bool:
        return self.model.get("kind") == "gguf" and is_default_model(self.model.get("path", ""))

    @property
    def detector_words(self) -> str:
        """What wrote the automatic labels, in words ("the pronoun detector")."""
        return self.probe.capabilities.labelling.detector_title(self.run.get("params") or {})

    @property
    def no_answers(self) -> bool:
        """The run has no stored answer yet (planned, just started, or failed at once)."""
        return not int(self.run.get("attempts_done") or 0)

    @property
    def unfinished(self) -> str | None:
        """ "unfinished: 16 of 745 generations (interrupted)" for a run whose attempts are not
        all made, else None."""
        return unfinished_note(self.run, self.probe.capabilities.running.unit)


@dataclass
class ReportData:
    runs: list[RunSection]
    label_mode: str
    created_at: str
    app_version: str = __version__
    datasets: dict[str, Any] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    audit: AuditReport | None = None  # the audit the report ends (`report.audit_report`)
    #: the studies' reports over several runs (`Study.cross_run_report`)
    study_reports: list[StudyReport] = field(default_factory=list)
    #: the reported runs' wording families of two or more wordings, each compared once
    #: (`gbdesk.report.rewording`); the headline numbers stay the runs' own
    wordings: list[FamilyView] = field(default_factory=list)
    #: what the report's data hash to (`gbdesk.report.digest`; the PDF carries it)
    digest: ReportDigest | None = None
    #: the dated test log of the report's final section (`gbdesk.report.test_log`)
    test_log: TestLog | None = None

    def depends_on_wording(self) -> list[str]:
        """The verdicts that depend on the wording, one line each (`depends_lines`)."""
        return depends_lines(self.wordings)

    def findings(self) -> list[RunFinding]:
        """Every run's findings, most important first (`gbdesk.analysis.findings.ordered`)."""
        from gbdesk.analysis.findings import ordered

        return ordered([f for s in self.runs for f in s.findings])

    @property
    def models(self) -> list[str]:
        seen: list[str] = []
        for section in self.runs:
            if section.model_label not in seen:
                seen.append(section.model_label)
        return seen

    def verdict(self) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
        """Columns (probe, metric) of every marked metric, and rows of (run id, metric) per
        cell. A model's runs of different probes share a row; a second run of the same
        probe (another template or seed) opens another row for that model."""
        columns: list[tuple[str, str]] = []
        for s in self.runs:
            for name in s.probe.mark_definitions:
                if name in s.metrics and (s.probe.name, name) not in columns:
                    columns.append((s.probe.name, name))
        rows: list[dict[str, Any]] = []
        for s in self.runs:
            row = next(
                (
                    r
                    for r in rows
                    if r["model"] == s.model_label and s.probe.name not in r["probes"]
                ),
                None,
            )
            if row is None:
                row = {"model": s.model_label, "cells": {}, "probes": set(), "runs": []}
                rows.append(row)
            row["probes"].add(s.probe.name)
            row["runs"].append(s.run_id)
            for probe, metric in columns:
                if probe == s.probe.name and metric in s.metrics:
                    row["cells"][(probe, metric)] = (s.run_id, s.metrics[metric])
        return columns, rows

    def summary(self) -> list[str]:
        return [summarise(s, self.label_mode) for s in self.runs]


def labels_used(section: RunSection, label_mode: str) -> str:
    """Which labels the run's numbers come from, in words (0 reviewed → automatic)."""
    review, unit = section.review, section.probe.capabilities.running.unit
    if label_mode == "ppi":
        return (
            f"prediction-powered estimates: the automatic labels of all {review.attempts:,} "
            f"{unit}, corrected by the human labels of the run's random review sample"
        )
    if label_mode == "reviewed" and review.reviewed:
        return (
            f"reviewed labels: {review.reviewed:,} of {review.attempts:,} {unit} checked by a "
            f"person, {section.detector_words}'s labels elsewhere"
        )
    if label_mode == "reviewed":
        return (
            f"automatic labels ({section.detector_words}); none of the {unit} reviewed by a person"
        )
    counts = section.label_counts
    if label_mode.startswith("rater:"):
        rater = label_mode.removeprefix("rater:")
        return (
            f"{rater}'s labels: {counts.get('rater', 0):,} of {review.attempts:,} {unit} "
            f"labelled by {rater}, {section.detector_words}'s labels elsewhere"
        )
    if label_mode == "consensus":
        unresolved = counts.get("unresolved", 0)
        return (
            f"consensus labels: {counts.get('consensus', 0):,} {unit} adjudicated where raters "
            f"disagreed, a reviewer's label for {counts.get('human', 0):,} {unit} otherwise "
            f"(the latest, of {counts.get('raters', 0)} rater(s)), {section.detector_words}'s "
            "labels elsewhere"
            + (f"; {unresolved:,} disagreement(s) not adjudicated yet" if unresolved else "")
        )
    return f"automatic labels ({section.detector_words})"


def summarise(section: RunSection, label_mode: str) -> str:
    """A plain-language paragraph about one run."""
    if section.no_answers:
        return (
            f"{short_name(section.model_label)} on {section.probe.card.title} (run "
            f"{section.run_id}, "
            f"{section.run.get('status') or 'planned'}): no answers yet — nothing is measured."
        )
    unfinished = section.unfinished
    count = (
        f"{unfinished} — the numbers cover only these"
        if unfinished
        else f"{section.review.attempts:,} {section.probe.capabilities.running.unit}"
    )
    head = (
        f"{short_name(section.model_label)} on {section.probe.card.title} (run "
        f"{section.run_id}, "
        f"{count}; {labels_used(section, label_mode)}):"
    )
    body = section.probe.summary(section.metrics, section.extra, section.run.get("params") or {})
    text = f"{head} {body}".strip()
    if section.review.reviewed:
        text += (
            f" A reviewer checked {section.review.reviewed:,} generations and corrected "
            f"{section.review.corrected:,}."
        )
    if section.is_default_model:
        text += " " + TINY_MODEL_NOTICE
    return text


def _count(value: float) -> str:
    return fmt(value, 0 if value >= 10 else 3)


def group_blocks(section: RunSection) -> list[Block]:
    """The run's metric groups as report blocks: a chart per marked metric, one chart per
    ratio or score group, a table for counts."""
    out: list[Block] = []
    probe = section.probe
    for group in probe.metric_groups(list(section.metrics)):
        present = [n for n in group.metrics if n in section.metrics]
        if not present:
            continue
        out.append(Heading(group.title))
        if group.description:
            out.append(Paragraph(group.description, "muted"))
        if group.kind == "count":
            out.append(
                Table(
                    list(group.columns),
                    [
                        [
                            group.labels.get(n) or probe.capabilities.presentation.metric_title(n),
                            _count(section.metrics[n].value),
                        ]
                        for n in present
                    ],
                )
            )
            continue
        note = missing_note(probe, group, present, section.metrics)
        drawn = [n for n in present if not _missing(section.metrics[n].value)]
        rows = [chart_row(probe, n, section.metrics[n], group.labels.get(n)) for n in drawn]
        if group.marked:
            for row, name in zip(rows, drawn, strict=True):
                marks = probe.mark_definitions.get(name)
                rng = marks.overall_range if marks else group.plot_range()
                out.append(IntervalChart(row.label, [row], group.kind, rng, marks))
        elif rows:
            out.append(IntervalChart(group.title, rows, group.kind, group.plot_range()))
        if note:
            out.append(Paragraph(note, "muted"))
    return out


def chart_row(probe: Any, name: str, m: MetricValue, label: str | None = None) -> ChartRow:
    """A metric as a chart draws it: its value and the interval every view shows (cut at
    what the metric can be; no bar from too few items, `gbdesk.analysis.shown`)."""
    shown = shown_ci(probe, name, m)
    lo, hi = shown if shown is not None else (math.nan, math.nan)
    return ChartRow(label or probe.capabilities.presentation.metric_title(name), m.value, lo, hi)


def _missing(value: float | None) -> bool:
    return value is None or value != value


def missing_note(probe: Any, group: Any, names: list[str], metrics: dict[str, Any]) -> str:
    """Why some of a chart's metrics have no bar, in words ("Nothing to plot: …" when
    none has one); "" when every metric has a value."""
    names = [n for n in names if n in metrics]
    gone = [n for n in names if _missing(metrics[n].value)]
    if not gone:
        return ""
    reasons: dict[str, list[str]] = {}
    for n in gone:
        why = probe.capabilities.presentation.why_undefined(n, metrics) or UNDEFINED_VALUE
        reasons.setdefault(why, []).append(
            group.labels.get(n) or probe.capabilities.presentation.metric_title(n)
        )
    lead = "Nothing to plot" if len(gone) == len(names) else "Not shown"
    return (
        lead
        + ": "
        + "; ".join(f"{', '.join(titles)} — {why}" for why, titles in reasons.items())
        + "."
    )


def configuration(section: RunSection) -> list[tuple[str, str]]:
    """The appendix entries that let someone reproduce the run."""
    run, model = section.run, section.model
    engine = run.get("engine") or {}
    settings = engine.get("settings") or {}
    params = run.get("params") or {}
    generation = run.get("generation") or {}
    rows = [
        (
            "Run",
            f"{run['id']} ({run['source']}), status {run['status']}, "
            f"{run.get('attempts_done', 0):,} / {run['attempts_total']:,} attempts",
        ),
        ("Created / finished", f"{run['created_at']} / {run.get('finished_at') or '—'}"),
        ("Probe", f"{section.probe.name} version {run['probe_version']}"),
        ("Model", model.get("name", "?")),
        ("Model file", model.get("file_name") or model.get("path", "")),
        ("SHA-256", model.get("sha256") or "—"),
        (
            "Architecture / parameters",
            f"{model.get('architecture') or '—'} / {model.get('parameters') or '—'}",
        ),
        ("Quantisation", model.get("quantization") or "—"),
        (
            "Context length (model / used)",
            f"{model.get('context_length') or '—'} / {settings.get('n_ctx') or '—'}",
        ),
        ("Prompt mode", engine.get("prompt_mode") or generation.get("prompt_mode") or "—"),
        ("Template", f"{params.get('template_name', '—')}: {params.get('template', '—')}"),
        (
            "Items",
            f"limit {params.get('limit') or 'none'}, sample {params.get('sample') or 'none'}"
            + (f" (seed {params['sample_seed']})" if params.get("sample_seed") else ""),
        ),
        ("Generation", ", ".join(f"{k} {v}" for k, v in generation.items())),
        (
            "Engine",
            f"{engine.get('backend', '—')}, {settings.get('n_threads', '—')} threads, "
            f"batch {settings.get('n_batch', '—')}",
        ),
        (
            "Versions",
            f"gbdesk {run['app_version']}, llama-cpp-python {run.get('llama_cpp_version') or '—'}",
        ),
        ("Platform", engine.get("platform", "—")),
        ("Detector", f"{section.detector_words} (labels' source: {section.detector})"),
        ("Bootstrap", "1000 resamples of items, seed 123, interval mean ± 1.96 σ"),
    ]
    return rows


def chat_template(section: RunSection) -> str:
    return str(section.model.get("chat_template") or "")


def load_datasets() -> dict[str, Any]:
    try:
        return json.loads(resource("datasets.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def build_report(
    store: Store,
    run_ids: list[int],
    label_mode: str = "reviewed",
    *,
    compare: bool = True,
    audit: AuditReport | dict[str, Any] | None = None,
    flat: bool = True,
) -> ReportData:
    """Everything the report says; `compare`: a paired comparison of every later run of a
    probe against its first run; `audit`: the audit it ends, rendered as it is (its
    `AuditReport`; a hand-built dict is read by `AuditReport.from_dict`; its audit id names
    the audit in the test log); `flat=False` reads every label (the
    reference path). The digest and test log come last, over what was labelled here."""
    if isinstance(audit, dict):
        audit = AuditReport.from_dict(with_stored_plan(store, audit) or audit)
    sections = [
        run_section(store, run_id, label_mode, flat=flat, findings=audit is None)
        for run_id in run_ids
    ]
    comparisons = run_comparisons(store, sections, label_mode) if compare else []
    # the digest of what the report reports, after every attempt was labelled above
    digest = report_digest(store, {s.run_id: s.metrics for s in sections}, label_mode)
    created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return ReportData(
        runs=sections,
        label_mode=label_mode,
        created_at=created_at,
        datasets=load_datasets(),
        comparisons=comparisons,
        audit=audit,
        study_reports=study_reports([study_run(s.run, s.model_label, s.metrics) for s in sections]),
        wordings=family_views(
            store, run_ids, label_mode, {s.run_id: s.model_label for s in sections}
        ),
        digest=digest,
        test_log=build_test_log(
            store, run_ids, audit, digest=digest, label_mode=label_mode, made_at=created_at
        ),
    )


def run_section(
    store: Store, run_id: int, label_mode: str, *, flat: bool = True, findings: bool = True
) -> RunSection:
    """One run's section: its metrics, review, extra results, group tables and blocks,
    and (`findings`, outside an audit, whose report says its verdicts on page 1) its
    findings."""
    from gbdesk.analysis.findings import run_findings

    opened = open_run(store, run_id)  # its row and probe, once for all that follows
    run, probe, source = opened.row, opened.probe, opened.label_source
    model = store.get_model(run["model_id"]) if run["model_id"] else {}
    if flat:
        ensure_auto_labels(store, opened)
        detectors = store.label_sources(run_id, "auto", source)
    else:
        detectors = sorted({row["source"] for row in store.labels(run_id, "auto", source).values()})
    section = RunSection(
        run=run,
        model=model,
        probe=probe,
        metrics=compute_metrics(store, opened, label_mode, flat=flat),
        review=review_stats(store, run_id, flat=flat),
        detector=", ".join(detectors) or "—",
        extra=run_extra_results(store, opened, label_mode, flat=flat),
    )
    section.groups = group_tables(store, opened, label_mode)
    section.blocks = (
        group_blocks(section)
        + probe.capabilities.presentation.report_blocks(section.extra, run["params"])
        + group_table_blocks(section.groups)
    )
    raters = list(store.rater_labels(run_id))
    if len(raters) >= 2:
        section.blocks += agreement_blocks(labels_agreement(store, run_id), raters)
    if label_mode not in ("auto", "reviewed", "ppi"):
        section.label_counts = mode_counts(store, run_id, label_mode)
    if findings:
        section.findings = with_audit(
            run_findings(
                run_id, section.model_label, probe, section.metrics, section.extra, run["params"]
            ),
            audit_findings(store, run_id, section.model_label, probe),
        )
    return section


def run_comparisons(store: Store, sections: list[RunSection], label_mode: str) -> list[Comparison]:
    """A paired comparison of every later run of a probe against its first run."""
    from gbdesk.analysis.compare import compare_runs

    comparisons: list[Comparison] = []
    for a, b in comparable_pairs(sections):
        try:
            comparisons.append(compare_runs(store, a, b, label_mode))
        except UserError as exc:  # e.g. no item in common: say so in the log, go on
            log.info("no comparison of runs %s and %s: %s", a, b, exc)
    return comparisons


def with_stored_plan(store: Store, audit: dict[str, Any] | None) -> dict[str, Any] | None:
    """The audit's report dict with what its stored record adds: the harness's title and
    each probe's prompts per item (the plan table's items × prompts × attempts)."""
    if not audit or audit.get("audit_id") is None:
        return audit
    from gbdesk.store import audits as stored_audits

    record = stored_audits.get_audit(store, int(audit["audit_id"]))
    if record is None:
        return audit
    prompts = {p.get("probe"): p.get("prompts") for p in record.get("plan") or []}
    state = record.get("state") or {}
    stored = {k: record.get(k) for k in ("budget_s", "created_at", "finished_at", "left_out")}
    return {
        **stored,
        "status": record.get("status"),
        "seconds": state.get("spent_s"),
        **audit,
        "harness_title": audit.get("harness_title") or state.get("harness_title"),
        "plan": [
            {**p, "prompts": p.get("prompts") or prompts.get(p.get("probe")) or 1}
            for p in audit.get("plan") or []
        ],
    }


def study_run(run: dict[str, Any], model: str, metrics: dict[str, MetricValue]) -> StudyRun:
    """A run as a study's cross-run report sees it."""
    return StudyRun(
        run_id=int(run["id"]),
        probe=run["probe"],
        model=model,
        params=run.get("params") or {},
        metrics=metrics,
        status=str(run.get("status") or "done"),
    )


def comparable_pairs(sections: list[RunSection]) -> list[tuple[int, int]]:
    """Pairs (A, B) of the report's runs of the same probe on different models or
    settings: each later run against the first run of its probe."""
    first: dict[str, int] = {}
    pairs = []
    for s in sections:
        if s.probe.name in first:
            pairs.append((first[s.probe.name], s.run_id))
        else:
            first[s.probe.name] = s.run_id
    return pairs
