"""Importing role answers made elsewhere into `intersectional_sdeg` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gbdesk.contract import Probe
from gbdesk.contract.importing import (
    line_list,
    model_of,
    read_rows,
    refuse,
    require_columns,
    require_text,
)
from gbdesk.studies.intersectional.data import (
    answers_label,
    load_categories,
    load_groups,
    map_answer,
)
from gbdesk.workflows.importer import ImportedAttempt, ImportedRun, whole_number


def plan_role_answers(
    probe: Probe,
    path: str | Path,
    *,
    model_name: str | None = None,
    template: str | None = None,
) -> list[ImportedRun]:
    """Answers produced elsewhere or exported (columns group, role, category, answer;
    optional role_index, item, item_index, model): one attempt per (group, role) with its
    answers mapped to the category's options. `group` is one of the 106 (as `White;old`
    or its id), `category` a name or 1–16, `role` the role's text. With `role_index` (as
    answers.csv has) a role is that attempt of its group, whatever its text; without it,
    rows with the same text are one role, numbered in file order. Groups are stored in
    `item_index` order when every row has one (the exported run's order), else in the
    order of the 106."""
    rows = read_rows(path)
    require_columns(path, rows, ("group", "role", "category", "answer"))
    require_text(path, rows, ("role", "answer"))
    params = probe.resolve_params(template=template)
    by_model, index_of, all_indexed = _answers_by_model(path, rows, model_name)
    return _planned_runs(probe, params, by_model, index_of, all_indexed)


#: model → group id → role key → {"role": text, "answers": {category id: answer}}
_ByModel = dict[str, dict[str, dict[tuple[int, Any], dict[str, Any]]]]


def _answers_by_model(
    path: str | Path, rows: list[tuple[int, dict[str, Any]]], model_name: str | None
) -> tuple[_ByModel, dict[tuple[str, str], int], bool]:
    """Read and check every row (`UserError` listing every line that does not fit, nothing
    kept): the answers by model, group and role, each (model, group)'s first item_index,
    and whether every row had one."""
    groups = {g["group"].casefold(): g for g in load_groups()}
    groups.update({g["group_id"]: g for g in load_groups()})
    cats = {c["category"].casefold(): c for c in load_categories()}
    cats.update({str(c["id"]): c for c in load_categories()})
    bad_group, bad_item, bad_cat, bad_number, conflicting, repeated = [], [], [], [], [], []
    by_model: _ByModel = {}
    index_of: dict[tuple[str, str], int] = {}
    all_indexed = True
    for number, record in rows:
        g = groups.get(str(record.get("group") or "").strip().casefold())
        c = cats.get(str(record.get("category") or "").strip().casefold())
        if g is None:
            bad_group.append(number)
            continue
        item = str(record.get("item") or "").strip()
        if item and item != f"g{int(g['group_id']):03d}":
            bad_item.append(number)
            continue
        if c is None:
            bad_cat.append(number)
            continue
        try:
            role_index = whole_number(record.get("role_index"))
            position = whole_number(record.get("item_index"))
        except (TypeError, ValueError):
            bad_number.append(number)
            continue
        role = str(record.get("role") or "")
        answer = "" if record.get("answer") is None else str(record["answer"])
        model = model_of(record, model_name)
        key: tuple[int, Any] = (0, role_index) if role_index is not None else (1, role)
        entry = (
            by_model.setdefault(model, {})
            .setdefault(g["group_id"], {})
            .setdefault(key, {"role": role, "answers": {}})
        )
        if entry["role"] != role:
            conflicting.append(number)
            continue
        if str(c["id"]) in entry["answers"]:
            repeated.append(number)
            continue
        entry["answers"][str(c["id"])] = {"raw": answer, "option": map_answer(answer, c["options"])}
        if position is None:
            all_indexed = False
        else:
            slot = (model, g["group_id"])
            index_of[slot] = min(position, index_of.get(slot, position))
    problems = []
    if bad_group:
        problems.append(f"{line_list(bad_group)} name no group of the 106 (e.g. White;old)")
    if bad_item:
        problems.append(f"{line_list(bad_item)} have an item that is not their group's")
    if bad_cat:
        problems.append(f"{line_list(bad_cat)} name no category (a name or 1–16)")
    if bad_number:
        problems.append(
            f"{line_list(bad_number)} have a role_index or item_index that is not a whole "
            "number ≥ 0"
        )
    if conflicting:
        problems.append(
            f"{line_list(conflicting)} give another text for a role (group, role_index) of "
            "an earlier line"
        )
    if repeated:
        problems.append(
            f"{line_list(repeated)} repeat a category of their role (several roles with the "
            "same text? add a role_index column, as answers.csv has)"
        )
    refuse(path, problems)
    return by_model, index_of, all_indexed


def _planned_runs(
    probe: Probe,
    params: dict[str, Any],
    by_model: _ByModel,
    index_of: dict[tuple[str, str], int],
    all_indexed: bool,
) -> list[ImportedRun]:
    """One run per model: its groups in item_index order (when every row had one) or the
    106's, each role an attempt numbered by role_index, else in file order."""
    by_id = {g["group_id"]: g for g in load_groups()}
    order = {g["group_id"]: n for n, g in enumerate(load_groups())}
    planned = []
    for model, per_group in by_model.items():
        indexed = all_indexed and all((model, gid) in index_of for gid in per_group)
        gids = sorted(
            per_group, key=lambda gid: (index_of[(model, gid)] if indexed else 0, order[gid])
        )
        items, attempts = [], []
        for gid in gids:
            item = probe.group_item(
                by_id[gid], params["template"], params.get("answer_temperature", 0.0)
            )
            items.append(item)
            roles = per_group[gid]
            taken = {k[1] for k in roles if k[0] == 0}
            free = (n for n in range(len(roles) + len(taken)) if n not in taken)
            numbered = {k[1]: k for k in roles if k[0] == 0}
            numbered.update({next(free): k for k in roles if k[0] == 1})  # texts in file order
            for index in sorted(numbered):
                entry = roles[numbered[index]]
                answers = dict(sorted(entry["answers"].items(), key=lambda kv: int(kv[0])))
                attempts.append(
                    ImportedAttempt(item.key, index, entry["role"], answers_label(answers))
                )
        planned.append(ImportedRun(model, params, items, attempts))
    return planned
