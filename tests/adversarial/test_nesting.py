"""Rule of gbdesk issue 27: no recursion on untrusted nesting. A value nested 10⁴ deep in
any JSON-bearing column, argument or file, or in a model's reply, is refused (one line) or
read as text — never a RecursionError; nesting up to `guards.MAX_JSON_DEPTH` still parses.
"""

from __future__ import annotations

import json

import pytest

from gbdesk.studies.intersectional.data import load_categories, load_groups
from gbdesk.support.guards import MAX_JSON_DEPTH, loads_json, nesting_depth
from tests.adversarial.worlds import (
    INV_ITEMS,
    LF_ITEM,
    World,
    build_world,
    csv_text,
    run_cli,
    run_on_copy,
)

DEPTH = 10_000
NESTED = {
    "list": "[" * DEPTH + "]" * DEPTH,
    "object": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "open": "[" * DEPTH,
    "strings": '["[' + '", ["[' * DEPTH + '"' + "]" * DEPTH,
    "tuple": "(" * DEPTH + "'a'," + ")" * DEPTH,
    "mixed": '[{"x": ' * (DEPTH // 2) + "null" + "}]" * (DEPTH // 2),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return build_world(tmp_path_factory.mktemp("nesting"))


def _lf_characters(column: str, value: str, world: World) -> list[list[str]]:
    row = {
        "run_id": str(world.runs["lf"]), "item": LF_ITEM.key, "attempt": "0",
        "role": LF_ITEM.metadata["roles"][0]["key"], "name": "Maria", "gender": "",
        "references": '["Maria"]', "reference_spans": "[[0, 5]]",
    }  # fmt: skip
    row[column] = value
    return [list(row), list(row.values())]


def _case(world: World, tmp, place: str, value: str) -> list[str]:
    """The command that reads `value` at `place` (a column, an argument, a file)."""
    path = tmp / "in.csv"
    if place == "jsonl-line":
        path = tmp / "in.jsonl"
        item = INV_ITEMS[0]
        path.write_text(
            json.dumps({"item": item.key, "prompt": item.prompt, "response": "x"})[:-1]
            + f', "extra": {value}}}\n'
        )
        return ["import", "--probe", "inventories", "--file", path]
    if place == "jsonl-response":
        path = tmp / "in.jsonl"
        path.write_text(f'{{"prompt": {json.dumps(INV_ITEMS[0].prompt)}, "response": {value}}}\n')
        return ["import", "--probe", "inventories", "--file", path]
    if place in ("references", "reference_spans"):  # finding 6
        path.write_text(csv_text(_lf_characters(place, value, world)))
        return ["import-labels", world.runs["lf"], "--file", path, "--rater", "ana"]
    if place == "profiles-people":
        path.write_text(
            csv_text(
                [["item", "prompt", "response", "people"],
                 ["p1-Ana", "Make a profile", "[]", value]]
            )
        )  # fmt: skip
        return ["import", "--probe", "globalbias_profiles", "--file", path]
    if place.startswith("profiles-cell"):
        from tests.adversarial.test_numbers import _profiles

        path.write_text(_profiles("hobbies", value))
        return ["import", "--probe", "globalbias_profiles", "--file", path]
    if place == "answers-answer":
        group, category = load_groups()[0], load_categories()[0]
        path.write_text(
            csv_text([["group", "role", "category", "answer"], [group["group"], "r", "1", value]])
        )
        assert category
        return ["import", "--probe", "intersectional_sdeg", "--file", path]
    if place.startswith("review-"):
        which = place.removeprefix("review-")
        return ["review", world.attempts[which], value, "--reviewer", "ana"]
    if place == "dataset-validations":
        path.write_text(
            csv_text(
                [["stereotype_id", "group", "stereotype", "explanation", "category", "validations"],
                 ["s1", "White;women", "a stereotype", "why", "Religiosity", value]]
            )
        )  # fmt: skip
        return ["dataset", "import", "--file", path]
    if place == "dataset-json":
        path = tmp / "dataset.json"
        path.write_text('{"stereotypes": ' + value + "}")
        return ["dataset", "import", "--file", path]
    if place == "questions-options":
        path.write_text(
            csv_text(
                [["question_id", "category_id", "category", "question", "options"],
                 ["q1", "1", "Religiosity", "How?", value]]
            )
        )  # fmt: skip
        return ["dataset", "questions", world.runs["dataset"], "--import", path]
    if place == "questions-json":
        path = tmp / "bank.json"
        path.write_text('{"questions": ' + value + "}")
        return ["dataset", "questions", world.runs["dataset"], "--import", path]
    if place == "run-questions":
        path = tmp / "bank.json"
        path.write_text(value)
        return ["run", "--probe", "intersectional_sdeg", "--set", f"questions={path}"]
    raise AssertionError(place)


PLACES = [
    "jsonl-line", "jsonl-response", "references", "reference_spans", "profiles-people",
    "profiles-cell", "answers-answer", "review-lf", "review-ix", "review-dataset",
    "dataset-validations", "dataset-json", "questions-options", "questions-json",
    "run-questions",
]  # fmt: skip


def test_places_cover_every_json_column():
    assert len(PLACES) * len(NESTED) >= 80


@pytest.mark.parametrize("shape", list(NESTED))
@pytest.mark.parametrize("place", PLACES)
def test_nested_10000_deep(world, tmp_path, place, shape):
    outcome = run_on_copy(world, tmp_path, _case(world, tmp_path, place, NESTED[shape]),
                          f"{place} {shape}")  # fmt: skip
    assert "RecursionError" not in outcome.err


def test_finding_6_references_nested_5000_deep(world, tmp_path):
    """An exported characters.csv whose references cell is nested 5,000 deep: one line."""
    db = world.copy(tmp_path)
    path = tmp_path / "characters.csv"
    path.write_text(csv_text(_lf_characters("references", "[" * 5000 + "]" * 5000, world)))
    outcome = run_cli(["import-labels", world.runs["lf"], "--file", path, "--rater", "ana",
                       "--db", db])  # fmt: skip
    assert outcome.code == 2 and "nested too deeply" in outcome.err, outcome.err
    outcome.check("references")


# -- the parsers of model replies --------------------------------------------------------------
def _parsers():
    from gbdesk.studies.globalbias.profiles import parse_profiles
    from gbdesk.studies.globalbias.profiles_stats import parse_list_cell
    from gbdesk.studies.intersectional.data import map_answer
    from gbdesk.studies.intersectional.elicit import (
        parse_category,
        parse_stereotypes,
        parse_verdict,
    )
    from gbdesk.studies.laissez_faire.extract.llm import parse_reply

    return {
        "profiles": lambda t: parse_profiles(t, ["Ana"]),
        "list_cell": parse_list_cell,
        "stereotypes": parse_stereotypes,
        "verdict": lambda t: parse_verdict(t, "Black;women;old"),
        "category": parse_category,
        "answer": lambda t: map_answer(t, ["Yes", "No"]),
        "llm_reply": parse_reply,
    }


@pytest.mark.parametrize("shape", list(NESTED))
@pytest.mark.parametrize("parser", list(_parsers()))
def test_model_reply_nested_10000_deep(parser, shape):
    _parsers()[parser](NESTED[shape])  # returns: "unparsed" or text, never raises


def test_depth_is_measured_without_recursion_and_the_limit_is_exact():
    assert nesting_depth("[" * DEPTH) == DEPTH
    assert nesting_depth('["[[[[", {"a": "]]]"}]') == 2  # brackets in strings do not count
    assert nesting_depth("((('(((',)))", python=True) == 3
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert nesting_depth(ok) == MAX_JSON_DEPTH
    assert loads_json(ok) is not None
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_json("[" + ok + "]")
