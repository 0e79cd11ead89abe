"""Schema migrations, keyed by the version they produce (`PRAGMA user_version`).

Add a function for version N+1 and append it to `MIGRATIONS`; never edit a released
step. Each step runs in one transaction with the version bump.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

#: version 1, what was asked: the models and the runs made with them, with their items
_V1_RUNS = (
    """
        CREATE TABLE models (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL DEFAULT 'gguf',
            name TEXT NOT NULL,
            path TEXT NOT NULL,
            file_name TEXT,
            sha256 TEXT,
            size_bytes INTEGER,
            mtime REAL,
            architecture TEXT,
            parameters INTEGER,
            quantization TEXT,
            context_length INTEGER,
            has_chat_template INTEGER,
            chat_template TEXT,
            metadata_json TEXT,
            added_at TEXT NOT NULL,
            UNIQUE (kind, path, sha256)
        )
        """,
    """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            probe TEXT NOT NULL,
            probe_version TEXT NOT NULL,
            model_id INTEGER REFERENCES models(id),
            source TEXT NOT NULL DEFAULT 'generated',
            params_json TEXT NOT NULL,
            generation_json TEXT NOT NULL,
            engine_json TEXT,
            app_version TEXT NOT NULL,
            llama_cpp_version TEXT,
            status TEXT NOT NULL,
            error TEXT,
            owner TEXT,
            heartbeat_at TEXT,
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            attempts_total INTEGER NOT NULL
        )
        """,
    """
        CREATE TABLE run_items (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            item TEXT NOT NULL,
            prompt TEXT NOT NULL,
            metadata_json TEXT NOT NULL,
            PRIMARY KEY (run_id, item)
        )
        """,
)

#: version 1, what came back: each attempt and its labels (one automatic label per source)
_V1_ANSWERS = (
    """
        CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            prompt TEXT NOT NULL,
            response TEXT NOT NULL,
            seed INTEGER,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency_s REAL,
            finish_reason TEXT,
            prompt_mode TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, item, attempt)
        )
        """,
    """
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('auto', 'human')),
            source TEXT NOT NULL,
            label TEXT NOT NULL,
            data_json TEXT,
            evidence_json TEXT,
            created_at TEXT NOT NULL
        )
        """,
    "CREATE UNIQUE INDEX labels_auto_once ON labels(attempt_id, source) WHERE kind = 'auto'",
    "CREATE INDEX labels_by_attempt ON labels(attempt_id, kind, id)",
)

#: version 1, the metrics computed from the labels (a cache)
_V1_METRICS = (
    """
        CREATE TABLE metrics (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            label_mode TEXT NOT NULL,
            name TEXT NOT NULL,
            value REAL,
            ci_lo REAL,
            ci_hi REAL,
            mark TEXT,
            n INTEGER,
            fingerprint TEXT NOT NULL,
            computed_at TEXT NOT NULL,
            PRIMARY KEY (run_id, label_mode, name)
        )
        """,
)


def _v1(conn: sqlite3.Connection) -> None:
    """The first layout, created in this order (the statements as released)."""
    for statement in (*_V1_RUNS, *_V1_ANSWERS, *_V1_METRICS):
        conn.execute(statement)


def _v2(conn: sqlite3.Connection) -> None:
    """Metrics may carry a p-value (e.g. representation ratios)."""
    conn.execute("ALTER TABLE metrics ADD COLUMN p_value REAL")


def _v3(conn: sqlite3.Connection) -> None:
    """Scores of perplexity probes: one row per scored sentence, written with the attempt
    that scored its block (imported APX tables store `apx` without a sentence)."""
    conn.execute(
        """
        CREATE TABLE scores (
            attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            grp TEXT NOT NULL,
            descriptor TEXT NOT NULL,
            axis TEXT,
            template INTEGER NOT NULL,
            name TEXT,
            text TEXT,
            n_tokens INTEGER,
            logprob_sum REAL,
            ppl REAL,
            apx REAL,
            PRIMARY KEY (attempt_id, idx)
        )
        """
    )
    conn.execute("CREATE INDEX scores_run ON scores (run_id)")


def _v4(conn: sqlite3.Connection) -> None:
    """The random review sample of a run (prediction-powered metrics), and per-metric
    details (e.g. a prediction-powered estimate's diagnostics) in the metrics cache."""
    conn.execute(
        """
        CREATE TABLE review_samples (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
            PRIMARY KEY (run_id, attempt_id)
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE review_sample_info (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            unit TEXT NOT NULL,
            size INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            drawn_at TEXT NOT NULL
        )
        """
    )
    conn.execute("ALTER TABLE metrics ADD COLUMN details_json TEXT")


def _v5(conn: sqlite3.Connection) -> None:
    """Audits (`gbdesk.workflows.audit`): a model's budget, the plan of every probe's size and the
    run ids as they are planned, so a restarted audit continues."""
    conn.execute(
        """
        CREATE TABLE audits (
            id INTEGER PRIMARY KEY,
            model_id INTEGER REFERENCES models(id),
            budget_s INTEGER NOT NULL,
            budget TEXT NOT NULL,
            plan_json TEXT NOT NULL,
            speed_json TEXT,
            left_out_json TEXT,
            status TEXT NOT NULL,
            report TEXT,
            created_at TEXT NOT NULL,
            finished_at TEXT
        )
        """
    )


def _v6(conn: sqlite3.Connection) -> None:
    """Several raters. Labels get a third kind, 'consensus' (an adjudicated label; source
    `consensus:<who decided>`), and a `facet`: '' is the probe's own label, another name a
    label of something else about the attempt (e.g. 'codes': a codebook coding, several
    codes per story). SQLite cannot alter a CHECK constraint, so the labels table is
    rebuilt with the same ids, rows and indexes. Each run may carry its own codebook and
    the drawn selection of attempts to code."""
    conn.execute(
        """
        CREATE TABLE labels_v6 (
            id INTEGER PRIMARY KEY,
            attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('auto', 'human', 'consensus')),
            source TEXT NOT NULL,
            label TEXT NOT NULL,
            data_json TEXT,
            evidence_json TEXT,
            created_at TEXT NOT NULL,
            facet TEXT NOT NULL DEFAULT ''
        )
        """
    )
    conn.execute(
        "INSERT INTO labels_v6 (id, attempt_id, kind, source, label, data_json, evidence_json, "
        "created_at) SELECT id, attempt_id, kind, source, label, data_json, evidence_json, "
        "created_at FROM labels ORDER BY id"
    )
    conn.execute("DROP TABLE labels")  # its indexes go with it
    conn.execute("ALTER TABLE labels_v6 RENAME TO labels")
    conn.execute(
        "CREATE UNIQUE INDEX labels_auto_once ON labels(attempt_id, source) WHERE kind = 'auto'"
    )
    conn.execute("CREATE INDEX labels_by_attempt ON labels(attempt_id, kind, id)")
    conn.execute(
        """
        CREATE TABLE codebook (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            code TEXT NOT NULL,
            name TEXT NOT NULL,
            definition TEXT NOT NULL DEFAULT '',
            position INTEGER NOT NULL,
            origin TEXT NOT NULL DEFAULT '',
            changed_by TEXT,
            changed_at TEXT NOT NULL,
            PRIMARY KEY (run_id, code)
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE coding_selection (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            category TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (run_id, attempt_id)
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE coding_selection_info (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            rule_json TEXT NOT NULL,
            drawn_at TEXT NOT NULL
        )
        """
    )
    problems = conn.execute("PRAGMA foreign_key_check(labels)").fetchall()
    if problems:
        raise sqlite3.IntegrityError(f"labels rebuilt with broken references: {problems[:3]}")


def _v7(conn: sqlite3.Connection) -> None:
    """The flat table of label facts (e.g. one row per extracted character): what fast
    metrics read instead of every label's JSON. Written with the labels of an import; any
    label without them (older databases, reviewed or relabelled ones) is flattened on the
    next metrics computation (`labels.flat` is NULL until then)."""
    conn.execute(
        """
        CREATE TABLE label_facts (
            label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            run_id INTEGER NOT NULL,
            k TEXT NOT NULL,
            a TEXT,
            b TEXT,
            c TEXT,
            d TEXT,
            x REAL,
            PRIMARY KEY (label_id, idx)
        ) WITHOUT ROWID
        """
    )
    conn.execute("CREATE INDEX label_facts_run ON label_facts (run_id)")
    conn.execute("ALTER TABLE labels ADD COLUMN flat INTEGER")
    conn.execute("CREATE INDEX labels_unflat ON labels (attempt_id) WHERE flat IS NULL")


def _v8(conn: sqlite3.Connection) -> None:
    """Items of several prompts (e.g. one question per gender, or one multiple-choice
    question in several option orders): the prompts of such an item as JSON
    ([{text, metadata}, …]); NULL for one-prompt items, whose prompt stays in `prompt`."""
    conn.execute("ALTER TABLE run_items ADD COLUMN prompts_json TEXT")


def _v9(conn: sqlite3.Connection) -> None:
    """Jobs (`gbdesk.store.jobs`): the long writing work a process is doing on this database
    (a run, an audit, an import), who does it and since when, so that a second one is
    refused in one line naming the first, and the app shows work of other processes. An
    audit also records its process (`owner`) and when it last showed a sign of life."""
    conn.execute(
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            what TEXT NOT NULL,
            owner TEXT NOT NULL,
            pid INTEGER,
            command TEXT,
            run_id INTEGER,
            audit_id INTEGER,
            started_at TEXT NOT NULL,
            heartbeat_at TEXT NOT NULL
        )
        """
    )


def _v10(conn: sqlite3.Connection) -> None:
    """An audit in rounds (`gbdesk.workflows.audit`): its state beyond the plan — the
    harness, the requests in flight, the seconds spent so far (a continued audit spends
    only the rest of its budget) and every look's verdicts — as JSON."""
    conn.execute("ALTER TABLE audits ADD COLUMN state_json TEXT")


def _v11(conn: sqlite3.Connection) -> None:
    """Self-tests of a model (`gbdesk.store.selftests`), e.g. whether the same prompts give
    byte-identical texts decoded alone and in a full batch: what was checked, its result
    (`passed`: 1 yes, 0 no, NULL: could not be run), one line in words and the details as
    JSON, dated, so a report's test log can say what was checked on its model and when."""
    conn.execute(
        """
        CREATE TABLE selftests (
            id INTEGER PRIMARY KEY,
            model_id INTEGER REFERENCES models(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            passed INTEGER,
            summary TEXT NOT NULL,
            result_json TEXT NOT NULL,
            app_version TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX selftests_model ON selftests (model_id, kind, id)")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8, _v9, _v10, _v11,
]  # fmt: skip
LATEST_VERSION = len(MIGRATIONS)


def latest_version() -> int:
    """The schema version this gbdesk writes (read at call time, so tests can extend
    `MIGRATIONS`)."""
    return len(MIGRATIONS)


def refuse_foreign(conn: sqlite3.Connection, name: str = "this database") -> None:
    """Refuse an SQLite file of another program: tables, but no gbdesk schema version."""
    from gbdesk.support.errors import UserError

    if conn.execute("PRAGMA user_version").fetchone()[0] != 0:
        return
    foreign = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 1"
    ).fetchone()
    if foreign:
        raise UserError(
            f"{name} is an SQLite database of another program (it has a table "
            f"'{foreign[0]}' but no gbdesk layout); gbdesk leaves it unchanged: choose another file"
        )


def migrate(
    conn: sqlite3.Connection,
    backup: Callable[[int], None] | None = None,
    name: str = "this database",
) -> int:
    """Bring the database to the latest version; return the version it had before.

    `backup(version)` is called once, under the write lock and before the first step, when
    an existing gbdesk database (version ≥ 1) is about to be migrated. An SQLite file of
    another program (tables, but version 0) and a newer gbdesk's database are refused.
    """
    from gbdesk.support.errors import UserError

    latest = latest_version()
    before = conn.execute("PRAGMA user_version").fetchone()[0]
    if before > latest:
        raise UserError(
            f"{name} has schema version {before}, newer than this gbdesk understands "
            f"({latest}): update gbdesk, or open another database"
        )
    backed_up = False
    for version in range(before + 1, latest + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another connection (a second thread or
            # process opening the same new file) may have applied it meanwhile.
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            if current >= version:
                conn.execute("COMMIT")
                continue
            if current == 0:
                refuse_foreign(conn, name)
            elif before >= 1 and backup is not None and not backed_up:
                backup(current)
                backed_up = True
            MIGRATIONS[version - 1](conn)
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if getattr(conn, "in_transaction", True):
                conn.execute("ROLLBACK")
            raise
    return before
