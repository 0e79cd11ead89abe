"""Rule of gbdesk issue 27: every integer from a user or a file is range-checked before it
reaches SQLite (signed 64-bit INTEGER) or an allocation.

Generated cases: every numeric argument of every command (found by walking the argument
parser, so a new one is covered or this test says it needs a base command), every numeric
`--set` option of every probe, and every numeric column of every import layout, each with
2⁶³ − 1, 2⁶³, 10²⁰ and −1 (and 1e20 in JSONL). Each answer is exit 0, or exit 2 with one
line and the database unchanged — never "unexpected error".
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from gbdesk.cli import build_parser
from gbdesk.contract import get_probe, probe_names
from gbdesk.studies.intersectional.data import load_categories, load_groups
from tests.adversarial.worlds import (
    EXTREMES,
    INV_ITEMS,
    World,
    build_world,
    csv_text,
    db_state,
    fake_engine,  # noqa: F401 (a fixture)
    run_cli,
    run_on_copy,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return build_world(tmp_path_factory.mktemp("numbers"))


# -- the numeric arguments -------------------------------------------------------------------
def _numeric(action: argparse.Action) -> bool:
    if action.dest in ("budget", "dataset"):  # numbers in text: "2h", a dataset id
        return True
    for sample in ("7", "0.5"):
        try:
            if isinstance(action.type("7" if sample == "7" else sample), int | float):
                return True
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
    return False


def numeric_arguments() -> list[tuple[tuple[str, ...], str]]:
    """(command path, option or positional name) of every numeric argument."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))
            elif (action.type is not None or action.dest == "budget") and _numeric(action):
                found.append(
                    (path, action.option_strings[0] if action.option_strings else action.dest)
                )

    walk(build_parser(), ())
    return found


#: A quick invocation of each command; "{name}" is where a positional goes, "{run}" etc.
#: the world's ids. The argument under test replaces its own value or is appended.
BASE: dict[tuple[str, ...], list[str]] = {
    ("items",): ["items", "--probe", "inventories", "--limit", "2"],
    ("run",): ["run", "--probe", "inventories", "--limit", "1", "--max-tokens", "8"],
    ("resume",): ["resume", "{run_id}"],
    ("jobs",): ["jobs"],
    ("metrics",): ["metrics", "{run_id}", "--json"],
    ("wordings",): ["wordings", "{run_ids}", "--json"],
    ("import",): ["import", "--probe", "inventories", "--file", "{labels}", "--json"],
    ("compare",): ["compare", "{run_a}", "{run_b}", "--resamples", "20"],
    ("audit",): ["audit", "--model", "/nonexistent/model.gguf", "--plan-only"],
    ("export",): ["export", "{run_ids}", "--csv", "{out}"],
    ("import-labels",): ["import-labels", "{run_id}", "--file", "{labels}", "--rater", "ana"],
    ("label",): ["label", "{run_id}", "--labeler-model", "/nonexistent/model.gguf"],
    ("sample",): ["sample", "{run_id}", "--size", "2"],
    ("code",): ["code", "{run_id}", "--select"],
    ("agreement",): ["agreement", "{run_id}"],
    ("review",): ["review", "{attempt_id}", "male", "--reviewer", "ana"],
    ("selftest",): ["selftest", "--determinism", "--model", "/nonexistent/model.gguf"],
    ("dataset", "build"): [
        "dataset",
        "build",
        "--groups",
        "White;women",
        "--model",
        "/nonexistent/model.gguf",
    ],
    ("dataset", "validate"): [
        "dataset",
        "validate",
        "{dataset}",
        "--file",
        "{decisions}",
        "--validator",
        "ana",
    ],
    ("dataset", "agreement"): ["dataset", "agreement", "{dataset}"],
    ("dataset", "export"): ["dataset", "export", "{dataset}", "--file", "{out}/d.csv"],
    ("dataset", "questions"): ["dataset", "questions", "{dataset}"],
    ("dataset", "show"): ["dataset", "show", "{dataset}"],
}
#: what a positional not under test is (a valid id of the world)
POSITIONAL = {
    "run_id": "inv",
    "run_a": "inv",
    "run_b": "inv",
    "run_ids": "inv",
    "attempt_id": "inv",
    "dataset": "dataset",
}
ARGUMENTS = numeric_arguments()


