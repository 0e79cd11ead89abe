"""Reading the files a user imports, and refusing them clearly (no Qt, no store).

The helpers every importer shares — the core's (`gbdesk.workflows.importer`, label and code
imports) and the studies' own — live here, at the studies' layer, so that both can use them:
rows of a CSV or JSONL file with their line numbers, strict JSON, the checks that refuse a file
naming every offending line, and the hints that say which of gbdesk's export files a command
reads back.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gbdesk.contract.probe import Probe
from gbdesk.support.csvfile import csv_records
from gbdesk.support.errors import UserError
from gbdesk.support.guards import ESCAPED_COLUMN, loads_json

MAX_LISTED = 12  # offending lines named in a refusal


def parse_json_line(line: str) -> Any:
    """One JSON value, strictly (`guards.loads_json`): no NaN/Infinity, finite numbers,
    ints of at most 4,300 digits, nested at most `guards.MAX_JSON_DEPTH` deep. Raises
    ValueError with a one-line reason."""
    try:
        return loads_json(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})" if "nested" in str(exc) else str(exc)) from None


def read_rows(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) pairs from a CSV or JSONL file.

    CSV: the whole file goes through the `csv` module, so a quoted field may hold any line
    break or separator (U+2028, U+0085, form feed …) and up to `limits.MAX_CSV_FIELD` characters;
    the line number is the physical line ("\\n", "\\r\\n" or "\\r") where the record starts;
    cells are text, a short row's missing cells are None, a long row or a repeated header
    column is refused. JSONL: one JSON object per line, lines end at "\\n" only (separators
    inside strings stay there); numbers must be finite with at most 4,300 digits.
    """
    p = Path(path)
    if not p.is_file():
        raise UserError(f"file not found: {p}")
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:  # "\r\n" in a field stays
            text = fh.read()
    except UnicodeDecodeError:
        raise UserError(f"{p} is not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"cannot read {p}: {exc.strerror or exc}") from None
    if not text.strip():
        raise UserError(f"{p} is empty")
    if p.suffix.lower() in (".jsonl", ".ndjson") or text.lstrip().startswith("{"):
        return _jsonl_rows(p, text)
    return _csv_rows(p, text)


def _jsonl_rows(p: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json_line(line.removesuffix("\r"))
        except ValueError as exc:
            raise UserError(f"{p}, line {number}: {exc}") from None
        if not isinstance(record, dict):
            raise UserError(f"{p}, line {number}: expected a JSON object")
        if _SURROGATE_ESCAPE.search(line) and not _encodable(record):
            raise UserError(
                f"{p}, line {number}: a string holds a lone surrogate escape (such as "
                "\\ud800), which is not text"
            )
        rows.append((number, record))
    return rows


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _encodable(value: Any) -> bool:
    """Can `value` (parsed JSON) be stored as UTF-8? Not if a string holds a surrogate that
    a JSON escape such as \\ud800 put there without its pair."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _csv_rows(p: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    header, records = csv_records(text, str(p))
    if header is None:
        raise UserError(f"{p} has no header row")
    rows: list[tuple[int, dict[str, Any]]] = []
    for line, cells in records:
        record: dict[str, Any] = dict.fromkeys(header)  # a short row's missing cells: None
        record.update(zip(header, cells, strict=False))
        rows.append((line, record))
    return rows


_KINDS = {
    bool: "true or false",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def require_text(
    path: str | Path, rows: list[tuple[int, dict[str, Any]]], columns: tuple[str, ...]
) -> None:
    """Refuse rows whose `columns` are not text: a JSON null, a missing CSV cell, a number
    (`"response": 5` — give `"5"` to import it as text), true/false, a list or an object.
    Every offending line is listed, per column and kind."""
    problems: dict[tuple[str, str], list[int]] = defaultdict(list)
    for number, record in rows:
        for column in columns:
            value = record.get(column)
            if value is None:
                problems[(column, "no")].append(number)
            elif not isinstance(value, str):
                problems[(column, _KINDS.get(type(value), type(value).__name__))].append(number)
    messages = []
    for (column, kind), numbers in problems.items():
        verb = "has" if len(numbers) == 1 else "have"
        if kind == "no":
            messages.append(f"{line_list(numbers)} {verb} no {column} (null or a missing cell)")
        else:
            messages.append(
                f"{line_list(numbers)} {verb} {kind} as {column}, not text (put it in quotes "
                "to import it as text)"
            )
    refuse(path, messages)


def require_columns(
    path: str | Path, rows: list[tuple[int, dict[str, Any]]], required: tuple[str, ...]
) -> None:
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    missing = [c for c in required if c not in rows[0][1]]
    if missing:
        have = ", ".join(rows[0][1].keys()) or "none"
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)} (it has: {have})")


def line_list(numbers: list[int]) -> str:
    """ "line 3" / "lines 3, 5, 9 and 20 more"."""
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    more = f" and {len(numbers) - MAX_LISTED} more" if len(numbers) > MAX_LISTED else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


def refuse(path: str | Path, problems: list[str]) -> None:
    """Raise the one-line error of a file that cannot be imported, if there are problems."""
    if problems:
        raise UserError(f"nothing imported from {path}: " + "; ".join(problems))


def model_of(record: dict[str, Any], model_name: str | None) -> str:
    """The row's `model` column, else the --model-name, else "imported"."""
    return str(record.get("model") or "").strip() or model_name or "imported"


# -- gbdesk's own export files ------------------------------------------------------------------
def is_gbdesk_export(path: str | Path) -> bool:
    """Whether the file is a CSV table of gbdesk's export (its header ends with the
    `guards.ESCAPED_COLUMN` mark); reads only the header."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as fh:
            head = fh.read(1 << 16)
    except (OSError, UnicodeDecodeError):
        return False
    try:
        header = next(csv.reader(io.StringIO(head)), [])
    except csv.Error:
        return False
    return ESCAPED_COLUMN in header


def export_hint(probe: Probe, name: str, command: str) -> str:
    """Which of gbdesk's export files `gbdesk <command>` reads for the probe's runs, and
    where the file `name` goes instead — for a refusal's message."""
    files = probe.capabilities.exporting.files
    readers = [f for f, commands in files.items() if command in commands]
    if readers:
        use = f"for {probe.name} runs it reads {' or '.join(readers)} of gbdesk's export"
    else:
        hint = probe.capabilities.importing.hint()
        use = f"for {probe.name} runs it reads no file of gbdesk's export{hint}"
    goes = probe.capabilities.exporting.files.get(name)
    if goes:
        use += f"; {name} goes to " + " or ".join(f"`gbdesk {c}`" for c in goes)
    elif goes is not None:
        use += f"; no command reads {name} back"
    return use


def check_export_file(probe: Probe, path: str | Path, command: str) -> None:
    """Refuse, before reading it, a file of gbdesk's export that `command` does not read
    for this probe (e.g. a story probe's characters.csv given to `gbdesk import`), with a
    line naming the file it does read."""
    name = Path(path).name
    commands = probe.capabilities.exporting.files.get(name)
    if commands is None or command in commands or not is_gbdesk_export(path):
        return
    raise UserError(f"{name} is not for `gbdesk {command}`: {export_hint(probe, name, command)}")


@contextlib.contextmanager
def export_hints(probe: Probe, path: str | Path, command: str) -> Iterator[None]:
    """A refusal of a renamed file of gbdesk's export says which file to use."""
    try:
        yield
    except UserError as exc:
        if Path(path).name in probe.capabilities.exporting.files or not is_gbdesk_export(path):
            raise
        raise UserError(
            f"{exc} ({Path(path).name} is a file of gbdesk's export: "
            f"{export_hint(probe, '', command)})"
        ) from exc
