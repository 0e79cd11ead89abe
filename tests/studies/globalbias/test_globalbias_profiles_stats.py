"""GlobalBias character-profile analysis: Table 6, ablation, JSD top words, small data."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from gbdesk.studies.globalbias import profiles_stats as gps
from gbdesk.support.errors import UserError
from gbdesk.support.paths import resource


@pytest.fixture(scope="module")
def llama3() -> pd.DataFrame:
    return gps.read_profiles_csv(resource("globalbias/10a_llama3_full.csv"))


@pytest.fixture(scope="module")
def llama3_ablation(llama3) -> pd.DataFrame:
    return gps.ablation(llama3)


def _record(row: pd.Series) -> dict:
    """A CSV row back into the nested JSON shape a model returns (lists as lists)."""
    record = {
        "name": row["name"],
        "age": int(row["age"]),
        "personality_traits": list(row["personality_traits"]),
        "negative_traits": list(row["negative_traits"]),
        "hobbies": list(row["hobbies"]),
        "occupation": row["occupation"],
        "physical_characteristics": {
            sub: row[f"physical_characteristics.{sub}"] for sub in gps.PHYSICAL_SUBFIELDS
        },
        "special_move": row["special_move"],
        "socioeconomic_status": row["socioeconomic_status"],
        "sexual_orientation": row["sexual_orientation"],
        "religion": row["religion"],
        "run_id": int(row["run_id"]),
        "Ethnicity": row["Ethnicity"],
        "Gender": row["Gender"],
    }
    record["physical_characteristics"]["height"] = float(row["physical_characteristics.height"])
    return record


def _tiny_records(n: int = 12) -> list[dict]:
    """n profiles as a tiny model might return them: one name per group, gaps included."""
    ethnicities = ["ITALIAN", "CHINESE", "ARAB", "NORDIC", "INDIAN", "AFRICAN"]
    out = []
    for i in range(n):
        record = {
            "name": f"Name{i}",
            "age": 20 + i,
            "personality_traits": ["kind", "brave"] if i % 2 else "curious, calm",
            "negative_traits": ["stubborn"],
            "hobbies": ["reading"],
            "occupation": "Teacher" if i % 3 else "Engineer",
            "physical_characteristics": {"height": 5.5 + i / 10, "hair_colour": "brown"},
            "religion": None,
            "run_id": 0,
            "Ethnicity": ethnicities[i % 6],
            "Gender": "F" if i < n // 2 else "M",
        }
        out.append(record)
    return out


# --------------------------------------------------------------------------- Table 6


def test_reproduces_table6_on_the_released_llama3_file(llama3):
    assert len(llama3) == 1200
    result = gps.svm_accuracies(llama3)
    assert set(result) == {"group", "ethnicity", "gender"}
    got = {k: round(100 * v["accuracy"], 1) for k, v in result.items()}
    assert got == {"group": 18.3, "ethnicity": 30.6, "gender": 83.3}
    assert {k: round(v["accuracy"], 3) for k, v in result.items()} == gps.PAPER_TABLE6_LLAMA3
    assert [result[k]["n_classes"] for k in ("group", "ethnicity", "gender")] == [40, 20, 2]
    for key, row in result.items():
        assert row["n_profiles"] == 1200
        assert (row["n_train"], row["n_test"]) == (840, 360)
        assert row["chance"] == gps.CHANCE[key] == pytest.approx(row["chance_observed"])
        assert row["reason"] is None
    assert gps.svm_accuracy(llama3, "Gender") == pytest.approx(0.8333, abs=1e-4)


def test_the_csv_index_column_is_not_a_feature(llama3):
    raw = pd.read_csv(resource("globalbias/10a_llama3_full.csv"))
    assert raw.columns[0] == "Unnamed: 0"
    assert "Unnamed: 0" not in llama3.columns
    assert list(llama3.columns) == list(gps.COLUMNS)
    # the released rows are already de-duplicated (1206 generated, 6 dropped: index ends at 1205)
    assert llama3.index.max() == 1205
    assert len(gps.drop_duplicate_profiles(llama3)) == 1200


def test_duplicates_are_dropped_first(llama3):
    doubled = pd.concat([llama3.iloc[:5], llama3])
    assert len(gps.drop_duplicate_profiles(doubled)) == 1200
    assert gps.svm_result(doubled, "gender").n_profiles == 1200


def test_repeated_splits_give_a_mean_and_sd(llama3):
    mean, sd, n = gps.repeated_split_accuracy(llama3, "gender", n_splits=3, seed=0)
    assert n == 3
    assert 0.7 < mean < 0.95
    assert 0 <= sd < 0.1
    again = gps.repeated_split_accuracy(llama3, "gender", n_splits=3, seed=0)
    assert again == (mean, sd, n)
    with pytest.raises(UserError):
        gps.repeated_split_accuracy(llama3, "gender", n_splits=0)


# --------------------------------------------------------------------------- ablation


def test_ablation_has_one_row_per_feature_and_target(llama3_ablation):
    a = llama3_ablation
    assert list(a.columns[:4]) == ["feature", "target", "accuracy", "delta"]
    assert len(a) == len(gps.FEATURES) * 3 == 39
    assert set(zip(a.feature, a.target, strict=True)) == {
        (f, t) for f in gps.FEATURES for t in ("group", "ethnicity", "gender")
    }
    assert a.reason.isna().all()
    full = {"group": 66 / 360, "ethnicity": 110 / 360, "gender": 300 / 360}
    for row in a.itertuples():
        assert row.delta == pytest.approx(row.accuracy - full[row.target])


def test_ablation_matches_the_released_ethnicity_table(llama3_ablation):
    # code/10 generation_results_analysis.ipynb, "Strongest Features", llama3:
    # 100 · (round(accuracy without the column, 3) − 0.306)
    printed = {
        "religion": -11.4,
        "physical_characteristics.eye_colour": -2.5,
        "physical_characteristics.skin_colour": -0.3,
        "negative_traits": 0.0,
        "personality_traits": 0.2,
        "physical_characteristics.build": 0.2,
        "occupation": 0.8,
        "hobbies": 1.1,
        "sexual_orientation": 1.1,
        "socioeconomic_status": 1.3,
        "physical_characteristics.height": 1.6,
        "physical_characteristics.hair_colour": 2.2,
        "age": 2.5,
    }
    eth = llama3_ablation[llama3_ablation.target == "ethnicity"]
    got = {r.feature: round(100 * (round(r.accuracy, 3) - 0.306), 1) for r in eth.itertuples()}
    assert got == printed


# --------------------------------------------------------------------------- JSD


def test_jsd_matches_scipy_on_a_hand_case():
    c1 = {"a": 3, "b": 1}
    c2 = {"a": 1, "b": 1, "c": 2}
    p = [0.75, 0.25, 0.0]
    q = [0.25, 0.25, 0.5]
    expected = jensenshannon(p, q, base=2) ** 2
    assert gps.jensen_shannon_divergence(c1, c2) == pytest.approx(expected, abs=1e-12)
    terms = gps.jsd_contributions(c1, c2)
    assert math.fsum(terms.values()) == pytest.approx(expected, abs=1e-12)
    # word "c" only outside: 0.5 · 0.5 · log2(0.5 / 0.25) = 0.25
    assert terms["c"] == pytest.approx(0.25)
    # word "b" equally frequent: no contribution
    assert terms["b"] == pytest.approx(0.0)
    # word "a": 0.5·0.75·log2(0.75/0.5) + 0.5·0.25·log2(0.25/0.5)
    assert terms["a"] == pytest.approx(0.375 * math.log2(1.5) - 0.125)
    assert gps.jensen_shannon_divergence({"a": 1}, {"a": 5}) == 0.0
    assert gps.jensen_shannon_divergence({"a": 1}, {"b": 5}) == pytest.approx(1.0)
    assert math.isnan(gps.jensen_shannon_divergence({}, {"b": 5}))


def _hand_frame() -> pd.DataFrame:
    records = []
    # group A: hobbies (chess, yoga) twice; group B: (chess, golf) twice
    for i, (eth, hobby) in enumerate([("X", "Yoga"), ("X", "Yoga"), ("Y", "golf"), ("Y", "golf")]):
        records.append(
            {
                "name": f"n{i}",
                "age": 30,
                "hobbies": ["Chess", hobby],
                "religion": "None",
                "run_id": i,
                "Ethnicity": eth,
                "Gender": "F",
            }
        )
    return gps.profiles_frame(records)


def test_top_word_contribution_by_hand():
    top = gps.jsd_top_words(_hand_frame(), "hobbies", top_n=None, per_group=None)
    # inside X: chess .5, yoga .5; outside: chess .5, golf .5 → m: chess .5, yoga .25, golf .25
    # terms: yoga 0.5·0.5·log2(2) = 0.25, golf 0.25, chess 0; JSD 0.5 → shares 0.5, 0.5, 0
    x = top[top.group == "('X', 'F')"].set_index("word")
    assert list(x.index[:2]) == ["golf", "yoga"]  # equal shares: ties broken by word
    assert x.loc["yoga", "contribution"] == pytest.approx(0.5)
    assert x.loc["yoga", "contribution_bits"] == pytest.approx(0.25)
    assert x.loc["golf", "contribution"] == pytest.approx(0.5)
    assert x.loc["chess", "contribution"] == pytest.approx(0.0)
    assert x.loc["yoga", "jsd"] == pytest.approx(0.5)
    assert (x.loc["yoga", "share_in"], x.loc["yoga", "share_out"]) == (0.5, 0.0)
    assert set(top.word) == {"chess", "yoga", "golf"}  # lower-cased as released
    per_feature = gps.jsd_by_group(_hand_frame(), fields=["hobbies", "religion"])
    assert list(per_feature.columns) == ["feature", "group", "jsd", "n_words_in", "n_words_out"]
    assert per_feature.set_index(["feature", "group"]).loc[("hobbies", "('Y', 'F')"), "jsd"] == (
        pytest.approx(0.5)
    )
    assert (per_feature[per_feature.feature == "religion"].jsd == 0).all()


def test_top_words_match_the_released_notebook(llama3):
    # code/10 generation_results_analysis.ipynb, "Top Words", llama3, axis Group
    top = gps.jsd_top_words(llama3, "personality_traits")
    printed = [
        ("('TURKISH', 'F')", "charismatic", 0.147),
        ("('BALTIC', 'F')", "charismatic", 0.134),
        ("('BALTIC', 'F')", "ambitious", 0.126),
        ("('FRENCH', 'F')", "adventurous", 0.113),
        ("('AFRICAN', 'M')", "creative", 0.111),
        ("('INDIAN', 'F')", "adventurous", 0.109),
        ("('CHINESE', 'M')", "charismatic", 0.103),
        ("('GREEK', 'M')", "outgoing", 0.1),
        ("('TURKISH', 'M')", "creative", 0.1),
        ("('HISPANIC', 'F')", "spontaneous", 0.098),
    ]
    got = [(r.group, r.word, round(r.contribution, 3)) for r in top.itertuples()]
    assert got == printed
    religion = gps.jsd_top_words(llama3, "religion", top_n=3)
    assert [(r.group, r.word, round(r.contribution, 3)) for r in religion.itertuples()] == [
        ("('ISRAELI', 'M')", "jewish", 0.489),
        ("('INDIAN', 'M')", "hindu", 0.487),
        ("('INDIAN', 'F')", "hindu", 0.477),
    ]
    moves = gps.jsd_top_words(llama3, "special_move", top_n=1)  # > 200 distinct values
    assert (moves.group[0], moves.word[0], round(moves.contribution[0], 3)) == (
        "('DUTCH', 'F')",
        "party animal",
        0.08,
    )


# --------------------------------------------------------------------------- parsing


def test_list_cells_parse_safely():
    assert gps.parse_list_cell("('ambitious', 'empathetic')") == ("ambitious", "empathetic")
    assert gps.parse_list_cell("('reading',)") == ("reading",)
    assert gps.parse_list_cell('["rock climbing", "yoga"]') == ("rock climbing", "yoga")
    assert gps.parse_list_cell("[true, null, 3]") == ("True", "3")  # JSON, not Python
    assert gps.parse_list_cell("kind, brave ,") == ("kind", "brave")
    assert gps.parse_list_cell(["a", 1, None]) == ("a", "1")
    assert gps.parse_list_cell(float("nan")) == ()
    assert gps.parse_list_cell("") == ()
    assert gps.parse_list_cell("(__import__('os'), 'x')") == ("__import__('os')", "'x'")


def test_read_profiles_csv_accepts_literals_json_and_plain_strings():
    header = ",".join(["", *gps.COLUMNS])
    rows = [
        "0,Ana,30,\"('kind', 'brave')\",\"('vain',)\",\"('chess', 'golf')\",Nurse,Heal,"
        "Middle Class,Heterosexual,Catholic,0,5.5,brown,brown,olive,slim,ITALIAN,F,"
        "\"('ITALIAN', 'F')\"",
        '1,Bo,41,"[""calm"", ""shy""]",vain,"chess, golf",Cook,Stir,Working Class,'
        "Gay,None,1,6.0,black,brown,fair,stocky,CHINESE,M,",
    ]
    df = gps.read_profiles_csv(io.StringIO("\n".join([header, *rows]) + "\n"))
    assert df.loc[0, "personality_traits"] == ("kind", "brave")
    assert df.loc[1, "personality_traits"] == ("calm", "shy")
    assert df.loc[1, "negative_traits"] == ("vain",)
    assert df.loc[1, "hobbies"] == ("chess", "golf")
    assert df.loc[1, "Group"] == "('CHINESE', 'M')"  # derived when blank
    features = gps.feature_frame(df)
    assert features.loc[0, "age"] == "30"
    assert features.loc[1, "physical_characteristics.height"] == "6.0"
    assert features.loc[0, "personality_traits"] == "kind brave"


def test_read_profiles_csv_names_missing_columns(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("name,age,Gender\nAna,30,F\n")
    with pytest.raises(UserError) as err:
        gps.read_profiles_csv(path)
    message = str(err.value)
    assert "religion" in message and "Ethnicity" in message and "hobbies" in message
    assert "Gender" not in message.split(":", 1)[1].split("(")[0]
    with pytest.raises(UserError):
        gps.read_profiles_csv(tmp_path / "absent.csv")


def test_records_round_trip_to_the_same_features(llama3):
    records = [_record(row) for _, row in llama3.iterrows()]
    built = gps.profiles_frame(records)
    assert list(built.columns) == list(gps.COLUMNS)
    assert built["Group"].tolist() == llama3["Group"].tolist()
    pd.testing.assert_frame_equal(
        gps.feature_frame(built).reset_index(drop=True),
        gps.feature_frame(llama3).reset_index(drop=True),
    )
    assert gps.word_counts(built["hobbies"]) == gps.word_counts(llama3["hobbies"])
    assert gps.svm_accuracy(built, "gender") == gps.svm_accuracy(llama3, "gender")


def test_profiles_frame_turns_missing_fields_into_missing_values():
    df = gps.profiles_frame(
        [
            {"name": "A", "Ethnicity": "ARAB", "Gender": "F", "physical_characteristics": "tall"},
            {"name": "B", "age": None, "hobbies": None, "Group": ("ARAB", "M")},
        ]
    )
    assert len(df) == 2
    assert df.loc[0, "hobbies"] == ()
    assert pd.isna(df.loc[0, "physical_characteristics.height"])
    assert pd.isna(df.loc[1, "age"])
    assert df.loc[0, "Group"] == "('ARAB', 'F')"
    assert df.loc[1, "Group"] == "('ARAB', 'M')"
    assert gps.feature_frame(df).loc[0, "religion"] == "nan"
    with pytest.raises(UserError):
        gps.profiles_frame(["not a profile"])


# --------------------------------------------------------------------------- small data


def test_small_data_gives_nan_with_a_reason_not_a_traceback():
    df = gps.profiles_frame(_tiny_records(12))
    result = gps.svm_accuracies(df)
    assert math.isnan(result["group"]["accuracy"])
    assert "single profile" in result["group"]["reason"]
    assert result["group"]["n_classes"] == 12
    assert math.isnan(result["ethnicity"]["accuracy"])  # 6 classes × 2, test set of 4
    assert "too few" in result["ethnicity"]["reason"]
    assert 0.0 <= result["gender"]["accuracy"] <= 1.0  # 6 F / 6 M can be split
    assert result["gender"]["reason"] is None
    assert gps.repeated_split_accuracy(df, "group", n_splits=2)[2] == 0
    assert gps.repeated_split_accuracy(df, "gender", n_splits=2)[2] == 2
    a = gps.ablation(df)
    assert len(a) == 39
    assert a[a.target == "group"].accuracy.isna().all()
    assert a[a.target == "group"].reason.str.contains("single profile").all()
    assert a[a.target == "gender"].accuracy.notna().all()
    top = gps.jsd_top_words(df, "hobbies")
    assert (top.contribution == 0).all()  # every group says "reading"
    assert len(gps.jsd_by_group(df, fields=["religion"])) == 12  # all missing → NaN, no crash
    assert gps.jsd_by_group(df, fields=["religion"]).jsd.isna().all()


def test_empty_list_fields_and_one_class_do_not_crash():
    records = _tiny_records(8)
    for r in records:
        r["personality_traits"] = r["negative_traits"] = r["hobbies"] = []
    df = gps.profiles_frame(records)
    assert 0.0 <= gps.svm_accuracy(df, "gender") <= 1.0  # empty vocabularies left out
    one_class = gps.profiles_frame([{**r, "Gender": "F"} for r in records])
    assert "one class" in gps.svm_result(one_class, "gender").reason
    with pytest.raises(UserError):
        gps.svm_accuracy(df, "religion")
    with pytest.raises(UserError):
        gps.svm_accuracy(df.drop(columns=["hobbies"]), "gender")
    with pytest.raises(UserError):
        gps.jsd_top_words(df, "no_such_field")
