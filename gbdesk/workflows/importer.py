"""Import results made elsewhere (an API model, another tool) as runs.

Every probe reads its own file layout (its `Importing.plan` capability; the default, here, reads
`prompt` + `response` rows). Planning reads and validates the *whole* file and returns
the runs to create — nothing is written — so a bad line anywhere means nothing is
imported and every offending line is reported. `write_imported_runs` then writes all
planned runs in one transaction: an import is complete or absent, even if the process
is killed or the disk fills up half-way.
"""

from __future__ import annotations

import functools
import gc
import logging
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.contract import Item, Probe, get_probe
from gbdesk.contract.importing import (
    check_export_file,
    export_hints,
    line_list,
    model_of,
    read_rows,
    refuse,
    require_columns,
    require_text,
)
from gbdesk.contract.running import RunItems, attempt_item, wording_kwargs
from gbdesk.store import Store
from gbdesk.store.db import prepare_attempts
from gbdesk.support.errors import UserError
from gbdesk.support.guards import INT64_MAX
from gbdesk.support.guards import whole_number as _whole_number

log = logging.getLogger(__name__)


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
    #: items of several prompts: the attempts per prompt the attempt numbers were made
    #: with (attempt a answers prompt a // attempts_per_prompt); None: one-prompt items
    attempts_per_prompt: int | None = None


# -- the whole import --------------------------------------------------------------------------
def import_generations(
    store: Store,
    probe_name: str,
    path: str | Path,
    *,
    model_name: str | None = None,
    template: str | None = None,
    deal_rows: bool = False,
    wording: int = 0,
) -> dict[str, Any]:
    """Create imported run(s) from the file: one run, or one per value of an optional
    `model` column. Returns {run_id, attempts} (and {runs: […]} for several models).
    `deal_rows`: rows without an `item` whose prompt several items share are dealt to
    those items in turn (otherwise such a file is refused). `wording`: the wording of the
    probe's prompts the answers were given to (0: the study's own)."""
    probe = get_probe(probe_name)
    check_export_file(probe, path, "import")
    with export_hints(probe, path, "import"):
        own = probe.capabilities.importing.plan  # None: response rows by item or prompt
        if wording and own is not None:
            raise UserError(f"{probe.name} imports its own layout: it takes no --wording")
        plan = own or functools.partial(plan_prompt_response_import, probe)
        extra = {"wording": wording} if wording else {}
        planned = plan(
            path, model_name=model_name, template=template, deal_rows=deal_rows, **extra
        )
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
        metadata = {i.key: i.metadata for i in plan.items}
        flat = probe.capabilities.flat  # the label's flat rows, written with it (analysis.flat)
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
                "facts": (
                    flat.facts(a.label, a.response, metadata.get(a.item, {}))
                    if flat is not None and a.label is not None
                    else None
                ),
            }
            for a in plan.attempts
        )
        rows.append((plan.attempts_per_prompt or max(per_item.values(), default=0), attempts))
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
                items=[i.as_row() for i in plan.items],
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


# -- the default layout: item / prompt + response ----------------------------------------------
DEAL_HINT = (
    "add an `item` column (as in attempts.csv) or pass --deal-rows to deal them to the items "
    "in turn"
)


