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
from gbdesk.store import Store
from gbdesk.studies import get_probe

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
    if probe_name == "globalbias_profiles":
        return import_profiles(store, probe, path, model_name=model_name)
    if probe_name == "intersectional_sdeg":
        return import_role_answers(store, probe, path, model_name=model_name)
    rows = read_rows(path)
    if probe.kind == "scoring":
        return import_apx_table(store, probe, path, rows, model_name=model_name)
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


def _imported_run(
    store: Store,
    probe,
    model: str,
    params: dict[str, Any],
    path: str | Path,
    items: list[tuple[str, str, dict[str, Any]]],
    attempts: int,
) -> int:
    """A new run of the probe for stories/scores made elsewhere by `model` (an external
    model row); attempts are added by the caller, then `_finish_import`."""
    model_id = store.register_model(
        {"kind": "external", "name": model, "path": f"external:{model}", "sha256": None}
    )
    return store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model_id,
        params={**params, "imported_from": str(Path(path).resolve())},
        generation={"attempts": attempts, "imported": True},
        items=items,
        attempts_per_item=0,
        app_version=__version__,
        llama_cpp_version=None,
        source="imported",
    )


def _finish_import(store: Store, run_id: int, count: int) -> None:
    store.db["runs"].update(
        run_id, {"attempts_total": count, "status": "done", "finished_at": _now()}
    )


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
    run_id = _imported_run(
        store,
        probe,
        name,
        params,
        path,
        [(i.key, i.prompt, i.metadata) for i in items],
        max(attempts_per_item.values()),
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
    _finish_import(store, run_id, len(placed))
    return {"run_id": run_id, "attempts": len(placed)}


def import_apx_table(
    store: Store,
    probe,
    path: str | Path,
    rows: list[tuple[int, dict[str, Any]]],
    *,
    model_name: str | None = None,
) -> dict[str, Any]:
    """An APX table computed elsewhere (columns group, descriptor, template 1–3, apx;
    optional axis, model) as an imported GlobalBias run per model. Group labels are kept
    exactly as given; descriptors are matched to the shipped list (for their axis)."""
    import math

    from gbdesk.studies.globalbias.probes import load_descriptors

    _require_columns(path, rows, ("group", "descriptor", "template", "apx"))
    shipped = {d["descriptor"]: d for d in load_descriptors()}
    folded = {k.casefold(): v for k, v in shipped.items()}
    bad_template, bad_apx, empty = [], [], []
    by_model: dict[str, dict[tuple[int, str], list[dict[str, Any]]]] = {}
    unmatched: set[str] = set()
    for number, record in rows:
        group = str(record.get("group") or "")
        descriptor = str(record.get("descriptor") or "").strip()
        if not group.strip() or not descriptor:
            empty.append(number)
            continue
        try:
            template = int(str(record.get("template")).strip())
            if template not in (1, 2, 3):
                raise ValueError
        except ValueError:
            bad_template.append(number)
            continue
        try:
            apx = float(str(record.get("apx")).strip())
            if not math.isfinite(apx):
                raise ValueError
        except ValueError:
            bad_apx.append(number)
            continue
        known = shipped.get(descriptor) or folded.get(descriptor.casefold())
        if known is None:
            unmatched.add(descriptor)
        axis = str(record.get("axis") or "").strip() or (known or {}).get("axis", "")
        model = str(record.get("model") or "").strip() or model_name or "imported"
        by_model.setdefault(model, {}).setdefault((template, group), []).append(
            {
                "group": group,
                "descriptor": known["descriptor"] if known else descriptor,
                "template": template,
                "apx": apx,
                "axis": axis,
            }
        )
    problems = []
    if empty:
        problems.append(f"{_lines(empty)} lack a group or a descriptor")
    if bad_template:
        problems.append(f"{_lines(bad_template)} have a template that is not 1, 2 or 3")
    if bad_apx:
        problems.append(f"{_lines(bad_apx)} have an apx that is not a number")
    if problems:
        raise UserError(f"nothing imported from {path}: " + "; ".join(problems))
    runs = []
    for model, blocks in by_model.items():
        items = [
            (
                f"import/t{t}/{g}",
                f"{g} · template {t} ({len(b)} descriptors)",
                {"template": t, "group": g},
            )
            for (t, g), b in blocks.items()
        ]
        params = probe.resolve_params()
        params["unmatched_descriptors"] = sorted(unmatched)
        run_id = _imported_run(store, probe, model, params, path, items, 1)
        for (key, prompt, meta), b in zip(items, blocks.values(), strict=True):
            seen = {r["descriptor"] for r in b}
            if len(seen) != len(b):
                raise UserError(
                    f"nothing imported from {path}: group {meta['group']!r}, template "
                    f"{meta['template']} repeats a descriptor"
                )
            store.add_attempt(
                run_id,
                key,
                0,
                prompt,
                f"{len(b)} imported APX values",
                prompt_mode="imported",
                auto_label=probe.label("", meta),
                scores=b,
            )
        _finish_import(store, run_id, len(items))
        runs.append(
            {
                "model": model,
                "run_id": run_id,
                "attempts": len(items),
                "rows": sum(len(b) for b in blocks.values()),
            }
        )
    result: dict[str, Any] = {
        "run_id": runs[0]["run_id"],
        "attempts": sum(r["attempts"] for r in runs),
        "rows": sum(r["rows"] for r in runs),
        "unmatched_descriptors": len(unmatched),
    }
    if len(runs) > 1:
        result["runs"] = runs
    return result


def import_profiles(
    store: Store, probe, path: str | Path, *, model_name: str | None = None
) -> dict[str, Any]:
    """Character profiles generated elsewhere, in the released GlobalBias files' layout
    (one row per profile: flattened fields, `name`, `run_id`, `Ethnicity`, `Gender`,
    `Group`; list fields as Python tuple literals). One item per name, one attempt per run,
    in file order; the response is the profile as JSON."""
    import json
    import math

    from gbdesk.studies.globalbias.profiles_stats import (
        LIST_FIELDS,
        PHYSICAL_COLUMNS,
        SCALAR_FIELDS,
        read_profiles_csv,
    )

    p = Path(path)
    if not p.is_file():
        raise UserError(f"file not found: {p}")
    df = read_profiles_csv(p)
    if df.empty:
        raise UserError(f"{p} has no profiles")

    def clean(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    runs = {r: i for i, r in enumerate(dict.fromkeys(str(x) for x in df["run_id"]))}
    items: dict[tuple[str, str, int], dict[str, Any]] = {}
    attempts: list[tuple[tuple[str, str, int], int, dict[str, Any]]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for record in df.to_dict("records"):
        name, group, run = str(record["name"]), str(record["Group"]), str(record["run_id"])
        k = seen.get((name, group, run), 0)
        seen[(name, group, run)] = k + 1
        key = (name, group, k)
        items.setdefault(
            key,
            {
                "name": name,
                "ethnicity": clean(record["Ethnicity"]),
                "gender": clean(record["Gender"]),
                "group": group,
            },
        )
        profile: dict[str, Any] = {"name": name}
        for f in SCALAR_FIELDS:
            if f != "name" and f in record:
                profile[f] = clean(record[f])
        for f in LIST_FIELDS:
            profile[f] = list(record.get(f) or ())
        profile["physical_characteristics"] = {
            c.split(".", 1)[1]: clean(record.get(c)) for c in PHYSICAL_COLUMNS
        }
        attempts.append((key, runs[run], profile))
    keys = {key: f"p{i:04d}-{key[0]}" for i, key in enumerate(items)}
    model = model_name or "imported"
    run_id = _imported_run(
        store,
        probe,
        model,
        probe.resolve_params(),
        p,
        [
            (keys[key], f"profile of {meta['name']}", {"people": [meta]})
            for key, meta in items.items()
        ],
        len(runs),
    )
    stored = 0
    for key, attempt, profile in attempts:
        text = json.dumps([profile], ensure_ascii=False)
        meta = {"people": [items[key]]}
        if store.add_attempt(
            run_id,
            keys[key],
            attempt,
            f"profile of {items[key]['name']}",
            text,
            prompt_mode="imported",
            auto_label=probe.label(text, meta),
        ):
            stored += 1
    _finish_import(store, run_id, stored)
    return {"run_id": run_id, "attempts": stored}


def import_role_answers(
    store: Store, probe, path: str | Path, *, model_name: str | None = None
) -> dict[str, Any]:
    """Answers produced elsewhere (columns group, role, category, answer; optional model):
    one attempt per (group, role) with its answers mapped to the category's options.
    `group` is one of the 106 (as `White;old` or its id), `category` a name or 1–16, `role`
    the role's text or id."""
    from gbdesk.studies.intersectional.probe import load_categories, load_groups, map_answer

    rows = read_rows(path)
    _require_columns(path, rows, ("group", "role", "category", "answer"))
    groups = {g["group"].casefold(): g for g in load_groups()}
    groups.update({g["group_id"]: g for g in load_groups()})
    cats = {c["category"].casefold(): c for c in load_categories()}
    cats.update({str(c["id"]): c for c in load_categories()})
    bad_group, bad_cat = [], []
    by_model: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for number, record in rows:
        g = groups.get(str(record.get("group") or "").strip().casefold())
        c = cats.get(str(record.get("category") or "").strip().casefold())
        if g is None:
            bad_group.append(number)
            continue
        if c is None:
            bad_cat.append(number)
            continue
        model = str(record.get("model") or "").strip() or model_name or "imported"
        role = str(record.get("role") or "")
        answer = "" if record.get("answer") is None else str(record["answer"])
        by_model.setdefault(model, {}).setdefault(g["group_id"], {}).setdefault(role, {})[
            str(c["id"])
        ] = {"raw": answer, "option": map_answer(answer, c["options"])}
    problems = []
    if bad_group:
        problems.append(f"{_lines(bad_group)} name no group of the 106 (e.g. White;old)")
    if bad_cat:
        problems.append(f"{_lines(bad_cat)} name no category (a name or 1–16)")
    if problems:
        raise UserError(f"nothing imported from {path}: " + "; ".join(problems))
    params = probe.resolve_params()
    by_id = {g["group_id"]: g for g in load_groups()}
    runs = []
    for model, per_group in by_model.items():
        items = [probe._item(by_id[gid], params["template"]) for gid in per_group]
        run_id = _imported_run(
            store,
            probe,
            model,
            params,
            path,
            [(i.key, i.prompt, i.metadata) for i in items],
            max(len(r) for r in per_group.values()),
        )
        count = 0
        for item, roles in zip(items, per_group.values(), strict=True):
            for index, (role, answers) in enumerate(roles.items()):
                store.add_attempt(
                    run_id,
                    item.key,
                    index,
                    item.prompt,
                    role,
                    prompt_mode="imported",
                    auto_label=probe._answers_label(answers),
                )
                count += 1
        _finish_import(store, run_id, count)
        runs.append({"model": model, "run_id": run_id, "attempts": count})
    result: dict[str, Any] = {
        "run_id": runs[0]["run_id"],
        "attempts": sum(r["attempts"] for r in runs),
    }
    if len(runs) > 1:
        result["runs"] = runs
    return result


def _now() -> str:
    from gbdesk.store.db import now

    return now()
