"""gbdesk.maths.agreement against published worked examples and hand-computed cases."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from gbdesk.maths.agreement import (
    AgreementUndefined,
    agreement_summary,
    cohen_kappa,
    disagreements,
    fleiss_kappa,
    krippendorff_alpha,
    multi_code_agreement,
    percent_agreement,
    ratings_frame,
)

# -- published tables -------------------------------------------------------------------

# Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
# Bulletin 76(5), 378-382, Table 1: 30 patients, 6 psychiatrists each, number of
# psychiatrists assigning each patient to each of 5 diagnoses. Published: p_j = .144, .144,
# .167, .306, .239; P̄ = .556; P̄e = .220; κ = .430; per-category κ_j (Table 2) = .245, .245,
# .520, .471, .566.
FLEISS_1971_CATEGORIES = (
    "depression",
    "personality disorder",
    "schizophrenia",
    "neurosis",
    "other",
)
FLEISS_1971 = [
    [0, 0, 0, 6, 0],
    [0, 3, 0, 0, 3],
    [0, 1, 4, 0, 1],
    [0, 0, 0, 0, 6],
    [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0],
    [0, 0, 4, 0, 2],
    [2, 0, 3, 1, 0],
    [2, 0, 0, 4, 0],
    [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0],
    [1, 1, 0, 4, 0],
    [0, 3, 3, 0, 0],
    [1, 0, 0, 5, 0],
    [0, 2, 0, 3, 1],
    [0, 0, 5, 0, 1],
    [3, 0, 0, 1, 2],
    [5, 1, 0, 0, 0],
    [0, 2, 0, 4, 0],
    [1, 0, 2, 0, 3],
    [0, 0, 0, 0, 6],
    [0, 1, 0, 5, 0],
    [0, 2, 0, 1, 3],
    [2, 0, 0, 4, 0],
    [1, 0, 0, 4, 1],
    [0, 5, 0, 1, 0],
    [4, 0, 0, 0, 2],
    [0, 2, 0, 4, 0],
    [1, 0, 5, 0, 0],
    [0, 0, 0, 0, 6],
]
FLEISS_1971_KAPPA_J = (0.245, 0.245, 0.520, 0.471, 0.566)

# Wikipedia, "Fleiss' kappa", Worked example: 10 subjects, 14 raters, 5 categories.
# Published: P̄ = 0.378, P̄e = 0.213, κ = 0.210.
WIKIPEDIA_FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School
# for Communication, University of Pennsylvania, example C (nominal data, any number of
# observers, missing data): 4 observers x 12 units, "." = missing. Published: α nominal
# = 0.743; the same data as ordinal 0.815, interval 0.849, ratio 0.797 (section E).
KRIPPENDORFF_2011 = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}

# Wikipedia, "Krippendorff's alpha", A computational example: 3 coders x 15 units, "*" =
# missing. Published: α nominal = 0.691, α interval = 0.811.
WIKIPEDIA_KRIPPENDORFF = {
    "A": "* * * * * 3 4 1 2 1 1 3 3 * 3",
    "B": "1 * 2 1 3 3 4 3 * * * * * * *",
    "C": "* * 2 1 3 4 4 * 2 1 1 3 3 * 4",
}


def counts_to_ratings(table, categories=None):
    """A subjects x categories count table as (unit, rater, value) rows; raters are
    numbered within each subject (Fleiss' raters need not be the same people)."""
    rows = []
    for unit, counts in enumerate(table):
        rater = 0
        for j, n in enumerate(counts):
            for _ in range(n):
                value = categories[j] if categories else j
                rows.append((unit, f"r{rater}", value))
                rater += 1
    return rows


def matrix_to_ratings(matrix, missing):
    return [
        (unit, rater, None if v == missing else int(v))
        for rater, line in matrix.items()
        for unit, v in enumerate(line.split())
    ]


# -- Fleiss' kappa ------------------------------------------------------------------------


def test_fleiss_1971_published_kappa_and_mean_agreement():
    assert all(sum(row) == 6 for row in FLEISS_1971)  # the table is entered right
    ratings = counts_to_ratings(FLEISS_1971, FLEISS_1971_CATEGORIES)
    assert fleiss_kappa(ratings) == pytest.approx(0.430, abs=5e-4)
    agreement = percent_agreement(ratings)
    assert agreement.pairwise == pytest.approx(0.556, abs=5e-4)  # Fleiss' P̄
    assert agreement.n_units == 30


def test_fleiss_1971_per_category_kappa_through_multi_code():
    # Fleiss' κ_j of category j equals Fleiss' κ of the binary label "j / not j", which is
    # what the multi-code path computes for each code (each rating a one-code set).
    ratings = [(u, r, {v}) for u, r, v in counts_to_ratings(FLEISS_1971, FLEISS_1971_CATEGORIES)]
    result = multi_code_agreement(ratings, codes=FLEISS_1971_CATEGORIES)
    for entry, kappa_j, p_j in zip(
        result["codes"], FLEISS_1971_KAPPA_J, (0.144, 0.144, 0.167, 0.306, 0.239), strict=True
    ):
        assert entry["fleiss_kappa"]["value"] == pytest.approx(kappa_j, abs=5e-4), entry["code"]
        assert entry["prevalence"] == pytest.approx(p_j, abs=5e-4)


def test_wikipedia_fleiss_example():
    assert all(sum(row) == 14 for row in WIKIPEDIA_FLEISS)
    ratings = counts_to_ratings(WIKIPEDIA_FLEISS)
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)
    assert percent_agreement(ratings).pairwise == pytest.approx(0.378, abs=5e-4)
    summary = agreement_summary(ratings)
    assert summary["fleiss_kappa"]["value"] == pytest.approx(0.210, abs=5e-4)
    assert summary["cohen_kappa"]["value"] is None
    assert "exactly two raters" in summary["cohen_kappa"]["reason"]


