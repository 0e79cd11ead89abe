"""Import results made elsewhere (an API model, another tool) as runs.

Every probe reads its own file layout (`Probe.plan_import`; the default, here, reads
`prompt` + `response` rows). Planning reads and validates the *whole* file and returns
the runs to create — nothing is written — so a bad line anywhere means nothing is
imported and every offending line is reported. `write_imported_runs` then writes all
planned runs in one transaction: an import is complete or absent, even if the process
is killed or the disk fills up half-way.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.errors import UserError
from gbdesk.store import Store
from gbdesk.store.db import prepare_attempts
from gbdesk.studies import get_probe
from gbdesk.studies.base import Item, Probe

MAX_LISTED = 12


@dataclass
class ImportedAttempt:
    """One attempt of an imported run, labelled already (the probe's automatic label)."""

    item: str
    attempt: int
    response: str
    label: dict[str, Any]
    prompt: str | None = None  # the item's prompt when None
    scores: list[dict[str, Any]] | None = None


@dataclass
class ImportedRun:
    """A run to create from an imported file: one model's items and attempts."""

    model: str
    params: dict[str, Any]
    items: list[Item]
    attempts: list[ImportedAttempt]
    extra: dict[str, int] = field(default_factory=dict)  # counts reported per run, summed
    notes: dict[str, Any] = field(default_factory=dict)  # reported once for the import


def read_rows(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) pairs from a CSV or JSONL file."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"file not found: {p}")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{p} is not UTF-8 text") from None
    if not text.strip():
        raise UserError(f"{p} is empty")
    if p.suffix.lower() in (".jsonl", ".ndjson") or text.lstrip().startswith("{"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{p}, line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise UserError(f"{p}, line {number}: expected a JSON object")
            rows.append((number, record))
        return rows
    reader = csv.DictReader(text.splitlines(keepends=True), strict=True)
    rows = []
    start = 2
    try:
        for record in reader:
            if None in record:
                raise UserError(f"{p}, line {start}: more cells than header columns")
            rows.append((start, record))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise UserError(f"{p}, line {reader.line_num}: malformed CSV ({exc})") from None
    if reader.fieldnames is None:
        raise UserError(f"{p} has no header row")
    return rows


def require_columns(
    path: str | Path, rows: list[tuple[int, dict[str, Any]]], required: tuple[str, ...]
) -> None:
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    missing = [c for c in required if c not in rows[0][1]]
    if missing:
        have = ", ".join(rows[0][1].keys()) or "none"
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)} (it has: {have})")


def line_list(numbers: list[int]) -> str:
    """"line 3" / "lines 3, 5, 9 and 20 more"."""
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    more = f" and {len(numbers) - MAX_LISTED} more" if len(numbers) > MAX_LISTED else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


def refuse(path: str | Path, problems: list[str]) -> None:
    """Raise the one-line error of a file that cannot be imported, if there are problems."""
    if problems:
        raise UserError(f"nothing imported from {path}: " + "; ".join(problems))


def model_of(record: dict[str, Any], model_name: str | None) -> str:
    """The row's `model` column, else the --model-name, else "imported"."""
    return str(record.get("model") or "").strip() or model_name or "imported"


# -- the whole import --------------------------------------------------------------------------
def import_generations(
    store: Store,
    probe_name: str,
    path: str | Path,
    *,
    model_name: str | None = None,
    template: str | None = None,
) -> dict[str, Any]:
    """Create imported run(s) from the file: one run, or one per value of an optional
    `model` column. Returns {run_id, attempts} (and {runs: […]} for several models)."""
    probe = get_probe(probe_name)
    planned = probe.plan_import(path, model_name=model_name, template=template)
    if not planned:
        raise UserError(f"nothing imported from {path}: it holds no results")
    return write_imported_runs(store, probe, path, planned)


