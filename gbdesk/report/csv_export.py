"""CSV export of runs (the same files from the CLI and the GUI).

Text cells are written so that a spreadsheet or a terminal cannot be made to do anything
by them, and so that the stored text can be recovered exactly (`unescape_cell`):

1. **Control characters** other than tab and newline — C0 (``\\x00``–``\\x1f``, including
   carriage return and ESC, the start of ANSI terminal escapes), DEL, C1 (``\\x80``–
   ``\\x9f``), the line/paragraph separators U+2028/U+2029 and the bidirectional
   embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) — are written as
   the literal text ``\\xHH`` (two hex digits) or ``\\x{HHHH}``; a backslash that is
   followed by ``x`` in the stored text is written ``\\x5c`` so the escape is reversible.
   Text without these characters and without the two characters ``\\x`` is unchanged.
2. **Formulas** (OWASP "CSV injection"): a cell that, after any leading whitespace and
   apostrophes, starts with ``=``, ``+``, ``-`` or ``@`` (`` =HYPERLINK(…)`` included)
   gets one leading apostrophe; reading back removes one leading apostrophe from such a
   cell.

3. **The mark**: every table ends with the column ``gbdesk_escaped`` (`ESCAPED_COLUMN`),
   which names, per row, the columns whose cells 1 or 2 changed (separated by ";"). An
   import of the file (`gbdesk.support.csvfile.csv_records`) undoes exactly those cells and
   drops the column, so an export read back by gbdesk gives the stored texts; a cell a
   person typed into a row's other columns is read as typed.

Numbers are written as numbers. Evidence offsets refer to the stored text, not to the
escaped cell. The functions live in `gbdesk.support.guards` (the importers need them without this
module's imports).
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gbdesk.analysis.group_rates import group_tables
from gbdesk.analysis.results import Run, compute_metrics, effective_labels, open_run
from gbdesk.analysis.shown import (
    ci_missing_reason,
    metric_verdict,
    shown_ci,
    undefined_reason,
)
from gbdesk.maths.stats import MetricValue
from gbdesk.report.audit_findings import AUDIT_CSV_COLUMNS, audit_csv_rows
from gbdesk.report.groups import CSV_COLUMNS as GROUP_COLUMNS
from gbdesk.report.groups import csv_rows as group_csv_rows
from gbdesk.store import Store
from gbdesk.support.atomic import Batch, Pending, WriteFailed
from gbdesk.support.csvfile import write_rows, write_table
from gbdesk.support.errors import UserError
from gbdesk.support.guards import (  # noqa: F401 (escape_text, unescape_cell: this module's API)
    ESCAPED_COLUMN,
    escape_text,
    escaped_cells,
    safe_cell,
    unescape_cell,
)

log = logging.getLogger(__name__)


def write_csv(path: Path, columns: list[str], rows: Iterable[dict[str, Any]]) -> None:
    """A table as gbdesk exports it: text escaped, each row ending with its
    `ESCAPED_COLUMN` cell (which columns were escaped; `csvfile.write_table`)."""
    write_table(path, columns, rows)


#: attempts read, labelled and written at a time by the export (its memory is this many
#: attempts' rows, not the run's: a 500,000-story run exports in constant memory)
EXPORT_CHUNK = 5_000


class _Spool:
    """A CSV table written as its rows come, whose columns are learnt on the way.

    Rows go at once to the table's temporary file (`gbdesk.support.atomic.Pending`: in
    the folder, created exclusively), as the cells `safe_cell` makes, under the columns
    known when they came, after a header of the columns known at the first row (a later
    column is appended, so an earlier row is a prefix of the full list). `finish` gives
    the file to rename into place: the spool itself when that header is the final one, in
    the order asked for (the usual case); otherwise a second temporary file with the
    columns reordered and the earlier rows padded."""

    def __init__(self, folder: Path, name: str) -> None:
        self.name = name
        self.columns: list[str] = []
        self._known: set[str] = set()
        self._header: list[str] | None = None
        self._pending = Pending(folder / name)
        self._fh = self._pending.open("w")
        self._writer = csv.writer(self._fh)
        self._extra: Pending | None = None

    def add_columns(self, columns: Iterable[str]) -> None:
        for c in columns:
            if c not in self._known:
                self._known.add(c)
                self.columns.append(c)

    def write(self, rows: Iterable[dict[str, Any]]) -> None:
        columns = self.columns
        try:
            for row in rows:
                if self._header is None:
                    self._header = list(columns)
                    self._writer.writerow([*(safe_cell(c) for c in columns), ESCAPED_COLUMN])
                self._writer.writerow(escaped_cells(columns, row))
        except OSError as exc:  # a full disk: the table it could not write is named
            raise WriteFailed(self._pending.final, exc.strerror or str(exc)) from exc

    def finish(self, order: list[str] | None = None) -> tuple[Pending, Any]:
        """The table with the columns in `order` (default: as first seen), as (the
        temporary file, its open file object) for `atomic.Batch.adopt`."""
        order = self.columns if order is None else order
        self.add_columns(order)  # a table without rows still gets its header
        if self._header is None:  # no row came (a run without answers): headers only
            self._writer.writerow([*(safe_cell(c) for c in order), ESCAPED_COLUMN])
            return self._pending, self._fh
        if self._header == order:
            return self._pending, self._fh
        try:
            return self._reordered(order)
        except OSError as exc:
            raise WriteFailed(self._pending.final, exc.strerror or str(exc)) from exc

    def _reordered(self, order: list[str]) -> tuple[Pending, Any]:
        self._fh.flush()
        where = {c: i for i, c in enumerate(self.columns)}
        picks = [where[c] for c in order]
        self._extra = Pending(self._pending.final)
        dst = self._extra.open("w")
        with open(self._pending.temp, encoding="utf-8", newline="") as src:
            writer = csv.writer(dst)
            writer.writerow([*(safe_cell(c) for c in order), ESCAPED_COLUMN])
            csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # a 10 MB answer
            reader = csv.reader(src)
            next(reader)  # the spool's own header
            for cells in reader:
                # a row's cells are its columns when it was written, then its mark
                values, mark = cells[:-1], cells[-1]
                n = len(values)
                writer.writerow([*(values[i] if i < n else "" for i in picks), mark])
        self._fh.close()
        self._pending.discard()
        return self._extra, dst

    def discard(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._fh.close()
        self._pending.discard()
        if self._extra is not None:
            self._extra.discard()


def _meta_columns(run_items: list[dict[str, Any]]) -> list[str]:
    """The items' metadata keys, in order of first appearance."""
    meta_cols: list[str] = []
    for row in run_items:
        keys = list(row["metadata"])
        for prompt in row.get("prompts") or ():  # items of several prompts: theirs too
            keys += [*prompt.get("metadata", {}), "prompt_index"]
        for key in keys:
            if key not in meta_cols:
                meta_cols.append(key)
    return meta_cols


