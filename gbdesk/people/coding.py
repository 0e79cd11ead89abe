"""Coding stored texts with a codebook (no Qt): several codes per text, several raters,
adjudication, clusters of texts by their combination of codes.

A run carries its own codebook (table `codebook`: a stable key per code, its name and
definition, where it came from), seeded from the probe's default (`Coding.codebook`)
and changed by reviewers (add, rename, define). A coding is a label of facet `CODES`
(`gbdesk.people.raters`): data {"codes": [keys …], "memo": text}, by a rater (kind 'human') or an
adjudicator (kind 'consensus'). Which texts to code is the probe's rule
(`Coding.candidates`), drawn per category with a sample size and a seed.

The *final* codes of a text are the consensus where someone adjudicated, else the codes
every rater who coded it gave; a text whose raters disagree and which nobody adjudicated
has none yet. Texts are clustered by their final combination of codes within each
category, and a representative text of each cluster is drawn with a seed (the
story study's paper quoted one from the largest cluster of each category).
"""

from __future__ import annotations

import logging
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.contract.running import RunItems
from gbdesk.people import raters
from gbdesk.store import Store
from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)

CODES = raters.CODES
NOT_DRAWN = "(not drawn)"  # the category of a coded text outside the drawn selection
NO_CODE = "(no code)"  # a text coded with none of the codes
SEPARATORS = re.compile(r"\s*[;|]\s*")