def plan_prompt_response_import(
    probe: Probe,
    path: str | Path,
    *,
    model_name: str | None = None,
    template: str | None = None,
    deal_rows: bool = False,
    wording: int = 0,
) -> list[ImportedRun]:
    """Rows with `response` and an `item` key (as attempts.csv has) or a `prompt`
    (optional `attempt`, `item_index`, `model`, `wording`), placed on the probe's items;
    one run per model and wording. See `_place` for how rows are matched.

    A `wording` column (gbdesk's export of a wording family has one) gives each row its
    wording; `wording` (--wording) is the wording of rows without one, and a row whose
    column says another is refused."""
    rows = read_rows(path)
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    keyed = any(str(r.get("item") or "").strip() for _, r in rows)
    required = ("response",) if keyed else ("prompt", "response")
    require_columns(path, rows, required)
    require_text(path, rows, required)
    groups: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]] = {}
    for number, record in rows:
        key = (model_of(record, model_name), _row_wording(record, wording))
        groups.setdefault(key, []).append((number, record))
    _refuse_wordings(path, groups, wording)
    planned = []
    by_wording: dict[int, dict[str, Any]] = {}
    for (name, w), group in groups.items():
        if w not in by_wording:
            by_wording[w] = probe.resolve_params(template=template, **wording_kwargs(w))
        params = by_wording[w]
        items, placed, per_prompt = _place(probe, params, group, path, deal_rows=deal_rows)
        seen = RunItems([_stored_row(i) for i in items], per_prompt or 1)
        rank = {i.key: n for n, i in enumerate(items)}
        rows = []
        for (key, index), (_, record) in sorted(
            placed.items(), key=lambda kv: (rank[kv[0][0]], kv[0][1])
        ):
            response = record.get("response")
            rows.append((key, index, "" if response is None else str(response)))
        labels = label_all(probe, [(text, seen.metadata(key, a)) for key, a, text in rows])
        attempts = [
            ImportedAttempt(
                key,
                index,
                text,
                label,
                prompt=attempt_item(seen.by_key[key], index, seen.per_prompt)["prompt"]
                if per_prompt
                else None,
            )
            for (key, index, text), label in zip(rows, labels, strict=True)
        ]
        planned.append(ImportedRun(name, params, items, attempts, attempts_per_prompt=per_prompt))
    return planned


_BAD_WORDING = -1


def _row_wording(record: dict[str, Any], default: int) -> int:
    """A row's `wording` cell (ASCII digits, 0 to 999), else `default`; `_BAD_WORDING`
    for a cell that is not a wording id."""
    import re

    cell = str(record.get("wording") or "").strip()
    if not cell:
        return default
    return int(cell) if re.fullmatch(r"[0-9]{1,3}", cell) else _BAD_WORDING


def _refuse_wordings(
    path: str | Path, groups: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]], asked: int
) -> None:
    """Nothing is imported when a `wording` cell is not a wording id, or names another
    wording than --wording asked for."""
    problems = []
    bad = sorted(n for (_, w), g in groups.items() if w == _BAD_WORDING for n, _ in g)
    if bad:
        problems.append(f"{line_list(bad)}: the wording column holds no wording id (0, 1, 2 …)")
    if asked:
        other = sorted(
            n for (_, w), g in groups.items() if w not in (asked, _BAD_WORDING) for n, r in g
            if str(r.get("wording") or "").strip()
        )  # fmt: skip
        if other:
            problems.append(
                f"{line_list(other)}: the wording column names another wording than "
                f"--wording {asked} (drop --wording: the column gives each row's)"
            )
    refuse(path, problems)


def _stored_row(item: Item) -> dict[str, Any]:
    """An item as `Store.run_items` returns it once stored."""
    row: dict[str, Any] = {"item": item.key, "prompt": item.prompt, "metadata": item.metadata}
    if item.prompts:
        row["prompts"] = item.prompts_json()
    return row


#: from how many texts an import labels them in worker processes (one per core, at most 4)
PARALLEL_LABELS = 4000

#: the young generation's collection threshold while labelling (Python's default: 700)
LABEL_GC_THRESHOLD = 50_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect the young generation every `LABEL_GC_THRESHOLD` allocations instead of 700
    while labelling: an extractor's label makes thousands of short-lived objects, and the
    collector's passes over them (and over every object alive) were 8–10 % of an import's
    CPU (issue 33, docs/benchmarks.md). Collection still runs, so memory stays bounded; the
    labels are the same."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], LABEL_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _labels_here(probe: Probe, rows: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """`probe.label` of every row in this process."""
    with fewer_collections():
        return [probe.label(text, metadata) for text, metadata in rows]


def _label_chunk(probe_name: str, rows: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return _labels_here(get_probe(probe_name), rows)


def label_all(
    probe: Probe, rows: list[tuple[str, dict[str, Any]]], workers: int | None = None
) -> list[dict[str, Any]]:
    """`probe.label(text, metadata)` of every row, in order: here, or in `workers` worker
    processes for a big import (each label depends on its text alone, so the result is the
    same; `GBDESK_IMPORT_WORKERS` sets the default).
    Not in a frozen app (its executable cannot start a Python worker)."""
    import os
    import sys

    # Default: here. Worker processes were slower on a 2-core laptop (249 vs 300 stories/s,
    # benchmarks/scale.py) and outlive a killed import while they finish their chunk.
    cores = int(os.environ.get("GBDESK_IMPORT_WORKERS", "1")) if workers is None else workers
    if cores < 2 or len(rows) < PARALLEL_LABELS or getattr(sys, "frozen", False):
        return _labels_here(probe, rows)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    size = max(200, len(rows) // (cores * 8))
    chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    try:
        with ProcessPoolExecutor(cores, mp_context=context) as pool:
            parts = pool.map(_label_chunk, [probe.name] * len(chunks), chunks)
            return [label for part in parts for label in part]
    except (OSError, RuntimeError) as exc:  # no processes here: label in this one
        log.warning("labelling in worker processes failed (%s); labelling here", exc)
        return _labels_here(probe, rows)


def _short(text: str, width: int = 160) -> str:
    """The text on one line, its middle cut when long."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def whole_number(value: Any) -> int | None:
    """A whole number ≥ 0 from a cell (at most 2^63 − 2: one more still fits SQLite's
    INTEGER); None when empty; raises ValueError otherwise (`guards.whole_number`)."""
    return _whole_number(value)