def test_fleiss_refuses_unequal_counts_with_a_readable_message():
    ratings = [(1, "a", "x"), (1, "b", "x"), (1, "c", "y"), (2, "a", "x"), (2, "b", "y")]
    with pytest.raises(ValueError, match="same number of ratings for every unit") as info:
        fleiss_kappa(ratings)
    assert "1 unit with 2, 1 unit with 3" in str(info.value)
    assert "Krippendorff" in str(info.value)
    summary = agreement_summary(ratings)
    assert summary["fleiss_kappa"]["value"] is None
    assert "same number of ratings" in summary["fleiss_kappa"]["reason"]
    assert summary["krippendorff_alpha"]["value"] is not None


# -- Krippendorff's alpha -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_example(level, published):
    ratings = matrix_to_ratings(KRIPPENDORFF_2011, ".")
    assert krippendorff_alpha(ratings, level) == pytest.approx(published, abs=5e-4)


def test_krippendorff_2011_example_from_a_dataframe_with_string_values():
    # Nominal α does not depend on how the values are spelled; the DataFrame path too.
    rows = matrix_to_ratings(KRIPPENDORFF_2011, ".")
    frame = pd.DataFrame(
        [(u, r, None if v is None else f"code {v}") for u, r, v in rows],
        columns=["unit", "rater", "value"],
    )
    assert krippendorff_alpha(frame) == pytest.approx(0.743, abs=5e-4)
    # Ordinal with an explicit order of string values gives the published ordinal α.
    order = [f"code {i}" for i in range(1, 6)]
    assert krippendorff_alpha(frame, "ordinal", order=order) == pytest.approx(0.815, abs=5e-4)
    summary = agreement_summary(frame)
    assert summary["n_units"] == 12
    assert summary["n_units_overlap"] == 11  # unit 12 has a single value
    assert summary["n_raters"] == 4
    assert summary["krippendorff_alpha"]["value"] == pytest.approx(0.743, abs=5e-4)
    assert summary["fleiss_kappa"]["value"] is None  # 2 to 4 ratings per unit


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.691), ("interval", 0.811)])
def test_wikipedia_krippendorff_example(level, published):
    ratings = matrix_to_ratings(WIKIPEDIA_KRIPPENDORFF, "*")
    assert krippendorff_alpha(ratings, level) == pytest.approx(published, abs=5e-4)


