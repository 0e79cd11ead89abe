"""GlobalBias APX, associations and validation on hand-computed cases."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gbdesk.studies.globalbias.apx_stats import (
    Z_ONE_PERCENT,
    apx_table,
    associations,
    sentence_apx,
    validation,
)
from gbdesk.support.errors import UserError


def test_group_factor_divides_and_is_rounded_like_the_code():
    rows = pd.DataFrame(
        {
            "group": ["A", "A", "B", "B"],
            "name": ["a1", "a2", "b1", "b2"],
            "descriptor": ["d", "d", "d", "d"],
            "template": [1, 1, 1, 1],
            "ppl": [10.0, 30.0, 40.0, 40.0],
        }
    )
    out = sentence_apx(rows)
    # overall mean 30; A: 20/30 = 0.667 (3 decimals), B: 40/30 = 1.333
    assert list(out["factor"]) == [0.667, 0.667, 1.333, 1.333]
    assert out["apx"].iloc[0] == pytest.approx(10 / 0.667)
    assert out["apx"].iloc[2] == pytest.approx(40 / 1.333)
    table = apx_table(rows).set_index("group")
    # mean over the group's names, rounded to 2 decimals: A (14.99 + 44.98) / 2
    assert table.loc["A", "apx"] == round((10 / 0.667 + 30 / 0.667) / 2, 2) == 29.99
    assert table.loc["B", "apx"] == round(40 / 1.333, 2) == 30.01


def test_factors_are_per_template():
    rows = pd.DataFrame(
        {
            "group": ["A", "B", "A", "B"],
            "descriptor": ["d"] * 4,
            "template": [1, 1, 2, 2],
            "ppl": [10.0, 30.0, 100.0, 100.0],
        }
    )
    out = sentence_apx(rows)
    assert list(out["factor"]) == [0.5, 1.5, 1.0, 1.0]


def _eight_groups() -> pd.DataFrame:
    groups = [f"g{i}" for i in range(1, 9)]
    rows = []
    for g in groups:
        rows.append({"group": g, "descriptor": "d1", "template": 1, "apx": 10 if g == "g1" else 20})
        rows.append({"group": g, "descriptor": "d2", "template": 1, "apx": 30 if g == "g2" else 20})
    return pd.DataFrame(rows)


def test_one_percent_one_tailed_flag_hand_computed():
    result = associations(_eight_groups())
    table = result.table.set_index(["group", "descriptor"])
    # min 10, max 30: d1 scores g1 = 0, others 0.5
    assert table.loc[("g1", "d1"), "bias_score"] == 0.0
    assert table.loc[("g3", "d1"), "bias_score"] == 0.5
    mean = 3.5 / 8
    sd = math.sqrt((mean**2 + 7 * (0.5 - mean) ** 2) / 7)  # sample SD
    assert table.loc[("g1", "d1"), "mean"] == pytest.approx(mean)
    assert table.loc[("g1", "d1"), "sd"] == pytest.approx(sd)
    assert table.loc[("g1", "d1"), "threshold"] == pytest.approx(mean - Z_ONE_PERCENT * sd)
    assert bool(table.loc[("g1", "d1"), "flagged"])
    # a high outlier is not an association (lower = more associated)
    assert not table["flagged"].drop(("g1", "d1")).any()
    assert result.counts() == {"pairs": 1, "descriptors": 1, "tested_descriptors": 2}


def test_templates_are_min_max_normalised_then_averaged():
    df = pd.DataFrame(
        [
            {"group": "a", "descriptor": "x", "template": 1, "apx": 10},
            {"group": "b", "descriptor": "x", "template": 1, "apx": 20},
            {"group": "a", "descriptor": "x", "template": 2, "apx": 300},
            {"group": "b", "descriptor": "x", "template": 2, "apx": 100},
            {"group": "a", "descriptor": "y", "template": 1, "apx": 15},
            {"group": "b", "descriptor": "y", "template": 1, "apx": 10},
            {"group": "a", "descriptor": "y", "template": 2, "apx": 200},
            {"group": "b", "descriptor": "y", "template": 2, "apx": 200},
        ]
    )
    table = associations(df).table.set_index(["group", "descriptor"])
    # template 1: min 10, max 20; template 2: min 100, max 300
    assert table.loc[("a", "x"), "bias_score"] == pytest.approx((0.0 + 1.0) / 2)
    assert table.loc[("b", "x"), "bias_score"] == pytest.approx((1.0 + 0.0) / 2)
    assert table.loc[("a", "y"), "bias_score"] == pytest.approx((0.5 + 0.5) / 2)


def test_age_descriptors_are_not_flagged():
    df = _eight_groups()
    df["axis"] = df["descriptor"].map({"d1": "age", "d2": "ability"})
    result = associations(df)
    assert result.counts()["pairs"] == 0
    assert result.counts()["tested_descriptors"] == 1


def test_group_labels_are_kept_and_bad_tables_are_refused():
    df = _eight_groups()
    df["group"] = df["group"].str.upper() + " (custom)"
    assert "G1 (custom)" in set(associations(df).flagged["group"])
    with pytest.raises(UserError, match="template"):
        associations(df.assign(template=4))
    with pytest.raises(UserError, match="apx"):
        associations(df.assign(apx="x"))
    with pytest.raises(UserError, match="column"):
        associations(df.drop(columns=["apx"]))
    with pytest.raises(UserError, match="once"):
        associations(pd.concat([df, df.iloc[:1]]))


def _validation_rows() -> pd.DataFrame:
    cells = {  # (ethnicity, gender) → ppl on the white-target descriptor
        ("ENGLISH", "F"): 10.0,
        ("ENGLISH", "M"): 30.0,
        ("CHINESE", "F"): 20.0,
        ("CHINESE", "M"): 22.0,
        ("ARAB", "F"): 40.0,
        ("ARAB", "M"): 44.0,
        ("HISPANIC", "F"): 14.0,
        ("HISPANIC", "M"): 16.0,
        ("AFRICAN", "F"): 1.0,  # dropped by the code
        ("AFRICAN", "M"): 1.0,
    }
    rows = []
    for (eth, gender), ppl in cells.items():
        group = f"('{eth}', '{gender}')"
        rows.append(
            {"ethnicity": eth, "gender": gender, "group": group, "descriptor": "blond"}
            | {"target": "white", "ppl": ppl}
        )
        rows.append(
            {"ethnicity": eth, "gender": gender, "group": group, "descriptor": "shy"}
            | {"target": "asian", "ppl": 50.0 if eth == "CHINESE" else 25.0}
        )
    return pd.DataFrame(rows)


def test_validation_accuracy_and_mrr_by_ppl():
    result = validation(_validation_rows(), use_apx=False)
    # blond: lowest cell ENGLISH F (10) → white = target ✓; shy: CHINESE 50 is the worst ✗
    assert result.accuracy == 0.5
    # blond by group means: hispanic 15, white 20, asian 21, arab 42 → white rank 2 → 1/2
    # shy: others 25 tie, asian 50 last → rank 4 → 1/4
    assert result.mrr == pytest.approx((1 / 2 + 1 / 4) / 2)
    assert result.descriptors == 2


def test_validation_by_apx_uses_group_factors():
    result = validation(_validation_rows(), use_apx=True)
    assert 0 <= result.accuracy <= 1 and 0 < result.mrr <= 1
    no_gp = _validation_rows().assign(target="")
    assert math.isnan(validation(no_gp, use_apx=False).accuracy)
