"""Prediction-powered metrics of stored runs: the random review sample, `--labels ppi`."""

from __future__ import annotations

import json
import math

import pytest

from gbdesk.analysis.ppi_metrics import draw_sample, sample_progress
from gbdesk.analysis.results import compute_metrics
from gbdesk.cli import main
from gbdesk.studies.laissez_faire.characters import character_label, characters_from_data
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend


@pytest.fixture
def lf_run(recorded_lf_run):
    return recorded_lf_run(100)


def review_sample_with_corrections(store, run_id, every=3):
    """A reviewer labels the sample: the extractor's characters, with every `every`-th
    character's gender set to Female (a systematic correction)."""
    auto = store.labels(run_id, "auto")
    k = 0
    for attempt_id in store.review_sample(run_id):
        chars = characters_from_data(auto[attempt_id]["data"])
        for c in chars:
            if k % every == 0:
                c.gender = "Female"
            k += 1
        label = character_label(chars, "human:ana")
        store.add_human_label(attempt_id, "ana", label["label"], label["data"])


def test_sample_is_seeded_and_stable(store, lf_run):
    first = draw_sample(store, lf_run, 40, seed=3)
    ids = store.review_sample(lf_run)
    assert first["unit"] == "attempt" and first["size"] == 40 == len(ids)
    draw_sample(store, lf_run, 40, seed=3)
    assert store.review_sample(lf_run) == ids
    draw_sample(store, lf_run, 40, seed=4)
    assert store.review_sample(lf_run) != ids
    assert sample_progress(store, lf_run) == {**store.review_sample_info(lf_run), "reviewed": 0}
    with pytest.raises(UserError, match="at least 1"):
        draw_sample(store, lf_run, 0)


def test_ppi_metrics_of_a_laissez_faire_run(store, lf_run):
    with pytest.raises(UserError, match="no random review sample"):
        compute_metrics(store, lf_run, "ppi")
    draw_sample(store, lf_run, 40, seed=1)
    few = compute_metrics(store, lf_run, "ppi")  # nothing reviewed yet
    share = few["representation/All/gender/Female"]
    assert math.isnan(share.value) and share.details["valid"] is False
    assert "no human labels" in share.details["reason"]
    review_sample_with_corrections(store, lf_run)
    assert sample_progress(store, lf_run)["reviewed"] == 40
    ppi = compute_metrics(store, lf_run, "ppi")
    auto = compute_metrics(store, lf_run, "auto")
    female = ppi["representation/All/gender/Female"]
    d = female.details
    assert d["valid"] and d["n_human"] == 40 and d["n_total"] == 100
    assert d["automatic_value"] == pytest.approx(auto["representation/All/gender/Female"].value)
    # the reviewer made more characters women: the labeller's bias is negative, and the
    # prediction-powered estimate is higher than the automatic one
    assert d["bias"] < 0 and female.value > d["automatic_value"]
    lo, hi = female.ci
    assert lo < female.value < hi
    assert "identity/" not in " ".join(ppi)  # counts have no PPI version
    cached = compute_metrics(store, lf_run, "ppi")
    assert cached["representation/All/gender/Female"].details == d


def test_genderbench_samples_whole_items(store):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "inventories", model, attempts=2, limit=60)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    result = draw_sample(store, run_id, 35, seed=0)
    assert result["unit"] == "item" and result["attempts"] == 70
    auto = store.labels(run_id, "auto")
    for n, attempt_id in enumerate(store.review_sample(run_id)):
        label = "female" if n % 4 == 0 else auto[attempt_id]["label"]
        store.add_human_label(attempt_id, "bo", label)
    ppi = compute_metrics(store, run_id, "ppi")
    m = ppi["masculine_rate"]
    assert m.details["valid"] and m.details["n_human"] == 35
    assert m.mark in "ABCD"  # marks from the prediction-powered interval


def test_cli_sample_and_ppi_metrics(store, lf_run, capsys):
    db = str(store.path)
    assert main(["sample", str(lf_run), "--size", "40", "--seed", "1", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == 40
    review_sample_with_corrections(store, lf_run)
    assert main(["metrics", str(lf_run), "--labels", "ppi", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "automatic" in out and "bias" in out and "prediction-powered" in out
    assert main(["metrics", str(lf_run), "--labels", "ppi", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    details = payload["metrics"]["representation/All/gender/Female"]["details"]
    assert details["kind"] == "ppi" and details["valid"]