# -- the codebook ---------------------------------------------------------------------------
def codebook(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The run's codebook, or the probe's default one when the run has none stored yet
    (nothing is written)."""
    book = store.codebook(run_id)
    if book:
        return book
    default = get_probe(store.get_run(run_id)["probe"]).capabilities.coding.codebook() or {}
    return [
        {
            "code": c["code"],
            "name": c["name"],
            "definition": c.get("definition", ""),
            "position": i,
            "origin": default.get("origin", ""),
            "changed_by": None,
            "changed_at": None,
        }
        for i, c in enumerate(default.get("codes", []))
    ]


def ensure_codebook(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The run's stored codebook, storing the probe's default first if it has none."""
    if not store.codebook(run_id):
        with store.transaction():
            for entry in codebook(store, run_id):
                store.put_code(
                    run_id,
                    entry["code"],
                    entry["name"],
                    entry["definition"],
                    origin=entry["origin"],
                    position=entry["position"],
                )
    return store.codebook(run_id)


def _slug(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_") or "code"


def resolve_code(book: list[dict[str, Any]], text: str) -> str | None:
    """The key of the code named `text` (its key or its name, case-insensitively)."""
    wanted = text.strip().casefold()
    for entry in book:
        if wanted in (entry["code"].casefold(), entry["name"].casefold()):
            return entry["code"]
    return None


def _code_or_fail(book: list[dict[str, Any]], text: str) -> str:
    key = resolve_code(book, text)
    if key is None:
        names = ", ".join(e["name"] for e in book) or "none yet"
        raise UserError(f"no code {text!r} in the codebook (codes: {names})")
    return key


def add_code(store: Store, run_id: int, name: str, definition: str = "", by: str = "") -> str:
    """Add a code (its key is made from its name); returns the key."""
    name = name.strip()
    if not name:
        raise UserError("a code needs a name")
    book = ensure_codebook(store, run_id)
    if resolve_code(book, name) is not None:
        raise UserError(f"the codebook already has a code {name!r}")
    taken = {e["code"] for e in book}
    key, n = _slug(name), 2
    while key in taken:
        key, n = f"{_slug(name)}_{n}", n + 1
    origin = f"added by {by}" if by else "added by a reviewer"
    store.put_code(run_id, key, name, definition.strip(), origin=origin, changed_by=by or None)
    return key


def rename_code(store: Store, run_id: int, code: str, new_name: str, by: str = "") -> str:
    """Rename a code (the codings that use it keep it: they store its key)."""
    new_name = new_name.strip()
    if not new_name:
        raise UserError("a code needs a name")
    book = ensure_codebook(store, run_id)
    key = _code_or_fail(book, code)
    other = resolve_code(book, new_name)
    if other is not None and other != key:
        raise UserError(f"the codebook already has a code {new_name!r}")
    entry = next(e for e in book if e["code"] == key)
    store.put_code(run_id, key, new_name, entry["definition"], changed_by=by or None)
    return key


def define_code(store: Store, run_id: int, code: str, definition: str, by: str = "") -> str:
    """Replace a code's definition."""
    book = ensure_codebook(store, run_id)
    key = _code_or_fail(book, code)
    entry = next(e for e in book if e["code"] == key)
    store.put_code(run_id, key, entry["name"], definition.strip(), changed_by=by or None)
    return key


# -- codings ----------------------------------------------------------------------------------
def coding_label(book: list[dict[str, Any]], codes: list[str], memo: str = "") -> dict[str, Any]:
    """The label of a coding: codes given by key or name (unknown ones refused), kept in
    the codebook's order."""
    keys = {_code_or_fail(book, c) for c in codes if c.strip()}
    ordered = [e["code"] for e in book if e["code"] in keys]
    return {
        "label": ", ".join(ordered) or NO_CODE,
        "data": {"codes": ordered, "memo": memo.strip()},
    }


def save_coding(
    store: Store,
    attempt_id: int,
    who: str,
    codes: list[str],
    memo: str = "",
    *,
    consensus: bool = False,
) -> int:
    """Store `who`'s coding of an attempt (or, with `consensus`, the adjudicated one)."""
    who = (who or "").strip()
    if not who:
        raise UserError("a coding needs the name of who coded")
    run_id = store.get_attempt(attempt_id)["run_id"]
    label = coding_label(ensure_codebook(store, run_id), codes, memo)
    add = store.add_consensus_label if consensus else store.add_human_label
    return add(attempt_id, who, label["label"], label["data"], None, CODES)


# -- which texts to code ---------------------------------------------------------------------
def _attempts_with_labels(store: Store, run_id: int, label_mode: str) -> list[dict[str, Any]]:
    from gbdesk.analysis.results import effective_labels, ensure_auto_labels

    ensure_auto_labels(store, run_id)
    labels = effective_labels(store, run_id, label_mode)
    items = RunItems.of(store, run_id)
    return [
        {**a, "metadata": items.metadata(a["item"], a["attempt"]), "label": labels.get(a["id"])}
        for a in store.attempts(run_id)
    ]


def draw_selection(
    store: Store,
    run_id: int,
    *,
    per_category: int = 3,
    seed: int = 0,
    threshold: float | None = None,
    categories: list[str] | None = None,
    label_mode: str = "reviewed",
) -> dict[str, Any]:
    """Draw up to `per_category` texts of each category of the probe's rule (seeded; a
    text drawn for one category is not drawn again for the next) and store them as the
    run's texts to code (replacing an earlier draw; codings stay). Returns what was drawn."""
    if per_category < 1:
        raise UserError("--per-category must be at least 1")
    if threshold is not None and not 0 <= threshold < 1:
        raise UserError("--threshold must be at least 0 and below 1 (e.g. 0.6 for 60 %)")
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    attempts = _attempts_with_labels(store, run_id, label_mode)
    candidates = probe.capabilities.coding.candidates(attempts, run["params"], threshold)
    if candidates is None:
        raise UserError(f"{probe.name} has no rule that selects texts to code")
    chosen = list(candidates.categories)
    if categories:
        known = {c.casefold(): c for c in candidates.categories}
        unknown = [c for c in categories if c.casefold() not in known]
        if unknown:
            raise UserError(
                f"unknown categor{'y' if len(unknown) == 1 else 'ies'} "
                f"{', '.join(map(repr, unknown))}; categories: {', '.join(candidates.categories)}"
            )
        chosen = [known[c.casefold()] for c in categories]
    reasons: dict[tuple[int, str], list[str]] = defaultdict(list)
    for attempt_id, category, why in candidates.matches:
        if why not in reasons[(attempt_id, category)]:
            reasons[(attempt_id, category)].append(why)
    rng = random.Random(seed)
    taken: set[int] = set()
    drawn: list[dict[str, Any]] = []
    available: dict[str, int] = {}
    for category in chosen:
        pool = sorted({a for a, c in reasons if c == category})
        available[category] = len(pool)
        pool = [a for a in pool if a not in taken]
        for attempt_id in rng.sample(pool, min(per_category, len(pool))):
            taken.add(attempt_id)
            drawn.append(
                {
                    "attempt_id": attempt_id,
                    "category": category,
                    "reason": "; ".join(reasons[(attempt_id, category)]),
                }
            )
    rule = {
        "rule": candidates.rule,
        "categories": chosen,
        "per_category": per_category,
        "seed": seed,
        "threshold": threshold,
        "label_mode": label_mode,
        "available": available,
    }
    with store.transaction():
        ensure_codebook(store, run_id)
        store.save_coding_selection(run_id, drawn, rule)
    keys = {a["id"]: (a["item"], a["attempt"]) for a in attempts}
    for row in drawn:
        row["item"], row["attempt"] = keys[row["attempt_id"]]
    return {"run_id": run_id, "drawn": drawn, **rule}


# -- texts to code and their codings ----------------------------------------------------------
@dataclass
class CodingItem:
    """A text to code with every rater's latest coding and the adjudicated one."""

    attempt_id: int
    run_id: int
    item: str
    attempt: int
    prompt: str
    response: str
    metadata: dict[str, Any]
    label_data: dict[str, Any]  # the probe's label (a reviewer's where present)
    category: str
    reason: str
    codings: dict[str, dict[str, Any]] = field(default_factory=dict)  # rater → codes, memo, at
    consensus: dict[str, Any] | None = None  # codes, memo, by, at

    @property
    def story(self) -> str:
        """The text's key in files: item#attempt."""
        return f"{self.item}#{self.attempt}"

    @property
    def disputed(self) -> bool:
        return len({tuple(c["codes"]) for c in self.codings.values()}) > 1

    @property
    def adjudicated(self) -> bool:
        return self.consensus is not None

    @property
    def final_codes(self) -> tuple[str, ...] | None:
        """The consensus, else the codes every rater gave; None when unresolved or uncoded."""
        if self.consensus is not None:
            return tuple(self.consensus["codes"])
        sets = {tuple(c["codes"]) for c in self.codings.values()}
        return sets.pop() if len(sets) == 1 else None


def _coding(row: dict[str, Any], book_order: dict[str, int]) -> dict[str, Any]:
    data = row.get("data") or {}
    codes = sorted(data.get("codes") or [], key=lambda c: (book_order.get(c, 1 << 30), c))
    return {"codes": codes, "memo": data.get("memo") or "", "at": row["created_at"]}


def coding_items(store: Store, run_id: int, label_mode: str = "reviewed") -> list[CodingItem]:
    """The drawn texts in order, then any other text someone coded."""
    from gbdesk.analysis.results import effective_labels

    by_rater = store.rater_labels(run_id, CODES)
    consensus = store.labels(run_id, "consensus", facet=CODES)
    wanted = [(r["attempt_id"], r["category"], r["reason"]) for r in store.coding_selection(run_id)]
    drawn = {a for a, _, _ in wanted}
    coded = {a for rows in by_rater.values() for a in rows} | set(consensus)
    wanted += [(a, NOT_DRAWN, "") for a in sorted(coded - drawn)]
    if not wanted:  # nothing drawn or coded: spare reading a large run's labels
        return []
    order = {e["code"]: i for i, e in enumerate(codebook(store, run_id))}
    attempts = {a["id"]: a for a in store.attempts(run_id)}
    metadata = RunItems.of(store, run_id)
    labels = effective_labels(store, run_id, label_mode)
    out = []
    for attempt_id, category, reason in wanted:
        a = attempts.get(attempt_id)
        if a is None:
            continue
        item = CodingItem(
            attempt_id=attempt_id,
            run_id=run_id,
            item=a["item"],
            attempt=a["attempt"],
            prompt=a["prompt"],
            response=a["response"],
            metadata=metadata.metadata(a["item"], a["attempt"]),
            label_data=(labels.get(attempt_id) or {}).get("data") or {},
            category=category,
            reason=reason,
        )
        for rater, rows in by_rater.items():
            if attempt_id in rows:
                item.codings[rater] = _coding(rows[attempt_id], order)
        if attempt_id in consensus:
            row = consensus[attempt_id]
            item.consensus = {
                **_coding(row, order),
                "by": row["source"].removeprefix("consensus:"),
            }
        out.append(item)
    return out


def progress(items: list[CodingItem]) -> dict[str, Any]:
    """How far the coding is: texts drawn, coded per rater, disputed, adjudicated."""
    drawn = [i for i in items if i.category != NOT_DRAWN]
    coders: dict[str, int] = {}
    for i in items:
        for rater in i.codings:
            coders.setdefault(rater, 0)
    for i in drawn:
        for rater in i.codings:
            coders[rater] += 1
    disputed = [i for i in items if i.disputed]
    return {
        "drawn": len(drawn),
        "coded_by": coders,
        "coded_outside_draw": len(items) - len(drawn),
        "disputed": len(disputed),
        "adjudicated": sum(1 for i in disputed if i.adjudicated),
        "unresolved": sum(1 for i in disputed if not i.adjudicated),
    }


def clusters(items: list[CodingItem], seed: int = 0) -> list[dict[str, Any]]:
    """Per category (drawn order, then NOT_DRAWN): the texts with final codes grouped by
    their combination of codes, largest first, each with a representative text drawn with
    `seed`; the largest cluster of a category is marked (the paper quoted from it)."""
    by_category: dict[str, dict[tuple[str, ...], list[int]]] = {}
    unresolved: dict[str, int] = defaultdict(int)
    for item in items:
        groups = by_category.setdefault(item.category, {})
        codes = item.final_codes
        if codes is None:
            if item.codings:
                unresolved[item.category] += 1
            continue
        groups.setdefault(codes, []).append(item.attempt_id)
    out = []
    for category, groups in by_category.items():
        ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), len(kv[0]), kv[0]))
        entries = []
        for rank, (codes, ids) in enumerate(ranked):
            ids = sorted(ids)
            rng = random.Random(f"{seed}|{category}|{'+'.join(codes)}")
            entries.append(
                {
                    "codes": list(codes),
                    "size": len(ids),
                    "attempt_ids": ids,
                    "representative": rng.choice(ids),
                    "largest": rank == 0,
                }
            )
        out.append(
            {
                "category": category,
                "n_final": sum(len(ids) for ids in groups.values()),
                "n_unresolved": unresolved[category],
                "clusters": entries,
            }
        )
    return out


