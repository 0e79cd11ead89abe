"""Checks at the edges, shared by the CLI, the importers, the exports and the report (no Qt,
light imports).

What comes from a person, a file or a model is checked here before it reaches SQLite, an
allocation, a parser that recurses, a format string or a rendered page:

* **Whole numbers** (`whole_number`, `in_int64`): SQLite's INTEGER is signed 64-bit; a
  larger Python int raises OverflowError at the insert, so every number a user or a file
  gives is range-checked first (`INT64_MIN` … `INT64_MAX`, or a tighter bound).
* **Nesting** (`nesting_depth`, `loads_json`): `json.loads` and `ast.literal_eval` recurse
  once per level; a value nested deeper than `MAX_JSON_DEPTH` is refused by an iterative
  scan before any of them runs.
* **Templates** (`check_template`): fields, conversions and format specs parsed with
  `string.Formatter().parse`, widths bounded, then formatted once with sample values under a
  time and size limit — before anything is written.
* **Text shown to people** (`visible_controls`, `html_text`, `one_line`): control characters
  and bidirectional overrides/isolates/marks are shown as ``<U+202E>`` (a right-to-left
  override in a model name would otherwise reverse the report's figures after it).
* **CSV cells** (`escape_text`, `unescape_cell`, `escaped_cells`, `unescape_exported`): the
  export's reversible neutralisation of formulas and control characters, and its per-row
  mark of what it escaped (`ESCAPED_COLUMN`), which the import undoes exactly.
"""

from __future__ import annotations

import html
import json
import math
import re
import string
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gbdesk.support.errors import UserError

# -- whole numbers --------------------------------------------------------------------------------
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: digits of the longest decimal in the int64 range (a longer text is refused unparsed)
INT64_DIGITS = 19


def in_int64(value: int) -> bool:
    """Whether SQLite can store `value` as an INTEGER."""
    return INT64_MIN <= value <= INT64_MAX


def whole_number(value: Any, *, minimum: int = 0, maximum: int = INT64_MAX - 1) -> int | None:
    """A whole number from a cell or argument: an int, a float without fraction (JSON's
    ``3.0``, ``1e3``) or ASCII digits with an optional sign; None when empty. Raises
    ValueError when it is not one, or outside [`minimum`, `maximum`] (by default 0 to
    2^63 − 2, so that one more still fits SQLite's INTEGER)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError("true or false is not a whole number")
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            raise ValueError(f"{value!r} is not a whole number")
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        digits = text.removeprefix("-").removeprefix("+")
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError("not a whole number")
        if len(digits.lstrip("0")) > INT64_DIGITS:
            raise ValueError(f"a number of {len(digits):,} digits is out of range")
        number = int(text)
    if not minimum <= number <= maximum:
        raise ValueError(f"{number} is outside {minimum:,} … {maximum:,}")
    return number


# -- nesting --------------------------------------------------------------------------------------
#: Deepest nesting of lists/objects (or brackets) parsed from a file, a model or a person;
#: nothing gbdesk reads nests beyond a few levels, and Python's parsers recurse per level.
MAX_JSON_DEPTH = 100

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_PY_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_BRACKETS = re.compile(r"[\[\]{}()]")


def too_deep(text: str, limit: int = MAX_JSON_DEPTH, python: bool = False) -> bool:
    """Whether `text` nests deeper than `limit` (quick when it has few brackets)."""
    if text.count("[") + text.count("{") + text.count("(") <= limit:
        return False  # cannot nest deeper than it has brackets: no scan needed
    return nesting_depth(text, python) > limit


def nesting_depth(text: str, python: bool = False) -> int:
    """The deepest bracket nesting of `text` (JSON, or a Python literal with `python`),
    ignoring brackets inside strings; iterative, linear in the text's length."""
    stripped = (_PY_STRING if python else _JSON_STRING).sub("", text)
    depth = deepest = 0
    for match in _BRACKETS.finditer(stripped):
        if match.group() in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


class BadJson(ValueError):
    """JSON gbdesk refuses: nested too deeply, NaN/Infinity, a number out of range."""


#: Digits Python turns into an int (its `int_max_str_digits` guard); longer ones are refused.
MAX_INT_DIGITS = 4300


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadJson(
            f"a number has {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS:,}; "
            "put it in quotes to import it as text)"
        )
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadJson(f"the number {text[:20]}{'…' if len(text) > 20 else ''} is out of range")
    return value


