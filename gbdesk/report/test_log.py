"""The report's dated test log (no Qt): a typed value built from the database
(`build_test_log`), and its report blocks — what ran, when, on what, what an audit's budget
bought, who reviewed which labels, whether the model's texts are reproducible, a Yes / No /
N-A checklist of what the runs did and did not cover, and the report's own digest
(`gbdesk.report.digest`).

Everything comes from what the store recorded when the runs were made (a run's engine
record: backend, settings, versions, CPU; the model row: its SHA-256, computed once when the
file was registered; the labels; the audit's plan and state; the model's stored
self-tests), never from the machine the report is made on. EU AI Act Annex IV 2(g) asks
for "test logs and all test reports dated and signed by the responsible persons"; AI
Verify's summary report for the checklist; the PDF adds the sign-off block after it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from gbdesk import __version__
from gbdesk.contract import get_probe
from gbdesk.engine.default_model import is_default_model
from gbdesk.report.audit_report import AuditReport
from gbdesk.report.digest import VERSION, ReportDigest
from gbdesk.store import Store
from gbdesk.store.selftests import DETERMINISM, latest_selftest
from gbdesk.support.blocks import Block, Heading, Paragraph, Table
from gbdesk.support.format import duration, short_name, unfinished_note

log = logging.getLogger(__name__)

YES, NO, NA = "Yes", "No", "N-A"
#: what the test log says of a server's batching (no self-test can control it)
SERVER_BATCHING = (
    "served by {endpoint} as {model}: the server decides how it batches requests and whether "
    "it honours the seeds gbdesk sends; gbdesk does not control either, so the same request "
    "may get another text"
)


@dataclass(frozen=True)
class Reviewer:
    """Who reviewed a run's labels: a reviewer's (or an adjudicator's) latest label per
    attempt, how many differ from the automatic label, and when."""

    who: str
    kind: str  # "reviewer" or "adjudicator"
    labels: int
    changed: int
    first: str
    last: str


@dataclass(frozen=True)
class RunLog:
    """One run of the log: when, what ran, on what."""

    run_id: int
    probe: str
    title: str
    probe_version: str
    source: str
    status: str
    unfinished: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    template: str
    wording: str
    items: int
    prompts: int
    attempts_per_item: int
    answers: int
    planned: int
    seed: Any
    sampling: dict[str, Any]
    engine: dict[str, Any]
    versions: dict[str, str]
    detector: str
    reviewers: list[Reviewer] = field(default_factory=list)
    review_sample: int = 0
    reviewable: bool = True
    other_wordings: bool = False  # the probe offers wordings beyond its own
    digest: str = ""


@dataclass(frozen=True)
class ModelLog:
    """A model of the runs: a GGUF file and its SHA-256, or an endpoint and the model id
    it serves."""

    model_id: int | None
    name: str
    kind: str
    file: str
    sha256: str | None
    size_bytes: int | None
    quantization: str | None
    parameters: int | None
    endpoint: str | None
    served_model: str | None
    demo: bool


@dataclass(frozen=True)
class Determinism:
    """Whether the model's texts are reproducible: the latest stored determinism check of
    a local model (`gbdesk.store.selftests`), or why a server's cannot be checked."""

    model: str
    answer: str  # YES, NO or NA
    text: str
    checked_at: str | None = None


@dataclass(frozen=True)
class AuditLog:
    """The audit the report ends: its budget and what it bought."""

    audit_id: int
    budget: str
    budget_s: float
    spent_s: float
    answers: int
    status: str
    created_at: str | None
    finished_at: str | None
    planned: list[str]
    not_run: list[str]
    left_out: list[str]


@dataclass(frozen=True)
class Check:
    """A line of the checklist: a question, Yes / No / N-A, and what it rests on."""

    question: str
    answer: str
    detail: str


@dataclass(frozen=True)
class TestLog:
    """The test log of a report (`build_test_log`)."""

    __test__ = False  # not a pytest test class, whatever its name

    made_at: str
    app_version: str
    label_mode: str
    models: list[ModelLog]
    runs: list[RunLog]
    audit: AuditLog | None
    determinism: list[Determinism]
    checklist: list[Check]
    digest: ReportDigest | None


def when(stamp: str | None) -> str:
    """A stored time stamp as the log prints it: "2026-12-02 01:11:15 UTC" ("—": none)."""
    if not stamp:
        return "—"
    text = str(stamp).replace("T", " ")
    if text.endswith("+00:00"):
        return text[: -len("+00:00")] + " UTC"
    return text


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _wording(probe: Any, params: dict[str, Any]) -> tuple[str, bool]:
    """The run's wording in words and whether its probe offers others."""
    from gbdesk.contract.capabilities import wording_id

    chosen = wording_id(params)
    try:
        wordings = probe.capabilities.parameters.wordings()
    except Exception:  # a study whose wordings cannot be read: the id is still known
        log.info("wordings of %s not read", probe.name, exc_info=True)
        wordings = []
    name = next((w.name for w in wordings if w.id == chosen), "")
    text = f"wording {chosen}" + (f" ({name})" if name else "")
    return text, len(wordings) > 1


def _reviewers(store: Store, run_id: int, probe: Any, source: str | None) -> list[Reviewer]:
    out = []
    for kind, who_kind in (("human", "reviewer"), ("consensus", "adjudicator")):
        for who, labels in store.rater_labels(run_id, kind=kind).items():
            auto = store.labels_of(labels, "auto", source)
            differ = probe.capabilities.labelling.labels_differ
            changed = sum(1 for a, h in labels.items() if a in auto and differ(auto[a], h))
            every = store.rater_labels(run_id, kind=kind, which="first").get(who, {})
            stamps = sorted(str(r["created_at"]) for r in [*labels.values(), *every.values()])
            out.append(Reviewer(who, who_kind, len(labels), changed, stamps[0], stamps[-1]))
    return out


def _run_log(store: Store, run_id: int, digest: str) -> RunLog:
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    params, generation = run.get("params") or {}, run.get("generation") or {}
    engine = run.get("engine") or {}
    settings = engine.get("settings") or {}
    items = store.run_items(run_id)
    wording, others = _wording(probe, params)
    source = probe.capabilities.labelling.auto_source(params)
    versions = {"gbdesk": str(run.get("app_version") or "")}
    recorded = engine.get("versions") or {}
    if run.get("llama_cpp_version") or recorded.get("llama_cpp_python"):
        versions["llama-cpp-python"] = str(
            recorded.get("llama_cpp_python") or run.get("llama_cpp_version")
        )
    if recorded.get("llama_cpp"):
        versions["llama.cpp"] = str(recorded["llama_cpp"])
    sampling = {
        k: generation[k] for k in ("temperature", "top_p", "top_k", "min_p", "max_tokens")
        if k in generation
    }  # fmt: skip
    shown_engine = {
        "backend": engine.get("backend"),
        "prompt_mode": engine.get("prompt_mode") or generation.get("prompt_mode"),
        "threads": settings.get("n_threads"),
        "context": settings.get("n_ctx"),
        "batch": (engine.get("batching") or {}).get("slots") or settings.get("batch_size"),
        "cpu": engine.get("cpu"),
        "cores": engine.get("cores"),
        "platform": engine.get("platform"),
        "endpoint": settings.get("endpoint"),
        "served_model": settings.get("server_model") or settings.get("endpoint_model"),
        "concurrency": settings.get("concurrency"),
    }
    template = str(params.get("template_name") or "—")
    return RunLog(
        run_id=run_id,
        probe=probe.name,
        title=probe.card.title,
        probe_version=str(run.get("probe_version") or ""),
        source=str(run.get("source") or "generated"),
        status=str(run.get("status") or ""),
        unfinished=unfinished_note(run, probe.capabilities.running.unit),
        created_at=str(run.get("created_at") or ""),
        started_at=run.get("started_at"),
        finished_at=run.get("finished_at"),
        template=template,
        wording=wording,
        items=len(items),
        prompts=sum(len(i.get("prompts") or ()) or 1 for i in items),
        attempts_per_item=int(generation.get("attempts") or 1),
        answers=int(run.get("attempts_done") or 0),
        planned=int(run.get("attempts_total") or 0),
        seed=generation.get("seed"),
        sampling=sampling,
        engine={k: v for k, v in shown_engine.items() if v not in (None, "", {})},
        versions=versions,
        detector=probe.capabilities.labelling.detector_title(params),
        reviewers=_reviewers(store, run_id, probe, source),
        review_sample=len(store.review_sample(run_id)),
        reviewable=probe.capabilities.review.reviewable,
        other_wordings=others,
        digest=digest,
    )


def _model_log(store: Store, model_id: int | None) -> ModelLog:
    model = store.get_model(model_id) if model_id is not None else {}
    meta = _json(model.get("metadata_json"))
    endpoint = model.get("kind") == "endpoint"
    return ModelLog(
        model_id=model_id,
        name=str(model.get("name") or "unknown model"),
        kind=str(model.get("kind") or "—"),
        file=str(model.get("file_name") or model.get("path") or "—"),
        sha256=model.get("sha256"),
        size_bytes=model.get("size_bytes"),
        quantization=model.get("quantization"),
        parameters=model.get("parameters"),
        endpoint=str(model.get("path")) if endpoint else None,
        served_model=(meta.get("endpoint_model") or model.get("file_name")) if endpoint else None,
        demo=model.get("kind") == "gguf" and is_default_model(str(model.get("path") or "")),
    )


def _determinism(store: Store, model: ModelLog) -> Determinism:
    if model.endpoint:
        text = SERVER_BATCHING.format(endpoint=model.endpoint, model=model.served_model or "?")
        return Determinism(model.name, NA, text[:1].upper() + text[1:] + ".")
    check = latest_selftest(store, model.model_id, DETERMINISM) if model.model_id else None
    if check is None:
        return Determinism(
            model.name,
            NO,
            "No determinism check is stored for this model: whether its texts are the same "
            "decoded alone and in a full batch was not tested (gbdesk selftest --determinism "
            "runs it and stores the result).",
        )
    answer = YES if check["passed"] else NO
    return Determinism(
        model.name,
        answer,
        f"{check['summary']} (determinism check of {when(check['created_at'])}, gbdesk "
        f"{check['app_version']}).",
        check["created_at"],
    )


def _audit_log(report: AuditReport | None) -> AuditLog | None:
    """The audit's budget and what it bought, from the value the audit handed over (its
    plan's answers are the runs' stored counts); None when the report ends no stored audit."""
    if report is None or report.audit_id is None:
        return None
    return AuditLog(
        audit_id=int(report.audit_id),
        budget=report.budget,
        budget_s=report.budget_s,
        spent_s=report.seconds,
        answers=report.generations,
        status=report.status,
        created_at=report.created_at,
        finished_at=report.finished_at,
        planned=[p.probe for p in report.plan],
        not_run=[p.probe for p in report.plan if not p.generations],
        left_out=list(report.left_out),
    )


def _checklist(
    runs: list[RunLog],
    models: list[ModelLog],
    audit: AuditLog | None,
    determinism: list[Determinism],
) -> list[Check]:
    """What the runs did and did not cover, as Yes / No / N-A lines (AI Verify's style)."""
    return [
        _planned_check(audit),
        _finished_check(runs),
        _wordings_check(runs),
        *_review_checks(runs),
        _demo_check(models),
        _identity_check(models),
        _determinism_check(determinism),
    ]


def _planned_check(audit: AuditLog | None) -> Check:
    question = "Every planned probe ran"
    if audit is None:
        return Check(question, NA, "not an audit: the runs were chosen by hand")
    gone = [*audit.not_run, *audit.left_out]
    if gone:
        return Check(question, NO, "not run: " + "; ".join(gone))
    return Check(question, YES, f"{len(audit.planned)} probes")


def _finished_check(runs: list[RunLog]) -> Check:
    question = "Every run made all its planned answers"
    open_runs = [f"run {r.run_id}: {r.unfinished}" for r in runs if r.unfinished]
    if open_runs:
        return Check(question, NO, "; ".join(open_runs))
    return Check(question, YES, f"{len(runs)} runs")


def _wordings_check(runs: list[RunLog]) -> Check:
    question = "The prompts were also asked in other wordings"
    if not any(r.other_wordings for r in runs):
        return Check(question, NA, "no probe here has other wordings")
    reworded = sorted({r.probe for r in runs if not r.wording.startswith("wording 0")})
    if reworded:
        return Check(question, YES, "other wordings of " + ", ".join(reworded))
    return Check(question, NO, "only the studies' own wordings (run or audit --wordings all)")


def _review_checks(runs: list[RunLog]) -> list[Check]:
    reviewed_q = "A person reviewed automatic labels"
    sample_q = "A random review sample measured the labels' accuracy"
    reviewable = [r for r in runs if r.reviewable and r.answers]
    if not reviewable:
        return [Check(reviewed_q, NA, "no labels to review"), Check(sample_q, NA, "")]
    reviewed = [r for r in reviewable if r.reviewers]
    if reviewed:
        n = sum(v.labels for r in reviewed for v in r.reviewers if v.kind == "reviewer")
        people = Check(
            reviewed_q, YES, f"{n:,} labels in {len(reviewed)} of {len(reviewable)} runs"
        )
    else:
        people = Check(reviewed_q, NO, "every label is the automatic labeller's")
    sampled = [str(r.run_id) for r in reviewable if r.review_sample]
    if sampled:
        sample = Check(sample_q, YES, "runs " + ", ".join(sampled))
    else:
        sample = Check(sample_q, NO, "no random review sample was drawn (gbdesk sample)")
    return [people, sample]


def _demo_check(models: list[ModelLog]) -> Check:
    question = "The model audited is not the bundled demo model"
    if any(m.demo for m in models):
        return Check(
            question,
            NO,
            "the bundled SmolLM2-135M demonstrates the pipeline; its numbers describe no "
            "real model",
        )
    return Check(question, YES, ", ".join(short_name(m.name) for m in models))


def _identity_check(models: list[ModelLog]) -> Check:
    question = "The model's identity is recorded (file SHA-256 or served model id)"
    named = [f"{short_name(m.name)}: {m.sha256 or m.served_model or 'none'}" for m in models]
    missing = any(not (m.sha256 or m.served_model) for m in models)
    return Check(question, NO if missing else YES, "; ".join(named))


def _determinism_check(determinism: list[Determinism]) -> Check:
    question = "The same texts come out decoded alone and in a batch"
    answers = {d.answer for d in determinism}
    answer = NO if NO in answers else YES if YES in answers else NA
    return Check(question, answer, " ".join(d.text for d in determinism))


def build_test_log(
    store: Store,
    run_ids: list[int],
    audit: AuditReport | None = None,
    *,
    digest: ReportDigest | None = None,
    label_mode: str = "reviewed",
    made_at: str = "",
) -> TestLog:
    """The test log of a report over these runs (and the audit it ends)."""
    digests = {r.run_id: r.digest for r in digest.runs} if digest else {}
    runs = [_run_log(store, r, digests.get(r, "")) for r in run_ids]
    model_ids = list(dict.fromkeys(store.get_run(r)["model_id"] for r in run_ids))
    models = [_model_log(store, m) for m in model_ids]
    audit_log = _audit_log(audit)
    determinism = [_determinism(store, m) for m in models]
    return TestLog(
        made_at=made_at,
        app_version=__version__,
        label_mode=label_mode,
        models=models,
        runs=runs,
        audit=audit_log,
        determinism=determinism,
        checklist=_checklist(runs, models, audit_log, determinism),
        digest=digest,
    )


# -- blocks -------------------------------------------------------------------------------
def _asked(r: RunLog) -> str:
    """ "30 items × 3 prompts × 3 attempts = 270 answers" (and how many were planned)."""
    per = f" × {r.prompts / r.items:g} prompts" if r.items and r.prompts != r.items else ""
    text = f"{r.items:,} items{per} × {r.attempts_per_item} = {r.answers:,} answers"
    return text if r.answers == r.planned else f"{text} of {r.planned:,} planned"


#: how the test log names the sampling settings
SAMPLING_WORDS = {
    "temperature": "temperature", "top_p": "top-p", "top_k": "top-k", "min_p": "min-p",
    "max_tokens": "max tokens",
}  # fmt: skip


def _settings(r: RunLog) -> str:
    """Template and wording, seed, sampling settings, in one cell."""
    sampling = ", ".join(f"{SAMPLING_WORDS.get(k, k)} {v}" for k, v in r.sampling.items())
    return f"{r.template}, {r.wording}; seed {r.seed}; {sampling}"


def _period(r: RunLog) -> str:
    """ "2026-12-02 01:23:03 – 01:23:04 UTC" (the date once when both are on one day)."""
    start, end = when(r.started_at), when(r.finished_at)
    if start[:10] == end[:10] and start != "—":
        end = end[11:]
    text = f"{start.removesuffix(' UTC')} – {end}"
    return text + (f" ({r.unfinished})" if r.unfinished else "")


def _engine(r: RunLog) -> str:
    e = r.engine
    if r.source != "generated":
        return f"{r.source}: answers made elsewhere"
    parts = [str(e.get("backend") or "—")]
    if e.get("endpoint"):
        parts.append(f"{e['endpoint']} as {e.get('served_model') or '?'}")
        if e.get("concurrency"):
            parts.append(f"{e['concurrency']} requests at once")
    else:
        if e.get("threads"):
            parts.append(f"{e['threads']} threads")
        if e.get("context"):
            parts.append(f"context {e['context']}")
        if e.get("batch"):
            parts.append(f"batch {e['batch']}")
    if e.get("prompt_mode"):
        parts.append(f"{e['prompt_mode']} prompts")
    return ", ".join(parts)


def _machine_lines(runs: list[RunLog]) -> list[list[str]]:
    """The distinct machines and versions of the runs, each with the runs that used it."""
    seen: dict[tuple[str, ...], list[int]] = {}
    for r in runs:
        e = r.engine
        cores = e.get("cores") or {}
        cpu = str(e.get("cpu") or "not recorded")
        if isinstance(cores, dict) and cores.get("logical"):
            cpu += f" ({cores.get('physical') or '?'} cores, {cores['logical']} threads)"
        key = (
            cpu,
            str(e.get("platform") or "—"),
            ", ".join(f"{k} {v}" for k, v in r.versions.items()),
        )
        seen.setdefault(key, []).append(r.run_id)
    return [[*key, ", ".join(str(i) for i in sorted(ids))] for key, ids in seen.items()]


def _model_rows(models: list[ModelLog]) -> list[list[str]]:
    rows = []
    for m in models:
        if m.endpoint:
            ident = f"endpoint {m.endpoint}, served model id {m.served_model or '—'}"
        else:
            size = f", {m.size_bytes:,} bytes" if m.size_bytes else ""
            ident = f"{m.file}{size}; SHA-256 {m.sha256 or 'not recorded'}"
        size_words = f"{m.parameters:,} parameters" if m.parameters else ""
        extra = ", ".join(x for x in (m.quantization, size_words) if x)
        rows.append([short_name(m.name), ident + (f" ({extra})" if extra else "")])
    return rows


def _runs_table(runs: list[RunLog]) -> Table:
    """The runs in the order they were made: when, what was asked, with which settings and
    engine — a column every run shares is said once, above the table."""
    runs = sorted(runs, key=lambda r: (r.started_at or r.created_at or "", r.run_id))
    columns = {
        "Settings": [_settings(r) for r in runs],
        "Engine": [_engine(r) for r in runs],
    }
    shared = {k: v[0] for k, v in columns.items() if v and len(set(v)) == 1 and len(v) > 1}
    heads = ["Run", "Probe", "Answers made (UTC)", "What was asked"]
    heads += [k for k in columns if k not in shared]
    rows = []
    for n, r in enumerate(runs):
        row = [str(r.run_id), f"{r.probe} v{r.probe_version}", _period(r), _asked(r)]
        row += [v[n] for k, v in columns.items() if k not in shared]
        rows.append(row)
    caption = " ".join(f"{k} of every run: {v}." for k, v in shared.items())
    return Table(heads, rows, title="What ran", caption=f"{caption} {SEEDS}".strip())


def _audit_block(a: AuditLog) -> Table:
    status = f"{a.status} (planned {when(a.created_at)}, ended {when(a.finished_at)})"
    row = [
        str(a.audit_id),
        a.budget or duration(a.budget_s),
        duration(a.spent_s),
        f"{a.answers:,}",
        f"{len(a.planned)} probes",
        ", ".join([*a.not_run, *a.left_out]) or "—",
        status,
    ]
    columns = ["Audit", "Budget", "Spent", "Answers", "Planned", "Not run", "Status"]
    return Table(columns, [row], title="What the budget bought")


def _review_blocks(runs: list[RunLog]) -> list[Block]:
    rows = [
        [str(r.run_id), v.who, v.kind, f"{v.labels:,}", f"{v.changed:,}",
         f"{when(v.first)} – {when(v.last)}"]
        for r in runs
        for v in r.reviewers
    ]  # fmt: skip
    if not rows:
        return [
            Heading("Labels people reviewed"),
            Paragraph("None: every label is the automatic labeller's.", "muted"),
        ]
    columns = ["Run", "Who", "As", "Labels", "Changed the automatic label", "When"]
    return [Table(columns, rows, title="Labels people reviewed")]


def _digest_blocks(d: ReportDigest) -> list[Block]:
    """The digests, monospaced (copied as printed)."""
    return [
        Heading("Digest of this report's data"),
        Paragraph(
            f"SHA-256 (canonical form v{VERSION}) of every answer, label, review, setting and "
            "computed metric of the report's runs. gbdesk verify THIS.pdf --db DATABASE "
            "recomputes it from the database, reading it only, and names any run whose data "
            "changed since.",
            "muted",
        ),
        Paragraph(f"report:\n  {d.total}", "mono"),
        *[Paragraph(f"run {r.run_id} ({r.probe}):\n  {r.digest}", "mono") for r in d.runs],
    ]


#: the table of runs' note on seeds
SEEDS = (
    "Each answer's seed is derived from the run's seed, its item and its attempt (SHA-256), "
    "so the order answers are made in never changes them; a server honours seeds only if "
    "it supports them."
)


def log_blocks(log_: TestLog) -> list[Block]:
    """The test log as report blocks (the PDF's final section; the sign-off follows)."""
    out: list[Block] = [
        Paragraph(
            f"Report made {when(log_.made_at)} by gbdesk {log_.app_version}; numbers from "
            f"{log_.label_mode} labels. Times are when each run's first and last answers "
            "were stored (UTC).",
            "muted",
        ),
        Table(["Model", "Identity"], _model_rows(log_.models), title="On what"),
        Table(
            ["CPU", "System", "Versions", "Runs"],
            _machine_lines(log_.runs),
            title="Machine and engine, as recorded when each run started",
        ),
        _runs_table(log_.runs),
    ]
    if log_.audit is not None:
        out.append(_audit_block(log_.audit))
    out += _review_blocks(log_.runs)
    out.append(Heading("Reproducible texts"))
    out += [Paragraph(f"{short_name(d.model)}: {d.text}") for d in log_.determinism]
    out.append(
        Table(
            ["What the audit covered", "", "On what it rests"],
            [[c.question, c.answer, c.detail] for c in log_.checklist],
            title="Checklist",
        )
    )
    if log_.digest is not None:
        out += _digest_blocks(log_.digest)
    return out