def coding_summary(store: Store, run_id: int) -> dict[str, Any] | None:
    """Everything the results and the report show about a run's coding (JSON-friendly):
    codebook, selection rule, progress, agreement, clusters and representative texts.
    None when nothing was drawn or coded."""
    info = store.coding_selection_info(run_id)
    items = coding_items(store, run_id)
    if info is None and not items:
        return None
    book = codebook(store, run_id)
    names = {e["code"]: e["name"] for e in book}
    seed = int((info or {}).get("rule", {}).get("seed") or 0)
    grouped = clusters(items, seed)
    by_id = {i.attempt_id: i for i in items}
    representatives = []
    for group in grouped:
        for cluster in group["clusters"]:
            text = by_id[cluster["representative"]]
            cluster["names"] = [names.get(c, c) for c in cluster["codes"]] or [NO_CODE]
            cluster["story"] = text.story
            cluster["text"] = text.response
            if cluster["largest"]:
                representatives.append(
                    {
                        "category": group["category"],
                        "codes": cluster["names"],
                        "size": cluster["size"],
                        "attempt_id": text.attempt_id,
                        "story": text.story,
                        "prompt": text.prompt,
                        "response": text.response,
                        "memos": {r: c["memo"] for r, c in text.codings.items() if c["memo"]},
                    }
                )
    return {
        "codebook": [
            {k: e[k] for k in ("code", "name", "definition", "origin", "changed_by")} for e in book
        ],
        "selection": info,
        "progress": progress(items),
        "agreement": raters.codes_agreement(store, run_id),
        "clusters": grouped,
        "representatives": representatives,
        "seed": seed,
    }


