"""Run the `gbdesk` command in a subprocess with test patches, for kill and fault tests.

``python -m tests.adversarial.driver ARGS…`` behaves like ``gbdesk ARGS…``; the JSON object
in the environment variable GBDESK_TEST_PATCHES may ask for:

* ``fake_backend``: ``{"delay_s": 0.02}`` — runs use `tests.fakes.FakeBackend` (sleeping
  that long per generation) and a fake model file instead of loading a GGUF;
* ``busy_timeout_s``: a shorter wait for another program's lock than the 30 s default;
* ``max_page_count``: the database may not grow beyond this many pages (a full disk,
  as SQLite reports it: SQLITE_FULL);
* ``io_error_after``: the N-th writing statement fails with SQLite's "disk I/O error";
* ``extra_migration``: a dummy schema migration (a new table) is appended to `MIGRATIONS`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time


def apply_patches(patches: dict) -> None:
    import gbdesk.store.db as db
    from gbdesk.store import migrations

    if "busy_timeout_s" in patches:
        db.Store.BUSY_TIMEOUT_S = float(patches["busy_timeout_s"])
    if patches.get("extra_migration"):
        migrations.MIGRATIONS.append(dummy_migration)
    if "max_page_count" in patches:
        limit = int(patches["max_page_count"])
        original_init = db.Store.__init__

        def init(self, path):
            original_init(self, path)
            self.conn.execute(f"PRAGMA max_page_count = {limit}")

        db.Store.__init__ = init
    if "io_error_after" in patches:
        inject_io_errors(int(patches["io_error_after"]))
    if "fake_backend" in patches:
        use_fake_backend(float(patches["fake_backend"].get("delay_s", 0)))


def dummy_migration(conn: sqlite3.Connection) -> None:
    """A harmless next schema version (tests of the copy made before migrating)."""
    conn.execute("CREATE TABLE dummy_v4 (id INTEGER PRIMARY KEY)")


def inject_io_errors(after: int) -> None:
    import gbdesk.store.db as db

    count = {"writes": 0}
    execute, executemany = db._GuardedConnection.execute, db._GuardedConnection.executemany

    def check(sql: str) -> None:
        if db._is_write(sql):
            count["writes"] += 1
            if count["writes"] > after:
                raise sqlite3.OperationalError("disk I/O error")

    def patched_execute(self, sql, parameters=(), /):
        check(sql)
        return execute(self, sql, parameters)

    def patched_executemany(self, sql, parameters, /):
        check(sql)
        return executemany(self, sql, parameters)

    db._GuardedConnection.execute = patched_execute
    db._GuardedConnection.executemany = patched_executemany


def use_fake_backend(delay_s: float) -> None:
    import gbdesk.engine.llama_backend as llama_backend
    import gbdesk.workflows.runs as runs
    from tests.fakes import FakeBackend, fake_model

    def slow(_backend, _request) -> None:
        time.sleep(delay_s)

    def make(*_args, **_kwargs) -> FakeBackend:
        return FakeBackend(on_generate=slow)

    def resolve(store, _spec):
        from gbdesk.support.paths import data_dir  # not next to the database: it may be read-only

        return fake_model(store, data_dir())

    llama_backend.LlamaCppBackend = make
    runs.llama_backend_factory = lambda model, generation, **_kwargs: make()
    runs.resolve_model = resolve


def main() -> int:
    apply_patches(json.loads(os.environ.get("GBDESK_TEST_PATCHES") or "{}"))
    from gbdesk.cli import main as gbdesk_main

    return gbdesk_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