def _wording_cells(store: Store, run: Run) -> dict[str, int]:
    """``{"wording": 0}`` for the wording-0 run of a wording family: its items are the
    probe's own, byte for byte, so they carry no wording; the family's other runs' items
    do, and a table of the whole family then tells every row's wording."""
    from gbdesk.analysis.wordings import wording_family

    if "wording" in run.params or len(wording_family(store, run.id)) < 2:
        return {}
    return {"wording": 0}


def _run_meta_columns(store: Store, run: Run) -> tuple[list[str], dict[str, int]]:
    """A run's metadata columns (`_meta_columns`, a wording-0 run's ``wording`` too) and
    the cells its rows add (`_wording_cells`)."""
    extra = _wording_cells(store, run)
    cols = _meta_columns(run.items.rows)
    return cols + [k for k in extra if k not in cols], extra


def _attempt_columns(meta_cols: list[str], data_cols: list[str]) -> list[str]:
    return [
        "run_id",
        "item",
        "attempt",
        "prompt",
        "response",
        *meta_cols,
        "detected",
        *data_cols,
        "detector",
        "human_label",
        "reviewer",
        "reviewed_at",
        "seed",
        "tokens_in",
        "tokens_out",
        "latency_s",
        "finish_reason",
        "prompt_mode",
        "item_index",
    ]


