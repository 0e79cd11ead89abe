"""The `audits` table's store functions (`gbdesk.store.audits`): a plan round-trips, an
update changes only the columns it names (and only columns the module knows), and the
audit to continue is the latest one not done."""

from __future__ import annotations

import pytest

from gbdesk.store import audits


def _add(store, model_id=None, plan=None):
    return audits.add_audit(
        store,
        model_id=model_id,
        budget_s=1800,
        budget="30m",
        plan=plan if plan is not None else [{"probe": "inventories", "run_id": None}],
        speed={"tokens_per_s": 12.5},
        left_out=["one probe: no time left"],
    )


def test_a_planned_audit_reads_back_as_stored(store):
    audit_id = _add(store)
    audit = audits.get_audit(store, audit_id)
    assert audit is not None and audit["id"] == audit_id
    assert audit["status"] == "planned" and audit["budget_s"] == 1800 and audit["budget"] == "30m"
    assert audit["plan"] == [{"probe": "inventories", "run_id": None}]
    assert audit["speed"] == {"tokens_per_s": 12.5}
    assert audit["left_out"] == ["one probe: no time left"]
    assert audit["report"] is None and audit["finished_at"] is None and audit["created_at"]
    assert audits.get_audit(store, audit_id + 1) is None


def test_an_update_changes_only_what_it_names(store):
    audit_id = _add(store)
    audits.update_audit(store, audit_id, status="running")
    audits.update_audit(store, audit_id, plan=[{"probe": "inventories", "run_id": 7}])
    audit = audits.get_audit(store, audit_id)
    assert audit["status"] == "running" and audit["plan"][0]["run_id"] == 7
    audits.update_audit(store, audit_id, status="done", report="r.pdf", finished_at="2025-01-01")
    audit = audits.get_audit(store, audit_id)
    assert (audit["status"], audit["report"], audit["finished_at"]) == (
        "done",
        "r.pdf",
        "2025-01-01",
    )
    assert audit["plan"][0]["run_id"] == 7 and audit["budget"] == "30m"
    with pytest.raises(TypeError):  # no column name comes from a caller
        audits.update_audit(store, audit_id, **{"budget = 'x', status": "done"})


def test_the_audit_to_continue_is_the_latest_not_done(store):
    assert audits.unfinished_audit(store, None) is None
    first, second = _add(store), _add(store)
    assert audits.unfinished_audit(store, None) == second
    audits.update_audit(store, second, status="done")
    assert audits.unfinished_audit(store, None) == first
    audits.update_audit(store, first, status="stopped")
    assert audits.unfinished_audit(store, None) == first
