"""Importing GlobalBias results made elsewhere: an APX table, or released-style profiles.

Both plan the whole import (validate every row) before anything is written; the core's
importer writes the planned runs in one transaction.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from gbdesk.contract import Item, Probe
from gbdesk.contract.importing import line_list, model_of, read_rows, refuse, require_columns
from gbdesk.studies.globalbias.apx_stats import UNFLAGGED_AXES
from gbdesk.studies.globalbias.data import load_descriptors, load_names, sentence
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import INT64_MAX
from gbdesk.workflows.importer import ImportedAttempt, ImportedRun, whole_number


def plan_apx_import(
    probe: Probe, path: str | Path, *, model_name: str | None = None
) -> list[ImportedRun]:
    """Scored sentences (rows with a `ppl`, as scores.csv has) or an APX table: long
    (`apx`, as scores.csv of an imported table has) or wide (`apx_1`…`apx_3`, as
    associations.csv has)."""
    rows = read_rows(path)
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    if any(_filled(r.get("ppl")) for _, r in rows):
        return plan_apx_scores(probe, path, rows, model_name=model_name)
    wide = [f"apx_{t}" for t in (1, 2, 3)]
    if any(c in r for _, r in rows for c in wide) and not any("apx" in r for _, r in rows):
        rows = [
            (number, {**record, "template": t, "apx": record[f"apx_{t}"]})
            for number, record in rows
            for t in (1, 2, 3)
            if _filled(record.get(f"apx_{t}"))
        ]
        if not rows:
            raise UserError(f"nothing imported from {path}: its apx_1…apx_3 cells are empty")
    return plan_apx_table(probe, path, model_name=model_name, rows=rows)


def _filled(value: Any) -> bool:
    return value is not None and str(value).strip() != ""


def _group_rank() -> dict[str, int]:
    """The shipped groups in the order of their first name (a scored run's order)."""
    rank: dict[str, int] = {}
    for row in load_names():
        rank.setdefault(row["Group"], len(rank))
    return rank


def plan_apx_table(
    probe: Probe,
    path: str | Path,
    *,
    model_name: str | None = None,
    rows: list[tuple[int, dict[str, Any]]] | None = None,
) -> list[ImportedRun]:
    """An APX table computed elsewhere (columns group, descriptor, template 1–3, apx;
    optional axis, model) as an imported run per model. Group labels are kept exactly as
    given; descriptors are matched to the shipped list (case-insensitively). Blocks and
    rows are stored in a fixed order (template, shipped group order, shipped descriptor
    order; others by label), whatever the file's row order."""
    if rows is None:
        rows = read_rows(path)
    require_columns(path, rows, ("group", "descriptor", "template", "apx"))
    descriptors = load_descriptors()
    shipped = {d["descriptor"]: d for d in descriptors}
    d_rank = {d["descriptor"]: i for i, d in enumerate(descriptors)}
    folded = {k.casefold(): v for k, v in shipped.items()}
    bad_template, bad_apx, empty, repeated = [], [], [], []
    by_model: dict[str, dict[tuple[int, str], list[dict[str, Any]]]] = {}
    seen: set[tuple[str, int, str, str]] = set()
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
        name = known["descriptor"] if known else descriptor
        model = model_of(record, model_name)
        if (model, template, group, name) in seen:
            repeated.append(number)
            continue
        seen.add((model, template, group, name))
        axis = str(record.get("axis") or "").strip() or (known or {}).get("axis", "")
        by_model.setdefault(model, {}).setdefault((template, group), []).append(
            {"group": group, "descriptor": name, "template": template, "apx": apx, "axis": axis}
        )
    problems = []
    if empty:
        problems.append(f"{line_list(empty)} lack a group or a descriptor")
    if bad_template:
        problems.append(f"{line_list(bad_template)} have a template that is not 1, 2 or 3")
    if bad_apx:
        problems.append(f"{line_list(bad_apx)} have an apx that is not a number")
    if repeated:
        problems.append(
            f"{line_list(repeated)} repeat a (model, group, template, descriptor) of an "
            "earlier line"
        )
    for model, blocks in by_model.items():
        if not _testable(blocks):
            problems.append(
                f"{short_repr(model)} has no descriptor with values for two or more groups "
                "(outside the untested age axis), so nothing would be tested"
            )
    refuse(path, problems)
    return _apx_table_runs(probe, by_model, unmatched, d_rank)


def _apx_table_runs(
    probe: Probe,
    by_model: dict[str, dict[tuple[int, str], list[dict[str, Any]]]],
    unmatched: set[str],
    d_rank: dict[str, int],
) -> list[ImportedRun]:
    """One imported run per model of a checked APX table: a block per (template, group) in
    the shipped order, and a warning when descriptors were not in the shipped list."""
    g_rank = _group_rank()
    warnings = []
    if unmatched:
        warnings.append(
            f"{len(unmatched):,} descriptor{'s were' if len(unmatched) > 1 else ' was'} not in "
            f"the shipped list (e.g. {_examples(unmatched)}): "
            f"{'they are' if len(unmatched) > 1 else 'it is'} tested with the group labels "
            "as given but without an axis (the age-axis exclusion cannot apply)"
        )
    planned = []
    for model, unordered in by_model.items():
        blocks = {
            tg: sorted(
                unordered[tg],
                key=lambda r: (d_rank.get(r["descriptor"], len(d_rank)), r["descriptor"]),
            )
            for tg in sorted(
                unordered, key=lambda tg: (tg[0], g_rank.get(tg[1], len(g_rank)), tg[1])
            )
        }
        params = probe.resolve_params()
        params["unmatched_descriptors"] = sorted(unmatched)
        items = [
            Item(
                f"import/t{t}/{g}",
                f"{g} · template {t} ({len(b)} descriptors)",
                {"template": t, "group": g},
            )
            for (t, g), b in blocks.items()
        ]
        attempts = [
            ImportedAttempt(
                item.key,
                0,
                f"{len(b)} imported APX values",
                probe.label("", item.metadata),
                scores=b,
            )
            for item, b in zip(items, blocks.values(), strict=True)
        ]
        planned.append(
            ImportedRun(
                model,
                params,
                items,
                attempts,
                extra={"rows": sum(len(b) for b in blocks.values())},
                notes={"unmatched_descriptors": len(unmatched), "warnings": warnings},
            )
        )
    return planned


_BLOCK_KEY = re.compile(r"t([123])/(\d+)-(.+)/(\d+)")


def _apx_scores_by_model(
    rows: list[tuple[int, dict[str, Any]]],
    model_name: str | None,
    descriptors: list[dict[str, Any]],
    d_index: dict[str, int],
) -> tuple[dict[str, dict[str, dict[str, Any]]], tuple[list[int], ...]]:
    """Read every scored sentence: the blocks by model and item key, and the lines that do
    not fit (bad item, descriptor, number, text or name, attempt or index; repeated)."""
    names = {n["row"]: n for n in load_names()}
    bad_item, bad_descriptor, bad_number, mismatch, repeated, bad_index = [], [], [], [], [], []
    # model → item key → {"row", "t", "b", "index", "attempts": {attempt: {descriptor: score}}}
    by_model: dict[str, dict[str, dict[str, Any]]] = {}
    for number, record in rows:
        key = str(record.get("item") or "").strip()
        match = _BLOCK_KEY.fullmatch(key)
        name_row = names.get(match.group(2)) if match else None
        try:
            template = int(str(record.get("template")).strip())
        except ValueError:
            template = None
        if (
            match is None
            or name_row is None
            or name_row["firstname"] != match.group(3)
            or template != int(match.group(1))
            or str(record.get("group") or "") != name_row["Group"]
        ):
            bad_item.append(number)
            continue
        descriptor = str(record.get("descriptor") or "")
        if descriptor not in d_index:
            bad_descriptor.append(number)
            continue
        d = descriptors[d_index[descriptor]]
        text, name = record.get("text"), record.get("name")
        if (_filled(text) and str(text) != sentence(template, name_row["firstname"], d)) or (
            _filled(name) and str(name) != name_row["firstname"]
        ):
            mismatch.append(number)
            continue
        try:
            ppl = float(str(record.get("ppl")).strip())
            n_tokens = whole_number(record.get("n_tokens"))
            logprob = (
                float(str(record["logprob_sum"]).strip())
                if _filled(record.get("logprob_sum"))
                else None
            )
            if not math.isfinite(ppl) or ppl <= 0 or (logprob is not None and math.isnan(logprob)):
                raise ValueError
        except ValueError:
            bad_number.append(number)
            continue
        try:  # whole numbers ≥ 0 that SQLite can hold (`importer.whole_number`)
            attempt = whole_number(record.get("attempt")) or 0
            index = whole_number(record.get("item_index"))
        except ValueError:
            bad_index.append(number)
            continue
        block = by_model.setdefault(model_of(record, model_name), {}).setdefault(
            key,
            {
                "row": name_row,
                "t": template,
                "b": int(match.group(4)),
                "index": index,
                "attempts": {},
            },
        )
        if index is None or block["index"] is None:
            block["index"] = None
        else:
            block["index"] = min(index, block["index"])
        scored = block["attempts"].setdefault(attempt, {})
        if descriptor in scored:
            repeated.append(number)
            continue
        scored[descriptor] = {
            "group": name_row["Group"],
            "descriptor": descriptor,
            "axis": d["axis"],
            "template": template,
            "name": name_row["firstname"],
            "text": sentence(template, name_row["firstname"], d),
            "n_tokens": n_tokens,
            "logprob_sum": logprob,
            "ppl": ppl,
        }
    return by_model, (bad_item, bad_descriptor, bad_number, mismatch, repeated, bad_index)


def _apx_score_runs(
    probe: Any,
    by_model: dict[str, dict[str, dict[str, Any]]],
    descriptors: list[dict[str, Any]],
    d_index: dict[str, int],
) -> list[ImportedRun]:
    """One imported run per model of checked scored sentences: its blocks in the run's order
    (`item_index`, else template, name, block), each attempt's sentences in the shipped
    order."""
    planned = []
    for model, blocks in by_model.items():
        indexed = all(b["index"] is not None for b in blocks.values())
        order = sorted(
            blocks,
            key=lambda k: (
                blocks[k]["index"] if indexed else 0,
                blocks[k]["t"],
                int(blocks[k]["row"]["row"]),
                blocks[k]["b"],
            ),
        )
        items, attempts = [], []
        for key in order:
            block = blocks[key]
            used = sorted({d_index[d] for scored in block["attempts"].values() for d in scored})
            item = probe.block_item(block["t"], block["row"], block["b"], used)
            items.append(item)
            for attempt in sorted(block["attempts"]):
                scored = block["attempts"][attempt]
                scores = [
                    scored[descriptors[i]["descriptor"]]
                    for i in used
                    if descriptors[i]["descriptor"] in scored
                ]
                mean_ppl = sum(s["ppl"] for s in scores) / len(scores)
                text = f"{len(scores)} sentences scored, mean perplexity {mean_ppl:.2f}"
                attempts.append(
                    ImportedAttempt(
                        item.key, attempt, text, probe.label(text, item.metadata), scores=scores
                    )
                )
        planned.append(
            ImportedRun(
                model,
                probe.resolve_params(),
                items,
                attempts,
                extra={"rows": sum(len(a.scores or []) for a in attempts)},
            )
        )
    return planned


def plan_apx_scores(
    probe: Any,
    path: str | Path,
    rows: list[tuple[int, dict[str, Any]]],
    *,
    model_name: str | None = None,
) -> list[ImportedRun]:
    """Scored sentences as scores.csv has them (item, group, descriptor, template, text,
    n_tokens, logprob_sum, ppl; optional attempt, item_index, axis, model): the blocks
    are rebuilt from the item keys and the descriptors present, in the run's order
    (`item_index`, else template, name, block) with the sentences in the shipped order,
    so every metric is computed from the same numbers in the same order."""
    require_columns(path, rows, ("item", "group", "descriptor", "template", "ppl"))
    descriptors = load_descriptors()
    d_index = {d["descriptor"]: i for i, d in enumerate(descriptors)}
    by_model, bad = _apx_scores_by_model(rows, model_name, descriptors, d_index)
    bad_item, bad_descriptor, bad_number, mismatch, repeated, bad_index = bad
    problems = []
    if bad_item:
        problems.append(
            f"{line_list(bad_item)} have an item, template or group that is not one of a "
            "scored block (t<template>/<row>-<name>/<block> of the shipped names)"
        )
    if bad_descriptor:
        problems.append(f"{line_list(bad_descriptor)} have a descriptor that is not shipped")
    if mismatch:
        problems.append(f"{line_list(mismatch)} have a text or name that is not their sentence's")
    if bad_number:
        problems.append(
            f"{line_list(bad_number)} have a ppl, n_tokens or logprob_sum that is not a number"
        )
    if bad_index:
        problems.append(
            f"{line_list(bad_index)} have an attempt or item_index that is not a whole number ≥ 0"
        )
    if repeated:
        problems.append(
            f"{line_list(repeated)} repeat an (item, attempt, descriptor) of an earlier line"
        )
    refuse(path, problems)
    return _apx_score_runs(probe, by_model, descriptors, d_index)


def _have(lines: list[int]) -> str:
    return "has" if len(lines) == 1 else "have"


def _examples(descriptors: set[str], shown: int = 3) -> str:
    listed = sorted(descriptors)
    text = ", ".join(short_repr(d) for d in listed[:shown])
    return text + (f" and {len(listed) - shown:,} more" if len(listed) > shown else "")


def _testable(blocks: dict[tuple[int, str], list[dict[str, Any]]]) -> bool:
    """Does some descriptor (not of the untested age axis) have APX values for two or more
    groups in one model's table? (The association test needs an SD over groups.)"""
    groups: dict[str, set[str]] = {}
    for (_, group), rows in blocks.items():
        for r in rows:
            if r["axis"] not in UNFLAGGED_AXES:
                groups.setdefault(r["descriptor"], set()).add(group)
    return any(len(g) >= 2 for g in groups.values())


def _refuse_blank_people(path: Path, df: Any) -> None:
    """Refuse a profiles file (`UserError` listing the lines) where a profile lacks a name,
    an ethnicity or a gender."""
    lines = df.attrs.get("lines") or list(range(2, len(df) + 2))
    problems = []
    for column in ("name", "Ethnicity", "Gender"):
        blank = [
            line
            for line, value in zip(lines, df[column], strict=True)
            if value is None or (isinstance(value, float) and math.isnan(value))
            or not str(value).strip()
        ]
        if blank:
            problems.append(f"{line_list(blank)} {_have(blank)} no {column}")
    refuse(path, problems)


def _clean(v: Any) -> Any:
    """A cell as a plain Python value (NaN: None)."""
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def _profile_of(name: str, record: dict[str, Any]) -> dict[str, Any]:
    """A profile row of the released layout as the profile a run stores (its response)."""
    from gbdesk.studies.globalbias.profiles_stats import (
        LIST_FIELDS,
        PHYSICAL_COLUMNS,
        SCALAR_FIELDS,
    )

    profile: dict[str, Any] = {"name": name}
    for f in SCALAR_FIELDS:
        if f != "name" and f in record:
            profile[f] = _clean(record[f])
    for f in LIST_FIELDS:
        profile[f] = list(record.get(f) or ())
    profile["physical_characteristics"] = {
        c.split(".", 1)[1]: _clean(record.get(c)) for c in PHYSICAL_COLUMNS
    }
    return profile


def _person_keys(order: list[tuple[Any, ...]], keyed: bool) -> dict[tuple[Any, ...], str]:
    """Each person's item key: the file's item (with #position when the item holds several
    people), or p<rank>-<name> for a released file without keys."""
    if keyed:
        per_item: dict[str, int] = {}
        for key in order:
            per_item[key[0]] = per_item.get(key[0], 0) + 1
        return {key: key[0] if per_item[key[0]] == 1 else f"{key[0]}#{key[1]}" for key in order}
    return {key: f"p{i:04d}-{key[0]}" for i, key in enumerate(order)}


def _profile_attempts(
    probe: Probe,
    path: str | Path,
    rows: list[tuple[int, tuple[Any, ...], int, dict[str, Any]]],
    keys: dict[tuple[Any, ...], str],
    people: dict[tuple[Any, ...], dict[str, Any]],
    keyed: bool,
) -> list[ImportedAttempt]:
    """One attempt per (person, run): a keyed file's repeated (item, position, run_id) is
    refused; in a released file the first of a name repeated in one run is kept."""
    attempts = []
    taken: dict[tuple[str, int], int] = {}
    repeated: list[int] = []
    for line, key, attempt, profile in rows:
        if (keys[key], attempt) in taken:
            if keyed:
                repeated.append(line)
            continue  # released files: the same name twice in one run, the first is kept
        taken[(keys[key], attempt)] = line
        text = json.dumps([profile], ensure_ascii=False)
        attempts.append(
            ImportedAttempt(keys[key], attempt, text, probe.label(text, {"people": [people[key]]}))
        )
    if repeated:
        refuse(
            path, [f"{line_list(repeated)} repeat an (item, position, run_id) of an earlier line"]
        )
    return attempts


def plan_profiles(
    probe: Probe, path: str | Path, *, model_name: str | None = None
) -> list[ImportedRun]:
    """Character profiles generated elsewhere, in the released GlobalBias files' layout
    (one row per profile: flattened fields, `name`, `run_id`, `Ethnicity`, `Gender`,
    `Group`; list fields as Python tuple literals or JSON). One item per person, one
    attempt per run (`run_id`, a whole number, is the attempt; other labels are numbered
    in sorted order); the response is the profile as JSON.

    A released file has no keys: a person is a name in a group (a name repeated within a
    run is another person), in file order — the order the paper's single split depends
    on. gbdesk's profiles.csv adds `item`, `position` and `item_index`: a person is then
    (item, position) — the item itself when it asked for one name — and persons are
    ordered by (item_index, position), the exported run's order, whatever the row order."""
    from gbdesk.studies.globalbias.profiles_stats import read_profiles_csv

    p = Path(path)
    if not p.is_file():
        raise UserError(f"file not found: {p}")
    df = read_profiles_csv(p)
    if df.empty:
        raise UserError(f"{p} has no profiles")
    keys_frame = _key_columns(p, len(df))
    keyed = "item" in keys_frame and all(v.strip() for v in keys_frame["item"])
    ordered = keyed and "item_index" in keys_frame
    positions = keys_frame.get("position") or [""] * len(df)
    _refuse_blank_people(p, df)

    attempt_of = _run_numbers(list(df["run_id"]))
    people: dict[tuple[Any, ...], dict[str, Any]] = {}
    rank: dict[tuple[Any, ...], tuple[int, int]] = {}
    rows: list[tuple[int, tuple[Any, ...], int, dict[str, Any]]] = []
    seen: dict[tuple[str, str, int], int] = {}
    bad_number: list[int] = []
    for i, record in enumerate(df.to_dict("records")):
        line = i + 2  # after the header (profiles hold no line breaks)
        name, group = str(record["name"]), str(record["Group"])
        attempt = attempt_of[i]
        if keyed:
            item = keys_frame["item"][i].strip()
            try:
                position = whole_number(positions[i])
                index = whole_number(keys_frame["item_index"][i]) if ordered else None
            except (TypeError, ValueError):
                bad_number.append(line)
                continue
            key: tuple[Any, ...] = (item, position) if position is not None else (item, name, group)
            if ordered and index is not None:
                old = rank.get(key, (index, position or 0))
                rank[key] = min(old, (index, position or 0))
            elif ordered:
                ordered = False
        else:
            k = seen.get((name, group, attempt), 0)
            seen[(name, group, attempt)] = k + 1
            key = (name, group, k)
        people.setdefault(
            key,
            {
                "name": name,
                "ethnicity": _clean(record["Ethnicity"]),
                "gender": _clean(record["Gender"]),
                "group": group,
            },
        )
        rows.append((line, key, attempt, _profile_of(name, record)))
    if bad_number:
        refuse(
            path,
            [
                f"{line_list(bad_number)} have a position or item_index that is not a "
                "whole number ≥ 0"
            ],
        )
    order = list(people)
    if ordered:
        order.sort(key=lambda key: rank[key])
    keys = _person_keys(order, keyed)
    items = [
        Item(keys[key], f"profile of {people[key]['name']}", {"people": [people[key]]})
        for key in order
    ]
    attempts = _profile_attempts(probe, path, rows, keys, people, keyed)
    rank_of = {keys[key]: n for n, key in enumerate(order)}
    attempts.sort(key=lambda a: (rank_of[a.item], a.attempt))
    return [ImportedRun(model_name or "imported", probe.resolve_params(), items, attempts)]


def _key_columns(path: Path, n_rows: int) -> dict[str, list[str]]:
    """gbdesk's key columns of a profiles.csv (item, position, item_index) as text, when
    present and aligned with the profiles."""
    import pandas as pd

    wanted = ("item", "position", "item_index")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=lambda c: c in wanted)
    except (ValueError, pd.errors.ParserError):
        return {}
    if len(frame) != n_rows:
        return {}
    return {c: list(frame[c]) for c in frame.columns}


def _run_numbers(values: list[Any]) -> list[int]:
    """Attempt numbers from a run_id column: the whole numbers themselves, else the rank of
    each label among the sorted labels."""
    numbers = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            break
        if not (math.isfinite(f) and f.is_integer() and 0 <= f < INT64_MAX):
            break  # not a run number SQLite can hold: ranked as a label
        numbers.append(int(f))
    else:
        return numbers
    labels = {label: n for n, label in enumerate(sorted({str(v) for v in values}))}
    return [labels[str(v)] for v in values]