def test_every_numeric_argument_has_a_base_command():
    assert len(ARGUMENTS) >= 40
    missing = sorted({path for path, _ in ARGUMENTS} - BASE.keys())
    assert not missing, f"add a quick invocation to BASE for: {missing}"


def _argv(world: World, tmp: Path, path: tuple[str, ...], name: str, value: str) -> list[str]:
    labels = tmp / "labels.csv"
    labels.write_text(csv_text([["item", "attempt", "label"], [INV_ITEMS[0].key, "0", "male"]]))
    decisions = tmp / "decisions.csv"
    decisions.write_text(csv_text([["stereotype_id", "common", "specific"], ["s0001", "yes", "a"]]))
    places = {"out": str(tmp / "out"), "labels": str(labels), "decisions": str(decisions)}
    argv = []
    for token in BASE[path]:
        key = token[1:-1] if token.startswith("{") and token.endswith("}") else None
        if key == name:
            argv.append(value)
        elif key in POSITIONAL:
            run = POSITIONAL[key]
            argv.append(str(world.attempts[run] if key == "attempt_id" else world.runs[run]))
        elif key in places:
            argv.append(places[key])
        else:
            argv.append(token)
    if name.startswith("-"):
        if name in argv:
            argv[argv.index(name) + 1] = value
        else:
            argv += [f"{name}={value}"]  # "=": a value of -1 is not taken for an option
    return argv


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize(
    ("path", "name"), ARGUMENTS, ids=[" ".join(p) + f" {n}" for p, n in ARGUMENTS]
)
def test_numeric_argument(world, tmp_path, fake_engine, path, name, value):  # noqa: F811
    args = _argv(world, tmp_path, path, name, value)
    run_on_copy(world, tmp_path, args, f"{' '.join(path)} {name}={value}")


# -- probe options (--set KEY=VALUE) ------------------------------------------------------------
OPTIONS = [(name, option.key) for name in probe_names() for option in get_probe(name).options]


@pytest.mark.parametrize("value", [*EXTREMES, "1e20"])
@pytest.mark.parametrize(("probe", "key"), OPTIONS, ids=[f"{p}-{k}" for p, k in OPTIONS])
def test_probe_option(world, tmp_path, fake_engine, probe, key, value):  # noqa: F811
    """A numeric (or any) probe option at the extremes: refused in one line, or a run."""
    args = ["run", "--probe", probe, "--set", f"{key}={value}", "--limit", "1"]
    run_on_copy(world, tmp_path, args, f"{probe} --set {key}={value}")


# -- numeric columns of the import layouts -------------------------------------------------
def _inv_rows(column: str, value: str) -> list[list[str]]:
    item = INV_ITEMS[0]
    return [["item", "prompt", "response", column], [item.key, item.prompt, "She left.", value]]


def _answers(column: str, value: str) -> list[list[str]]:
    group, category = load_groups()[0], load_categories()[0]
    row = {
        "group": group["group"],
        "role": "A role.",
        "category": "1",
        "answer": category["options"][0],
        "role_index": "0",
        "item_index": "0",
    }
    row[column] = value
    return [list(row), list(row.values())]


def _apx(column: str, value: str) -> list[list[str]]:
    from gbdesk.studies.globalbias.data import load_descriptors

    known = load_descriptors()[0]["descriptor"]
    rows = [["group", "descriptor", "template", "apx"]]
    for g in ("g1", "g2"):
        row = {"group": g, "descriptor": known, "template": "1", "apx": "2"}
        row[column] = value
        rows.append(list(row.values()))
    return rows


def _profiles(column: str, value: str) -> str:
    header = (
        ",name,age,personality_traits,negative_traits,hobbies,occupation,special_move,"
        "socioeconomic_status,sexual_orientation,religion,run_id,physical_characteristics.height,"
        "physical_characteristics.hair_colour,physical_characteristics.eye_colour,"
        "physical_characteristics.skin_colour,physical_characteristics.build,Ethnicity,Gender,"
        "Group"
    )
    cells = {
        "": "0",
        "name": "Emanuela",
        "age": "32",
        "personality_traits": "('kind', 'brave')",
        "negative_traits": "('vain',)",
        "hobbies": "('chess',)",
        "occupation": "Nurse",
        "special_move": "Heal",
        "socioeconomic_status": "Middle Class",
        "sexual_orientation": "Heterosexual",
        "religion": "Agnostic",
        "run_id": "0",
        "physical_characteristics.height": "5.8",
        "physical_characteristics.hair_colour": "brown",
        "physical_characteristics.eye_colour": "hazel",
        "physical_characteristics.skin_colour": "olive",
        "physical_characteristics.build": "athletic",
        "Ethnicity": "ITALIAN",
        "Gender": "F",
        "Group": "('ITALIAN', 'F')",
    }
    cells[column] = value
    return header + "\n" + csv_text([list(cells.values())])