def _template_hint(probe: Probe, params: dict[str, Any], key: str, prompt: str) -> str:
    """Which template the prompts of mismatched rows were made with, when a preset fits."""
    for name in probe.templates:
        if name == params.get("template_name"):
            continue
        try:
            other = probe.resolve_params(template=name)
        except UserError:
            continue
        for item in probe.items(other):
            if item.key == key:
                if item.prompt.strip() == prompt.strip():
                    return f" (they match the template '{name}': pass --template {name})"
                break
    return " (made with another template? pass it with --template)"


@dataclass
class _RowProblems:
    """The lines of an import file that fit no item, by what is wrong with them (`_place`
    lists them all in one `UserError`)."""

    unmatched: list[int] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)
    mismatched: list[int] = field(default_factory=list)
    first_mismatch: tuple[str, str] | None = None
    ambiguous: dict[str, list[int]] = field(default_factory=dict)
    bad_attempt: list[int] = field(default_factory=list)
    bad_index: list[int] = field(default_factory=list)
    bad_prompt_index: list[int] = field(default_factory=list)
    no_prompt: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)


#: (line, row, candidate slots (item, prompt), attempt or None) of a row `_match_rows` placed
_Entry = tuple[int, dict[str, Any], list[tuple[str, int]], int | None]


def _match_rows(
    probe: Probe,
    rows: list[tuple[int, dict[str, Any]]],
    by_key: dict[str, Item],
    by_prompt: dict[str, list[tuple[str, int]]],
    rebuilt: dict[str, Item],
    deal_rows: bool,
    bad: _RowProblems,
) -> tuple[list[_Entry], dict[str, int], bool]:
    """Each row's candidate slots (item, prompt) — by its `item` key, else by its prompt —
    and its attempt, with the lines that fit none in `bad` and the items `Importing.item`
    rebuilds in `rebuilt`: the entries, each item's first `item_index`, and whether every
    row had one."""
    entries: list[_Entry] = []
    index_of: dict[str, int] = {}
    all_indexed = True
    for number, record in rows:
        prompt = str(record.get("prompt") or "")
        key = str(record.get("item") or "").strip()
        try:
            chosen_prompt = whole_number(record.get("prompt_index"))
        except (TypeError, ValueError, OverflowError):
            bad.bad_prompt_index.append(number)
            continue
        if key:
            item = by_key.get(key) or rebuilt.get(key)
            if item is None:
                custom = probe.capabilities.importing.item(record)
                if custom is not None and custom.key == key:
                    item = rebuilt[key] = custom
            if item is None:
                bad.unknown.append(number)
                if key not in bad.unknown_keys:
                    bad.unknown_keys.append(key)
                continue
            texts = _prompt_texts(item)
            if chosen_prompt is not None and chosen_prompt >= len(texts):
                bad.bad_prompt_index.append(number)
                continue
            options = [chosen_prompt] if chosen_prompt is not None else list(range(len(texts)))
            if prompt.strip():
                options = [p for p in options if texts[p].strip() == prompt.strip()]
                if not options:
                    bad.mismatched.append(number)
                    bad.first_mismatch = bad.first_mismatch or (key, prompt)
                    continue
            elif len(options) > 1:
                bad.no_prompt.append(number)
                continue
            slots = [(key, p) for p in options]
        else:
            slots = list(by_prompt.get(prompt.strip(), []))
            if chosen_prompt is not None:
                slots = [slot for slot in slots if slot[1] == chosen_prompt]
            if not slots:
                # e.g. a story prompt outside the 100
                custom = probe.capabilities.importing.item(record)
                if custom is not None:
                    rebuilt.setdefault(custom.key, custom)
                    slots = [(custom.key, 0)]
            if not slots:
                bad.unmatched.append(number)
                continue
            if len(slots) > 1 and not deal_rows:
                bad.ambiguous.setdefault(prompt.strip(), []).append(number)
                continue
        try:
            attempt = whole_number(record.get("attempt"))
        except (TypeError, ValueError):
            bad.bad_attempt.append(number)
            continue
        try:
            position = whole_number(record.get("item_index"))
        except (TypeError, ValueError):
            bad.bad_index.append(number)
            continue
        if position is None or len(slots) > 1:
            all_indexed = False
        else:
            first = slots[0][0]
            index_of[first] = min(position, index_of.get(first, position))
        entries.append((number, record, slots, attempt))

    return entries, index_of, all_indexed