# -- Cohen's kappa ------------------------------------------------------------------------


def two_by_two(yes_yes, yes_no, no_yes, no_no):
    """Rater A's and B's yes/no over the cells of a 2x2 table (A first)."""
    rows = []
    cells = [("yes", "yes", yes_yes), ("yes", "no", yes_no), ("no", "yes", no_yes)]
    cells.append(("no", "no", no_no))
    unit = 0
    for a, b, n in cells:
        for _ in range(n):
            rows += [(unit, "A", a), (unit, "B", b)]
            unit += 1
    return rows


def test_wikipedia_cohen_kappa_example():
    # Wikipedia, "Cohen's kappa", Simple example: 50 grant proposals, both yes 20, A yes
    # and B no 5, A no and B yes 10, both no 15. Published: p_o = 0.7, p_e = 0.5, κ = 0.4.
    ratings = two_by_two(20, 5, 10, 15)
    assert cohen_kappa(ratings) == pytest.approx(0.4, abs=1e-12)
    assert percent_agreement(ratings).pairwise == pytest.approx(0.7)
    summary = agreement_summary(ratings)
    assert summary["cohen_kappa"] == {"value": pytest.approx(0.4), "n_units": 50, "reason": None}


def test_wikipedia_cohen_same_agreement_different_kappa():
    # Wikipedia, "Cohen's kappa", Same percentages but different numbers: both tables have
    # 60 % agreement out of 100; published κ = 0.1304 and 0.2593.
    assert cohen_kappa(two_by_two(45, 15, 25, 15)) == pytest.approx(0.1304, abs=5e-5)
    assert cohen_kappa(two_by_two(25, 35, 5, 35)) == pytest.approx(0.2593, abs=5e-5)


def test_cohen_kappa_uses_units_both_raters_rated():
    # Raters A and B of Krippendorff's example: both rated units 1-9 (hand-computed):
    # p_o = 8/9, A's marginals 3,3,2,1 and B's 2,4,2,1 over values 1-4, p_e = 23/81,
    # κ = (8/9 - 23/81) / (1 - 23/81) = 49/58.
    ratings = matrix_to_ratings(KRIPPENDORFF_2011, ".")
    assert cohen_kappa(ratings, raters=("A", "B")) == pytest.approx(49 / 58)
    with pytest.raises(AgreementUndefined, match="exactly two raters; there are 4"):
        cohen_kappa(ratings)


# -- percent agreement --------------------------------------------------------------------


def test_percent_agreement_definitions_by_hand():
    ratings = [
        (1, "a", "x"), (1, "b", "x"), (1, "c", "x"),  # all agree
        (2, "a", "x"), (2, "b", "x"), (2, "c", "y"),  # 2 of 3
        (3, "a", "x"), (3, "b", "y"), (3, "c", "z"),  # none
        (4, "a", "y"), (4, "b", "y"), (4, "c", None),  # 2 of 2 (c did not rate)
        (5, "a", "y"),  # rated once: left out
    ]  # fmt: skip
    result = percent_agreement(ratings)
    assert result.n_units == 4
    assert result.pairwise == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)
    assert result.all_agree == pytest.approx(2 / 4)
    assert result.at_least == {2: pytest.approx(3 / 4), 3: pytest.approx(1 / 4)}


def test_percent_agreement_two_of_three_share():
    # 60 units x 3 raters, one unit where all three differ: "agreed by >= 2 of 3" 59/60.
    ratings = []
    for unit in range(60):
        values = ("x", "y", "z") if unit == 0 else ("x", "x", "y" if unit % 2 else "x")
        ratings += [(unit, rater, v) for rater, v in zip("abc", values, strict=True)]
    result = percent_agreement(ratings)
    assert result.at_least[2] == pytest.approx(59 / 60)
    assert round(100 * result.at_least[2], 2) == 98.33
    assert result.all_agree == pytest.approx(29 / 60)


# -- multi-code ---------------------------------------------------------------------------