def _labels(column: str, value: str, world: World) -> list[list[str]]:
    row = {
        "attempt_id": str(world.attempts["inv"]),
        "item": INV_ITEMS[0].key,
        "attempt": "0",
        "label": "male",
    }
    row[column] = value
    if column == "attempt":
        del row["attempt_id"]
    return [list(row), list(row.values())]


#: (name, command builder, file suffix, content builder) of every numeric column
COLUMNS = [
    ("import-attempt", "inventories", "attempt"),
    ("import-item_index", "inventories", "item_index"),
    ("answers-role_index", "intersectional_sdeg", "role_index"),
    ("answers-item_index", "intersectional_sdeg", "item_index"),
    ("answers-category", "intersectional_sdeg", "category"),
    ("apx-template", "globalbias_apx", "template"),
    ("apx-apx", "globalbias_apx", "apx"),
    ("profiles-run_id", "globalbias_profiles", "run_id"),
    ("profiles-age", "globalbias_profiles", "age"),
    ("profiles-index", "globalbias_profiles", ""),
    ("labels-attempt_id", "import-labels", "attempt_id"),
    ("labels-attempt", "import-labels", "attempt"),
    ("labels-run_id", "import-labels", "run_id"),
    ("codes-attempt_id", "code", "attempt_id"),
    ("codes-attempt", "code", "attempt"),
    ("decisions-category", "validate", "category"),
    ("questions-category_id", "questions", "category_id"),
]


def _column_case(world: World, tmp: Path, kind: str, column: str, value: str) -> list[str]:
    path = tmp / "in.csv"
    if kind == "inventories":
        path.write_text(csv_text(_inv_rows(column, value)))
    elif kind == "intersectional_sdeg":
        path.write_text(csv_text(_answers(column, value)))
    elif kind == "globalbias_apx":
        path.write_text(csv_text(_apx(column, value)))
    elif kind == "globalbias_profiles":
        path.write_text(_profiles(column, value))
    elif kind == "import-labels":
        path.write_text(csv_text(_labels(column, value, world)))
        return ["import-labels", str(world.runs["inv"]), "--file", str(path), "--rater", "ana"]
    elif kind == "code":
        rows = _labels(column, value, world)
        rows[0][-1], rows[1][-1] = "codes", "a code"
        path.write_text(csv_text(rows))
        return ["code", str(world.runs["lf"]), "--file", str(path), "--rater", "ana"]
    elif kind == "validate":
        path.write_text(
            csv_text(
                [["stereotype_id", "common", "specific", column], ["s0001", "yes", "a", value]]
            )
        )
        return [
            "dataset",
            "validate",
            str(world.runs["dataset"]),
            "--file",
            str(path),
            "--validator",
            "ana",
        ]
    elif kind == "questions":
        path.write_text(
            csv_text(
                [
                    ["question_id", "category_id", "category", "question", "expected_answers"],
                    ["q1", value, "Religiosity", "How?", "1 - a; 2 - b"],
                ]
            )
        )
        return ["dataset", "questions", str(world.runs["dataset"]), "--import", str(path)]
    return ["import", "--probe", kind, "--file", str(path)]


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize(("name", "kind", "column"), COLUMNS, ids=[c[0] for c in COLUMNS])
def test_numeric_column(world, tmp_path, name, kind, column, value):
    run_on_copy(world, tmp_path, _column_case(world, tmp_path, kind, column, value),
                f"{name}={value}")  # fmt: skip


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory) -> tuple[list[str], list[list[str]]]:
    """The header and first rows of an exported globalbias_apx scores.csv."""
    import csv

    from gbdesk.report.csv_export import export_run_csv
    from gbdesk.store import Store
    from tests.adversarial.test_round_trips import _apx_run

    folder = tmp_path_factory.mktemp("scores")
    with Store(folder / "db.sqlite") as store:
        run_id = _apx_run(store, folder)
        export_run_csv(store, [run_id], folder / "export")
    with (folder / "export" / "scores.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:40]


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize("column", ["n_tokens", "attempt", "item_index"])
def test_numeric_column_of_scores_csv(world, tmp_path, scores_csv, column, value):
    header, rows = scores_csv
    at = header.index(column)
    path = tmp_path / "scores.csv"
    path.write_text(csv_text([header, *[[*r[:at], value, *r[at + 1 :]] for r in rows]]))
    run_on_copy(world, tmp_path, ["import", "--probe", "globalbias_apx", "--file", str(path)],
                f"scores.csv {column}={value}")  # fmt: skip


@pytest.mark.parametrize("value", ["1e20", "9.3e18", "-1.0", "1e400", "18446744073709551616"])
@pytest.mark.parametrize("column", ["attempt", "item_index"])
def test_jsonl_number_beyond_sqlite(world, tmp_path, column, value):
    """JSON numbers: 1e20 is a float without fraction, so a whole number — too large."""
    item = INV_ITEMS[0]
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"item": item.key, "prompt": item.prompt, "response": "x"})[:-1]
        + f', "{column}": {value}}}\n'
    )
    db = world.copy(tmp_path)
    before = db_state(db)
    outcome = run_cli(["import", "--probe", "inventories", "--file", path, "--db", db])
    assert outcome.code == 2, outcome.err
    outcome.check(value)
    assert db_state(db) == before