# -- files ------------------------------------------------------------------------------------
CODE_COLUMNS = [
    "run_id",
    "attempt_id",
    "item",
    "attempt",
    "story",
    "category",
    "rater",
    "kind",
    "codes",
    "code_keys",
    "memo",
    "coded_at",
]
CODEBOOK_COLUMNS = ["run_id", "code", "name", "definition", "origin", "changed_by", "changed_at"]


def csv_tables(store: Store, run_id: int) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """codes.csv (every rater's latest coding and the adjudicated ones) and codebook.csv,
    when the run has codings or a drawn selection."""
    info = store.coding_selection_info(run_id)
    items = coding_items(store, run_id)
    if info is None and not items:
        return {}
    book = codebook(store, run_id)
    names = {e["code"]: e["name"] for e in book}
    rows = []
    for item in items:
        entries = [(r, "human", c) for r, c in item.codings.items()]
        if item.consensus is not None:
            entries.append((item.consensus["by"], "consensus", item.consensus))
        for who, kind, coding in entries:
            rows.append(
                {
                    "run_id": run_id,
                    "attempt_id": item.attempt_id,
                    "item": item.item,
                    "attempt": item.attempt,
                    "story": item.story,
                    "category": item.category,
                    "rater": who,
                    "kind": kind,
                    "codes": "; ".join(names.get(c, c) for c in coding["codes"]),
                    "code_keys": "; ".join(coding["codes"]),
                    "memo": coding["memo"],
                    "coded_at": coding["at"],
                }
            )
    book_rows = [{"run_id": run_id, **{k: e[k] for k in CODEBOOK_COLUMNS[1:]}} for e in book]
    return {"codes.csv": (CODE_COLUMNS, rows), "codebook.csv": (CODEBOOK_COLUMNS, book_rows)}