# Two raters code four stories with W ("White Savior") and P ("Perpetual Foreigner").
TWO_CODERS = [
    ("s1", "A", {"W", "P"}), ("s1", "B", {"W"}),
    ("s2", "A", set()), ("s2", "B", []),
    ("s3", "A", ["P"]), ("s3", "B", "P"),
    ("s4", "A", {"W"}), ("s4", "B", ("W", "P")),
]  # fmt: skip


def test_multi_code_two_coders_by_hand():
    # Code W: A and B agree on all four stories (two present, two absent): α = 1, κ = 1.
    # Code P: pairs (1,0) (0,0) (1,1) (0,1): coincidences o00 = o11 = o01 = o10 = 2, n = 8,
    #   n0 = n1 = 4; α = 1 - (n-1) o01 / (n0 n1) = 1 - 7*2/16 = 0.125; p_o = p_e = 0.5, κ = 0.
    # Pooled over the 8 (story, code) pairs: o01 = o10 = 2, n = 16, n0 = n1 = 8,
    #   α = 1 - 15*2/64 = 0.53125. Mean of the per-code α's: (1 + 0.125) / 2 = 0.5625.
    result = multi_code_agreement(TWO_CODERS)
    by_code = {entry["code"]: entry for entry in result["codes"]}
    assert list(by_code) == ["P", "W"]
    assert by_code["W"]["krippendorff_alpha"]["value"] == pytest.approx(1.0)
    assert by_code["W"]["cohen_kappa"]["value"] == pytest.approx(1.0)
    assert by_code["P"]["krippendorff_alpha"]["value"] == pytest.approx(0.125)
    assert by_code["P"]["cohen_kappa"]["value"] == pytest.approx(0.0)
    assert by_code["P"]["percent_agreement"]["pairwise"] == pytest.approx(0.5)
    assert by_code["P"]["prevalence"] == pytest.approx(0.5)
    assert result["pooled"]["krippendorff_alpha"]["value"] == pytest.approx(0.53125)
    assert result["pooled"]["n_units"] == 8
    assert result["mean_alpha"] == pytest.approx(0.5625)
    # Whole sets: equal on s2 and s3 only.
    summary = agreement_summary(TWO_CODERS, multi_code=True)
    assert summary["percent_agreement"]["pairwise"] == pytest.approx(0.5)
    assert summary["multi_code"]["mean_alpha"] == pytest.approx(0.5625)
    json.dumps(summary, allow_nan=False)


def test_multi_code_three_coders_with_a_missing_rating_by_hand():
    # A third coder C: s1 {W}, s2 not rated, s3 {}, s4 {W}.
    # Code P per story (A, B, C): s1 (1,0,0), s2 (0,0,-), s3 (1,1,0), s4 (0,1,0).
    # Coincidences (each ordered pair within a story weighted 1/(m_u - 1)):
    #   s1: o10 += 1, o01 += 1, o00 += 1; s2: o00 += 2; s3: o11 += 1, o10 += 1, o01 += 1;
    #   s4: o10 += 1, o01 += 1, o00 += 1  ->  o00 = 4, o11 = 1, o01 = o10 = 3, n = 11,
    #   n0 = 7, n1 = 4;  α = 1 - (n-1) o01 / (n0 n1) = 1 - 10*3/28 = -1/14.
    # Code W: every story unanimous (s1, s4 present; s2, s3 absent): α = 1.
    ratings = [*TWO_CODERS, ("s1", "C", {"W"}), ("s2", "C", None), ("s3", "C", set())]
    ratings.append(("s4", "C", "W"))
    result = multi_code_agreement(ratings)
    by_code = {entry["code"]: entry for entry in result["codes"]}
    assert by_code["P"]["krippendorff_alpha"]["value"] == pytest.approx(-1 / 14)
    assert by_code["W"]["krippendorff_alpha"]["value"] == pytest.approx(1.0)
    assert by_code["P"]["cohen_kappa"]["value"] is None  # three coders
    assert by_code["P"]["fleiss_kappa"]["value"] is None  # s2 has two ratings, others three


