"""Bad input to the CLI: exit 2, one line on stderr, no traceback, the database unchanged.
Odd but valid input: imported exactly.

The bad-input table runs `gbdesk.cli.main` in this process (fast); a few cases also run
the real command in a subprocess, where a traceback would show.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.studies.globalbias.data import load_descriptors
from gbdesk.studies.intersectional.data import load_groups
from tests.adversarial.worlds import role_answers_csv

INVENTORIES = get_probe("inventories")
PROMPTS = [i.prompt for i in INVENTORIES.items(INVENTORIES.resolve_params())]
# a prompt only one item has (69 of the 149 share theirs), so no item column is needed
UNIQUE_PROMPT = next(p for p in PROMPTS if PROMPTS.count(p) == 1)
LF = get_probe("laissez_faire")
LF_PROMPT = LF.items(LF.resolve_params())[0].prompt
PROFILE_HEADER = (
    ",name,age,personality_traits,negative_traits,hobbies,occupation,special_move,"
    "socioeconomic_status,sexual_orientation,religion,run_id,physical_characteristics.height,"
    "physical_characteristics.hair_colour,physical_characteristics.eye_colour,"
    "physical_characteristics.skin_colour,physical_characteristics.build,Ethnicity,Gender,Group"
)
PROFILE_ROW = (
    "0,Emanuela,32,\"('kind', 'brave', 'calm')\",\"('vain', 'rash', 'shy')\","
    "\"('chess', 'golf', 'tea')\",Nurse,Heal,Middle Class,Heterosexual,Agnostic,0,5.8,brown,"
    "hazel,olive,athletic,ITALIAN,F,\"('ITALIAN', 'F')\""
)
KNOWN = load_descriptors()[0]["descriptor"]
AGE = next(d["descriptor"] for d in load_descriptors() if d["axis"] == "age")


def csv_text(rows: list[list[str]]) -> str:
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def jsonl(*records: str) -> str:
    return "\n".join(records) + "\n"


def db_state(db: Path) -> str:
    """A digest of every table's rows (the file's bytes may change on open)."""
    with Store(db) as store:
        conn = store.conn
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
            )
        ]
        digest = hashlib.sha256()
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()  # some: WITHOUT ROWID
            for row in sorted(rows, key=repr):
                digest.update(repr(row).encode("utf-8", "backslashreplace"))
        return digest.hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    """A database with an inventories, a laissez_faire and an intersectional run."""
    folder = tmp_path_factory.mktemp("adversarial-inputs")
    db = folder / "db.sqlite"
    inv = folder / "inv.csv"
    inv.write_text(csv_text([["prompt", "response"], [PROMPTS[0], "He left."]]), "utf-8")
    lf = folder / "lf.csv"
    lf.write_text(
        csv_text([["prompt", "response"], [LF_PROMPT, "Maria hired Tom. She smiled."]]), "utf-8"
    )
    ix = folder / "ix.csv"
    ix.write_text(role_answers_csv(), "utf-8")
    ids = {}
    for name, probe, path in (
        ("inv", "inventories", inv),
        ("lf", "laissez_faire", lf),
        ("ix", "intersectional_sdeg", ix),
    ):
        args = ["import", "--probe", probe, "--file", str(path), "--db", str(db), "--deal-rows"]
        assert main(args) == 0
        with Store(db) as store:
            run_id = max(r["id"] for r in store.list_runs() if r["probe"] == probe)
            ids[name] = store.attempts(run_id)[0]["id"]
    return {"folder": folder, "db": db, "ids": ids}


@dataclass
class Case:
    name: str
    args: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)
    says: str = ""  # a part of the message


def imp(probe: str, file: str, content: str | bytes, says: str = "", name: str = "") -> Case:
    return Case(name or file, ["import", "--probe", probe, "--file", "{dir}/" + file],
                {file: content}, says)


def review(which: str, label: str, says: str = "") -> Case:
    return Case(f"review-{which}-{label[:60]}", ["review", "{" + which + "}", label,
                "--reviewer", "ana"], says=says)


def run(*flags: str, says: str = "") -> Case:
    return Case("run" + "".join(flags)[:40], ["run", "--probe", "inventories", *flags], says=says)


P = json.dumps(PROMPTS[0])
CASES = [
    # -- import: responses that are not text ---------------------------------------------
    imp("inventories", "null.jsonl", jsonl(f'{{"prompt": {P}, "response": null}}'),
        "line 1 has no response"),
    imp("inventories", "number.jsonl", jsonl(f'{{"prompt": {P}, "response": 5}}'),
        "a number as response"),
    imp("inventories", "bool.jsonl", jsonl(f'{{"prompt": {P}, "response": true}}'),
        "true or false as response"),
    imp("inventories", "list.jsonl", jsonl(f'{{"prompt": {P}, "response": ["a"]}}'), "a list"),
    imp("inventories", "object.jsonl", jsonl(f'{{"prompt": {P}, "response": {{"a": 1}}}}'),
        "an object"),
    imp("inventories", "nullprompt.jsonl", jsonl('{"prompt": null, "response": "x"}'),
        "no prompt"),
    imp("inventories", "short.csv", f"prompt,response\n{PROMPTS[0]}\n", "line 2 has no response"),
    # -- import: numbers gbdesk refuses ---------------------------------------------------
    imp("inventories", "digits.jsonl", jsonl(f'{{"prompt": {P}, "response": {"7" * 5000}}}'),
        "5,000 digits"),
    imp("inventories", "nan.jsonl", jsonl(f'{{"prompt": {P}, "response": NaN}}'),
        "NaN is not a JSON value"),
    imp("inventories", "inf.jsonl", jsonl(f'{{"prompt": {P}, "response": 1e400}}'),
        "out of range"),
    imp("inventories", "digits_attempt.csv",
        csv_text([["prompt", "response", "attempt"], [UNIQUE_PROMPT, "x", "9" * 5000]]),
        "attempt that is not a whole number"),
    # -- import: broken files ----------------------------------------------------------------
    imp("inventories", "deep.jsonl", jsonl('{"a": ' + "[" * 100_000), "nested too deeply"),
    imp("inventories", "bad.jsonl", jsonl(f'{{"prompt": {P}, "response": "x"'), "not valid JSON"),
    imp("inventories", "array.jsonl", jsonl("[1, 2]"), "expected a JSON object"),
    imp("inventories", "surrogate.jsonl", jsonl(f'{{"prompt": {P}, "response": "\\ud800"}}'),
        "lone surrogate"),
    imp("inventories", "open_quote.csv", f'prompt,response\n{PROMPTS[0]},"never closed\n',
        "line 2: malformed CSV"),
    imp("inventories", "long_row.csv", f"prompt,response\n{PROMPTS[0]},x,y\n",
        "line 2: more cells"),
    imp("inventories", "dup_header.csv", "prompt,response,response\na,b,c\n", "repeats"),
    imp("inventories", "no_response.csv", f"prompt\n{PROMPTS[0]}\n", "lacks the column"),
    imp("inventories", "header_only.csv", "prompt,response\n", "no rows"),
    imp("inventories", "empty.csv", "", "is empty"),
    imp("inventories", "binary.csv", b"\xff\xfe\x00\x01garbage", "not UTF-8"),
    Case("missing-file", ["import", "--probe", "inventories", "--file", "{dir}/nope.csv"],
         says="file not found"),
    Case("folder-as-file", ["import", "--probe", "inventories", "--file", "{dir}"],
         says="file not found"),
    imp("inventories", "unmatched.csv", "prompt,response\nWho?,x\n", "match no inventories"),
    # -- import: study layouts -------------------------------------------------------------
    imp("globalbias_apx", "apx_one_group.csv",
        f"group,descriptor,template,apx\ng1,{KNOWN},1,2\ng1,my own,2,3\n",
        "no descriptor with values for two or more groups"),
    imp("globalbias_apx", "apx_age_only.csv",
        f"group,descriptor,template,apx\ng1,{AGE},1,2\ng2,{AGE},1,3\n",
        "no descriptor with values for two or more groups (outside the untested age axis)"),
    imp("globalbias_apx", "apx_digits.csv",
        f"group,descriptor,template,apx\ng1,{KNOWN},{'1' * 5000},2\n", "template that is not"),
    imp("globalbias_apx", "apx_inf.csv",
        f"group,descriptor,template,apx\ng1,{KNOWN},1,{'9' * 5000}\n", "apx that is not"),
    imp("globalbias_profiles", "prof_cols.csv", "name,age\nAna,3\n",
        "lacks required column(s): personality_traits"),
    imp("globalbias_profiles", "prof_short.csv", f"{PROFILE_HEADER}\n0,Ana,30\n",
        "line 2 has fewer cells"),
    imp("globalbias_profiles", "prof_long.csv", f"{PROFILE_HEADER}\n{PROFILE_ROW},extra\n",
        "line 2: more cells"),
    imp("globalbias_profiles", "prof_noname.csv",
        f"{PROFILE_HEADER}\n{PROFILE_ROW.replace('Emanuela', '')}\n", "line 2 has no name"),
    imp("intersectional_sdeg", "ix_null.jsonl",
        jsonl(json.dumps({"group": load_groups()[0]["group"], "role": "r", "category": 1,
                          "answer": None})), "no answer"),
    # -- run: settings out of range (refused before any model is loaded) -------------------
    run("--temperature", "nan", says="--temperature: must be a finite number"),
    run("--temperature", "inf", says="must be a finite number"),
    run("--temperature", "-1", says="must be ≥ 0"),
    run("--temperature", "1e999", says="must be a finite number"),
    run("--top-p", "0", says="must be in (0, 1]"),
    run("--top-p", "nan", says="must be a finite number"),
    run("--top-p", "1.5", says="must be in (0, 1]"),
    run("--attempts", "1e3", says="not a whole number"),
    run("--attempts", "9" * 5000, says="not a whole number"),
    run("--attempts", "1000000", says="at most 100,000"),
    run("--max-tokens", "0", says="at least 1"),
    run("--seed", "9" * 30, says="not a whole number"),
    run("--batch", "-2", says="at least 1"),
    run("--limit", "٣", says="not a whole number"),
    Case("run-answer-temperature-nan", ["run", "--probe", "intersectional_sdeg", "--set",
         "answer_temperature=nan"], says="finite number"),
    Case("run-name-table-too-long", ["run", "--probe", "laissez_faire", "--set",
         "name_table=" + "n" * 5000 + ".csv"], says="not a name table or a readable path"),
    Case("run-endpoint-concurrency", ["run", "--probe", "inventories", "--endpoint",
         "http://127.0.0.1:9/v1", "--concurrency", "100000"], says="at most 1,024"),
    # -- review: labels of the wrong shape -------------------------------------------------
    review("lf", '["x"]', "character 1 is 'x'"),
    review("lf", "[1,2]", "character 1 is 1"),
    review("lf", "{}", "review is JSON"),
    review("lf", "nope", "review is JSON"),
    review("lf", "[" * 50_000, "review is JSON"),
    review("lf", '[{"role": "subject", "references": "she"}]', "references must be a list"),
    review("lf", '[{"role": "subject", "references": [[1.5, 3]]}]', "offsets are"),
    review("lf", '[{"role": "subject", "refs": []}]', "unknown key"),
    review("lf", '[{"role": "subject", "name": "\\ud800"}]', "lone surrogate"),
    review("lf", '[{"role": "subject"}, {"role": "subject"}]', "more than once"),
    review("ix", '["x"]', "JSON object"),
    review("ix", "[1,2]", "JSON object"),
    review("ix", '{"99": "x"}', "unknown category"),
    review("ix", '{"1": 5}', "has no option 5"),
    review("ix", '{"1": ' + "9" * 5000 + "}", "JSON object"),
    review("inv", "purple", "label must be one of"),
    Case("review-id-zero", ["review", "0", "male", "--reviewer", "ana"], says="not a run or"),
    Case("review-id-digits", ["review", "9" * 5000, "male", "--reviewer", "a"],
         says="not a whole number"),
    Case("metrics-digits", ["metrics", "1" * 5000], says="not a whole number"),
    Case("export-pdf-folder", ["export", "1", "--pdf", "{dir}"], says="must name a file"),
]


def _args(case: Case, world: dict, folder: Path) -> list[str]:
    for name, content in case.files.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    values = {"dir": str(folder), **{k: str(v) for k, v in world["ids"].items()}}
    args = []
    for arg in case.args:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        args.append(arg)
    return [*args, "--db", str(world["db"])]


def test_there_are_at_least_30_cases():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_exits_2_with_one_line_and_changes_nothing(case, world, tmp_path, capsys):
    args = _args(case, world, tmp_path)
    before = db_state(world["db"])
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("gbdesk: error: ") and "Traceback" not in err, err
    assert case.says in err, err
    assert out == ""
    assert db_state(world["db"]) == before


SUBPROCESS = ["number.jsonl", "digits.jsonl", "review-lf-[\"x\"]", "run--temperaturenan"]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_bad_input_in_a_real_process(name, world, tmp_path):
    case = next(c for c in CASES if c.name == name)
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", *_args(case, world, tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


# -- odd but valid input --------------------------------------------------------------------
def _import(tmp_path: Path, name: str, content: str, probe: str = "inventories") -> dict:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8", newline="")
    db = tmp_path / "ok.sqlite"
    args = ["import", "--probe", probe, "--file", str(path), "--db", str(db), "--json"]
    assert main([*args, "--deal-rows"]) == 0
    return {"db": db}


def _responses(db: Path) -> list[str]:
    with Store(db) as store:
        run_id = store.list_runs()[0]["id"]
        return [a["response"] for a in store.attempts(run_id)]


SEPARATORS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r", "\r\n"]


def test_csv_with_every_line_separator_imports_exactly(tmp_path, capsys):
    texts = [f"He said{sep}she left{sep}" for sep in SEPARATORS]
    rows = [["prompt", "response"]] + [[p, t] for p, t in zip(PROMPTS, texts, strict=False)]
    world = _import(tmp_path, "separators.csv", csv_text(rows))
    assert sorted(_responses(world["db"])) == sorted(texts)


def test_csv_field_of_200_kb_imports(tmp_path, capsys):
    big = "She said so. " * 16_000  # 208 KB
    content = csv_text([["prompt", "response"], [PROMPTS[0], big], [PROMPTS[1], "He left."]])
    world = _import(tmp_path, "big.csv", content)
    assert sorted(_responses(world["db"]), key=len) == ["He left.", big]


def test_line_numbers_are_where_the_record_starts(tmp_path, capsys):
    rows = [["prompt", "response"], [PROMPTS[0], "one\ntwo\nthree"], [PROMPTS[1], "x"]]
    content = csv_text(rows) + "\n" + csv_text([["Who is this?", "y"]])
    path = tmp_path / "lines.csv"
    path.write_text(content, encoding="utf-8", newline="")
    code = main(["import", "--probe", "inventories", "--file", str(path),
                 "--db", str(tmp_path / "l.sqlite")])
    err = capsys.readouterr().err
    # header 1, the 3-line record 2–4, then 5, a blank line 6, the unmatched record on 7
    assert code == 2 and "line 7 match no inventories prompt" in err, err


def test_jsonl_keeps_separators_inside_strings_and_quoted_numbers(tmp_path, capsys):
    text = "a\u2028b\x85c\x0cd"
    content = jsonl(
        json.dumps({"prompt": PROMPTS[0], "response": text}, ensure_ascii=False),
        json.dumps({"prompt": PROMPTS[1], "response": "5"}),
        json.dumps({"prompt": PROMPTS[2], "response": "\U0001f600 \ud83d\ude00"}),
    )
    world = _import(tmp_path, "odd.jsonl", content)
    assert sorted(_responses(world["db"])) == sorted([text, "5", "\U0001f600 \U0001f600"])


def test_csv_with_a_byte_order_mark_and_blank_lines(tmp_path, capsys):
    content = "\ufeff" + csv_text([["prompt", "response"], [PROMPTS[0], "x"]]) + "\n\n"
    world = _import(tmp_path, "bom.csv", content)
    assert _responses(world["db"]) == ["x"]


def test_apx_table_with_an_unknown_descriptor_says_so(tmp_path, capsys):
    rows = [["group", "descriptor", "template", "apx"]]
    for t in (1, 2, 3):
        for g in range(4):
            rows.append([f"g{g}", KNOWN, str(t), str(10 + g)])
            rows.append([f"g{g}", "my own descriptor", str(t), str(20 + g)])
    path = tmp_path / "apx.csv"
    path.write_text(csv_text(rows), encoding="utf-8")
    db = tmp_path / "apx.sqlite"
    code = main(["import", "--probe", "globalbias_apx", "--file", str(path), "--db", str(db),
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    note = "1 descriptor was not in the shipped list (e.g. 'my own descriptor'): it is tested"
    assert note in err
    result = json.loads(out)
    assert result["unmatched_descriptors"] == 1 and note in result["warnings"][0]
    assert main(["metrics", str(result["run_id"]), "--db", str(db), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["flagged_descriptors"]["n"] == 2  # both descriptors are tested


def test_profiles_with_odd_values_import(tmp_path, capsys):
    row = PROFILE_ROW.replace(",32,", f",{'1' * 5000},").replace(
        "\"('chess', 'golf', 'tea')\"", '"' + "(" * 3000 + '"'
    )
    world = _import(tmp_path, "p.csv", f"{PROFILE_HEADER}\n{row}\n", "globalbias_profiles")
    (text,) = _responses(world["db"])
    assert json.loads(text)[0]["name"] == "Emanuela"


@pytest.mark.parametrize("probe", ["globalbias_profiles", "globalbias_apx"])
def test_review_of_a_probe_without_command_line_labels_says_so(probe):
    from gbdesk.support.errors import UserError

    with pytest.raises(UserError, match="review them in the app"):
        get_probe(probe).capabilities.labelling.human_label("{}", {}, "male", "ana")


# -- issue 27 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reviewer", ["", "   ", "\t", "a\nb", "ana\u202e"])
def test_finding_9_review_by_a_blank_or_broken_name_is_refused(world, reviewer, capsys):
    before = db_state(world["db"])
    code = main(["review", str(world["ids"]["inv"]), "male", "--reviewer", reviewer,
                 "--db", str(world["db"])])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--reviewer" in err and len(err.strip().splitlines()) == 1, err
    assert db_state(world["db"]) == before


def test_finding_11_resume_of_an_imported_run_says_one_thing(world, capsys):
    with Store(world["db"]) as store:
        run_id = store.get_attempt(world["ids"]["inv"])["run_id"]
    capsys.readouterr()
    code = main(["resume", str(run_id), "--db", str(world["db"])])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (out, err)
    assert err.strip().splitlines() == [
        f"gbdesk: error: run {run_id} was imported from a file: it is complete as imported "
        f"and there is nothing to generate (see: gbdesk metrics {run_id})"
    ]


def test_finding_14_validations_of_stereotypes_the_filter_moved_out_are_counted(tmp_path, capsys):
    """Decisions stored for stereotypes outside the dataset are reported as such — never
    as "there are no ratings"."""
    from tests.intersectional_fakes import write_decisions
    from tests.studies.intersectional.test_intersectional_dataset import build

    db = tmp_path / "db.sqlite"
    with Store(db) as store:
        _, dataset = build(store, tmp_path)
        from gbdesk.studies.intersectional import dataset as ds

        out = [s.id for s in ds.load(store, dataset).stereotypes if not s.in_dataset]
    assert out  # the fake filter moves some out
    for name, answer in (("ana", "yes"), ("bo", "no")):
        path = tmp_path / f"{name}.csv"
        write_decisions(path, [(sid, answer, "a") for sid in out])
        assert main(["dataset", "validate", str(dataset), "--file", str(path), "--validator",
                     name, "--db", str(db)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["dataset", "agreement", str(dataset), "--db", str(db), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["commonality"]
    assert figures["stereotypes_rated"] == 0
    assert figures["rated_outside"] == {"out": len(out)}
    assert "moved out of it by the filter" in figures["fleiss_kappa_reason"]
    assert "there are no ratings" not in figures["fleiss_kappa_reason"]
    every = figures["all_rated"]
    assert every["stereotypes_rated"] == len(out) and every["validators"] == 2
    assert every["by_filter_verdict"] == {"out": len(out)}
    assert every["share_majority"] == 0.0  # one yes and one no: no majority said yes
    assert main(["dataset", "agreement", str(dataset), "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert f"also rated: {len(out)} with the filter's verdict out" in text