def _json_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON value")


def loads_json(text: str | bytes, max_depth: int = MAX_JSON_DEPTH, *, strict: bool = True) -> Any:
    """`json.loads` without deep recursion: nesting deeper than `max_depth` raises ValueError
    (`BadJson`) before the parser runs. `strict` (files and people): NaN/Infinity,
    non-finite numbers and ints of more than `MAX_INT_DIGITS` digits raise too; without it
    (a model's replies, parsed as the reference code parses them) numbers are read as
    `json.loads` reads them. Malformed text raises `json.JSONDecodeError`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"JSON must be text, not {type(text).__name__}")
    if too_deep(text, max_depth):
        raise BadJson(f"nested too deeply (more than {max_depth} levels)")
    hooks: dict[str, Any] = (
        {"parse_int": _json_int, "parse_float": _json_float, "parse_constant": _json_constant}
        if strict
        else {}
    )
    try:
        return json.loads(text, **hooks)
    except RecursionError:  # unreachable below the depth limit; kept as a last resort
        raise BadJson(f"nested too deeply (more than {max_depth} levels)") from None


# -- templates ------------------------------------------------------------------------------------
#: widest width or precision in a template's format spec (``{job:>20}``)
MAX_FORMAT_WIDTH = 1000
#: longest template text, and longest prompt a template may make from the sample values
MAX_TEMPLATE_CHARS = 50_000
MAX_FILLED_CHARS = 200_000
#: seconds formatting a template once with the sample values may take
MAX_FORMAT_SECONDS = 1.0
_CONVERSIONS = (None, "r", "s", "a")
_FORMAT_SPEC = re.compile(
    r"(?:(?P<fill>.)?[<>=^])?[-+ ]?z?#?0?(?P<width>\d+)?[,_]?(?:\.(?P<precision>\d+))?"
    r"[bcdeEfFgGnosxX%]?",
    re.S,
)


def check_template(
    template: str, slots: Sequence[str], samples: Mapping[str, Any], name: str = "template"
) -> None:
    """Refuse (`UserError`, one line) a template that is not a format string of exactly
    `slots`, with standard conversions (!r, !s, !a) and format specs of bounded width, or
    that cannot be filled in with `samples` within `MAX_FORMAT_SECONDS` and
    `MAX_FILLED_CHARS`."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise UserError(
            f"the {name} has {len(template):,} characters (at most {MAX_TEMPLATE_CHARS:,})"
        )
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise UserError(f"the {name} is not a valid format string: {exc}") from None
    fields = [field for _, field, _, _ in parts if field is not None]
    missing = [s for s in slots if s not in fields]
    unknown = [f for f in fields if f not in slots]
    if missing or unknown:
        wanted = ", ".join("{" + s + "}" for s in slots) or "no {…} slot"
        raise UserError(f"the {name} must contain {wanted} and no other {{…}} slot")
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        shown = "{" + field + (f"!{conversion}" if conversion else "")
        shown += (f":{spec}" if spec else "") + "}"
        if conversion not in _CONVERSIONS:
            raise UserError(
                f"the {name}'s slot {_cut(shown)} has an unknown conversion "
                f"!{_cut(conversion or '')} (allowed: !r, !s, !a)"
            )
        match = _FORMAT_SPEC.fullmatch(spec or "")
        if match is None or "{" in (spec or "") or "}" in (spec or ""):
            raise UserError(f"the {name}'s slot {_cut(shown)} has an invalid format spec")
        for part in ("width", "precision"):
            digits = match.group(part)
            if digits and (len(digits) > 6 or int(digits) > MAX_FORMAT_WIDTH):
                raise UserError(
                    f"the {name}'s slot {_cut(shown)} asks for a {part} of {_cut(digits)} "
                    f"(at most {MAX_FORMAT_WIDTH:,})"
                )
    started = time.monotonic()
    try:
        filled = template.format(**{s: samples[s] for s in slots})
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        raise UserError(f"the {name} cannot be filled in: {_cut(str(exc), 120)}") from None
    if time.monotonic() - started > MAX_FORMAT_SECONDS:
        raise UserError(f"the {name} takes too long to fill in")
    if len(filled) > MAX_FILLED_CHARS:
        raise UserError(
            f"the {name} makes prompts of {len(filled):,} characters (at most {MAX_FILLED_CHARS:,})"
        )


