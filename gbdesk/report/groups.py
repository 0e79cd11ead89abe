"""The group tables (`gbdesk.analysis.group_rates`) as report blocks and as `groups.csv` rows:
the same table in the PDF's run section, the Results pane's Groups tab and the CSV export."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.analysis.group_rates import SMALL_SHARE, GroupRow, GroupTable
from gbdesk.support.blocks import Block, Heading, Paragraph, Table

TITLE = "Groups: rates and impact ratios"

#: what the tables are and how their intervals are made, said once per run
METHOD = (
    "Per group: the items and readable answers about it, the answers that could not be read, "
    "the rate of favourable answers (as the probe's own metrics compute it) with its 95 % "
    "interval, and the ratio of that rate to the highest group's — the impact ratio of NYC "
    "Local Law 144's bias-audit summaries (1 = parity; the EEOC's four-fifths rule of thumb "
    "flags a ratio under 0.8). Answers are clustered in items, so each interval is Wilson's "
    "at the answers' effective count (the answers divided by the design effect measured over "
    "items); the ratio's combines the two rates' intervals (MOVER-R), conservative for groups "
    "asked about in the same items; for a choice between two groups in the same answers, "
    f"from one's share of the two. Groups under {100 * SMALL_SHARE:g} % of a table's answers are "
    "left out of the ratios, their counts shown. The highest group is chosen from the data "
    "and the intervals are not adjusted for a table's several ratios."
)

COLUMNS = ["Group", "Items", "Answers", "Not read", "Rate (95 % CI)", "Ratio to highest (95 % CI)"]


def _rate(row: GroupRow) -> str:
    lo, hi = row.rate_ci
    return f"{100 * row.rate:.1f} % ({100 * lo:.1f}–{100 * hi:.1f})"


def _number(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}"


def _ratio(row: GroupRow) -> str:
    if row.highest:
        return "1 (highest)"
    if math.isnan(row.ratio):
        return "—"
    if row.ratio_ci is None or any(math.isnan(v) for v in row.ratio_ci):
        return f"{row.ratio:.2f}"
    lo, hi = row.ratio_ci
    return f"{row.ratio:.2f} ({_number(lo)}–{_number(hi)})"


def table_caption(table: GroupTable) -> str:
    """One line under a table: what a favourable answer is, the highest group, and the
    answers that could not be read."""
    how = "mean over items of each item's share" if table.per_item else "share of the answers"
    parts = [f"Rate: {how} {table.favoured}"]
    top = table.highest
    if top is not None:
        parts.append(f"highest: {top.title} ({100 * top.rate:.1f} %)")
    if table.unreadable:
        parts.append(f"{table.unreadable:,} answers could not be read and are in no rate")
    if table.note:
        parts.append(table.note)
    return "; ".join(parts) + "."


def left_out_text(table: GroupTable) -> str:
    """ "Left out of the ratios: X (3 items, 4 readable answers, 0 not read): why; …" or ""."""
    if not table.left_out:
        return ""
    parts = [
        f"{g.title} ({g.items:,} items, {g.answers:,} readable answers, {g.unreadable:,} not "
        f"read): {g.reason}"
        for g in table.left_out
    ]
    return "Left out of the ratios: " + "; ".join(parts) + "."


def group_blocks(tables: list[GroupTable], heading: bool = True) -> list[Block]:
    """A run's group tables as report blocks: a heading and the method once, then each
    table with its caption and the groups left out."""
    if not tables:
        return []
    out: list[Block] = [Heading(TITLE), Paragraph(METHOD, "muted")] if heading else []
    for table in tables:
        rows: list[list[Any]] = [
            [r.title, f"{r.items:,}", f"{r.answers:,}", f"{r.unreadable:,}", _rate(r), _ratio(r)]
            for r in table.rows
        ]
        rows += [
            [g.title, f"{g.items:,}", f"{g.answers:,}", f"{g.unreadable:,}", "left out", "—"]
            for g in table.left_out
        ]
        out.append(Table(list(COLUMNS), rows, title=table.title, caption=table_caption(table)))
        if table.left_out:
            out.append(Paragraph(left_out_text(table), "muted"))
    return out


#: groups.csv, one row per group of every table of every run
CSV_COLUMNS = [
    "run_id", "probe", "label_mode", "table", "dimensions", "group", "items", "answers",
    "not_read", "favoured", "rate", "rate_ci_low", "rate_ci_high", "effective_answers",
    "ratio_to_highest", "ratio_ci_low", "ratio_ci_high", "highest", "left_out", "reason",
]  # fmt: skip


def _kept_row(t: GroupTable, r: GroupRow) -> dict[str, Any]:
    lo, hi = r.ratio_ci if r.ratio_ci is not None else ("", "")
    return {
        "group": r.title, "items": r.items, "answers": r.answers, "not_read": r.unreadable,
        "favoured": r.favoured, "rate": r.rate, "rate_ci_low": r.rate_ci[0],
        "rate_ci_high": r.rate_ci[1], "effective_answers": round(r.effective, 3),
        "ratio_to_highest": r.ratio, "ratio_ci_low": lo, "ratio_ci_high": hi,
        "highest": int(r.highest), "left_out": 0, "reason": t.note,
    }  # fmt: skip


def csv_rows(tables: list[GroupTable]) -> list[dict[str, Any]]:
    """groups.csv's rows of these tables: every group kept in the ratios, then the groups
    left out with their counts and why (rate, ratio and intervals empty)."""
    out = []
    for t in tables:
        common = {
            "run_id": t.run_id, "probe": t.probe, "label_mode": t.label_mode,
            "table": t.title, "dimensions": "+".join(t.dimensions),
        }  # fmt: skip
        out += [{**common, **_kept_row(t, r)} for r in t.rows]
        for g in t.left_out:
            gone = {
                "group": g.title, "items": g.items, "answers": g.answers,
                "not_read": g.unreadable, "favoured": g.favoured, "highest": 0, "left_out": 1,
                "reason": g.reason,
            }  # fmt: skip
            out.append({**common, **{c: "" for c in CSV_COLUMNS}, **common, **gone})
    return out


def runs_group_blocks(store: Any, run_ids: list[int], label_mode: str = "reviewed") -> list[Block]:
    """The group tables of several runs as one column of blocks (the Results pane's Groups
    tab, computed off the UI thread): the method once, then each run's tables under its
    name; [] when no run's probe decides about people."""
    from gbdesk.analysis.group_rates import group_tables
    from gbdesk.contract import get_probe

    out: list[Block] = []
    for run_id in run_ids:
        tables = group_tables(store, run_id, label_mode)
        if tables:
            title = get_probe(tables[0].probe).card.title
            out += [Heading(f"Run {run_id}: {title}"), *group_blocks(tables, heading=False)]
    return [Paragraph(METHOD, "muted"), *out] if out else []
