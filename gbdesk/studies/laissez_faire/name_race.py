"""First-name → race likelihood tables (Laissez-Faire's fractional counting).

Shieh et al. (2024) estimate the race of a story character from its first name by
*fractional counting*: a name contributes ℓ_race(name) = P(race | first name) to every
group, taken from a name table by exact, case-insensitive match on the first name. The
share of a group among the named characters is the mean of ℓ over the matched names;
names absent from the table are *unmatched* and reported through the coverage
(matched / named), never guessed.

Two tables ship with gbdesk (`resources/name_race/`, see SOURCE.md there):

* ``rosenman2023`` — Rosenman, Olivella & Imai (2023), voter files of six U.S. states:
  white, black, hispanic, asian (includes NH/PI in most states), other (includes AI/AN);
* ``census2020`` — U.S. Census 2020 first names: white, black, api (Asian + NH/PI),
  aian, 2prace, hispanic, with each name's count.

Neither measures MENA or NH/PI on its own: those are reported as "not measured by the
bundled tables". A user table (CSV with a name column and one numeric column per race)
can be loaded with :func:`load_table`.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.limits import allow_big_csv_fields
from gbdesk.support.paths import resource

# Every category a table may measure, with its display name (ids as in
# resources/laissez_faire/baselines.json).
RACE_CATEGORIES: dict[str, str] = {
    "white": "White",
    "black": "Black",
    "hispanic": "Hispanic/Latine",
    "asian": "Asian",
    "api": "Asian & Pacific Islander",
    "aian": "American Indian / Alaska Native",
    "2prace": "Two or more races",
    "other": "Other",
    "MENA": "Middle Eastern / North African",
    "NHPI": "Native Hawaiian / Pacific Islander",
}

# Laissez-Faire categories no bundled table measures (reported, never guessed).
NOT_MEASURED: tuple[str, ...] = ("MENA", "NHPI")

# Rows of the source tables that are fallback buckets, not names.
FALLBACK_ROWS = frozenset({"ALL OTHER NAMES", "ALL OTHER FIRST NAMES"})

# User-table headers accepted for the name column (case-insensitive).
NAME_COLUMNS = ("name", "first_name", "firstname")

# User-table columns that are not races: the count is kept, the rest ignored (the columns of
# the raw Census and Tzioumis files).
COUNT_COLUMNS = ("count", "obs")
IGNORED_COLUMNS = ("rank", "prop100k", "cum_prop100k", "pctmale", "pctfemale")

# User-table headers for the canonical category ids (case-insensitive; any other header
# becomes a category of its own, lower-cased).
_ALIASES: dict[str, str] = {
    **{c.lower(): c for c in RACE_CATEGORIES},
    **{"pct" + c.lower(): c for c in RACE_CATEGORIES},
    "latine": "hispanic",
    "latino": "hispanic",
    "latinx": "hispanic",
    "native": "aian",
    "multiple": "2prace",
}

_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def normalize_name(first_name: str) -> str:
    """The lookup key of a first name: surrounding punctuation/whitespace removed, upper case."""
    return _EDGE.sub("", first_name).upper()


def display_name(category: str) -> str:
    """A category's display name (the id itself for a user table's unknown category)."""
    return RACE_CATEGORIES.get(category, category)


class NameRaceTable:
    """P(race | first name) for the names of one table."""

    def __init__(
        self,
        id: str,
        title: str,
        licence: str,
        categories: Sequence[str],
        names: Sequence[str],
        values: np.ndarray,
        counts: np.ndarray | None = None,
        citation: str = "",
        notes: Sequence[str] = (),
    ) -> None:
        self.id = id
        self.title = title
        self.licence = licence
        self.citation = citation
        self.notes = list(notes)
        self.categories: list[str] = list(categories)
        self._values = np.asarray(values, dtype=float).reshape(len(names), len(self.categories))
        self._counts = counts
        self._index: dict[str, int] = {name: i for i, name in enumerate(names)}

    def __repr__(self) -> str:
        return f"NameRaceTable({self.id!r}, {len(self)} names, {self.categories})"

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, first_name: object) -> bool:
        return isinstance(first_name, str) and normalize_name(first_name) in self._index

    @property
    def not_measured(self) -> list[str]:
        """The Laissez-Faire categories this table does not measure."""
        return [c for c in NOT_MEASURED if c not in self.categories]

    def likelihoods(self, first_name: str | None) -> dict[str, float] | None:
        """ℓ_race(first_name) for every category, or None when the name is not in the table.

        Exact match after stripping surrounding punctuation and whitespace, case-insensitive;
        no other fallback ("Mary-Jane" matches only a "MARY-JANE" row).
        """
        if not first_name:
            return None
        row = self._index.get(normalize_name(first_name))
        if row is None:
            return None
        return dict(zip(self.categories, self._values[row].tolist(), strict=True))

    def count(self, first_name: str | None) -> int | None:
        """How many people carry the name in the source (Census only), else None."""
        if self._counts is None or not first_name:
            return None
        row = self._index.get(normalize_name(first_name))
        return None if row is None else int(self._counts[row])


def race_shares(table: NameRaceTable, first_names: Iterable[str | None]) -> dict[str, Any]:
    """Fractional-counting shares of each race among the named characters.

    `first_names` has one entry per character; None (or a blank name) is an unnamed
    character and is left out. Each category's `share` is the sum of ℓ over the matched
    names (`numerator`) divided by the number of matched names (`denominator`); NaN when
    nothing matched. `coverage` = n_matched / n_named (NaN when nobody is named).
    """
    n_named = 0
    matched: list[int] = []
    for name in first_names:
        key = normalize_name(name) if name is not None else ""
        if not key:
            continue
        n_named += 1
        row = table._index.get(key)
        if row is not None:
            matched.append(row)
    n_matched = len(matched)
    sums = table._values[matched].sum(axis=0) if matched else np.zeros(len(table.categories))
    categories = {
        cat: {
            "display": display_name(cat),
            "numerator": float(sums[i]),
            "denominator": float(n_matched),
            "share": float(sums[i] / n_matched) if n_matched else math.nan,
        }
        for i, cat in enumerate(table.categories)
    }
    return {
        "table": table.id,
        "n_named": n_named,
        "n_matched": n_matched,
        "coverage": n_matched / n_named if n_named else math.nan,
        "categories": categories,
        "not_measured": table.not_measured,
    }


# --- bundled tables ---------------------------------------------------------------------


@cache
def _index() -> dict[str, Any]:
    path = resource("name_race", "tables.json")
    return json.loads(path.read_text(encoding="utf-8"))


def bundled_tables() -> list[str]:
    """Ids of the tables shipped with gbdesk."""
    return [t["id"] for t in _index()["tables"]]


def table_info(table_id: str) -> dict[str, Any]:
    """A bundled table's entry of tables.json (title, citation, licence, categories, notes)."""
    for entry in _index()["tables"]:
        if entry["id"] == table_id:
            return entry
    raise UserError(
        f"unknown name table {table_id!r} (bundled: {', '.join(bundled_tables())}; "
        "or give the path of a CSV file)"
    )


