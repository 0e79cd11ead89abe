"""Import generations made elsewhere (an API model, another tool) into a run.

The file is CSV or JSONL with columns `prompt` and `response` (optional `attempt`).
Every prompt must equal a prompt the probe produces with the chosen template;
otherwise nothing is imported and the offending line numbers are reported.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.errors import UserError
from gbdesk.probes import get_probe
from gbdesk.store import Store

MAX_LISTED = 12


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


def _require_columns(
    path: str | Path, rows: list[tuple[int, dict[str, Any]]], required: tuple[str, ...]
) -> None:
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    missing = [c for c in required if c not in rows[0][1]]
    if missing:
        have = ", ".join(rows[0][1].keys()) or "none"
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)} (it has: {have})")


def _lines(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    more = f" and {len(numbers) - MAX_LISTED} more" if len(numbers) > MAX_LISTED else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


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
    rows = read_rows(path)
    _require_columns(path, rows, ("prompt", "response"))
    params = probe.resolve_params(template=template)
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, record in rows:
        label = str(record.get("model") or "").strip() or model_name or "imported"
        groups.setdefault(label, []).append((number, record))
    # validate every group before writing anything
    planned = [(name, _place(probe, params, group, path)) for name, group in groups.items()]
    runs = [
        {"model": name, **_write(store, probe, params, path, name, items, placed)}
        for name, (items, placed) in planned
    ]
    result: dict[str, Any] = {
        "run_id": runs[0]["run_id"],
        "attempts": sum(r["attempts"] for r in runs),
    }
    if len(runs) > 1:
        result["runs"] = runs
    return result


def _place(
    probe, params: dict[str, Any], rows: list[tuple[int, dict[str, Any]]], path: str | Path
) -> tuple[list[Any], dict[tuple[str, int], tuple[int, dict]]]:
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
        if not keys and hasattr(probe, "import_item"):
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
    template_name = params["template_name"]
    if unmatched:
        hint = (
            " (or give domain, condition, subject and object columns)"
            if hasattr(probe, "import_item")
            else ""
        )
        problems.append(
            f"{_lines(unmatched)} match no {probe.name} prompt made with the template "
            f"'{template_name}'{hint}"
        )
    if bad_attempt:
        problems.append(f"{_lines(bad_attempt)} have an attempt that is not a whole number ≥ 0")
    if duplicates:
        problems.append(f"{_lines(duplicates)} repeat a (prompt, attempt) pair")
    if problems:
        raise UserError(f"nothing imported from {path}: " + "; ".join(problems))
    return items, placed


def _write(
    store: Store,
    probe,
    params: dict[str, Any],
    path: str | Path,
    name: str,
    items: list[Any],
    placed: dict[tuple[str, int], tuple[int, dict]],
) -> dict[str, Any]:
    attempts_per_item: dict[str, int] = defaultdict(int)
    for key, index in placed:
        attempts_per_item[key] = max(attempts_per_item[key], index + 1)
    model_id = store.register_model(
        {"kind": "external", "name": name, "path": f"external:{name}", "sha256": None}
    )
    run_id = store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model_id,
        params={**params, "imported_from": str(Path(path).resolve())},
        generation={"attempts": max(attempts_per_item.values()), "imported": True},
        items=[(i.key, i.prompt, i.metadata) for i in items],
        attempts_per_item=0,
        app_version=__version__,
        llama_cpp_version=None,
        source="imported",
    )
    prompts = {i.key: i.prompt for i in items}
    metadata = {i.key: i.metadata for i in items}
    for (key, index), (_, record) in sorted(placed.items()):
        response = record.get("response")
        store.add_attempt(
            run_id,
            key,
            index,
            prompts[key],
            "" if response is None else str(response),
            prompt_mode="imported",
            auto_label=probe.label("" if response is None else str(response), metadata[key]),
        )
    store.db["runs"].update(
        run_id, {"attempts_total": len(placed), "status": "done", "finished_at": _now()}
    )
    return {"run_id": run_id, "attempts": len(placed)}


def _now() -> str:
    from gbdesk.store.db import now

    return now()
