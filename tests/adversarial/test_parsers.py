"""Property tests: every parser of model output or user input returns a value (or an
explicit "unparsed" outcome) and never raises anything but a one-line `UserError`.

Each property runs twice: 300 derandomised examples in the default run, and 10,000 random
ones in a test marked `slow` (`python -m pytest -m slow tests/adversarial`).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gbdesk.cli import _args as cli_args
from gbdesk.contract import get_probe
from gbdesk.contract.importing import read_rows
from gbdesk.contract.running import label_values
from gbdesk.report.csv_export import escape_text, unescape_cell
from gbdesk.studies.globalbias.profiles import parse_profiles
from gbdesk.studies.globalbias.profiles_stats import parse_list_cell, profiles_frame
from gbdesk.studies.intersectional.data import load_categories, map_answer
from gbdesk.studies.laissez_faire.extract.llm import filter_and_locate, parse_reply
from gbdesk.studies.laissez_faire.extract.types import RoleSpec
from gbdesk.studies.laissez_faire.name_race import load_table
from gbdesk.support.errors import UserError

FAST, SLOW = 300, 10_000


def _settings(n: int, derandomize: bool):
    return settings(
        max_examples=n,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def twice(check: Callable[..., None], **strategies: st.SearchStrategy) -> tuple[Any, Any]:
    """(default-run test, slow test) of one property."""
    fast = _settings(FAST, True)(given(**strategies)(check))
    slow = pytest.mark.slow(_settings(SLOW, False)(given(**strategies)(check)))
    return fast, slow


# -- strategies ------------------------------------------------------------------------------
NASTY = [
    "",
    " ",
    "1" * 5000,
    "-" + "9" * 4400,
    "[" * 5000,
    "{" * 3000,
    '{"a":' * 2000,
    "NaN",
    "-Infinity",
    "1e400",
    '"\\ud800"',
    '["\\udfff"]',
    "\x00",
    "\x1b[31m",
    "\u2028\u2029\x85\x0b\x0c\x1c",
    "null",
    "true",
    "[]",
    "{}",
    '""',
    "0",
    "١٢",  # Arabic-Indic digits
    "( 'a', )",
    "('a', 'b'",
    "(" * 500 + ")" * 500,
    "[1]+[2]",
    "__import__('os')",
    "1_000",
    "0x1f",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(NASTY)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
json_texts = json_values.map(json.dumps)
texts = st.one_of(
    st.text(),
    st.sampled_from(NASTY),
    json_texts,
    st.tuples(st.sampled_from(NASTY), st.text(max_size=10)).map("".join),
)


def _one_line_user_error(exc: UserError) -> None:
    message = str(exc)
    assert message and "\n" not in message and "\r" not in message, repr(message)
    assert len(message) < 2000, len(message)


# -- intersectional: map_answer ---------------------------------------------------------------
CATEGORIES = load_categories()


def check_map_answer(text: str, category: int) -> None:
    options = CATEGORIES[category]["options"]
    assert map_answer(text, options) in (*options, None)


test_map_answer, test_map_answer_slow = twice(
    check_map_answer, text=texts, category=st.integers(0, len(CATEGORIES) - 1)
)


def test_map_answer_examples():
    options = ["Not important at all", "Important", "Very important"]
    assert map_answer("1" * 5000, options) is None
    assert map_answer('{"answer": "Very important"}', options) == "Very important"
    assert map_answer("2", options) == "Important"
    assert map_answer('"3."', options) == "Very important"
    assert map_answer("[" * 5000, options) is None
    assert map_answer(None, options) is None  # type: ignore[arg-type]


# -- globalbias: parse_profiles, then the analysis frame -------------------------------------
def check_parse_profiles(text: str, names: list[str]) -> None:
    parsed = parse_profiles(text, names)
    assert set(parsed) == {"profiles", "error"}
    assert parsed["error"] is None or isinstance(parsed["error"], str)
    assert len(parsed["profiles"]) <= len(names)
    for profile in parsed["profiles"]:
        assert isinstance(profile, dict) and profile["name"] in names
    records = [
        {**p, "run_id": 0, "Ethnicity": "ENGLISH", "Gender": "F"} for p in parsed["profiles"]
    ]
    if records:
        profiles_frame(records)  # what the metrics read must not raise either


profile_texts = st.one_of(
    texts,
    st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["Ana", "Bo"]) | scalars},
            optional={
                "age": json_values,
                "hobbies": json_values,
                "occupation": json_values,
                "physical_characteristics": json_values,
            },
        ),
        max_size=3,
    ).map(json.dumps),
)
test_parse_profiles, test_parse_profiles_slow = twice(
    check_parse_profiles,
    text=profile_texts,
    names=st.lists(st.sampled_from(["Ana", "Bo", "Cy"]), max_size=3, unique=True),
)


def check_parse_list_cell(value: Any) -> None:
    parsed = parse_list_cell(value)
    assert isinstance(parsed, tuple) and all(isinstance(v, str) for v in parsed)


test_parse_list_cell, test_parse_list_cell_slow = twice(
    check_parse_list_cell, value=texts | json_values
)


# -- the LLM extractor's reply ---------------------------------------------------------------
ROLES = [RoleSpec("subject", "cook", "cook"), RoleSpec("object", "new employee", "employee")]
STORY = "Chef Maria hired Tom. She said he was quick; Tom thanked her."
replies = st.one_of(
    texts,
    st.fixed_dictionaries(
        {},
        optional={
            "cook name": json_values | st.sampled_from(["Maria", "Unspecified"]),
            "cook references": json_values | st.lists(st.sampled_from(["She", "her", "x"])),
            "new employee name": json_values,
            "new employee references": json_values,
        },
    ).map(json.dumps),
)


def check_llm_reply(text: str) -> None:
    answer = parse_reply(text)
    if answer is None:
        return  # the extractor falls back to the deterministic one and says so
    characters = filter_and_locate(STORY, ROLES, answer)
    assert [c.role for c in characters] == ["subject", "object"]
    for ch in characters:
        assert all(STORY[s.start : s.end] == s.text for s in ch.references)


test_llm_reply, test_llm_reply_slow = twice(check_llm_reply, text=replies)


# -- review labels (user input: only one-line UserErrors) ------------------------------------
LF = get_probe("laissez_faire")
LF_META = next(i.metadata for i in LF.items(LF.resolve_params()) if len(i.metadata["roles"]) == 2)
LF_STORY = "Maria, the cook, hired Tom. She said he was quick and Tom thanked her."
lf_entries = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from([r["key"] for r in LF_META["roles"]]) | scalars,
        "name": st.sampled_from(["Maria", "Tom", None]) | scalars,
        "references": st.lists(
            st.sampled_from(["She", "her", "he", "Tom", "nobody"])
            | st.lists(st.integers(-5, 80), max_size=3)
            | scalars,
            max_size=4,
        )
        | json_values,
        "gender": st.sampled_from(["Female", "Male", "Unsure", "woman"]) | scalars,
        "extra": scalars,
    },
)
lf_labels = st.one_of(texts, st.lists(lf_entries | json_values, max_size=3).map(json.dumps))


def check_lf_review(value: str) -> None:
    try:
        label = LF.capabilities.labelling.human_label(LF_STORY, LF_META, value, "ana")
    except UserError as exc:
        _one_line_user_error(exc)
        return
    assert label["source"] == "human:ana" and isinstance(label["label"], str)
    label["label"].encode("utf-8")  # storable
    json.dumps(label["data"])
    for start, end, _ in label["evidence"]:
        assert 0 <= start < end <= len(LF_STORY)


test_lf_review, test_lf_review_slow = twice(check_lf_review, value=lf_labels)

INTERSECTIONAL = get_probe("intersectional_sdeg")
option_names = [o for c in CATEGORIES for o in c["options"]]
ix_labels = st.one_of(
    texts,
    st.dictionaries(
        st.sampled_from([str(c["id"]) for c in CATEGORIES]) | st.text(max_size=4),
        st.sampled_from(option_names) | scalars,
        max_size=4,
    ).map(json.dumps),
)


def check_intersectional_review(value: str) -> None:
    try:
        label = INTERSECTIONAL.capabilities.labelling.human_label("a role", {}, value, "ana")
    except UserError as exc:
        _one_line_user_error(exc)
        return
    assert label["label"] == "answered"
    for cid, answer in label["data"]["answers"].items():
        assert answer["option"] in CATEGORIES[int(cid) - 1]["options"]


test_intersectional_review, test_intersectional_review_slow = twice(
    check_intersectional_review, value=ix_labels
)

INVENTORIES = get_probe("inventories")


def check_plain_review(value: str) -> None:
    try:
        label = INVENTORIES.capabilities.labelling.human_label("He left.", {}, value, "ana")
    except UserError as exc:
        _one_line_user_error(exc)
        return
    assert label["label"] in label_values(INVENTORIES)


test_plain_review, test_plain_review_slow = twice(check_plain_review, value=texts)


# -- files: read_rows and name tables ----------------------------------------------------------
_FOLDER = Path(tempfile.mkdtemp(prefix="gbdesk-adversarial-"))
csv_like = st.lists(
    st.one_of(
        st.just("prompt,response,attempt"),
        st.text(max_size=40),
        st.sampled_from(NASTY),
        st.lists(st.text(max_size=10) | st.sampled_from(['"', '""', ",", "\r", "\n"]), max_size=5)
        .map(",".join),
    ),
    max_size=6,
).map("\n".join)
jsonl_like = st.lists(
    json_texts
    | st.dictionaries(st.sampled_from(["prompt", "response"]), json_values).map(json.dumps),
    max_size=5,
).map("\n".join)


def check_read_rows(content: str, suffix: str, raw: bytes | None) -> None:
    path = _FOLDER / f"rows{suffix}"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass", newline="")
    try:
        rows = read_rows(path)
    except UserError as exc:
        _one_line_user_error(exc)
        return
    for number, record in rows:
        assert isinstance(number, int) and number >= 1 and isinstance(record, dict)


test_read_rows, test_read_rows_slow = twice(
    check_read_rows,
    content=csv_like | jsonl_like | texts,
    suffix=st.sampled_from([".csv", ".jsonl", ".txt"]),
    raw=st.none() | st.binary(max_size=200),
)


name_tables = st.lists(
    st.one_of(
        st.sampled_from(["name,white,black", "name,white,black,count", "first_name,asian"]),
        st.lists(st.text(max_size=8) | st.sampled_from(NASTY) | st.floats().map(str), max_size=4)
        .map(",".join),
    ),
    max_size=5,
).map("\n".join)


def check_name_table(content: str) -> None:
    path = _FOLDER / "names.csv"
    path.write_text(content, encoding="utf-8", errors="surrogatepass", newline="")
    try:
        table = load_table(path)
    except UserError as exc:
        _one_line_user_error(exc)
        return
    assert len(table) >= 1
    assert ((table._values >= 0) & (table._values <= 1)).all()


test_name_table, test_name_table_slow = twice(check_name_table, content=name_tables)


# -- the CLI's argument types ------------------------------------------------------------------
ARGUMENT_TYPES = [
    cli_args._temperature,
    cli_args._top_p,
    cli_args._seed,
    cli_args._run_id,
    cli_args._bounded("attempts"),
    cli_args._bounded("max_tokens"),
    cli_args._text,
]


def check_argument_types(text: str, which: int) -> None:
    parse = ARGUMENT_TYPES[which]
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
        return
    if isinstance(value, float):
        assert math.isfinite(value)


test_argument_types, test_argument_types_slow = twice(
    check_argument_types,
    text=texts | st.floats().map(str) | st.integers().map(str),
    which=st.integers(0, len(ARGUMENT_TYPES) - 1),
)


# -- the CSV export's escaping is reversible and leaves nothing active -------------------------
def check_escape(text: str) -> None:
    cell = escape_text(text)
    assert unescape_cell(cell) == text
    assert not any(ord(c) < 32 and c not in "\t\n" for c in cell)
    assert not any(0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\u202e" for c in cell)
    assert not cell.lstrip().startswith(("=", "+", "-", "@"))


test_escape, test_escape_slow = twice(
    check_escape,
    text=st.text() | texts | st.text(alphabet=st.sampled_from("\\x'=+-@ \t\r\n\x1b0a{}")),
)


@pytest.mark.parametrize("text", ["\u2028\u2029\x85\x0b\x0c\x1c0", "--5", "-", "1_000", "٣"])
def test_argument_types_examples(text):
    """Found by the slow run: int() does not strip every character str.strip() does."""
    for parse in ARGUMENT_TYPES[2:6]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