def plan_code_import(
    store: Store, run_id: int, path: str | Path, rater: str
) -> list[tuple[int, list[str], str]]:
    """(attempt id, code keys, memo) for every row of a file of codings; raises `UserError`
    listing every line that cannot be used (nothing is stored then).

    Rows name their text by `attempt_id`, by `item` + `attempt`, or by `story` (item#attempt,
    as codes.csv writes it); `codes` holds code names or keys separated by ";" or "|" (empty
    or "(no code)": coded, none of the codes); `memo` is optional. A `rater` column, when
    present, must name the rater of the import."""
    from gbdesk.contract import get_probe
    from gbdesk.contract.importing import check_export_file, line_list, read_rows, refuse

    rater = (rater or "").strip()
    if not rater:
        raise UserError("--rater must name who coded")
    check_export_file(get_probe(store.get_run(run_id)["probe"]), path, "code")
    rows = read_rows(path)
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    if "codes" not in rows[0][1]:
        raise UserError(f"{path} needs a codes column (code names separated by ';')")
    attempts = store.attempts(run_id)
    by_id = {a["id"]: a for a in attempts}
    by_key = {(a["item"], a["attempt"]): a for a in attempts}
    book = codebook(store, run_id)
    problems: dict[str, list[int]] = defaultdict(list)
    planned: dict[int, tuple[int, list[str], str]] = {}
    seen: dict[int, int] = {}
    for number, record in rows:
        attempt = _row_attempt(record, by_id, by_key)
        if attempt is None:
            problems[
                f"match no text of run {run_id} (give attempt_id, item + attempt, or story)"
            ].append(number)
            continue
        other = str(record.get("rater") or "").strip()
        if other and other != rater:
            problems[f"are another rater's (the rater column is not {rater!r})"].append(number)
            continue
        if attempt["id"] in seen:
            problems["code a text a second time"].append(number)
            continue
        seen[attempt["id"]] = number
        cells = [c for c in SEPARATORS.split(str(record.get("codes") or "").strip()) if c]
        cells = [c for c in cells if c.casefold() != NO_CODE.casefold()]
        unknown = [c for c in cells if resolve_code(book, c) is None]
        if unknown:
            known = ", ".join(e["name"] for e in book) or "none"
            problems[
                f"name codes missing from the codebook ({', '.join(map(repr, unknown[:5]))}; "
                f"codes: {known})"
            ].append(number)
            continue
        keys = [resolve_code(book, c) for c in cells]
        planned[attempt["id"]] = (
            attempt["id"],
            [k for k in keys if k],
            str(record.get("memo") or ""),
        )
    refuse(path, [f"{line_list(sorted(n))} {message}" for message, n in problems.items()])
    return list(planned.values())


