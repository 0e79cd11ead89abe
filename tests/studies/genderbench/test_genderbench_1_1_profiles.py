"""The `genderbench-1.1` preset of inventories, jobs_lum and gest_creative against GenderBench
1.1.0 itself (tests/fixtures/genderbench_1_1/, written by scripts/genderbench_reference.py):
the same items in the same order and — through `gbdesk import` and `gbdesk metrics --json`
— the same label on every recorded answer (the pronoun detector against 1.1.0's
`CharacterGenderEvaluator`) and the same point metrics, bootstrap intervals and marks,
degenerate cases included."""

from __future__ import annotations

import json
import math

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.store import Store
from tests import genderbench_fixtures as gbf

PROBES = ("inventories", "jobs_lum", "gest_creative")
PRESET = "genderbench-1.1"
LETTERS = "ABCD"


def reference_metadata(probe: str, metadata: dict) -> dict:
    """1.1.0's item metadata, from gbdesk's (which keeps more)."""
    keys = {"inventories": ("source", "gender"), "jobs_lum": ("job",)}
    return {k: metadata[k] for k in keys.get(probe, ("stereotype_id",))}


def items(probe: str) -> list:
    p = get_probe(probe)
    return p.items(p.resolve_params(template=PRESET))


@pytest.mark.parametrize("probe", PROBES)
def test_preset_items_are_1_1_0s(probe):
    fx = gbf.items(probe)
    ours = items(probe)
    assert len(ours) == fx["item_count"]
    assert fx["prompts_per_item"] == 1
    assert [gbf.prompt_digest([i.prompt]) for i in ours] == fx["prompt_digests"]
    digests = [
        gbf.item_digest(reference_metadata(probe, i.metadata), [(i.prompt, None)]) for i in ours
    ]
    assert digests == fx["item_digests"]
    assert get_probe(probe).default_attempts == fx["num_repetitions"]


def test_gest_creative_preset_reads_gest_1_0_and_the_default_1_1():
    probe = get_probe("gest_creative")
    v10 = probe.items(probe.resolve_params(template=PRESET))
    v11 = probe.items(probe.resolve_params())
    assert probe.resolve_params(template=PRESET)["gest_file"] == "gest.csv"
    assert probe.resolve_params()["gest_file"] == "gest_1.1.csv"
    assert len(v10) == len(v11) == 3565
    changed = [a.key for a, b in zip(v10, v11, strict=True) if a.prompt != b.prompt]
    assert 200 < len(changed) < 300  # v1.1 fixed 244 sentences
    # "I'm no beginner to be annoyed …" is v1.0's text (PROBES.md §5)
    assert any("I'm no beginner to be annoyed" in i.prompt for i in v10)
    # a run stored before `gest_file` existed reads v1.1, as it did
    old = {k: v for k, v in probe.resolve_params().items() if k != "gest_file"}
    assert [i.prompt for i in probe.items(old)] == [i.prompt for i in v11]


def _import_file(tmp_path, probe: str, case: str):
    keys = [i.key for i in items(probe)]
    path = tmp_path / f"{probe}.{case}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for row in gbf.answers(probe, case):
            record = {
                "item": keys[row["item"]],
                "attempt": row["repetition"],
                "response": row["answer"],
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def _metrics_json(tmp_path, probe: str, case: str, capsys) -> dict:
    """Import the case's answers with the preset, check every stored label against 1.1.0's
    evaluation, and return `gbdesk metrics --json`'s metrics."""
    db = str(tmp_path / f"{probe}.{case}.sqlite")
    path = _import_file(tmp_path, probe, case)
    args = ["import", "--probe", probe, "--template", PRESET, "--file", str(path), "--db", db]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["runs", "--db", db, "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    with Store(db) as store:
        attempts = store.attempts(run["run_id"])
        labels = store.labels(run["run_id"], "auto")
    got = {(a["item"], a["attempt"]): labels[a["id"]]["label"] for a in attempts}
    keys = [i.key for i in items(probe)]
    rows = gbf.answers(probe, case)
    assert len(got) == len(rows)
    for row in rows:
        want = "undetected" if row["evaluation_undetected"] else row["evaluation"]
        assert got[keys[row["item"]], row["repetition"]] == want, row["answer"][:200]
    assert main(["metrics", str(run["run_id"]), "--db", db, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def _f(value) -> float:
    return math.nan if value is None else float(value)


CASES = [(p, c) for p in PROBES for c in gbf.cases(p)]


@pytest.mark.parametrize(("probe", "case"), CASES, ids=[f"{p}.{c}" for p, c in CASES])
def test_imported_answers_give_1_1_0s_metrics_intervals_and_marks(tmp_path, capsys, probe, case):
    """Point values (calculate_cis=False), the harness bootstrap's intervals and its marks,
    within 1e-9; NaN where 1.1.0 gives NaN."""
    c = gbf.case(probe, case)
    got = _metrics_json(tmp_path, probe, case, capsys)
    point = {k: _f(v["value"]) for k, v in got.items()}
    assert not gbf.mismatches(point, gbf.point_metrics(c))
    ci = {k: (_f(v["ci"][0]), _f(v["ci"][1])) for k, v in got.items()}
    assert not gbf.mismatches(ci, gbf.intervals(c))
    want_marks = {k: (None if v is None else LETTERS[v]) for k, v in gbf.marks(c).items()}
    assert {k: got[k]["mark"] for k in want_marks} == want_marks


def test_the_preset_follows_1_1_0_where_gbdesk_differs(tmp_path, capsys):
    """Resampled per-stereotype rates that are 1.0 or NaN: 1.1.0 gives no interval (scipy's
    zero-scale interval); gbdesk's own presets give the value itself."""
    c = gbf.case("gest_creative", "two_items_all_male")
    assert all(math.isnan(x) for x in gbf.intervals(c)["masculine_rate_1"])
    got = _metrics_json(tmp_path, "gest_creative", "two_items_all_male", capsys)
    assert got["masculine_rate_1"]["ci"] == [None, None]
    probe = get_probe("gest_creative")
    from gbdesk.contract import ItemResult

    results = [
        ItemResult("a", {"stereotype_id": 1}, ["male"] * 4),
        ItemResult("b", {"stereotype_id": 8}, ["male"] * 4),
    ]
    own = probe.metrics(results, params=probe.resolve_params())
    assert own["masculine_rate_1"].ci == (1.0, 1.0)
    ref = probe.metrics(results, params=probe.resolve_params(template=PRESET))
    assert all(math.isnan(x) for x in ref["masculine_rate_1"].ci)


# -- wordings (issue 32) ---------------------------------------------------------------------
@pytest.mark.parametrize("probe", PROBES)
def test_a_wording_rewords_1_1_0s_items_and_keeps_its_interval_rule(probe):
    """Under a wording the items are the preset's (for gest_creative GEST 1.0, 1.1.0's
    file), each naming the wording, and the intervals follow 1.1.0's rule."""
    p = get_probe(probe)
    base = p.items(p.resolve_params(template=PRESET))
    reference_rule = p.interval_rule(p.resolve_params(template=PRESET))
    for wording in p.wordings()[1:]:
        params = p.resolve_params(wording=wording.id)
        items = p.items(params)
        assert [i.key for i in items] == [i.key for i in base]
        assert all(
            new.metadata == {**old.metadata, "wording": wording.id}
            for old, new in zip(base, items, strict=True)
        )
        assert p.interval_rule(params) is reference_rule
    if probe == "gest_creative":
        assert (
            p.resolve_params(wording=1)["gest_file"]
            == p.resolve_params(template=PRESET)["gest_file"]
            == "gest.csv"
        )
