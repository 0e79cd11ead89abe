"""The argument types and shared arguments of the `gbdesk` command's parser.

Each type refuses what the store or the engine could not take (a 20-digit number, a
surrogate, an infinite temperature) with one line naming the argument, before any work.
"""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from gbdesk.support.errors import UserError
from gbdesk.support.guards import INT64_DIGITS, INT64_MAX, in_int64, one_line
from gbdesk.support.limits import LIMITS, SEED_RANGE


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see: {self.prog} --help)")


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="PATH",
        help="database file (default: gbdesk.sqlite in the per-user data folder, or "
        "$GBDESK_DB). Its folder must exist; only commands that write (run, import, audit, "
        "label, models --add …) create a new file there",
    )


def _presets() -> dict[str, tuple[str, str, str]]:
    from gbdesk.engine.endpoints import ENDPOINT_PRESETS

    return ENDPOINT_PRESETS


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON value on stdout")


def _shown(text: str) -> str:
    """An argument quoted for a message, cut to one short line."""
    return repr(text if len(text) <= 24 else text[:20] + "…")


def _whole(text: str) -> int:
    """A whole number SQLite can store (-2^63 … 2^63 − 1); int() of a 5,000-digit text
    would raise, a 20-digit one would overflow SQLite's INTEGER."""
    body = text.strip(" \t")
    digits = body.removeprefix("-").removeprefix("+")
    if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > INT64_DIGITS:
        raise argparse.ArgumentTypeError(f"not a whole number (at most 19 digits): {_shown(text)}")
    value = -int(digits) if body.startswith("-") else int(digits)
    if not in_int64(value):
        raise argparse.ArgumentTypeError(
            f"must be between -2^63 and 2^63 - 1 (SQLite's whole numbers): {_shown(text)}"
        )
    return value


def _positive_int(text: str, maximum: int = INT64_MAX) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {_shown(text)}")
    if value > maximum:
        raise argparse.ArgumentTypeError(f"must be at most {maximum:,}: {_shown(text)}")
    return value


def _bounded(name: str):
    """A positive whole number up to `LIMITS[name]`."""

    def parse(text: str) -> int:
        return _positive_int(text, LIMITS[name])

    parse.__name__ = name  # argparse names the type in its messages
    return parse


def _batch_size(text: str) -> int:
    """`--batch`: "auto" (0) or a positive whole number up to the limit."""
    if text.strip().lower() == "auto":
        return 0
    return _positive_int(text, LIMITS["batch_size"])


def _wording(text: str) -> int:
    """`--wording`: a wording id, 0 (the study's own) to 999."""
    value = _whole(text)
    if not 0 <= value <= 999:
        raise argparse.ArgumentTypeError(f"not a wording id (0, 1, 2, …): {_shown(text)}")
    return value


def _seed(text: str) -> int:
    value = _whole(text)
    if not SEED_RANGE[0] <= value <= SEED_RANGE[1]:
        raise argparse.ArgumentTypeError(f"must be between -2^63 and 2^63 - 1: {_shown(text)}")
    return value


def _draw_seed(text: str) -> int:
    """The seed of a resampling or a draw: 0 … 2^63 − 1 (numpy takes no negative seed)."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^63 - 1: {_shown(text)}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number: {_shown(text)}")
    return value


def _temperature(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0: {_shown(text)}")
    return value


def _top_p(text: str) -> float:
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]: {_shown(text)}")
    return value


def _text(text: str) -> str:
    """Text that can be stored: not bytes the terminal could not decode (Python passes
    them on as lone surrogates, which SQLite refuses)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("not UTF-8 text (check the terminal's encoding)") from None
    return text


def _run_id(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a run or attempt id: {_shown(text)}")
    return value


def _name(text: str) -> str:
    """Who labelled, coded or validated: not blank, on one line (it is stored with each
    label and shown in reports)."""
    name = _text(text).strip()
    if not name:
        raise argparse.ArgumentTypeError("must name someone (it is empty)")
    if name != one_line(name):
        raise argparse.ArgumentTypeError(
            f"must be one line without control characters: {_shown(name)}"
        )
    return name


def _label_mode(text: str) -> str:
    """auto, reviewed, ppi, consensus or rater:NAME."""
    if text in ("auto", "reviewed", "ppi", "consensus"):
        return text
    if text.startswith("rater:") and text[len("rater:") :].strip():
        return _text(text)
    raise argparse.ArgumentTypeError(
        f"must be auto, reviewed, ppi, consensus or rater:NAME: {_shown(text)}"
    )


def _share(text: str) -> float:
    value = _finite(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1: {_shown(text)}")
    return value
