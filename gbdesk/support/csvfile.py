"""Reading CSV text the same way everywhere (no Qt, light imports).

The whole text goes through the `csv` module (never `str.splitlines`, which would also
break at U+2028, U+0085, form feeds and other separators inside quoted fields), with
fields up to `limits.MAX_CSV_FIELD` characters, and every record carries the physical line
("\\n", "\\r\\n" or "\\r") it starts on, for messages. A gbdesk export is read back as
it was stored: the cells its `gbdesk_escaped` column names are unescaped and that column is
dropped (`gbdesk.support.guards.unescape_exported`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import ESCAPED_COLUMN, escaped_cells, safe_cell, unescape_exported
from gbdesk.support.limits import allow_big_csv_fields


def csv_records(
    text: str, where: str, *, strict: bool = True, unescape: bool = True
) -> tuple[list[str] | None, list[tuple[int, list[str]]]]:
    """(header, [(start line, cells), …]) of CSV `text`; blank lines are skipped; with
    `unescape`, a gbdesk export's escaped cells are restored (`unescape_exported`).

    Raises `UserError` ("<where>, line N: …") for malformed CSV (at the line where the
    broken record starts), a header that repeats a column, or a row with more cells than
    the header. Rows with fewer cells are returned as they are (the caller decides)."""
    allow_big_csv_fields()
    reader = csv.reader(io.StringIO(text, newline=""), strict=strict)
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    start = 1  # the physical line the next record starts on
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            if not cells:
                continue  # a blank line
            if header is None:
                header = cells
                repeated = sorted({c for c in cells if cells.count(c) > 1})
                if repeated:
                    names = ", ".join(short_repr(c) for c in repeated)
                    raise UserError(f"{where}, line {line}: the header repeats {names}")
                continue
            if len(cells) > len(header):
                raise UserError(
                    f"{where}, line {line}: more cells ({len(cells)}) than header columns "
                    f"({len(header)})"
                )
            rows.append((line, cells))
    except csv.Error as exc:
        raise UserError(f"{where}, line {start}: malformed CSV ({exc})") from None
    if unescape and header is not None:
        header, rows, _ = unescape_exported(header, rows)
    return header, rows


def write_table(path: str | Path, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """A CSV table as gbdesk exports it: text escaped against spreadsheets and terminals,
    each row ending with its `gbdesk_escaped` mark, which `csv_records` undoes. Written
    whole or not at all (`gbdesk.support.atomic`)."""
    from gbdesk.support.atomic import written

    with written(path) as fh:
        write_rows(fh, columns, rows)


def write_rows(fh: Any, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """`write_table`'s header and rows to an open text file."""
    writer = csv.writer(fh)
    writer.writerow([*(safe_cell(c) for c in columns), ESCAPED_COLUMN])
    for row in rows:
        writer.writerow(escaped_cells(columns, row))