def _assign_attempts(
    entries: list[_Entry], bad: _RowProblems
) -> dict[tuple[tuple[str, int], int], tuple[int, dict[str, Any]]]:
    """(slot, attempt) → (line, row): rows with an attempt first (in file order; a row of
    several slots is dealt to them in turn), then the others on each slot's free attempts;
    a repeated (slot, attempt) goes to `bad.duplicates`."""
    placed_slots: dict[tuple[tuple[str, int], int], tuple[int, dict[str, Any]]] = {}
    dealt: dict[tuple[tuple[str, int], int | None], int] = defaultdict(int)
    for number, record, slots, attempt in entries:
        if attempt is None:
            continue
        k = dealt[(slots[0], attempt)]
        dealt[(slots[0], attempt)] += 1
        if k >= len(slots) or (slots[k], attempt) in placed_slots:
            bad.duplicates.append(number)
            continue
        placed_slots[(slots[k], attempt)] = (number, record)
    next_free: dict[tuple[str, int], int] = defaultdict(int)
    for number, record, slots, attempt in entries:
        if attempt is not None:
            continue
        k = dealt[(slots[0], None)]
        dealt[(slots[0], None)] += 1
        slot = slots[k % len(slots)]
        while (slot, next_free[slot]) in placed_slots:
            next_free[slot] += 1
        placed_slots[(slot, next_free[slot])] = (number, record)

    return placed_slots


def _row_problems(
    probe: Probe,
    params: dict[str, Any],
    rows: list[tuple[int, dict[str, Any]]],
    bad: _RowProblems,
) -> list[str]:
    """One sentence per kind of line that does not fit, naming the lines."""
    problems = []
    if bad.unknown:
        problems.append(
            f"{line_list(bad.unknown)} name an item that is not one of {probe.name}'s items "
            f"(e.g. '{_short(bad.unknown_keys[0], 40)}'; rename or remove the `item` column to "
            "match rows by their prompt)"
        )
    if bad.mismatched:
        key, prompt = bad.first_mismatch or ("", "")
        problems.append(
            f"{line_list(bad.mismatched)} have a prompt that is not their item's prompt with the "
            f"template '{params.get('template_name')}'" + _template_hint(probe, params, key, prompt)
        )
    if bad.unmatched:
        problems.append(
            f"{line_list(bad.unmatched)} match no {probe.name} prompt made with the template "
            f"'{params['template_name']}'{probe.capabilities.importing.hint()}"
        )
    if bad.ambiguous:
        example = next(iter(bad.ambiguous))
        lines = sorted(n for ns in bad.ambiguous.values() for n in ns)
        n = len(bad.ambiguous)
        problems.append(
            f"{n} prompt{'s are' if n > 1 else ' is'} shared by several items "
            f"(e.g. '{_short(example)}', {line_list(lines)}); {DEAL_HINT}"
        )
    if bad.bad_attempt:
        problems.append(
            f"{line_list(bad.bad_attempt)} have an attempt that is not a whole number from 0 to "
            f"{INT64_MAX - 1:,}"
        )
    if bad.bad_prompt_index:
        problems.append(
            f"{line_list(bad.bad_prompt_index)} have a prompt_index that is not one of their "
            "item's prompts (0 for the first)"
        )
    if bad.no_prompt:
        problems.append(
            f"{line_list(bad.no_prompt)} name an item of several prompts but neither the prompt "
            "nor a prompt_index: add one of the two columns"
        )
    if bad.bad_index:
        problems.append(
            f"{line_list(bad.bad_index)} have an item_index that is not a whole number from 0 to "
            f"{INT64_MAX - 1:,}"
        )
    if bad.duplicates:
        several = len({str(r.get("run_id") or "") for _, r in rows}) > 1
        problems.append(
            f"{line_list(bad.duplicates)} repeat an (item, attempt) of an earlier line"
            + ("; the file holds several runs (run_id): import one at a time" if several else "")
        )
    return problems