def _attempt_row_chunks(
    store: Store,
    run: Run,
    data_cols: list[str],
    meta: tuple[list[str], dict[str, int]],
    chunk: int | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """attempts.csv rows of a run opened with its automatic labels (`open_run(…,
    labelled=True)`), a chunk of attempts at a time; the label data's keys are added to
    `data_cols` in order of first appearance as the rows come."""
    run_id, items = run.id, run.items
    run_items = items.rows
    item_index = {row["item"]: row["idx"] for row in run_items}  # the run's item order
    known = set(data_cols)
    meta_cols, extra = meta  # `_run_meta_columns`, computed once by the caller
    # a label's data key that names another column goes in as label_<key>
    taken = set(_attempt_columns(meta_cols, []))
    for attempts in store.attempt_chunks(run_id, chunk or EXPORT_CHUNK):
        ids = [a["id"] for a in attempts]
        auto = store.labels(run_id, "auto", attempt_ids=ids)
        human = store.labels(run_id, "human", attempt_ids=ids)
        rows = []
        for attempt in attempts:
            label = auto.get(attempt["id"])
            review = human.get(attempt["id"])
            row: dict[str, Any] = {
                "run_id": run_id,
                "item": attempt["item"],
                "attempt": attempt["attempt"],
                "prompt": attempt["prompt"],
                "response": attempt["response"],
                **extra,
                **items.metadata(attempt["item"], attempt["attempt"]),
                "detected": label["label"] if label else "",
                "detector": label["source"] if label else "",
            }
            for key, value in ((label or {}).get("data") or {}).items():
                key = f"label_{key}" if key in taken else key
                row[key] = value
                if key not in known:
                    known.add(key)
                    data_cols.append(key)
            row.update(
                {
                    "human_label": review["label"] if review else "",
                    "reviewer": review["source"].removeprefix("human:") if review else "",
                    "reviewed_at": review["created_at"] if review else "",
                    "seed": attempt["seed"],
                    "tokens_in": attempt["tokens_in"],
                    "tokens_out": attempt["tokens_out"],
                    "latency_s": attempt["latency_s"],
                    "finish_reason": attempt["finish_reason"],
                    "prompt_mode": attempt["prompt_mode"],
                    "item_index": item_index.get(attempt["item"]),
                }
            )
            rows.append(row)
        yield rows


def attempt_rows(store: Store, run_id: int) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per attempt: texts, item metadata, detection, review, generation stats."""
    data_cols: list[str] = []
    run = open_run(store, run_id, labelled=True)
    meta = _run_meta_columns(store, run)
    rows = [r for part in _attempt_row_chunks(store, run, data_cols, meta) for r in part]
    return _attempt_columns(meta[0], data_cols), rows


def _metric_modes(store: Store, run_id: int) -> list[str]:
    """The label modes metrics.csv gives a run's metrics in."""
    modes = ["auto"]
    if store.labels(run_id, "human"):
        modes.append("reviewed")
    if len(store.rater_labels(run_id)) >= 2 or store.labels(run_id, "consensus"):
        modes.append("consensus")
    return modes


def _run_metrics(store: Store, run: Run, modes: list[str]) -> dict[str, dict[str, MetricValue]]:
    """The run's metrics in each of these modes (computed once each, in this order)."""
    by_mode = {}
    for mode in modes:
        by_mode[mode] = compute_metrics(store, run, mode)
    return by_mode


def metric_rows(
    store: Store, run_id: int | Run, by_mode: dict[str, dict[str, MetricValue]] | None = None
) -> list[dict[str, Any]]:
    """metrics.csv's rows of a run (`by_mode`: its metrics in its modes, when computed)."""
    run = run_id if isinstance(run_id, Run) else open_run(store, run_id)
    run_id, probe = run.id, run.probe
    model = store.get_model(run.row["model_id"]) if run.row["model_id"] else {}
    if by_mode is None:
        by_mode = _run_metrics(store, run, _metric_modes(store, run_id))
    rows = []
    for mode, metrics in by_mode.items():
        for name, m in metrics.items():
            shown = shown_ci(probe, name, m)
            v = metric_verdict(probe, name, m)
            if m.value != m.value:
                reason = undefined_reason(probe, name, metrics)
            else:
                reason = ci_missing_reason(probe, name, m)
            rows.append(
                {
                    "run_id": run_id,
                    "probe": run.row["probe"],
                    "model": model.get("name", ""),
                    "model_sha256": model.get("sha256", ""),
                    "label_mode": mode,
                    "metric": name,
                    "title": probe.capabilities.presentation.metric_title(name),
                    "value": m.value,
                    "ci_low": m.ci[0],
                    "ci_high": m.ci[1],
                    "ci_shown_low": shown[0] if shown is not None else "",
                    "ci_shown_high": shown[1] if shown is not None else "",
                    "mark": m.mark or "",
                    "marks_allowed": " ".join(v.marks) if v is not None else "",
                    "verdict": v.words() if v is not None else "",
                    "p_value": m.p_value,
                    "n": m.n,
                    "reason": reason,
                }
            )
    return rows


#: metrics.csv: 1.1.0's names kept (value, ci_low, ci_high, mark …: the study's own
#: interval and mark), then what every view shows: the interval to quote (`ci_shown_*`:
#: the one that holds its level where the metric has one, docs/metrics.md, else the
#: study's cut at what the metric can be; empty when there is none), the marks it allows
#: and the verdict in words, why a value or interval is missing (`reason`), and the
#: metric's title
METRIC_COLUMNS = [
    "run_id",
    "probe",
    "model",
    "model_sha256",
    "label_mode",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "mark",
    "p_value",
    "n",
    "ci_shown_low",
    "ci_shown_high",
    "marks_allowed",
    "verdict",
    "reason",
    "title",
]


def _probe_table_chunks(
    store: Store, run: Run, label_mode: str = "reviewed", chunk: int | None = None
) -> Iterator[dict[str, tuple[list[str], list[dict[str, Any]]]]]:
    """The probe's own CSV tables of a run opened with its automatic labels
    (`open_run(…, labelled=True)`), from reviewed labels (a reviewer's where present) by
    default: a chunk of attempts at a time for a probe whose tables have rows of one
    attempt each (`Exporting.per_attempt`), else all attempts at once."""
    run_id, probe, items, params = run.id, run.probe, run.items, run.params
    caps = probe.capabilities
    scored = caps.scores is not None  # scored blocks: each attempt's sentence scores
    per_attempt = caps.exporting.per_attempt and not scored
    parts = (
        store.attempt_chunks(run_id, chunk or EXPORT_CHUNK)
        if per_attempt
        else iter([store.attempts(run_id)])
    )
    if not store.count_attempts(run_id):  # no answers yet: the tables' headers only
        try:
            yield caps.exporting.tables([], params)
        except Exception:  # a study whose tables need rows: no file rather than no export
            log.info("run %s: %s has no table without answers", run_id, probe.name)
        return
    for part in parts:
        ids = [a["id"] for a in part] if per_attempt else None
        labels = effective_labels(store, run, label_mode, attempt_ids=ids)
        attempts = [
            {**a, "metadata": items.metadata(a["item"], a["attempt"]),
             "label": labels.get(a["id"]), "scores": []}
            for a in part
        ]  # fmt: skip
        if scored:
            by_item = {a["item"]: a for a in attempts}
            for score in store.scores(run_id):
                by_item[score["item"]]["scores"].append(score)
        yield caps.exporting.tables(attempts, params)


def probe_tables(
    store: Store, run_id: int, label_mode: str = "reviewed"
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """The probe's own CSV tables (e.g. a story probe's characters.csv) for a run,
    from reviewed labels (a reviewer's where present) by default."""
    out: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    run = open_run(store, run_id, labelled=True)
    for tables in _probe_table_chunks(store, run, label_mode):
        for name, (cols, rows) in tables.items():
            known_cols, known_rows = out.setdefault(name, ([], []))
            known_cols += [c for c in cols if c not in known_cols]
            known_rows += rows
    return out


def _study_tables(
    store: Store, reviewed: list[tuple[Run, dict[str, MetricValue]]]
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """The CSV tables of the studies' reports over these runs (`Study.cross_run_report`,
    e.g. a benchmark's normalized summary table), from reviewed labels as the PDF's default
    (`reviewed`: each run with its metrics from reviewed labels)."""
    from gbdesk.contract import study_reports
    from gbdesk.report.content import study_run

    runs = []
    for run, metrics in reviewed:
        model = store.get_model(run.row["model_id"]) if run.row["model_id"] else {}
        runs.append(study_run(run.row, str(model.get("name") or "unknown model"), metrics))
    out = {}
    for report in study_reports(runs):
        for name, (cols, rows) in report.tables.items():
            note = report.table_notes.get(name)
            if note is not None:  # the study's word on what the table holds, last
                cols, rows = [*cols, note[0]], [{**row, note[0]: note[1]} for row in rows]
            out[name] = (cols, rows)
    return out


def export_run_csv(store: Store, run_ids: list[int | Run], out_dir: str | Path) -> list[Path]:
    """Write attempts.csv, metrics.csv, each probe's own tables for the runs, codes.csv
    with codebook.csv for runs whose texts were coded, groups.csv for runs of probes
    that decide about people (`gbdesk.report.groups`, from reviewed labels), and audit.csv
    with every verdict of the audits that ran them (`audit_findings.audit_csv_rows`).

    Rows are written as they are made, a chunk of attempts at a time (`EXPORT_CHUNK`), to
    temporary files in the folder; the files are renamed into place together once every
    one is written and checked (`gbdesk.support.atomic`: created exclusively, flushed,
    synced; a final name that is a link refused), so an export that fails leaves the
    folder as it was and names the file it could not write."""
    from gbdesk.people.coding import csv_tables

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"--csv must name a folder, and {out} is a file")
    out.mkdir(parents=True, exist_ok=True)
    spools: dict[str, _Spool] = {}

    def spool(name: str) -> _Spool:
        if name not in spools:
            spools[name] = _Spool(out, name)
        return spools[name]

    attempt_order: list[str] = []
    metrics: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    reviewed: list[tuple[Run, dict[str, MetricValue]]] = []
    batch = Batch()
    try:
        for run_id in run_ids:
            run = open_run(store, run_id, labelled=True)  # the run opened once
            meta, data_cols = _run_meta_columns(store, run), []
            meta_cols = meta[0]
            sheet = spool("attempts.csv")
            for rows in _attempt_row_chunks(store, run, data_cols, meta):
                sheet.add_columns(_attempt_columns(meta_cols, data_cols))
                sheet.write(rows)
            attempt_order += [
                c for c in _attempt_columns(meta_cols, data_cols) if c not in attempt_order
            ]
            modes = _metric_modes(store, run.id)
            # the study tables' "reviewed" metrics too, computed with the others
            by_mode = _run_metrics(store, run, [*modes, *({"reviewed"} - set(modes))])
            metrics += metric_rows(store, run, {m: by_mode[m] for m in modes})
            reviewed.append((run, by_mode["reviewed"]))
            groups += group_csv_rows(group_tables(store, run.id, "reviewed"))
            chunks = _probe_table_chunks(store, run)
            for tables in itertools.chain(chunks, [csv_tables(store, run.id)]):
                for name, (cols, table_rows) in tables.items():
                    table = spool(name)
                    table.add_columns(cols)
                    table.write(table_rows)
        spool("attempts.csv")
        with batch:
            batch.adopt(*spools["attempts.csv"].finish(attempt_order))
            write_rows(batch.open(out / "metrics.csv"), METRIC_COLUMNS, metrics)
            if groups:  # probes that decide about people: their group tables, reviewed labels
                write_rows(batch.open(out / "groups.csv"), GROUP_COLUMNS, groups)
            verdicts = audit_csv_rows(store, [r.id for r, _ in reviewed])
            if verdicts:  # runs an audit ran: every verdict of the audit
                write_rows(batch.open(out / "audit.csv"), AUDIT_CSV_COLUMNS, verdicts)
            for name, (cols, table_rows) in _study_tables(store, reviewed).items():
                write_rows(batch.open(out / name), cols, table_rows)
            for name, table in spools.items():
                if name != "attempts.csv":
                    batch.adopt(*table.finish())
        return batch.paths
    except BaseException:
        for table in spools.values():
            table.discard()
        raise


def export_leftovers(folder: Path, written: list[Path]) -> list[str]:
    """Notes naming what an export leaves beside its own tables in `folder`: tables of an
    earlier gbdesk export it did not write (another probe's characters.csv, say), which
    must not be read as these runs'; temporary files a killed export left."""
    from gbdesk.contract.importing import is_gbdesk_export
    from gbdesk.support.atomic import earlier_exports, leftovers

    notes = []
    earlier = earlier_exports(folder, written, is_gbdesk_export)
    if earlier:
        names = ", ".join(p.name for p in earlier)
        notes.append(
            f"{folder} also holds {names} from an earlier export, not from these runs — "
            "move or delete them, or export into an empty folder"
        )
    stale = leftovers(folder)
    if stale:
        names = ", ".join(p.name for p in stale[:5]) + (" …" if len(stale) > 5 else "")
        notes.append(f"{folder} holds temporary files a stopped export left: {names} — delete them")
    return notes
