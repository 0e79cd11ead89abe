"""The digest of what a report reports: every stored answer, label, review, setting and the
computed metrics of its runs, as SHA-256 over a canonical JSON form — one per run and one
over them all — so that `gbdesk verify REPORT.pdf` can tell, later and from the database
alone, whether the report still matches its data and which run does not.

The canonical form (version 1; docs/cli.md, "gbdesk verify", says the same):

* A **value** is written as JSON with keys sorted, no spaces (`","` and `":"`), UTF-8
  (no \\u escapes but those JSON requires). A float is written as Python's `repr` (the
  shortest text that reads back as the same double); NaN, +∞ and −∞, which JSON lacks, as
  the strings "NaN", "Infinity" and "-Infinity"; integers as integers; a stored JSON
  column (parameters, metadata, label data) is decoded and written canonically, so the
  order its keys were stored in does not matter.
* A **run's records**, one line each ("<canonical JSON>\\n"), in this order: the run
  (probe and version, source, parameters, generation settings, the engine's record
  without its load time, versions, when it was created, started and finished, attempts
  planned) and its model (kind, path, file, SHA-256, size, architecture, parameters,
  quantisation, context length, chat template); every item by its place (key, prompt,
  metadata, prompts); every attempt in run order (id, item, attempt, prompt, answer,
  seed, tokens, latency, finish reason, prompt mode, when); every label in its attempts'
  order then as stored (id, attempt, kind, source, facet, label, data, evidence, when:
  automatic labels, every reviewer's and every adjudicated one, every change); every score;
  the random review sample and its draw; the codebook and the texts drawn for coding;
  then the run's metrics in the report's label mode by name (value, interval, mark, n,
  p-value, details). Each line is [part, record]; the parts are "run", "item", "answer",
  "label", "score", "review", "coding", "metric".
* A **run's digest** is the SHA-256 of its lines; each part's lines also have their own
  SHA-256 (what `verify` names when a run differs: "its answers"). The **report's digest**
  is the SHA-256 of the canonical JSON of {"format": "gbdesk report digest", "version": 1,
  "label_mode": …, "runs": [[run id, run digest], …]}.

Left out, because they change without the data changing: a run's status, owner, heartbeat
and error (a run "running" becomes "interrupted" when its process ends), the engine's load
time, the model's display name, modification time and when it was registered, the
metrics cache (recomputed, never read), the flat table of label facts and the labels'
`flat` flag (derived rows), jobs, audits' state. No clock goes into a digest.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gbdesk.maths.stats import MetricValue
from gbdesk.store import Store

FORMAT = "gbdesk report digest"
VERSION = 1
#: the parts of a run's records, in their order, and how `verify` names each
PARTS = {
    "run": "settings",
    "item": "items",
    "answer": "answers",
    "label": "labels and reviews",
    "score": "scores",
    "review": "random review sample",
    "coding": "codebook and coding selection",
    "metric": "computed metrics",
}
#: the run's columns a digest keeps (not its status, owner, heartbeat or error)
RUN_KEYS = (
    "id", "probe", "probe_version", "model_id", "source", "app_version", "llama_cpp_version",
    "created_at", "started_at", "finished_at", "attempts_total",
)  # fmt: skip
#: the model's columns a digest keeps (not its display name, mtime or when it was added)
MODEL_KEYS = (
    "id", "kind", "path", "file_name", "sha256", "size_bytes", "architecture", "parameters",
    "quantization", "context_length", "chat_template",
)  # fmt: skip
#: what an engine record holds that is no setting
ENGINE_VOLATILE = ("load_time_s",)
#: the name of the PDF's attachment that carries the digest (`ReportDigest.manifest`)
ATTACHMENT = "gbdesk-digest.json"


def _key(key: Any) -> str:
    """A dict key as JSON writes it (json.dumps' own conversion of non-string keys)."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return json.dumps(key)
    return float.__repr__(key) if isinstance(key, float) else str(key)


def canonical_value(value: Any) -> Any:
    """`value` with floats that JSON cannot write as the strings "NaN", "Infinity",
    "-Infinity", tuples as lists, numpy scalars as Python's, every key a string as JSON
    writes it (recursively)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {_key(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return canonical_value(value.item())
    return value


_DUMPS = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}


def canonical(value: Any) -> str:
    """The canonical JSON text of `value` (see the module). Most records hold nothing JSON
    lacks and are written at once; one with a NaN, an infinity, a numpy number or keys of
    mixed types goes through `canonical_value` first (the same text either way)."""
    try:
        return json.dumps(value, **_DUMPS)
    except (ValueError, TypeError):
        return json.dumps(canonical_value(value), **_DUMPS)


def _decoded(text: str | None) -> Any:
    return json.loads(text) if text else None


@dataclass(frozen=True)
class RunDigest:
    """A run's digest, its parts' digests, and what identifies the run in its database
    (id, probe, when it was created): a report whose runs' identities a database lacks is
    not that database's report."""

    run_id: int
    probe: str
    created_at: str
    digest: str
    parts: dict[str, str]
    records: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.run_id,
            "probe": self.probe,
            "created_at": self.created_at,
            "digest": self.digest,
            "parts": dict(self.parts),
        }