def _place(
    probe: Probe,
    params: dict[str, Any],
    rows: list[tuple[int, dict[str, Any]]],
    path: str | Path,
    *,
    deal_rows: bool = False,
) -> tuple[list[Item], dict[tuple[str, int], tuple[int, dict]], int | None]:
    """Match rows to items; raise `UserError` listing every row that does not fit.

    A row with an `item` key goes to that item (one of the probe's items for `params`, or
    one the probe's `Importing.item` rebuilds from the row, e.g. a custom story prompt); its prompt,
    when given, must be the item's. A row without one goes to the item whose prompt it
    has; a prompt several items share is refused unless `deal_rows`, when such rows are
    dealt to those items in turn (the reference harness sampled each of them separately). The row's
    `attempt` is kept; rows without one take the item's next free attempt in file order.

    Items of several prompts (`Item.prompts`): a row goes to the prompt whose text it has
    (or the one its `prompt_index` names; a row of such an item needs one of the two).
    Attempts are then numbered as a run numbers them — every repetition of the first
    prompt, then of the second, … (attempt a answers prompt a // attempts-per-prompt) —
    with the file's `attempt` values giving the order of a prompt's repetitions, and the
    attempts per prompt are the most any prompt received.

    Returns the items that received rows — in `item_index` order when every row has one
    (as attempts.csv does: the original run's order), else in the probe's order, with
    rebuilt items after them by key — (item, attempt) → (line, row), and the attempts
    per prompt when some item has several prompts (else None)."""
    catalogue = list(probe.items(params))
    by_key = {i.key: i for i in catalogue}
    by_prompt: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for item in catalogue:
        for p, text in enumerate(_prompt_texts(item)):
            by_prompt[text.strip()].append((item.key, p))  # duplicated items share a prompt
    rebuilt: dict[str, Item] = {}
    bad = _RowProblems()
    entries, index_of, all_indexed = _match_rows(
        probe, rows, by_key, by_prompt, rebuilt, deal_rows, bad
    )
    placed_slots = _assign_attempts(entries, bad)
    refuse(path, _row_problems(probe, params, rows, bad))
    used = {key for (key, _), _ in placed_slots}
    canonical = {i.key: n for n, i in enumerate(catalogue)}
    items = [by_key.get(key) or rebuilt[key] for key in used]
    if all_indexed and used <= index_of.keys():
        items.sort(key=lambda i: (index_of[i.key], canonical.get(i.key, len(canonical)), i.key))
    else:
        items.sort(key=lambda i: (canonical.get(i.key, len(canonical)), i.key))
    if not any(i.prompts for i in items):
        return items, {(key, a): row for ((key, _), a), row in placed_slots.items()}, None
    # several prompts: a prompt's rows in the order of their attempt values, numbered as a
    # run numbers them
    by_slot: dict[tuple[str, int], list[int]] = defaultdict(list)
    for slot, a in placed_slots:
        by_slot[slot].append(a)
    per_prompt = max(len(values) for values in by_slot.values())
    placed = {}
    for slot, values in by_slot.items():
        for r, a in enumerate(sorted(values)):
            placed[(slot[0], slot[1] * per_prompt + r)] = placed_slots[(slot, a)]
    return items, placed, per_prompt


def _prompt_texts(item: Item) -> list[str]:
    return [p.text for p in item.prompts] or [item.prompt]