@cache
def _load_bundled(table_id: str) -> NameRaceTable:
    info = table_info(table_id)
    raw = gzip.decompress(resource("name_race", info["file"]).read_bytes()).decode("utf-8")
    lines = raw.splitlines()
    header = lines[0].split(",")
    categories = [c["id"] for c in info["categories"]]
    if header[1 : 1 + len(categories)] != categories:
        raise RuntimeError(f"{info['file']}: columns {header} do not match tables.json")
    names: list[str] = []
    rest: list[str] = []
    for line in lines[1:]:
        name, _, values = line.partition(",")
        names.append(name)
        rest.append(values)
    numbers = np.array(",".join(rest).split(","), dtype=float).reshape(len(names), -1)
    counts = numbers[:, len(categories)].astype(np.int64) if info.get("count_column") else None
    return NameRaceTable(
        id=info["id"],
        title=info["title"],
        licence=info["licence"],
        categories=categories,
        names=names,
        values=numbers[:, : len(categories)],
        counts=counts,
        citation=info["citation"],
        notes=info["notes"],
    )


def load_table(id_or_path: str | Path) -> NameRaceTable:
    """A bundled table by id ("rosenman2023", "census2020") or a user CSV by path.

    Bundled tables are parsed once per process and shared (treat them as read-only).
    """
    if isinstance(id_or_path, str) and id_or_path in bundled_tables():
        return _load_bundled(id_or_path)
    path = Path(id_or_path)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        raise UserError(f"not a name table or a readable path: {short_repr(str(path))}") from None
    if isinstance(id_or_path, str) and len(path.parts) == 1 and not path.suffix and not exists:
        table_info(id_or_path)  # raises the "unknown name table" error
    return _load_user_csv(path)


# --- user tables ------------------------------------------------------------------------