def _row_attempt(record: dict[str, Any], by_id: dict, by_key: dict) -> dict[str, Any] | None:
    def whole(value: Any) -> int | None:
        text = str(value if value is not None else "").strip()
        return int(text) if text.isdigit() and len(text) < 19 else None

    if str(record.get("attempt_id") or "").strip():
        return by_id.get(whole(record["attempt_id"]))
    if str(record.get("item") or "").strip() and whole(record.get("attempt")) is not None:
        return by_key.get((str(record["item"]).strip(), whole(record["attempt"])))
    story = str(record.get("story") or "").strip()
    if "#" in story:
        item, _, number = story.rpartition("#")
        if whole(number) is not None:
            return by_key.get((item, whole(number)))
    return None


def import_codes(
    store: Store, run_id: int, path: str | Path, rater: str, *, consensus: bool = False
) -> dict[str, Any]:
    """Store a file of codings as `rater`'s (or, with `consensus`, as adjudicated by
    `rater`), all or nothing, in one transaction."""
    planned = plan_code_import(store, run_id, path, rater)
    with store.transaction():
        for attempt_id, keys, memo in planned:
            save_coding(store, attempt_id, rater, keys, memo, consensus=consensus)
    return {
        "run_id": run_id,
        "rater": rater.strip(),
        "kind": "consensus" if consensus else "human",
        "coded": len(planned),
    }


# -- report --------------------------------------------------------------------------------------
def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}"


def agreement_rows(agreement: dict[str, Any], names: dict[str, str]) -> list[list[str]]:
    """Rows of a code-agreement table: each code, all codes pooled, whole code sets —
    percent agreement and Cohen's κ initially, then percent agreement, Cohen's κ and
    Krippendorff's α now, and the units compared."""

    def row(title: str, first: dict[str, Any], now: dict[str, Any]) -> list[str]:
        return [
            title,
            _pct(first["percent_agreement"]["pairwise"]),
            _num(first["cohen_kappa"]["value"]),
            _pct(now["percent_agreement"]["pairwise"]),
            _num(now["cohen_kappa"]["value"]),
            _num(now["fleiss_kappa"]["value"]),
            _num(now["krippendorff_alpha"]["value"]),
            str(now["n_units_overlap"]),
        ]

    first_codes = {c["code"]: c for c in agreement["initial"]["multi_code"]["codes"]}
    rows = [
        row(names.get(c["code"], c["code"]), first_codes[c["code"]], c)
        for c in agreement["current"]["multi_code"]["codes"]
    ]
    rows.append(
        row(
            "All codes (pooled)",
            agreement["initial"]["multi_code"]["pooled"],
            agreement["current"]["multi_code"]["pooled"],
        )
    )
    rows.append(row("Whole code sets", agreement["initial"], agreement["current"]))
    return rows


AGREEMENT_COLUMNS = [
    "Code",
    "Initial %",
    "Initial κ",
    "Now %",
    "Cohen's κ",
    "Fleiss' κ",
    "Kripp. α",
    "Texts",
]


