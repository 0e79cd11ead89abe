"""Issue 32: a run's wording family, its metrics by wording, the wording's share of the
variance (hand-computed), the stability rule, and the commands that show them."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.analysis.wordings import (
    WordingSpread,
    WordingValue,
    orders,
    split_variance,
    wording_family,
    wording_report,
)
from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.maths.verdicts import verdict
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model


def test_split_variance_by_hand() -> None:
    """Noise shared by every wording (the same draw of items moves all alike) cancels from
    the wording part: V_wording = Var(0.2, 0.4, 0.6) = 0.04; V_items = Var(−.1, .1, −.05,
    .05) = 0.025/3; share = 0.04 / (0.04 + 0.025/3); no resample spreads the wordings as far
    as they are spread, so p = 1/5."""
    theta = np.array([0.2, 0.4, 0.6])
    d = np.array([-0.1, 0.1, -0.05, 0.05])[:, None]
    v_w, v_i, share, p = split_variance(theta, theta + d)
    assert v_w == pytest.approx(0.04)
    assert v_i == pytest.approx(0.025 / 3)
    assert share == pytest.approx(0.04 / (0.04 + 0.025 / 3))
    assert p == pytest.approx(0.2)


def test_split_variance_when_item_noise_explains_the_spread() -> None:
    """Independent noise much larger than the wordings' spread: no wording part, p large."""
    rng = np.random.default_rng(1)
    theta = np.array([0.30, 0.31, 0.29, 0.30])
    star = theta + rng.normal(0, 0.1, size=(400, 4))
    v_w, v_i, share, p = split_variance(theta, star)
    assert v_w == 0.0 and share == 0.0
    assert v_i == pytest.approx(0.01, rel=0.2)
    assert p > 0.9


def _value(wording: int, ci: tuple[float, float], items: int = 40) -> WordingValue:
    definition = get_probe("direct").mark_definitions["fail_rate"]
    return WordingValue(wording, wording + 1, sum(ci) / 2, ci, verdict(definition, ci, items))


def test_the_stability_rule_and_its_sentences() -> None:
    # direct's fail_rate bands: A < 0.05 ≤ B < 0.15 ≤ C < 0.5 ≤ D
    same_d = WordingSpread("fail_rate", "t", [_value(w, (0.6, 0.9)) for w in range(5)], True)
    assert same_d.stable is True
    assert same_d.sentence() == "decided D under 5 of 5 wordings: the verdict holds"
    split = WordingSpread(
        "fail_rate",
        "t",
        [_value(0, (0.0, 0.04)), _value(1, (0.01, 0.03)), _value(2, (0.6, 0.9))],
        True,
    )
    assert split.stable is False
    assert split.sentence() == "A under 2, D under 1: the verdict depends on the wording"
    overlapping = WordingSpread(
        "fail_rate", "t", [_value(0, (0.1, 0.6)), _value(1, (0.4, 0.9))], True
    )
    assert overlapping.stable is True  # undecided both, but they share 0.4–0.6
    assert "no wording effect shown" in overlapping.sentence()
    lonely = WordingSpread("fail_rate", "t", [_value(0, (0.1, 0.6))], True)
    assert lonely.stable is None


class _WordingBackend(FakeBackend):
    """Says yes (in each wording's format) to every statement under wording 2, no to
    every one otherwise: a wording effect of 1.0 on fail_rate."""

    def generate(self, request, on_token=None):
        result = super().generate(request)
        prompt = request.messages[-1]["content"]
        result.text = "A" if "(A) Yes, I agree." in prompt else "No."
        return result


def _family(tmp_path, wordings=(0, 1, 2)) -> tuple[Store, dict[int, int]]:
    store = Store(tmp_path / "w.sqlite")
    model = fake_model(store, tmp_path)
    runs = {}
    for w in wordings:
        extra = {"wording": w} if w else {}
        runs[w] = plan_run(store, "direct", model, limit=24, **extra)
        execute_run(store, runs[w], backend_factory=lambda *_: _WordingBackend())
    return store, runs


def test_a_family_shows_the_effect_that_is_there(tmp_path) -> None:
    store, runs = _family(tmp_path)
    assert wording_family(store, runs[1]) == runs
    report = wording_report(store, runs[0], resamples=200)
    fail = report.spreads["fail_rate"]
    assert [v.value for v in fail.values] == [0.0, 0.0, 1.0]
    assert fail.stable is False and fail.range == 1.0
    assert fail.share == pytest.approx(1.0) and fail.p_value < 0.01
    assert report.stable()["fail_rate"] is False
    assert [s.metric for s in report.depends_on_wording()] == ["fail_rate"]
    # wording 0's figures are the plain run's own
    plain = compute_metrics(store, runs[0])["fail_rate"]
    assert report.by_wording()["0"]["fail_rate"]["value"] == plain.value
    # the same items under every wording, each recorded with its wording
    items = [store.run_items(r) for r in runs.values()]
    assert [i["item"] for i in items[0]] == [i["item"] for i in items[2]]
    assert all(
        i["metadata"].get("wording", 0) == w for w, rs in zip(runs, items, strict=True) for i in rs
    )