@dataclass(frozen=True)
class ReportDigest:
    """The report's digest over its runs' (`runs`), for the label mode its metrics use."""

    label_mode: str
    runs: list[RunDigest]
    total: str = field(init=False)
    seconds: float = 0.0  # what computing it took (the report's benchmark shows it)
    database: str = ""  # the file it was computed from (a hint for `verify`, not hashed)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", total_digest(self.label_mode, self.runs))

    def manifest(self, **extra: Any) -> dict[str, Any]:
        """What the PDF carries (its attachment `gbdesk-digest.json`): the format, the
        digests and each run's identity, with `extra` (gbdesk's version, the audit)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "label_mode": self.label_mode,
            "total": self.total,
            "runs": [r.to_json() for r in self.runs],
            "database": self.database,
            **extra,
        }

    def manifest_bytes(self, **extra: Any) -> bytes:
        """`manifest` as the UTF-8 JSON the PDF carries."""
        return json.dumps(self.manifest(**extra), indent=1, sort_keys=True).encode("utf-8")


def total_digest(label_mode: str, runs: Iterable[RunDigest]) -> str:
    body = {
        "format": FORMAT,
        "version": VERSION,
        "label_mode": label_mode,
        "runs": [[r.run_id, r.digest] for r in runs],
    }
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


def metric_record(name: str, m: MetricValue) -> dict[str, Any]:
    return {
        "name": name,
        "value": float(m.value),
        "ci": [float(m.ci[0]), float(m.ci[1])],
        "mark": m.mark,
        "n": m.n,
        "p_value": m.p_value,
        "details": m.details,
    }


def run_records(
    store: Store, run_id: int, metrics: dict[str, MetricValue]
) -> Iterator[tuple[str, Any]]:
    """(part, record) of everything the run's digest covers, in the canonical order."""
    row = store.run_row(run_id)
    run = {k: row.get(k) for k in RUN_KEYS}
    run["params"] = _decoded(row.get("params_json"))
    run["generation"] = _decoded(row.get("generation_json"))
    engine = _decoded(row.get("engine_json")) or {}
    run["engine"] = {k: v for k, v in engine.items() if k not in ENGINE_VOLATILE}
    model = store.model_row(row["model_id"]) if row.get("model_id") is not None else None
    run["model"] = {k: model.get(k) for k in MODEL_KEYS} if model else None
    yield "run", run
    for idx, item, prompt, meta, prompts in store.item_rows(run_id):
        yield "item", {
            "idx": idx, "item": item, "prompt": prompt, "metadata": _decoded(meta),
            "prompts": _decoded(prompts),
        }  # fmt: skip
    keys = ("id", "item", "attempt", "prompt", "response", "seed", "tokens_in", "tokens_out",
            "latency_s", "finish_reason", "prompt_mode", "created_at")  # fmt: skip
    for values in store.attempt_rows(run_id):
        yield "answer", dict(zip(keys, values, strict=True))
    for lid, attempt, kind, source, facet, label, data, evidence, created in store.label_rows(
        run_id
    ):
        yield "label", {
            "id": lid, "attempt_id": attempt, "kind": kind, "source": source, "facet": facet,
            "label": label, "data": _decoded(data), "evidence": _decoded(evidence),
            "created_at": created,
        }  # fmt: skip
    score_keys = ("attempt_id", "idx", "group", "descriptor", "axis", "template", "name",
                  "text", "n_tokens", "logprob_sum", "ppl", "apx")  # fmt: skip
    for values in store.score_rows(run_id):
        yield "score", dict(zip(score_keys, values, strict=True))
    sample = store.review_sample(run_id)
    info = store.review_sample_info(run_id)
    if sample or info:
        yield "review", {"attempt_ids": sample, "draw": info}
    codebook = store.codebook(run_id)
    selection = store.coding_selection_rows(run_id)
    drawn = store.coding_selection_info(run_id)
    if codebook or selection or drawn:
        yield "coding", {"codebook": codebook, "selection": selection, "draw": drawn}
    for name in sorted(metrics):
        yield "metric", metric_record(name, metrics[name])


def run_digest(store: Store, run_id: int, metrics: dict[str, MetricValue]) -> RunDigest:
    """The digest of one run with these metrics (the report's, or recomputed)."""
    whole = hashlib.sha256()
    parts: dict[str, Any] = {}
    records = 0
    probe = created = ""
    for part, record in run_records(store, run_id, metrics):
        if part == "run":
            probe, created = str(record["probe"]), str(record["created_at"])
        line = (canonical([part, record]) + "\n").encode("utf-8")
        whole.update(line)
        parts.setdefault(part, hashlib.sha256()).update(line)
        records += 1
    return RunDigest(
        run_id, probe, created, whole.hexdigest(),
        {p: h.hexdigest() for p, h in parts.items()}, records,
    )  # fmt: skip


def report_digest(
    store: Store, metrics: dict[int, dict[str, MetricValue]], label_mode: str
) -> ReportDigest:
    """The digest of a report over these runs (run id → the metrics it reports), in
    their order."""
    import time

    started = time.perf_counter()
    runs = [run_digest(store, run_id, m) for run_id, m in metrics.items()]
    seconds = time.perf_counter() - started
    return ReportDigest(label_mode, runs, seconds=seconds, database=str(store.path))