def coding_blocks(summary: dict[str, Any], max_chars: int = 1500) -> list[Any]:
    """Report blocks of a run's coding: the selection rule, the codebook, agreement per
    code and overall (initial and after adjudication), clusters per category and the
    representative text of each category's largest cluster (quoted)."""
    from gbdesk.support.blocks import Paragraph, Table

    out: list[Any] = []
    book = summary["codebook"]
    names = {e["code"]: e["name"] for e in book}
    info = (summary.get("selection") or {}).get("rule") or {}
    progress_ = summary["progress"]
    if info:
        available = ", ".join(f"{c}: {n}" for c, n in (info.get("available") or {}).items())
        out.append(
            Paragraph(
                f"Selection: {info.get('rule', '')} Drawn: up to {info.get('per_category')} "
                f"texts per category, seed {info.get('seed')}; {progress_['drawn']} texts drawn "
                f"(texts available per category — {available})."
            )
        )
    else:
        out.append(Paragraph("No selection was drawn: the texts were chosen by hand.", "muted"))
    out.append(
        Table(
            ["Code", "Definition", "Origin"],
            [[e["name"], e["definition"], e["origin"] or "—"] for e in book],
            title="Codebook",
            caption="Codes of this run (a text may have several).",
        )
    )
    coded = ", ".join(f"{r}: {n} of {progress_['drawn']}" for r, n in progress_["coded_by"].items())
    out.append(
        Paragraph(
            f"Coded by {coded or 'nobody yet'}"
            + (
                f" (and {progress_['coded_outside_draw']} texts outside the draw)"
                if progress_["coded_outside_draw"]
                else ""
            )
            + f". {progress_['disputed']} texts disputed, {progress_['adjudicated']} of them "
            f"adjudicated, {progress_['unresolved']} unresolved."
        )
    )
    out += _agreement_blocks(summary.get("agreement"), names)
    out += _cluster_blocks(summary, max_chars)
    return out


def _agreement_blocks(agreement: dict[str, Any] | None, names: dict[str, str]) -> list[Any]:
    """The agreement table of a run's coding and what adjudication settled."""
    from gbdesk.support.blocks import Paragraph, Table

    if not agreement:
        return []
    out: list[Any] = []
    out.append(
        Table(
            AGREEMENT_COLUMNS,
            agreement_rows(agreement, names),
            title="Agreement between raters",
            caption="Initial: each rater's first coding of a text; now: each rater's "
            "latest coding (% = percent agreement over rater pairs). Per code: present / "
            "absent; pooled: every (text, code) pair; whole code sets: equal only when "
            "identical. Cohen's κ (two raters, scikit-learn), Fleiss' κ (statsmodels), "
            "Krippendorff's α (nominal, krippendorff package). — where undefined.",
        )
    )
    adj = agreement["adjudication"]
    vs = "; ".join(
        f"{r}: {_pct(v['agreement'])} of {v['n_units']} texts (κ {_num(v['cohen_kappa'])})"
        for r, v in adj["raters_vs_final"].items()
    )
    out.append(
        Paragraph(
            f"After adjudication: {adj['n_adjudicated']} of {adj['n_disputed']} disputed "
            f"texts settled by a consensus, {adj['n_unresolved']} unresolved; "
            f"{adj['n_final']} texts have final codes. Each rater against the final "
            f"codes (whole sets) — {vs or '—'}."
        )
    )
    return out


def _cluster_blocks(summary: dict[str, Any], max_chars: int) -> list[Any]:
    """The clusters of final codes per category and each category's representative text."""
    from gbdesk.support.blocks import Paragraph, Table

    out: list[Any] = []
    rows = [
        [
            g["category"],
            ", ".join(c["names"]),
            str(c["size"]),
            c["story"] + (" (largest)" if c["largest"] else ""),
        ]
        for g in summary["clusters"]
        for c in g["clusters"]
    ]
    if rows:
        out.append(
            Table(
                ["Category", "Codes", "Texts", "Representative"],
                rows,
                title="Clusters by combination of codes",
                caption=f"Texts with final codes grouped per category; a representative "
                f"text of each cluster drawn with seed {summary['seed']}.",
            )
        )
    for rep in summary["representatives"]:
        text = " ".join(rep["response"].split())
        if len(text) > max_chars:
            text = text[: max_chars - 1] + "…"
        out.append(
            Paragraph(
                f"{rep['category']} — {', '.join(rep['codes'])} (largest cluster, "
                f"{rep['size']} text{'s' if rep['size'] != 1 else ''}; {rep['story']}): “{text}”"
            )
        )
    return out