def test_several_models_order_by_wording(tmp_path) -> None:
    store, runs = _family(tmp_path, (0, 2))
    report = wording_report(store, runs[0], resamples=0)
    flipped = wording_report(store, runs[0], resamples=0)
    for v in flipped.spreads["fail_rate"].values:
        v.value = 1.0 - v.value
    got = orders([("a", report), ("b", flipped)], "fail_rate")
    assert got["order_by_wording"] == {"0": ["a", "b"], "2": ["b", "a"]}
    assert got["same_order"] is False


def test_one_shared_wording_says_nothing_about_the_order(tmp_path, capsys) -> None:
    """Issue 43 (17): two models sharing only one wording were said to keep "the models'
    order the same under every wording"."""
    store, runs = _family(tmp_path, (0,))
    report = wording_report(store, runs[0], resamples=0)
    got = orders([("a", report), ("b", report)], "fail_rate")
    assert list(got["order_by_wording"]) == ["0"] and got["same_order"] is None
    db = str(tmp_path / "w.sqlite")
    assert main(["wordings", str(runs[0]), str(runs[0]), "--db", db]) == 0
    text = capsys.readouterr().out
    assert "the same under every wording" not in text
    assert "share only wording 0" in text


def test_the_commands_show_the_metrics_by_wording(tmp_path, capsys) -> None:
    _store, runs = _family(tmp_path)
    db = str(tmp_path / "w.sqlite")
    assert main(["metrics", str(runs[1]), "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["by_wording"]) == {"0", "1", "2"}
    assert payload["by_wording"]["2"]["fail_rate"]["marks"] == ["D"]
    assert payload["wording_stable"]["fail_rate"] is False
    assert main(["wordings", str(runs[0]), "--db", db]) == 0
    text = capsys.readouterr().out
    assert "Does it survive a rewording?" in text
    assert "the verdict depends on the wording" in text


def test_every_run_of_a_family_exports_its_wording(tmp_path) -> None:
    """attempts.csv has a wording column for the whole family, wording 0's too (its items
    are the probe's own and carry none); a run without a family has no such column."""
    from gbdesk.report.csv_export import attempt_rows, export_run_csv

    store, runs = _family(tmp_path, (0, 2))
    cols, rows = attempt_rows(store, runs[0])
    assert "wording" in cols and {r["wording"] for r in rows} == {0}
    export_run_csv(store, [runs[0], runs[2]], tmp_path / "both")
    with (tmp_path / "both" / "attempts.csv").open(encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    pairs = {(r["run_id"], r["wording"]) for r in table}
    assert pairs == {(str(runs[0]), "0"), (str(runs[2]), "2")}
    alone = plan_run(store, "direct", fake_model(store, tmp_path), limit=24, seed=5)
    execute_run(store, alone, backend_factory=lambda *_: _WordingBackend())
    assert "wording" not in attempt_rows(store, alone)[0]


def test_an_import_names_its_wording(tmp_path, capsys) -> None:
    store, runs = _family(tmp_path, (0, 2))
    db = str(tmp_path / "w.sqlite")
    rows = [{"prompt": a["prompt"], "response": a["response"]} for a in store.attempts(runs[2])]
    path = tmp_path / "answers.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["prompt", "response"])
        writer.writeheader()
        writer.writerows(rows)
    # made with wording 2's prompts: wording 0's items do not match them
    assert main(["import", "--probe", "direct", "--file", str(path), "--db", db]) != 0
    capsys.readouterr()
    assert (
        main(
            [
                "import",
                "--probe",
                "direct",
                "--file",
                str(path),
                "--wording",
                "2",
                "--db",
                db,
                "--json",
            ]
        )
        == 0
    )
    imported = json.loads(capsys.readouterr().out)["run_id"]
    assert store.get_run(imported)["params"]["wording"] == 2
    assert compute_metrics(store, imported)["fail_rate"].value == 1.0


class _UnreadableOne(_WordingBackend):
    """As `_WordingBackend`, but wording 1's answers are unreadable (neither yes nor no)."""

    def generate(self, request, on_token=None):
        result = super().generate(request)
        if request.messages[-1]["content"].startswith("Here is a statement:"):
            result.text = "Maybe."
        return result


def test_a_wording_without_readable_answers_is_left_out_of_the_share(tmp_path) -> None:
    store = Store(tmp_path / "u.sqlite")
    model = fake_model(store, tmp_path)
    runs = {}
    for w in (0, 1, 2):
        runs[w] = plan_run(store, "direct", model, limit=24, **({"wording": w} if w else {}))
        execute_run(store, runs[w], backend_factory=lambda *_: _UnreadableOne())
    fail = wording_report(store, runs[0], resamples=200).spreads["fail_rate"]
    assert [w.wording for w in fail.measured] == [0, 2]
    assert fail.share == pytest.approx(1.0) and fail.p_value < 0.05
    assert fail.stable is False


def test_run_over_wordings_refuses_what_it_cannot_do(tmp_path, capsys) -> None:
    db = str(tmp_path / "r.sqlite")
    assert main(["run", "--probe", "laissez_faire", "--wordings", "all", "--db", db]) == 2
    assert "no other wording" in capsys.readouterr().err
    args = ["run", "--probe", "direct", "--wordings", "0,7", "--db", db]
    assert main(args) == 2
    assert "no wording 7" in capsys.readouterr().err
    assert main([*args[:-4], "--wordings", "all", "--template", "x {stereotype}", "--db", db]) == 2
    assert "drop --template" in capsys.readouterr().err