def _cut(text: str, limit: int = 40) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- text shown to people -------------------------------------------------------------------------
#: Characters shown as <U+XXXX>: C0 controls but tab, line feed and carriage return; DEL and
#: the C1 controls; the Arabic letter mark; LRM/RLM; the line and paragraph separators; the
#: bidirectional embeddings, overrides and isolates; the deprecated format controls
#: (U+206A–U+206F, e.g. symmetric swapping); the interlinear annotation controls.
_CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2066-\u206f\ufff9-\ufffb]"
)


def visible_controls(text: str) -> str:
    """`text` with control and bidirectional formatting characters shown as ``<U+XXXX>``,
    so none can reorder or hide what follows it."""
    return _CONTROLS.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def html_text(text: Any) -> str:
    """Text for a Qt rich-text view or the PDF: controls made visible, then HTML-escaped."""
    return html.escape(visible_controls(str(text)), quote=True)


def one_line(text: Any, limit: int | None = None) -> str:
    """Text for one line of a terminal or a message: line breaks as spaces, controls made
    visible, cut to `limit` characters with "…" (the full text is in --json)."""
    text = str(text)
    if limit is not None and len(text) > limit * 4:
        text = text[: limit * 4]  # never scan megabytes for a short line
    text = visible_controls(re.sub(r"[\r\n\t]+", " ", text))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


# -- CSV cells ------------------------------------------------------------------------------------
#: The column each exported table ends with: per row, the names of the columns (separated
#: by ";") whose cells `escape_text` changed. The import undoes exactly those cells.
ESCAPED_COLUMN = "gbdesk_escaped"

# what `escape_text` writes as \xHH / \x{HHHH}: see gbdesk.report.csv_export
_ESCAPED = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\\(?=x)"
)
_ESCAPE = re.compile(r"\\x(?:([0-9a-f]{2})|\{([0-9a-f]{4})\})")
_FORMULA = re.compile(r"'*\s*[=+\-@]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\x{{{code:04x}}}"


def escape_text(text: str) -> str:
    """Text with its control characters written as ``\\xHH`` / ``\\x{HHHH}`` and a formula
    start neutralised by an apostrophe (the rules: `gbdesk.report.csv_export`)."""
    text = _ESCAPED.sub(_escape_char, text)
    return "'" + text if _FORMULA.match(text) else text


def unescape_cell(cell: str) -> str:
    """The stored text of an exported text cell: `escape_text` reversed."""
    if cell.startswith("'") and _FORMULA.match(cell, 1):
        cell = cell[1:]
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), cell)


def safe_cell(value: Any) -> Any:
    """A value as a CSV cell: numbers as numbers, text escaped (`escape_text`)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return escape_text(text)


def escaped_cells(columns: Sequence[str], row: Mapping[str, Any]) -> list[Any]:
    """A row's cells (`safe_cell`) followed by its `ESCAPED_COLUMN` cell: the columns
    whose text the escaping changed."""
    cells: list[Any] = []
    changed: list[str] = []
    for column in columns:
        value = row.get(column)
        cell = safe_cell(value)
        if isinstance(cell, str) and value is not None and not isinstance(value, bool | float):
            raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if cell != raw:
                changed.append(column)
        cells.append(cell)
    return [*cells, ";".join(changed)]


def unescape_exported(
    header: list[str], rows: Iterable[tuple[int, list[str]]]
) -> tuple[list[str], list[tuple[int, list[str]]], bool]:
    """(header, rows, marked) of CSV records: when the header has `ESCAPED_COLUMN` (a
    gbdesk export), the cells each row names there are unescaped and the column is
    dropped; otherwise everything is returned as it is (marked False)."""
    rows = list(rows)
    if ESCAPED_COLUMN not in header:
        return header, rows, False
    at = header.index(ESCAPED_COLUMN)
    where = {name: i for i, name in enumerate(header)}
    out = []
    for line, cells in rows:
        mark = cells[at] if at < len(cells) else ""
        cells = list(cells)
        for name in filter(None, (n.strip() for n in mark.split(";"))):
            i = where.get(name)
            if i is not None and i != at and i < len(cells):
                cells[i] = unescape_cell(cells[i])
        out.append((line, cells[:at] + cells[at + 1 :]))
    return header[:at] + header[at + 1 :], out, True
