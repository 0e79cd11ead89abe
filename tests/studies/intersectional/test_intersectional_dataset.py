"""The intersectional stereotype dataset built as Ma et al. (2023) built theirs: groups,
elicitation, filtering, several validators, agreement, categories, question bank, the
dataset as a file, and the examination it drives (design paper / all16). Fake model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import get_probe
from gbdesk.engine.base import attempt_seed
from gbdesk.report.content import build_report
from gbdesk.studies.intersectional import dataset as ds
from gbdesk.studies.intersectional import groups as g
from gbdesk.studies.intersectional.elicit import parse_stereotypes, parse_verdict
from gbdesk.studies.intersectional.questions import paper_bank, read_bank, write_bank
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeOpenAIServer, fake_model
from tests.intersectional_fakes import DatasetBackend, dataset_answer, write_decisions

GROUPS = "White;women,Black;men;young,Asian;women;Muslim"

# three validators: stereotype → (common, specific[, category]) — see the module's test
DECISIONS = {
    "ana": {"s0003": ("no", "a"), "s0009": ("yes", "a", "Ageism")},
    "bo": {"s0003": ("no", "b"), "s0006": ("yes", "b"), "s0009": ("yes", "a", "4")},
    "cy": {"s0003": ("yes", "b"), "s0004": ("no", "a"), "s0006": ("yes", "b"),
           "s0009": ("no", "b")},
}  # fmt: skip
IDS = [f"s{n:04d}" for n in range(1, 10)]


def decision_rows(validator):
    own = DECISIONS[validator]
    return [(sid, *(*own.get(sid, ("yes", "a")), "")[:3]) for sid in IDS]


def build(store, tmp_path, groups=GROUPS):
    """A dataset of three groups on the fake model: (model, dataset id)."""
    model = fake_model(store, tmp_path)
    backend = DatasetBackend()
    elicit = plan_run(store, "intersectional_elicit", model, groups=groups, max_stereotypes=5)
    assert execute_run(store, elicit, backend_factory=lambda m, g: backend).status == "done"
    dataset = plan_run(store, "intersectional_filter", model, elicitation=elicit)
    assert execute_run(store, dataset, backend_factory=lambda m, g: backend).status == "done"
    return model, dataset


def validate_all(store, dataset, tmp_path):
    for name in DECISIONS:
        path = tmp_path / f"{name}.csv"
        write_decisions(path, decision_rows(name), ("stereotype_id", "common", "specific",
                                                     "category"))  # fmt: skip
        assert ds.import_validations(store, dataset, path, name)["stored"] == 9


# -- groups and parsing -----------------------------------------------------------------------
def test_groups_attributes_and_combinations():
    assert sum(len(v) for v in g.ATTRIBUTE_VALUES.values()) == 15  # §2.1's 14 + non-binary
    assert len(g.table1_groups()) == 106
    assert len(g.combinations(2)) == 93  # ((3+3+3+2+2+2)² − Σ squares) / 2
    assert g.canonical("women + black") == "Black;women"
    assert g.broader_groups("Black;women;old") == [
        "Black;women", "Black;old", "women;old", "Black", "women", "old",
    ]  # fmt: skip
    assert g.plural_phrase("White;men;old") == "old White men"
    assert g.resolve_groups("White;women|Black;men;young") == ["White;women", "Black;men;young"]
    with pytest.raises(UserError, match="one attribute"):
        g.resolve_groups("White")
    with pytest.raises(UserError, match="two values of race"):
        g.parse_group("White;Black")
    with pytest.raises(UserError, match="no attribute value"):
        g.parse_group("White;tall")


def test_replies_and_verdicts_are_parsed_or_marked():
    status, items = parse_stereotypes(
        '{"stereotypes": [{"stereotype": "Angry", "explanation": "x"}, '
        '{"stereotype": "angry", "explanation": "repeat"}]}'
    )
    assert status == "parsed" and items == [{"stereotype": "Angry", "explanation": "x"}]
    cut = '{"stereotypes": [{"stereotype": "A", "explanation": "e"}, {"stereotype": "B", "expl'
    assert parse_stereotypes(cut) == ("salvaged", [{"stereotype": "A", "explanation": "e"}])
    assert parse_stereotypes("1. Lazy: said often\n2. Rich")[0] == "salvaged"
    assert parse_stereotypes("no idea") == ("unparsed", [])
    verdict = '{{"applies_to_broader_group": {}, "broader_group": "{}", "explanation": "e"}}'
    group = "Black;women;old"
    assert parse_verdict(verdict.format("false", "none"), group)["status"] == "kept"
    moved = parse_verdict(verdict.format("true", "women;Black"), group)
    assert moved["status"] == "moved" and moved["broader_group"] == "Black;women"
    assert parse_verdict(verdict.format("true", "old"), group)["status"] == "out"
    assert parse_verdict(verdict.format("true", "Asian;men"), group)["status"] == "out"
    assert parse_verdict("garbage", group)["status"] == "unparsed"
    # cut off by the length limit: the verdict given before the cut counts
    cut = parse_verdict('{"applies_to_broader_group": true, "broader_group": "Black;women", '
                        '"explanation": "Because th', group)  # fmt: skip
    assert cut["status"] == "moved" and cut["explanation"] == "Because th …"
    assert parse_verdict('{"applies_to_broader_group": false, "broa', group)["status"] == "kept"
    assert parse_verdict('{"applies_to_broader_group": true, "broa', group)["status"] == (
        "unparsed"  # it did not get to name the broader group
    )


# -- the pipeline ----------------------------------------------------------------------------
def test_build_validate_agree_and_examine_as_the_paper(store, tmp_path):
    model, dataset = build(store, tmp_path)
    data = ds.load(store, dataset)
    by_id = {s.id: s for s in data.stereotypes}
    assert [s.id for s in data.stereotypes] == IDS
    # the filter moves "Stereotype 1" to the largest broader group: out of the dataset for a
    # 2-attribute group (a single attribute is left), to an intersectional group otherwise
    assert by_id["s0002"].status == "out" and by_id["s0002"].filter["broader_group"] == "White"
    assert by_id["s0005"].status == "moved" and by_id["s0005"].group == "Black;men"
    assert by_id["s0008"].group == "Asian;women" and by_id["s0008"].elicited_for == (
        "Asian;women;Muslim"
    )
    assert by_id["s0001"].category == "Religiosity" and by_id["s0001"].category_source == "model"
    counts = data.counts()
    assert (counts["stereotypes"], counts["filtered_out"], counts["in_dataset"]) == (9, 3, 8)

    validate_all(store, dataset, tmp_path)
    # the filter's own metrics stay the filter's once people have validated
    filtered = {k: v.value for k, v in compute_metrics(store, dataset).items()}
    assert filtered["moved"] == 2 and filtered["out"] == 1
    assert {k: v.value for k, v in compute_metrics(store, dataset, "reviewed").items()} == (
        filtered
    )
    data = ds.load(store, dataset)
    by_id = {s.id: s for s in data.stereotypes}
    assert data.validators() == ["ana", "bo", "cy"]
    kept = sorted(s.id for s in data.usable("validated"))
    assert kept == ["s0001", "s0004", "s0005", "s0007", "s0008", "s0009"]
    assert by_id["s0003"].validated == "rejected" and by_id["s0006"].validated == "rejected"
    # two of three validators chose Ageism (by name and by number): the person's category
    assert by_id["s0009"].category == "Ageism" and by_id["s0009"].category_source == "validators"

    # agreement: Fleiss' κ as statsmodels computes it on the same subjects × raters table
    figures = ds.agreement(data)
    for question, name in (("common", "commonality"), ("specific", "group_specificity")):
        table = np.array(
            [
                [DECISIONS[v].get(sid, ("yes", "a"))[0 if question == "common" else 1]
                 for v in ("ana", "bo", "cy")]
                for sid in IDS
                if sid != "s0002"  # moved out of the dataset by the filter
            ]
        )  # fmt: skip
        expected = fleiss_kappa(aggregate_raters(table)[0], method="fleiss")
        assert figures[name]["fleiss_kappa"] == pytest.approx(expected, abs=1e-12)
        assert figures[name]["validators"] == 3 and figures[name]["stereotypes_rated"] == 8
    # share the majority (≥ 2 of 3) judged common / exclusive to the group, as the paper
    assert figures["commonality"]["share_majority"] == pytest.approx(7 / 8)
    assert figures["group_specificity"]["share_majority"] == pytest.approx(6 / 8)

    # the examination as the paper: each group only the categories of its kept stereotypes
    run = plan_run(store, "intersectional_sdeg", model, attempts=2, dataset=dataset,
                   design="paper")  # fmt: skip
    params = store.get_run(run)["params"]
    plan = {p["group"]: p["categories"] for p in params["groups_plan"]}
    assert plan == {
        "White;women": ["Religiosity"],
        "Black;men;young": ["Religiosity"],
        "Black;men": ["Socio-economic Status"],
        "Asian;women;Muslim": ["Religiosity", "Ageism"],
        "Asian;women": ["Socio-economic Status"],
    }
    backend = DatasetBackend()
    assert execute_run(store, run, backend_factory=lambda m, g: backend).status == "done"
    answers = [r for r in backend.requests if r.json_schema is not None]
    assert len(answers) == 2 * (1 + 1 + 1 + 2 + 1)  # roles × the groups' own questions
    metrics = compute_metrics(store, run)

    def top_share(group):  # women's roles answer by their seed's parity
        item = next(i["item"] for i in store.run_items(run) if i["metadata"]["group"] == group)
        parities = {attempt_seed(0, item, a) % 2 for a in (0, 1)}
        return 1 if len(parities) == 1 else 1 / 2

    # SDeg = top share − 1/n (men answer alike: 1 − 1/n)
    assert metrics["sdeg_group/Black;men;young"].value == pytest.approx(1 - 1 / 3)
    assert metrics["sdeg_group/Black;men"].value == pytest.approx(1 - 1 / 5)
    white_women = top_share("White;women") - 1 / 3
    asian_women = top_share("Asian;women") - 1 / 5
    women_muslim = top_share("Asian;women;Muslim") - 1 / 4  # max(Religiosity, Ageism)
    assert metrics["sdeg_group/White;women"].value == pytest.approx(white_women)
    assert metrics["sdeg_group/Asian;women"].value == pytest.approx(asian_women)
    assert metrics["sdeg_group/Asian;women;Muslim"].value == pytest.approx(women_muslim)
    assert {top_share(x) for x in ("White;women", "Asian;women", "Asian;women;Muslim")} == {
        1, 1 / 2
    }  # both cases occur
    overall = (2 / 3 + 4 / 5 + white_women + asian_women + women_muslim) / 5
    assert metrics["sdeg_overall"].value == pytest.approx(overall)
    text = repr(build_report(store, [run]).runs[0].blocks)
    assert "design 'paper'" in text and "Fleiss" in text

    # the all16 variant: every question for every group, and the report says so
    run16 = plan_run(store, "intersectional_sdeg", model, attempts=2, dataset=dataset,
                     design="all16")  # fmt: skip
    assert all(len(p["questions"]) == 16 for p in store.get_run(run16)["params"]["groups_plan"])
    blocks = get_probe("intersectional_sdeg").capabilities.presentation.report_blocks(
        {}, store.get_run(run16)["params"]
    )
    assert "design 'all16'" in repr(blocks)


def test_bad_validation_files_store_nothing_and_list_lines(store, tmp_path):
    _, dataset = build(store, tmp_path)
    path = tmp_path / "bad.csv"
    write_decisions(path, [("s0001", "yes", "a"), ("s0002", "maybe", "a"), ("s9999", "yes", "a"),
                           ("s0004", "yes", "c"), ("s0001", "no", "b")])  # fmt: skip
    with pytest.raises(UserError) as err:
        ds.import_validations(store, dataset, path, "ana")
    message = str(err.value)
    for expected in ("line 3", "line 4", "line 5", "line 6", "yes or no", "a or b"):
        assert expected in message, message
    assert "line 2" not in message
    assert store.labels(dataset, "human") == {}
    with pytest.raises(UserError, match="needs a name"):
        ds.import_validations(store, dataset, tmp_path / "x.csv", " ")


def test_dataset_file_round_trip_and_refusal(store, tmp_path):
    _, dataset = build(store, tmp_path)
    validate_all(store, dataset, tmp_path)
    before = ds.load(store, dataset)
    for suffix in ("json", "csv"):
        path = tmp_path / f"dataset.{suffix}"
        assert ds.export(before, path)["stereotypes"] == 9
        new = ds.import_dataset(store, path)
        assert new["validations"] == 27
        after = ds.load(store, new["dataset_id"])
        assert [(s.id, s.group, s.status, s.category, s.validated) for s in after.stereotypes] == [
            (s.id, s.group, s.status, s.category, s.validated) for s in before.stereotypes
        ]
        assert ds.agreement(after) == ds.agreement(before)
        assert after.provenance["elicited_by"] == "fake model"
        # read straight from the file, without storing it
        assert [s.id for s in ds.read_file(path).usable()] == [s.id for s in before.usable()]
    # the minimal columns of the issue are enough
    minimal = tmp_path / "minimal.csv"
    write_decisions(
        minimal,
        [("x1", "Black;women", "Angry Black woman", "aggressive", "Perceived Emotional State"),
         ("x2", "women;old;White", "Frail", "", "4")],
        ("stereotype_id", "group", "stereotype", "explanation", "category"),
    )  # fmt: skip
    imported = ds.load(store, ds.import_dataset(store, minimal)["dataset_id"])
    assert [(s.group, s.category, s.status) for s in imported.stereotypes] == [
        ("Black;women", "Perceived Emotional State", "unfiltered"),
        ("White;women;old", "Ageism", "unfiltered"),
    ]
    runs = len(store.list_runs())
    bad = tmp_path / "bad.csv"
    write_decisions(
        bad,
        [("x1", "Black;women", "A", "", "Religiosity"), ("x1", "Black;women", "B", "", ""),
         ("x3", "Black", "C", "", ""), ("x4", "Black;women", "D", "", "Hobbies")],
        ("stereotype_id", "group", "stereotype", "explanation", "category"),
    )  # fmt: skip
    with pytest.raises(UserError) as err:
        ds.import_dataset(store, bad)
    assert all(f"line {n}" in str(err.value) for n in (3, 4, 5))
    assert len(store.list_runs()) == runs  # nothing written


def test_question_bank_is_data_and_drives_the_paper_design(store, tmp_path):
    bank = paper_bank()
    assert len(bank) == 16 and bank[4]["category"] == "Religiosity"
    for suffix in ("csv", "json"):
        assert read_bank(write_bank(bank, tmp_path / f"bank.{suffix}")) == bank
    user = tmp_path / "user.csv"
    user.write_text(
        "category,question,expected_answers\n"
        'Religiosity,"How often do you pray?","1 - Never; 2 - Weekly; 3 - Daily"\n',
        encoding="utf-8",
    )
    extra = read_bank(user)
    assert extra[0]["options"] == ["Never", "Weekly", "Daily"] and extra[0]["source"] == "user"
    bad = tmp_path / "bad.csv"
    bad.write_text("category,question,expected_answers\nHobbies,Q?,A;B\nReligiosity,Q?,A\n")
    with pytest.raises(UserError, match=r"line 2.*category|line 3.*expected"):
        read_bank(bad)

    model, dataset = build(store, tmp_path)
    validate_all(store, dataset, tmp_path)
    combined = tmp_path / "combined.json"
    write_bank(bank + extra, combined)
    ds.set_questions(store, dataset, read_bank(combined))
    run = plan_run(store, "intersectional_sdeg", model, attempts=2, dataset=dataset,
                   design="paper")  # fmt: skip
    plan = {p["group"]: p["questions"] for p in store.get_run(run)["params"]["groups_plan"]}
    assert plan["White;women"] == ["5", "u1"]  # both Religiosity questions
    backend = DatasetBackend()
    execute_run(store, run, backend_factory=lambda m, g: backend)
    metrics = compute_metrics(store, run)
    # a category's SDeg is the largest of its questions'; men answer alike: 1 − 1/3
    assert metrics["sdeg_group/Black;men;young"].value == pytest.approx(2 / 3)
    assert metrics["sdeg_category/Religiosity"].n == 3


def test_paper_design_needs_a_dataset_and_validated_stereotypes(store, tmp_path):
    probe = get_probe("intersectional_sdeg")
    assert probe.resolve_params()["design"] == "all16"
    with pytest.raises(UserError, match="needs a stereotype dataset"):
        probe.resolve_params(design="paper")
    model, dataset = build(store, tmp_path)
    with pytest.raises(UserError, match="no stereotype a majority of validators kept"):
        plan_run(store, "intersectional_sdeg", model, dataset=dataset)
    run = plan_run(store, "intersectional_sdeg", model, dataset=dataset, stereotypes="all")
    assert store.get_run(run)["params"]["design"] == "paper"


# -- the command line ------------------------------------------------------------------------
def cli(capsys, *args):
    from gbdesk.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_cli_build_validate_agreement_export_import_and_run(tmp_path, capsys):
    db = str(tmp_path / "cli.sqlite")
    with FakeOpenAIServer(dataset_answer) as server:
        built = cli(capsys, "dataset", "build", "--groups", "White;women", "Black;men;young",
                    "Asian;women;Muslim", "--model", f"{server.url}#fake", "--db", db, "--json")
        assert {k: built[k] for k in ("groups", "stereotypes", "filtered_out")} == {
            "groups": 3, "stereotypes": 9, "filtered_out": 3,
        }
        assert built["groups_in_dataset"] == 5  # two moved to broader groups
        dataset = str(built["dataset_id"])
        for name in DECISIONS:
            path = tmp_path / f"{name}.csv"
            write_decisions(path, [r[:3] for r in decision_rows(name)])
            stored = cli(capsys, "dataset", "validate", dataset, "--file", str(path),
                         "--validator", name, "--db", db, "--json")
            assert stored["stored"] == 9
        bad = tmp_path / "bad.csv"
        write_decisions(bad, [("s0001", "yes", "x")])
        from gbdesk.cli import main

        assert main(["dataset", "validate", dataset, "--file", str(bad), "--validator", "dan",
                     "--db", db]) == 2
        assert "line 2" in capsys.readouterr().err
        agreement = cli(capsys, "dataset", "agreement", dataset, "--db", db, "--json")
        assert set(agreement) >= {"commonality", "group_specificity"}
        assert agreement["commonality"]["validators"] == 3
        assert agreement["commonality"]["share_majority"] == pytest.approx(7 / 8)
        assert isinstance(agreement["group_specificity"]["fleiss_kappa"], float)
        bank = tmp_path / "bank.csv"
        bank.write_text(
            "category,question,expected_answers\n"
            "Socio-economic Status,Do you own a house?,Yes; No\n",
            encoding="utf-8",
        )
        questions = cli(capsys, "dataset", "questions", dataset, "--import", str(bank), "--db",
                        db, "--json")["questions"]  # fmt: skip
        assert [q["id"] for q in questions] == ["u1"]  # the bank is replaced
        out = tmp_path / "bank.json"
        cli(capsys, "dataset", "questions", dataset, "--export", str(out), "--db", db, "--json")
        assert json.loads(out.read_text())["questions"][0]["options"] == ["Yes", "No"]
        cli(capsys, "dataset", "questions", dataset, "--reset", "--db", db, "--json")
        listed = cli(capsys, "dataset", "list", "--db", db, "--json")
        assert [d["dataset_id"] for d in listed] == [built["dataset_id"]]
        exported = tmp_path / "shared.json"
        cli(capsys, "dataset", "export", dataset, "--file", str(exported), "--db", db, "--json")
        other = str(tmp_path / "other.sqlite")
        imported = cli(capsys, "dataset", "import", "--file", str(exported), "--db", other,
                       "--json")
        assert imported["stereotypes"] == 9 and imported["validations"] == 27
        run = cli(capsys, "run", "--probe", "intersectional_sdeg", "--set",
                  f"dataset={imported['dataset_id']}", "--set", "design=paper", "--attempts",
                  "2", "--endpoint", server.url, "--endpoint-model", "fake", "--db", other,
                  "--json")  # fmt: skip
    assert run["status"] == "done" and run["attempts"] == 10  # 5 groups × 2 roles
    metrics = cli(capsys, "metrics", str(run["run_id"]), "--db", other, "--json")["metrics"]
    assert metrics["sdeg_group/Black;men"]["value"] == pytest.approx(0.8)