# -- the findings --------------------------------------------------------------------------
@pytest.mark.parametrize("digits", [19, 20])
def test_finding_2_attempt_of_20_digits_is_refused_in_one_line(world, tmp_path, digits):
    path = tmp_path / "in.csv"
    path.write_text(csv_text(_inv_rows("attempt", "9" * digits)))
    outcome = run_cli(
        ["import", "--probe", "inventories", "--file", path, "--db", world.copy(tmp_path)]
    )
    assert outcome.code == 2 and "attempt that is not a whole number from 0" in outcome.err


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "1", "9" * 20],
        ["sample", "9" * 20, "--size", "3"],
        ["import-labels", "9" * 20, "--file", "x.csv", "--rater", "a"],
    ],
    ids=["compare", "sample", "import-labels"],
)
def test_finding_2_run_id_of_20_digits(world, tmp_path, args):
    outcome = run_cli([*args, "--db", world.copy(tmp_path)])
    assert outcome.code == 2 and "at most 19 digits" in outcome.err, outcome.err


def test_finding_4_budget_of_400_nines(world, tmp_path):
    for budget in ("9" * 400, "9" * 400 + "m"):
        outcome = run_cli(
            ["audit", "--budget", budget, "--plan-only", "--db", world.copy(tmp_path)]
        )
        assert outcome.code == 2 and "--budget must be at most" in outcome.err, outcome.err


def test_finding_5_compare_seed_and_resamples(world, tmp_path, monkeypatch):
    db = world.copy(tmp_path)
    run = str(world.runs["inv"])
    negative = run_cli(["compare", run, run, "--seed=-5", "--db", db])
    assert negative.code == 2 and "between 0 and 2^63 - 1" in negative.err
    huge = run_cli(["compare", run, run, "--resamples", "99999999999999", "--db", db])
    assert huge.code == 2 and "at most 100,000" in huge.err
    # within the bound, the item draws are checked before numpy allocates them
    import gbdesk.analysis.compare

    monkeypatch.setattr(gbdesk.analysis.compare, "MAX_RESAMPLE_CELLS", 50)
    big = run_cli(["compare", run, run, "--resamples", "20", "--db", db])  # 20 × 4 items
    assert big.code == 2 and "at most 12 resamples" in big.err, big.err


def test_store_turns_a_missed_overflow_into_one_line(tmp_path):
    from gbdesk.store import Store
    from gbdesk.support.errors import UserError

    with Store(tmp_path / "db.sqlite") as store, pytest.raises(UserError, match="outside what"):
        store.get_run(2**63)
