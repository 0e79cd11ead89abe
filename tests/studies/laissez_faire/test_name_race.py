"""First-name → race likelihood tables (gbdesk.studies.laissez_faire.name_race).

No model, no display."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gbdesk.studies.laissez_faire import name_race
from gbdesk.studies.laissez_faire.name_race import (
    NOT_MEASURED,
    RACE_CATEGORIES,
    bundled_tables,
    load_table,
    race_shares,
)
from gbdesk.support.errors import UserError

# Values copied from the raw source CSVs (rosenman2023_first_name_race.csv; the Census
# percentages of census2020_first_names_race.csv divided by 100).
ROSENMAN = {
    "JUAN": {
        "white": 0.0670654569197703,
        "black": 0.0418763772886797,
        "hispanic": 0.8673347933726909,
        "asian": 0.0034007127894006,
        "other": 0.0203226596294583,
    },
    "JAMAL": {
        "white": 0.0520768367219658,
        "black": 0.8928838717724835,
        "hispanic": 0.0088249968816265,
        "asian": 0.0096669577148559,
        "other": 0.0365473369090682,
    },
    "EMILY": {
        "white": 0.8963537296232896,
        "black": 0.034665861108314,
        "hispanic": 0.0460734624464359,
        "asian": 0.011864084404614,
        "other": 0.0110428624173463,
    },
    "WEI": {
        "white": 0.0094895287958115,
        "black": 0.0,
        "hispanic": 0.0,
        "asian": 0.9093586387434556,
        "other": 0.0811518324607329,
    },
}
CENSUS_ORDER = ("white", "black", "api", "aian", "2prace", "hispanic")
CENSUS_PCT = {  # name: (pctwhite, pctblack, pctapi, pctaian, pct2prace, pcthispanic, count)
    "JUAN": (1.52, 1.15, 0.74, 0.15, 0.12, 96.33, 655686),
    "JAMAL": (13.45, 73.46, 3.13, 0.54, 5.62, 3.8, 29771),
    "EMILY": (75.61, 1.51, 3.98, 0.4, 3.15, 15.36, 755529),
    "WEI": (1.19, 0.2, 98.08, 0.0, 0.3, 0.22, 17176),
}
CENSUS = {
    name: {cat: pct / 100 for cat, pct in zip(CENSUS_ORDER, row[:6], strict=True)}
    for name, row in CENSUS_PCT.items()
}


def assert_close(got: dict[str, float] | None, expected: dict[str, float], tol: float = 1e-5):
    assert got is not None
    assert set(got) == set(expected)
    for cat, value in expected.items():
        assert got[cat] == pytest.approx(value, abs=tol), cat


def test_bundled_tables_and_metadata():
    assert bundled_tables() == ["rosenman2023", "census2020"]
    rosenman = load_table("rosenman2023")
    census = load_table("census2020")
    assert rosenman.categories == ["white", "black", "hispanic", "asian", "other"]
    assert census.categories == list(CENSUS_ORDER)
    assert len(rosenman) == 135_775 and len(census) == 53_615
    assert rosenman.licence == "CC0 1.0" and "public domain" in census.licence.lower()
    assert "10.7910/DVN/SGKW0K" in rosenman.citation
    for table in (rosenman, census):
        assert all(c in RACE_CATEGORIES for c in table.categories)
        assert table.not_measured == ["MENA", "NHPI"]
    assert load_table("rosenman2023") is rosenman  # parsed once per process
    assert set(NOT_MEASURED) <= set(RACE_CATEGORIES)
    assert RACE_CATEGORIES["hispanic"] == "Hispanic/Latine"


@pytest.mark.parametrize("name", sorted(ROSENMAN))
def test_known_names_match_the_sources(name):
    assert_close(load_table("rosenman2023").likelihoods(name), ROSENMAN[name])
    census = load_table("census2020")
    assert_close(census.likelihoods(name), CENSUS[name])
    assert census.count(name) == CENSUS_PCT[name][6]
    assert load_table("rosenman2023").count(name) is None


def test_case_whitespace_and_punctuation():
    table = load_table("rosenman2023")
    expected = ROSENMAN["JUAN"]
    for variant in ("juan", " Juan ", "JUAN", "Juan,", "“Juan”", "\tjUaN.\n"):
        assert_close(table.likelihoods(variant), expected)
        assert variant in table
    assert table.likelihoods("Ju an") is None  # exact match only


def test_fallback_bucket_and_unmatched_names():
    for table_id in bundled_tables():
        table = load_table(table_id)
        for name in ("ALL OTHER NAMES", "all other names", "Unknownname", "Mary-Jane", "", None):
            assert table.likelihoods(name) is None
            assert name not in table
        assert table.count("Unknownname") is None


def test_race_shares_hand_computed():
    table = load_table("rosenman2023")
    shares = race_shares(table, ["Juan", "Jamal", "Unknownname", None])
    assert shares["n_named"] == 3  # None is an unnamed character
    assert shares["n_matched"] == 2
    assert shares["coverage"] == pytest.approx(2 / 3)
    assert shares["not_measured"] == ["MENA", "NHPI"]
    assert list(shares["categories"]) == table.categories
    for cat, entry in shares["categories"].items():
        numerator = ROSENMAN["JUAN"][cat] + ROSENMAN["JAMAL"][cat]
        assert entry["numerator"] == pytest.approx(numerator, abs=1e-5)
        assert entry["denominator"] == 2.0
        assert isinstance(entry["denominator"], float)
        assert entry["share"] == pytest.approx(numerator / 2, abs=1e-5)
        assert entry["display"] == RACE_CATEGORIES[cat]


def test_race_shares_with_nothing_matched_or_named():
    table = load_table("census2020")
    none_matched = race_shares(table, ["Zzqxname", "  "])  # a blank name counts as unnamed
    assert none_matched["n_named"] == 1 and none_matched["n_matched"] == 0
    assert none_matched["coverage"] == 0.0
    assert all(math.isnan(e["share"]) for e in none_matched["categories"].values())
    assert all(e["numerator"] == 0.0 for e in none_matched["categories"].values())
    nobody = race_shares(table, [None, None])
    assert nobody["n_named"] == 0 and math.isnan(nobody["coverage"])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_csv_fractions_and_percents_agree(tmp_path):
    fractions = write(
        tmp_path,
        "fractions.csv",
        "First_Name,White,Black,MENA\nJuan,0.25,0.5,0.25\nAmira,0.1,0,0.9\n",
    )
    percents = write(
        tmp_path,
        "percents.csv",
        "\ufeffname,white,black,mena,count\njuan,25,50,25,10\nAMIRA,10,0,90,3\n",
    )
    a, b = load_table(fractions), load_table(str(percents))
    assert a.categories == b.categories == ["white", "black", "MENA"]
    assert a.not_measured == ["NHPI"]
    assert a.licence == "user-supplied" and a.count("Juan") is None and b.count("juan") == 10
    for name in ("Juan", "amira"):
        assert a.likelihoods(name) == pytest.approx(b.likelihoods(name))
    assert a.likelihoods("amira") == pytest.approx({"white": 0.1, "black": 0.0, "MENA": 0.9})
    names = ["Juan", "Amira", "Bob", None]
    sa, sb = race_shares(a, names), race_shares(b, names)
    assert (sa["n_named"], sa["n_matched"]) == (sb["n_named"], sb["n_matched"]) == (3, 2)
    for cat in a.categories:
        assert sa["categories"][cat]["share"] == pytest.approx(sb["categories"][cat]["share"])
    assert sa["categories"]["MENA"]["share"] == pytest.approx(0.575)
    assert sa["not_measured"] == ["NHPI"]


def test_user_csv_in_census_layout_skips_fallback_and_non_race_columns(tmp_path):
    path = write(
        tmp_path,
        "census_like.csv",
        "name,rank,count,prop100k,cum_prop100k,pctwhite,pctblack,pctapi,pctaian,pct2prace,"
        "pcthispanic,pctmale,pctfemale\n"
        "JUAN,60,655686,217.09,23138.48,1.52,1.15,0.74,0.15,0.12,96.33,99.36,0.64\n"
        "ALL OTHER NAMES,,18794703,6222.81,100000.0,"
        "25.09,28.86,23.54,0.88,3.85,17.78,41.34,58.66\n",
    )
    table = load_table(path)
    assert table.categories == list(CENSUS_ORDER)
    assert len(table) == 1 and "ALL OTHER NAMES" not in table
    assert_close(table.likelihoods("juan"), CENSUS["JUAN"])
    assert table.count("Juan") == 655686


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("surname,white,black\nSmith,0.5,0.5\n", "no name column"),
        ("name,count\nJuan,3\n", "no race columns"),
        ("name\nJuan\n", "no race columns"),
        ("name,white,black\nJuan,0.5,0.5\nAmira,0.5,n/a\n", "line 3: column 'black'"),
        ("name,white,black\nJuan,0.5,0.5\nAmira,,0.5\n", "line 3"),
        ("name,white,black\nJuan,0.5,0.5\njuan,0.5,0.5\n", "line 3: name 'juan' repeats"),
        ("name,white,black\nJuan,0.5,-0.5\n", "line 2: negative"),
        ("name,white,black\nJuan,50,150\n", "line 2: value above 100"),
        ("name,white,black\n", "no names"),
        ("", "empty"),
    ],
)
def test_user_csv_errors(tmp_path, text, message):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(UserError, match=message) as info:
        load_table(path)
    assert "\n" not in str(info.value)


def test_missing_file_and_unknown_table(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_table(tmp_path / "nope.csv")
    with pytest.raises(UserError, match="not found"):
        load_table(str(tmp_path / "folder" / "table"))
    with pytest.raises(UserError, match="unknown name table 'rosenman'"):
        load_table("rosenman")


def test_user_csv_line_numbers_and_unnamed_columns(tmp_path):
    # A trailing comma adds a header-less column, which is not a race.
    path = write(tmp_path, "t.csv", 'name,white,black,\n"Juan",0.5,0.5,\n\nAmira,0.5,x,\n')
    with pytest.raises(UserError, match="line 4: column 'black'"):
        load_table(path)
    path.write_text("name,white,black,\nJuan,0.5,0.5,\n", encoding="utf-8")
    assert load_table(path).categories == ["white", "black"]


def test_resources_come_from_the_resources_folder():
    for entry in name_race._index()["tables"]:
        path = name_race.resource("name_race", entry["file"])
        assert path.is_file()
        assert path.stat().st_size < 3_000_000
