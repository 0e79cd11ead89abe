"""The SQLite store: schema and migrations, WAL, idempotent attempts, labels kept apart."""

from __future__ import annotations

import sqlite3

import pytest

from gbdesk.store import Store
from gbdesk.store.migrations import LATEST_VERSION
from gbdesk.support.errors import UserError


def make_run(store, n_items=3, attempts=2):
    return store.create_run(
        probe="inventories",
        probe_version="1",
        model_id=None,
        params={"template": "t"},
        generation={"attempts": attempts, "seed": 0},
        items=[
            (f"k{i}", f"prompt {i}", {"source": "bsri", "gender": "male"}) for i in range(n_items)
        ],
        attempts_per_item=attempts,
        app_version="test",
        llama_cpp_version=None,
    )


def test_fresh_database_is_migrated_and_in_wal_mode(tmp_path):
    path = tmp_path / "a.sqlite"
    with Store(path) as store:
        assert store.migrated_from == 0
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert {"models", "runs", "run_items", "attempts", "labels", "metrics"} <= set(
            store.db.table_names()
        )
    with Store(path) as store:
        assert store.migrated_from == LATEST_VERSION  # nothing to do the second time


def test_a_migration_applied_meanwhile_by_another_connection_is_skipped(tmp_path):
    """Two threads opening the same new file: the one that read version 0 first must not
    re-apply what the other committed in between ("table models already exists")."""
    from gbdesk.store.migrations import migrate

    path = tmp_path / "race.sqlite"

    class Late:
        """A connection whose first version read happens before the other one migrates."""

        def __init__(self, conn):
            self.conn, self.first = conn, True

        def execute(self, sql, *args):
            cursor = self.conn.execute(sql, *args)
            if self.first and "user_version" in sql:
                self.first = False
                before = cursor.fetchone()
                Store(path).close()  # the other thread wins the race
                return type("Row", (), {"fetchone": lambda self: before})()
            return cursor

    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(Late(conn)) == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    conn.close()
    with Store(path) as store:
        assert store.migrated_from == LATEST_VERSION


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    with pytest.raises(UserError, match="newer"):
        Store(path)


def test_not_a_database_is_a_user_error(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError):
        Store(path)
    with pytest.raises(UserError, match="folder"):
        Store(tmp_path)


def test_attempts_are_unique_per_run_item_attempt(store):
    run_id = make_run(store)
    first = store.add_attempt(run_id, "k0", 0, "prompt 0", "He ran.", seed=1)
    again = store.add_attempt(run_id, "k0", 0, "prompt 0", "She ran.", seed=1)
    assert first is not None and again is None
    assert store.count_attempts(run_id) == 1
    assert store.attempts(run_id)[0]["response"] == "He ran."
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute(
            "INSERT INTO attempts (run_id, item, attempt, prompt, response, created_at) "
            "VALUES (?, 'k0', 0, 'p', 'r', 'now')",
            (run_id,),
        )


def test_two_runs_share_one_database(store):
    a, b = make_run(store), make_run(store)
    store.add_attempt(a, "k0", 0, "p", "x")
    store.add_attempt(b, "k0", 0, "p", "y")
    assert [r["id"] for r in store.list_runs()] == [a, b]
    assert store.count_attempts(a) == store.count_attempts(b) == 1


def test_auto_and_human_labels_are_kept_apart(store):
    run_id = make_run(store)
    attempt = store.add_attempt(
        run_id,
        "k0",
        0,
        "p",
        "He ran.",
        auto_label={
            "source": "pronoun_counter/1",
            "label": "male",
            "data": {"male_count": 1},
            "evidence": [[0, 2, "male"]],
        },
    )
    store.add_human_label(attempt, "ana", "female")
    store.add_human_label(attempt, "ben", "undetected")  # later review wins, history kept
    auto = store.labels(run_id, "auto")[attempt]
    human = store.labels(run_id, "human")[attempt]
    assert (auto["label"], auto["source"], auto["evidence"]) == (
        "male",
        "pronoun_counter/1",
        [[0, 2, "male"]],
    )
    assert (human["label"], human["source"]) == ("undetected", "human:ben")
    assert store.conn.execute("SELECT COUNT(*) FROM labels WHERE kind='human'").fetchone()[0] == 2
    # re-labelling automatically replaces only the automatic label
    store.set_auto_label(attempt, source="pronoun_counter/1", label="female")
    assert store.labels(run_id, "auto")[attempt]["label"] == "female"
    assert store.labels(run_id, "human")[attempt]["label"] == "undetected"