def _load_user_csv(path: Path) -> NameRaceTable:
    """A user's CSV: a name column and one numeric column per race (fractions or percents)."""
    rows = _csv_rows(path)
    header = [h.strip() for h in rows[0][1]]
    name_col, count_col, race_cols, categories = _columns(path, header)

    names: list[str] = []
    values: list[list[float]] = []
    counts: list[float] = []
    seen: dict[str, int] = {}
    for line_no, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise UserError(f"{path}, line {line_no}: {len(row)} fields, header has {len(header)}")
        name = normalize_name(row[name_col])
        if name in FALLBACK_ROWS:
            continue
        if not name:
            raise UserError(f"{path}, line {line_no}: empty name")
        if name in seen:
            raise UserError(
                f"{path}, line {line_no}: name {short_repr(row[name_col].strip())} repeats line "
                f"{seen[name]}"
            )
        seen[name] = line_no
        numbers = [_number(row[i], path, line_no, header[i]) for i in race_cols]
        if count_col is not None:
            count = _number(row[count_col], path, line_no, header[count_col])
            if count < 0 or count >= 2**63 or count != int(count):
                raise UserError(
                    f"{path}, line {line_no}: column {header[count_col]!r} is not a whole "
                    "number of people"
                )
            counts.append(count)
        names.append(name)
        values.append(numbers)
    if not names:
        raise UserError(f"{path}: the name table has no names")

    array = np.array(values, dtype=float)
    if (array < 0).any():
        raise UserError(f"{path}, line {_line_of(seen, names, array < 0)}: negative value")
    if (array > 1.0).any():  # percents
        if (array > 100.0 + 1e-6).any():
            line = _line_of(seen, names, array > 100.0 + 1e-6)
            raise UserError(f"{path}, line {line}: value above 100 in a table of percents")
        array = array / 100.0
    return NameRaceTable(
        id=str(path),
        title=path.name,
        licence="user-supplied",
        categories=categories,
        names=names,
        values=array,
        counts=np.array(counts, dtype=np.int64) if count_col is not None else None,
    )


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """A name table's rows, each with the physical line where it starts; `UserError` for a
    missing, unreadable, malformed or empty file."""
    if not path.is_file():
        raise UserError(f"name table not found: {path}")
    allow_big_csv_fields()
    rows: list[tuple[int, list[str]]] = []  # (physical line where the row starts, cells)
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            start = 1
            for row in reader:
                rows.append((start, row))
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the name table ({exc})") from None
    except csv.Error as exc:
        raise UserError(f"{path}, line {start}: malformed CSV ({exc})") from None
    if not rows:
        raise UserError(f"{path}: the name table is empty")
    return rows


def _columns(path: Path, header: list[str]) -> tuple[int, int | None, list[int], list[str]]:
    """(the name column, the count column or None, the race columns, their categories) of
    a name table's header; `UserError` when it has no name or race column, or two columns
    for one race."""
    lower = [h.lower() for h in header]
    name_col = next((lower.index(h) for h in NAME_COLUMNS if h in lower), None)
    if name_col is None:
        raise UserError(
            f"{path}: no name column (expected a header 'name', 'first_name' or 'firstname')"
        )
    count_col = next((i for i, h in enumerate(lower) if h in COUNT_COLUMNS), None)
    race_cols = [
        i
        for i, h in enumerate(lower)
        if i not in (name_col, count_col)
        and h  # a column without a header (trailing comma) is not a race
        and h not in IGNORED_COLUMNS
        and h not in NAME_COLUMNS
    ]
    if not race_cols:
        raise UserError(f"{path}: no race columns beside the name column")
    categories = [_ALIASES.get(lower[i], lower[i]) for i in race_cols]
    duplicates = sorted({c for c in categories if categories.count(c) > 1})
    if duplicates:
        raise UserError(f"{path}: more than one column for {', '.join(duplicates)}")
    return name_col, count_col, race_cols, categories


def _number(cell: str, path: Path, line_no: int, column: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise UserError(
            f"{path}, line {line_no}: column {short_repr(column)} is not a number "
            f"({short_repr(cell.strip())})"
        ) from None
    if not math.isfinite(value):
        raise UserError(
            f"{path}, line {line_no}: column {short_repr(column)} is not a finite number"
        )
    return value


def _line_of(seen: dict[str, int], names: list[str], mask: np.ndarray) -> int:
    """The file line of the first row flagged in `mask`."""
    return seen[names[int(np.argwhere(mask)[0][0])]]
