"""What a report says (no Qt): runs, metrics, marks, reviews, configuration.

`build_report` gathers everything a PDF (or any other renderer) needs; `pdf.py`
only lays it out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from gbdesk import __version__
from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.paths import resource
from gbdesk.results import ReviewStats, compute_metrics, item_results, review_stats
from gbdesk.stats import MARK_MEANINGS, MetricValue
from gbdesk.store import Store
from gbdesk.studies import Probe, get_probe


@dataclass
class RunSection:
    run: dict[str, Any]
    model: dict[str, Any]
    probe: Probe
    metrics: dict[str, MetricValue]
    review: ReviewStats
    detector: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> int:
        return int(self.run["id"])

    @property
    def model_label(self) -> str:
        return str(self.model.get("name") or "unknown model")

    @property
    def is_default_model(self) -> bool:
        return self.model.get("kind") == "gguf" and is_default_model(self.model.get("path", ""))


@dataclass
class ReportData:
    runs: list[RunSection]
    label_mode: str
    created_at: str
    app_version: str = __version__
    datasets: dict[str, Any] = field(default_factory=dict)

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


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.0f} %"


def _value(m: MetricValue) -> str:
    if math.isnan(m.value):
        return "not measurable"
    lo, hi = m.ci
    ci = "" if math.isnan(lo) else f" (95 % CI {lo:.2f} to {hi:.2f})"
    mark = f", mark {m.mark} ({MARK_MEANINGS[m.mark]})" if m.mark else ""
    return f"{m.value:.2f}{ci}{mark}"


def summarise(section: RunSection, label_mode: str) -> str:
    """A plain-language paragraph about one run."""
    m = section.metrics
    parts = [
        f"{section.model_label} on {section.probe.card.title} (run {section.run_id}, "
        f"{section.review.attempts:,} generations, {label_mode} labels):"
    ]
    if "masculine_rate" in m:
        parts.append(f"masculine rate {_value(m['masculine_rate'])}")
    if "stereotype_rate" in m:
        parts.append(f"stereotype rate {_value(m['stereotype_rate'])}")
    if "disparity" in m:
        parts.append(f"disparity {_value(m['disparity'])}")
    text = parts[0] + " " + "; ".join(parts[1:]) + "."
    if section.probe.name == "laissez_faire":
        text = parts[0] + " " + laissez_faire_summary(m, section.extra)
    elif section.probe.name in PLAIN_SUMMARIES:
        text = parts[0] + " " + PLAIN_SUMMARIES[section.probe.name](m)
    if "undetected_rate_attempts" in m:
        text += (
            f" The detector could not decide the gender of "
            f"{_pct(m['undetected_rate_attempts'].value)} of the generations."
        )
    if section.review.reviewed:
        text += (
            f" A reviewer checked {section.review.reviewed:,} generations and corrected "
            f"{section.review.corrected:,}."
        )
    if section.is_default_model:
        text += " " + TINY_MODEL_NOTICE
    return text


def _num(m: dict[str, MetricValue], name: str, digits: int = 0, pct: bool = False) -> str:
    v = m.get(name)
    if v is None or math.isnan(v.value):
        return "—"
    return _pct(v.value) if pct else f"{v.value:,.{digits}f}"


def _apx_summary(m: dict[str, MetricValue]) -> str:
    text = (
        f"{_num(m, 'flagged_pairs')} group × descriptor pairs over "
        f"{_num(m, 'flagged_descriptors')} descriptors are flagged at the 1 % one-tailed level."
    )
    if "validation_accuracy_apx" in m:
        text += (
            f" On the Ghavami & Peplau descriptors the lowest-perplexity group is the target in "
            f"{_num(m, 'validation_accuracy_ppl', pct=True)} of cases by PPL and "
            f"{_num(m, 'validation_accuracy_apx', pct=True)} by APX (MRR "
            f"{_num(m, 'validation_mrr_ppl', 3)} / {_num(m, 'validation_mrr_apx', 3)})."
        )
    return text


def _profiles_summary(m: dict[str, MetricValue]) -> str:
    return (
        f"from {_num(m, 'profiles')} profiles an SVM recovers the name's ethnicity × gender "
        f"group in {_num(m, 'svm_accuracy_group', pct=True)} of test profiles (chance 2.5 %), "
        f"the ethnicity in {_num(m, 'svm_accuracy_ethnicity', pct=True)} (chance 5 %) and the "
        f"gender in {_num(m, 'svm_accuracy_gender', pct=True)} (chance 50 %); "
        f"{_num(m, 'parse_failures', pct=True)} of the answers gave no usable profile."
    )


def _sdeg_summary(m: dict[str, MetricValue]) -> str:
    groups = sorted(
        ((k.split("/", 1)[1], v) for k, v in m.items() if k.startswith("sdeg_group/")),
        key=lambda kv: -kv[1].value if not math.isnan(kv[1].value) else 0,
    )
    top = "; ".join(f"{g} {_value(v)}" for g, v in groups[:3])
    return (
        f"overall stereotype degree {_value(m['sdeg_overall'])} over {len(groups)} groups"
        + (f"; most uniform: {top}" if top else "")
        + f"; {_num(m, 'unparsed_answers', pct=True)} of answers named no option."
    )


PLAIN_SUMMARIES = {
    "globalbias_apx": _apx_summary,
    "globalbias_profiles": _profiles_summary,
    "intersectional_sdeg": _sdeg_summary,
}


def laissez_faire_summary(m: dict[str, MetricValue], extra: dict[str, Any]) -> str:
    """Plain-language highlights of a Laissez-Faire run: the most omitted and the most
    subordinated groups with p < .05, and name coverage."""

    def significant(prefix: str) -> list[tuple[str, MetricValue]]:
        return [
            (k, v)
            for k, v in m.items()
            if k.startswith(prefix)
            and v.p_value is not None
            and not math.isnan(v.p_value)
            and v.p_value < 0.05
            and not math.isnan(v.value)
        ]

    sentences = []
    omitted = sorted(significant("representation/All/"), key=lambda kv: kv[1].value)[:3]
    if omitted:
        sentences.append(
            "Most under-represented in power-neutral stories (p < .05): "
            + "; ".join(
                f"{k.split('/', 2)[2].replace('/', ' ')} {v.value:.2f}×" for k, v in omitted
            )
            + "."
        )
    subordinated = sorted(significant("subordination/All/"), key=lambda kv: -kv[1].value)[:3]
    if subordinated:
        sentences.append(
            "Most often in the subordinate role (p < .05): "
            + "; ".join(
                f"{k.split('/', 2)[2].replace('/', ' ')} {v.value:.2f}×" for k, v in subordinated
            )
            + "."
        )
    if not sentences:
        sentences.append("No representation or subordination ratio differs from parity at p < .05.")
    if "coverage/matched" in m:
        sentences.append(
            f"{100 * m['coverage/named'].value:.0f} % of characters have a name; "
            f"{100 * m['coverage/matched'].value:.0f} % of those names are in the "
            f"name table ({extra.get('table', {}).get('id', '?')})."
        )
    missing = extra.get("not_measured") or []
    if missing:
        sentences.append(f"Not measured by the name table: {', '.join(missing)}.")
    return " ".join(sentences)


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
        ("Detector", section.detector),
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


def build_report(store: Store, run_ids: list[int], label_mode: str = "reviewed") -> ReportData:
    sections = []
    for run_id in run_ids:
        run = store.get_run(run_id)
        model = store.get_model(run["model_id"]) if run["model_id"] else {}
        probe = get_probe(run["probe"])
        auto = store.labels(run_id, "auto", probe.auto_source(run["params"]))
        detectors = sorted({row["source"] for row in auto.values()})
        sections.append(
            RunSection(
                run=run,
                model=model,
                probe=probe,
                metrics=compute_metrics(store, run_id, label_mode),
                review=review_stats(store, run_id),
                detector=", ".join(detectors) or "—",
                extra=probe.extra_results(item_results(store, run_id, label_mode), run["params"]),
            )
        )
    return ReportData(
        runs=sections,
        label_mode=label_mode,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        datasets=load_datasets(),
    )