def test_fingerprint_changes_with_labels_and_attempts(store):
    run_id = make_run(store)
    f0 = store.labels_fingerprint(run_id)
    attempt = store.add_attempt(run_id, "k0", 0, "p", "x")
    f1 = store.labels_fingerprint(run_id)
    store.add_human_label(attempt, "ana", "male")
    f2 = store.labels_fingerprint(run_id)
    assert len({f0, f1, f2}) == 3


def test_metric_cache_round_trip(store):
    run_id = make_run(store)
    rows = [{"name": "m", "value": 0.5, "ci_lo": 0.4, "ci_hi": 0.6, "mark": "A", "n": 3}]
    store.save_metrics(run_id, "auto", "fp1", rows)
    assert store.cached_metrics(run_id, "auto", "fp1")["m"]["value"] == 0.5
    assert store.cached_metrics(run_id, "auto", "fp2") is None
    assert store.cached_metrics(run_id, "reviewed", "fp1") is None


def test_run_left_running_by_a_dead_process_is_interrupted(store):
    run_id = make_run(store)
    store.db["runs"].update(run_id, {"status": "running", "owner": "nohost:1:0"})
    assert store.get_run(run_id)["status"] == "running"  # another host: cannot tell
    import socket

    store.db["runs"].update(run_id, {"owner": f"{socket.gethostname()}:999999:1.000"})
    assert store.get_run(run_id)["status"] == "interrupted"
    store.claim_run(run_id)
    assert store.get_run(run_id)["status"] == "running"


def test_unknown_run_is_a_user_error(store):
    with pytest.raises(UserError, match="no run 42"):
        store.get_run(42)


def test_extend_run_adds_items_after_the_runs_own(store):
    run_id = store.create_run(
        probe="direct", probe_version="1", model_id=None, params={"draw": 2},
        generation={"attempts": 2}, items=[("a", "A?", {}), ("b", "B?", {})],
        attempts_per_item=2, app_version="t", llama_cpp_version=None,
    )  # fmt: skip
    store.save_metrics(run_id, "auto", "x", [{"name": "m", "value": 1.0, "ci_lo": 0, "ci_hi": 1,
                                               "mark": None, "n": 1}])  # fmt: skip
    total = store.extend_run(
        run_id,
        [("a", "A?", {}), ("c", "C?", {"k": 1}), ("d", "D?", {}, [{"text": "x", "metadata": {}},
                                                                  {"text": "y", "metadata": {}}])],
        {"draw": 4},
    )  # fmt: skip
    assert total == 2 * 2 + 2 + 2 * 2  # a, b; c; d's two prompts, two attempts each
    run = store.get_run(run_id)
    assert run["attempts_total"] == total and run["params"] == {"draw": 4}
    rows = store.run_items(run_id)
    assert [(r["item"], r["idx"]) for r in rows] == [("a", 0), ("b", 1), ("c", 2), ("d", 3)]
    assert rows[3]["prompts"][1]["text"] == "y"
    assert store.cached_metrics(run_id, "auto", "x") is None  # the cache is dropped


def test_a_done_run_that_grows_is_no_longer_done(store):
    """Issue 43 (2): a run of 160 items grown to 320 was listed "done 160/320"."""
    run_id = store.create_run(
        probe="direct", probe_version="1", model_id=None, params={"draw": 1},
        generation={"attempts": 1}, items=[("a", "A?", {})],
        attempts_per_item=1, app_version="t", llama_cpp_version=None,
    )  # fmt: skip
    store.add_attempt(run_id, "a", 0, "A?", "yes")
    store.set_run_status(run_id, "done")
    store.extend_run(run_id, [("a", "A?", {})], {"draw": 1})  # nothing new: still done
    assert store.get_run(run_id)["status"] == "done"
    store.extend_run(run_id, [("b", "B?", {})], {"draw": 2})
    run = store.get_run(run_id)
    assert (run["status"], run["attempts_done"], run["attempts_total"]) == ("created", 1, 2)
    assert run["finished_at"] is None
    listed = {r["id"]: r["status"] for r in store.list_runs()}
    assert listed[run_id] == "created"
