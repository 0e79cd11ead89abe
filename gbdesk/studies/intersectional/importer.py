"""Importing role answers made elsewhere into `intersectional_sdeg` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gbdesk.importer import (
    ImportedAttempt,
    ImportedRun,
    line_list,
    model_of,
    read_rows,
    refuse,
    require_columns,
    require_text,
)
from gbdesk.studies.intersectional.probe import (
    IntersectionalProbe,
    answers_label,
    load_categories,
    load_groups,
    map_answer,
)


def plan_role_answers(
    probe: IntersectionalProbe, path: str | Path, *, model_name: str | None = None
) -> list[ImportedRun]:
    """Answers produced elsewhere (columns group, role, category, answer; optional model):
    one attempt per (group, role) with its answers mapped to the category's options.
    `group` is one of the 106 (as `White;old` or its id), `category` a name or 1–16, `role`
    the role's text or id."""
    rows = read_rows(path)
    require_columns(path, rows, ("group", "role", "category", "answer"))
    require_text(path, rows, ("role", "answer"))
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
        role = str(record.get("role") or "")
        answer = "" if record.get("answer") is None else str(record["answer"])
        by_model.setdefault(model_of(record, model_name), {}).setdefault(
            g["group_id"], {}
        ).setdefault(role, {})[str(c["id"])] = {
            "raw": answer,
            "option": map_answer(answer, c["options"]),
        }
    problems = []
    if bad_group:
        problems.append(f"{line_list(bad_group)} name no group of the 106 (e.g. White;old)")
    if bad_cat:
        problems.append(f"{line_list(bad_cat)} name no category (a name or 1–16)")
    refuse(path, problems)
    params = probe.resolve_params()
    by_id = {g["group_id"]: g for g in load_groups()}
    planned = []
    for model, per_group in by_model.items():
        items = [probe.group_item(by_id[gid], params["template"]) for gid in per_group]
        attempts = [
            ImportedAttempt(item.key, index, role, answers_label(answers))
            for item, roles in zip(items, per_group.values(), strict=True)
            for index, (role, answers) in enumerate(roles.items())
        ]
        planned.append(ImportedRun(model, params, items, attempts))
    return planned
