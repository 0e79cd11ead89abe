"""Importing GlobalBias results made elsewhere: an APX table, or released-style profiles.

Both plan the whole import (validate every row) before anything is written; the core's
importer writes the planned runs in one transaction.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from gbdesk.errors import UserError, short_repr
from gbdesk.importer import (
    ImportedAttempt,
    ImportedRun,
    line_list,
    model_of,
    read_rows,
    refuse,
    require_columns,
)
from gbdesk.studies.base import Item, Probe
from gbdesk.studies.globalbias.apx_stats import UNFLAGGED_AXES
from gbdesk.studies.globalbias.data import load_descriptors


def plan_apx_table(
    probe: Probe, path: str | Path, *, model_name: str | None = None
) -> list[ImportedRun]:
    """An APX table computed elsewhere (columns group, descriptor, template 1–3, apx;
    optional axis, model) as an imported run per model. Group labels are kept exactly as
    given; descriptors are matched to the shipped list (case-insensitively)."""
    rows = read_rows(path)
    require_columns(path, rows, ("group", "descriptor", "template", "apx"))
    shipped = {d["descriptor"]: d for d in load_descriptors()}
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
    warnings = []
    if unmatched:
        warnings.append(
            f"{len(unmatched):,} descriptor{'s were' if len(unmatched) > 1 else ' was'} not in "
            f"the shipped list (e.g. {_examples(unmatched)}): "
            f"{'they are' if len(unmatched) > 1 else 'it is'} tested with the group labels "
            "as given but without an axis (the age-axis exclusion cannot apply)"
        )
    planned = []
    for model, blocks in by_model.items():
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


def plan_profiles(
    probe: Probe, path: str | Path, *, model_name: str | None = None
) -> list[ImportedRun]:
    """Character profiles generated elsewhere, in the released GlobalBias files' layout
    (one row per profile: flattened fields, `name`, `run_id`, `Ethnicity`, `Gender`,
    `Group`; list fields as Python tuple literals). One item per name, one attempt per run,
    in file order; the response is the profile as JSON."""
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
    refuse(p, problems)

    def clean(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    runs = {r: i for i, r in enumerate(dict.fromkeys(str(x) for x in df["run_id"]))}
    people: dict[tuple[str, str, int], dict[str, Any]] = {}
    rows: list[tuple[tuple[str, str, int], int, dict[str, Any]]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for record in df.to_dict("records"):
        name, group, run = str(record["name"]), str(record["Group"]), str(record["run_id"])
        k = seen.get((name, group, run), 0)
        seen[(name, group, run)] = k + 1
        key = (name, group, k)
        people.setdefault(
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
        rows.append((key, runs[run], profile))
    keys = {key: f"p{i:04d}-{key[0]}" for i, key in enumerate(people)}
    items = [
        Item(keys[key], f"profile of {meta['name']}", {"people": [meta]})
        for key, meta in people.items()
    ]
    attempts = []
    taken: set[tuple[str, int]] = set()
    for key, attempt, profile in rows:
        if (keys[key], attempt) in taken:
            continue  # the same name twice in one run of the file: the first is kept
        taken.add((keys[key], attempt))
        text = json.dumps([profile], ensure_ascii=False)
        attempts.append(
            ImportedAttempt(keys[key], attempt, text, probe.label(text, {"people": [people[key]]}))
        )
    return [ImportedRun(model_name or "imported", probe.resolve_params(), items, attempts)]