def write_imported_runs(
    store: Store, probe: Probe, path: str | Path, planned: list[ImportedRun]
) -> dict[str, Any]:
    """Write every planned run in one transaction; returns the import's summary.

    A kill, a full disk or any error before the commit leaves no run and no attempt: the
    rows are built first, and then written (bulk inserts) under one write lock, which a
    100,000-row import holds for about 2 s.
    """
    source = str(Path(path).resolve())
    rows = []
    for plan in planned:
        prompts = {i.key: i.prompt for i in plan.items}
        per_item: dict[str, int] = defaultdict(int)
        for a in plan.attempts:
            per_item[a.item] = max(per_item[a.item], a.attempt + 1)
        attempts = prepare_attempts(
            {
                "item": a.item,
                "attempt": a.attempt,
                "prompt": a.prompt if a.prompt is not None else prompts[a.item],
                "response": a.response,
                "prompt_mode": "imported",
                "auto_label": a.label,
                "scores": a.scores,
            }
            for a in plan.attempts
        )
        rows.append((max(per_item.values(), default=0), attempts))
    runs = []
    with store.transaction():
        for plan, (attempts_per_item, attempts) in zip(planned, rows, strict=True):
            model_id = store.register_model(
                {
                    "kind": "external",
                    "name": plan.model,
                    "path": f"external:{plan.model}",
                    "sha256": None,
                }
            )
            run_id = store.create_run(
                probe=probe.name,
                probe_version=probe.version,
                model_id=model_id,
                params={**plan.params, "imported_from": source},
                generation={"attempts": attempts_per_item, "imported": True},
                items=[(i.key, i.prompt, i.metadata) for i in plan.items],
                attempts_per_item=0,
                app_version=__version__,
                llama_cpp_version=None,
                source="imported",
            )
            stored = store.add_attempts(run_id, attempts)
            store.finish_import(run_id, stored)
            runs.append({"model": plan.model, "run_id": run_id, "attempts": stored, **plan.extra})
    result: dict[str, Any] = {
        "run_id": runs[0]["run_id"],
        "attempts": sum(r["attempts"] for r in runs),
    }
    for key in planned[0].extra:
        result[key] = sum(r[key] for r in runs)
    for plan in planned:
        for key, value in plan.notes.items():
            result.setdefault(key, value)
    if len(runs) > 1:
        result["runs"] = runs
    return result


# -- the default layout: prompt + response ---------------------------------------------------
def plan_prompt_response_import(
    probe: Probe,
    path: str | Path,
    *,
    model_name: str | None = None,
    template: str | None = None,
) -> list[ImportedRun]:
    """Rows with `prompt` and `response` (optional `attempt` and `model`) matched to the
    probe's items by prompt; one run per model."""
    rows = read_rows(path)
    require_columns(path, rows, ("prompt", "response"))
    params = probe.resolve_params(template=template)
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, record in rows:
        groups.setdefault(model_of(record, model_name), []).append((number, record))
    planned = []
    for name, group in groups.items():
        items, placed = _place(probe, params, group, path)
        metadata = {i.key: i.metadata for i in items}
        attempts = []
        for (key, index), (_, record) in sorted(placed.items()):
            response = record.get("response")
            text = "" if response is None else str(response)
            attempts.append(ImportedAttempt(key, index, text, probe.label(text, metadata[key])))
        planned.append(ImportedRun(name, params, items, attempts))
    return planned


def _place(
    probe: Probe, params: dict[str, Any], rows: list[tuple[int, dict[str, Any]]], path: str | Path
) -> tuple[list[Item], dict[tuple[str, int], tuple[int, dict]]]:
    """Match rows to items; raise `UserError` listing every row that does not fit."""
    items = list(probe.items(params))
    by_prompt: dict[str, list[str]] = defaultdict(list)
    for item in items:
        by_prompt[item.prompt].append(item.key)  # identical prompts (duplicated items) share

    unmatched: list[int] = []
    bad_attempt: list[int] = []
    duplicates: list[int] = []
    placed: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
    seen_per_prompt: dict[tuple[str, int | None], int] = defaultdict(int)
    for number, record in rows:
        prompt = str(record.get("prompt") or "")
        keys = by_prompt.get(prompt) or by_prompt.get(prompt.strip())
        if not keys:
            custom = probe.import_item(record)  # e.g. a story prompt outside the 100
            if custom is not None:
                if custom.key not in {i.key for i in items}:
                    items.append(custom)
                by_prompt[prompt] = keys = [custom.key]
        if not keys:
            unmatched.append(number)
            continue
        raw_attempt = record.get("attempt")
        attempt: int | None = None
        if raw_attempt not in (None, ""):
            try:
                attempt = int(raw_attempt)
                if attempt < 0:
                    raise ValueError
            except (TypeError, ValueError):
                bad_attempt.append(number)
                continue
        k = seen_per_prompt[(prompt, attempt)]
        seen_per_prompt[(prompt, attempt)] += 1
        if attempt is None:
            key, index = keys[k % len(keys)], k // len(keys)
        else:
            if k >= len(keys):
                duplicates.append(number)
                continue
            key, index = keys[k], attempt
        placed[(key, index)] = (number, record)

    problems = []
    if unmatched:
        problems.append(
            f"{line_list(unmatched)} match no {probe.name} prompt made with the template "
            f"'{params['template_name']}'{probe.import_hint()}"
        )
    if bad_attempt:
        problems.append(f"{line_list(bad_attempt)} have an attempt that is not a whole number ≥ 0")
    if duplicates:
        problems.append(f"{line_list(duplicates)} repeat a (prompt, attempt) pair")
    refuse(path, problems)
    return items, placed