def test_multi_code_long_format_rows_are_merged():
    long = [("s1", "A", "W"), ("s1", "A", "P"), ("s1", "B", "W")]
    result = multi_code_agreement(long)
    assert [entry["code"] for entry in result["codes"]] == ["P", "W"]
    by_code = {entry["code"]: entry for entry in result["codes"]}
    assert by_code["P"]["percent_agreement"]["pairwise"] == 0.0
    assert by_code["W"]["percent_agreement"]["pairwise"] == 1.0


def test_multi_code_unused_code_has_a_reason():
    result = multi_code_agreement(TWO_CODERS, codes=["W", "P", "Model Minority"])
    unused = result["codes"][2]
    assert unused["code"] == "Model Minority"
    assert unused["prevalence"] == 0.0
    assert unused["krippendorff_alpha"]["value"] is None
    assert "same value" in unused["krippendorff_alpha"]["reason"]
    assert result["mean_alpha_n_codes"] == 2


# -- disagreements ------------------------------------------------------------------------


def test_disagreements_list_each_raters_value():
    ratings = [
        (1, "b", "male"), (1, "a", "male"),
        (2, "a", "male"), (2, "b", "female"), (2, "c", "female"),
        (3, "a", "undetected"), (3, "b", "male"),
        (4, "a", "female"),
    ]  # fmt: skip
    found = disagreements(ratings)
    assert [d.unit for d in found] == [2, 3]
    assert found[0].values == {"a": "male", "b": "female", "c": "female"}
    assert found[0].majority == "female"
    assert found[1].majority is None
    assert found[1].to_json() == {
        "unit": 3,
        "values": {"a": "undetected", "b": "male"},
        "majority": None,
    }


def test_multi_code_disagreements_name_the_disputed_codes():
    found = disagreements(TWO_CODERS, multi_code=True)
    assert [d.unit for d in found] == ["s1", "s4"]
    assert found[0].disputed_codes == ["P"]
    assert found[0].to_json()["values"] == {"A": ["P", "W"], "B": ["W"]}


# -- degenerate input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratings", "reason"),
    [
        ([], "no ratings"),
        ([(1, "a", "x"), (2, "a", "y")], "only one rater"),
        ([(1, "a", "x"), (2, "b", "y")], "no unit was rated by two raters"),
        ([(1, "a", None), (1, "b", "x")], "only one rater"),
    ],
)
def test_summary_never_raises_without_overlap(ratings, reason):
    summary = agreement_summary(ratings)
    json.dumps(summary, allow_nan=False)
    assert summary["percent_agreement"]["pairwise"] is None
    assert reason in summary["percent_agreement"]["reason"]
    for name in ("fleiss_kappa", "krippendorff_alpha"):
        assert summary[name]["value"] is None
        assert reason in summary[name]["reason"]
    assert summary["cohen_kappa"]["value"] is None


def test_summary_single_category():
    ratings = [(u, r, "male") for u in range(5) for r in ("a", "b")]
    summary = agreement_summary(ratings)
    json.dumps(summary, allow_nan=False)
    assert summary["percent_agreement"]["pairwise"] == 1.0
    assert summary["n_categories"] == 1
    for name in ("cohen_kappa", "fleiss_kappa", "krippendorff_alpha"):
        assert summary[name]["value"] is None
        assert "same" in summary[name]["reason"]
    with pytest.raises(AgreementUndefined):
        krippendorff_alpha(ratings)


def test_duplicate_ratings_are_refused_unless_last_is_asked():
    ratings = [(1, "a", "x"), (1, "a", "y"), (1, "b", "y")]
    with pytest.raises(ValueError, match="rated unit 1 twice"):
        percent_agreement(ratings)
    frame = ratings_frame(ratings, duplicates="last")
    assert len(frame) == 2
    assert percent_agreement(frame).all_agree == 1.0


def test_missing_values_are_dropped():
    frame = pd.DataFrame(
        {"unit": [1, 1, 1, 2, 2], "rater": list("abcab"), "value": ["x", "x", math.nan, "y", "x"]}
    )
    summary = agreement_summary(frame)
    assert summary["n_ratings"] == 4
    assert summary["n_raters"] == 2
    assert summary["cohen_kappa"]["n_units"] == 2
    assert summary["ratings_per_unit"] == {"2": 2}
