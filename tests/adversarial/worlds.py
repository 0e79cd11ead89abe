"""A small database with a run of each kind the commands take, for the generated cases of
the rules of gbdesk issue 27 (numbers, nesting, controls), and running `gbdesk.cli.main`
in this process against a fresh copy of it."""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.studies.intersectional.data import load_categories, load_groups

INVENTORIES = get_probe("inventories")
INV_ITEMS = INVENTORIES.items(INVENTORIES.resolve_params())
LF = get_probe("laissez_faire")
LF_ITEM = next(i for i in LF.items(LF.resolve_params()) if len(i.metadata["roles"]) == 2)
#: progress lines of runs and audits, which may come before an error line
PROGRESS = ("[run ", "[audit ")
#: the integers every numeric argument and column is tried with (issue 27)
EXTREMES = [str(2**63 - 1), str(2**63), str(10**20), "-1"]


def csv_text(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def role_answers_csv() -> str:
    """An intersectional_sdeg import: one role of the first group, one answer."""
    return csv_text(
        [
            ["group", "role", "category", "answer"],
            [load_groups()[0]["group"], "A role.", "1", load_categories()[0]["options"][0]],
        ]
    )


@dataclass
class World:
    """The database and the ids of its runs: inv (inventories), lf (laissez_faire), ix
    (intersectional_sdeg), elicit and dataset (the intersectional dataset steps)."""

    folder: Path
    db: Path
    runs: dict[str, int]
    attempts: dict[str, int]  # the first attempt id of each run

    def copy(self, folder: Path) -> Path:
        db = folder / "db.sqlite"
        with Store(self.db) as store:  # a consistent copy, write-ahead log included
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copyfile(self.db, db)
        return db


def build_world(folder: Path) -> World:
    from gbdesk.workflows.importer import import_generations
    from gbdesk.workflows.runs import execute_run, plan_run
    from tests.fakes import fake_model
    from tests.intersectional_fakes import DatasetBackend

    db = folder / "world.sqlite"
    inv = folder / "inv.csv"
    inv.write_text(
        csv_text(
            [["item", "prompt", "response", "attempt"]]
            + [[i.key, i.prompt, "He said she left.", "0"] for i in INV_ITEMS[:4]]
        ),
        "utf-8",
    )
    lf = folder / "lf.csv"
    lf.write_text(
        csv_text(
            [["item", "prompt", "response"], [LF_ITEM.key, LF_ITEM.prompt, "Maria hired Tom."]]
        ),
        "utf-8",
    )
    ix = folder / "ix.csv"
    ix.write_text(role_answers_csv(), "utf-8")
    runs: dict[str, int] = {}
    with Store(db) as store:
        for name, probe, path in (
            ("inv", "inventories", inv),
            ("lf", "laissez_faire", lf),
            ("ix", "intersectional_sdeg", ix),
        ):
            runs[name] = import_generations(store, probe, path)["run_id"]
        model = fake_model(store, folder)
        backend = DatasetBackend()
        runs["elicit"] = plan_run(
            store, "intersectional_elicit", model, groups="White;women", max_stereotypes=3
        )
        execute_run(store, runs["elicit"], backend_factory=lambda m, g: backend)
        runs["dataset"] = plan_run(
            store, "intersectional_filter", model, elicitation=runs["elicit"]
        )
        execute_run(store, runs["dataset"], backend_factory=lambda m, g: backend)
        attempts = {name: store.attempts(run_id)[0]["id"] for name, run_id in runs.items()}
    return World(folder, db, runs, attempts)


def db_state(db: Path) -> str:
    """A digest of every table's rows (the file's bytes may change on open)."""
    with Store(db) as store:
        digest = hashlib.sha256()
        tables = store.conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY 1")
        for (table,) in tables.fetchall():
            rows = store.conn.execute(f'SELECT * FROM "{table}"').fetchall()
            for row in sorted(rows, key=repr):
                digest.update(repr(row).encode("utf-8", "backslashreplace"))
        return digest.hexdigest()


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def check(self, what: str) -> None:
        """Exit 0, or exit 2 with one line `gbdesk: error: …` — never exit 1 ("unexpected
        error"), a traceback or several lines."""
        assert self.code in (0, 2), (what, self.code, self.err[-2000:])
        assert "Traceback" not in self.err and "unexpected error" not in self.err, (what, self.err)
        if self.code == 2:
            lines = [line for line in self.err.strip().splitlines() if line.strip()]
            lines = [line for line in lines if not line.startswith(PROGRESS)]
            assert len(lines) == 1 and lines[0].startswith("gbdesk: error: "), (what, self.err)

    @property
    def worked(self) -> bool:
        """It reported progress (a run began): what it saved before failing stays."""
        return any(line.startswith(PROGRESS) for line in self.err.splitlines())


def run_on_copy(world: World, tmp: Path, args: list[str], what: str) -> Outcome:
    """`args` on a fresh copy of the world's database: exit 0, or one line — and then,
    unless a run had begun (progress lines), the database as it was."""
    db = world.copy(tmp)
    before = db_state(db)
    outcome = run_cli([*args, "--db", db])
    outcome.check(what)
    if outcome.code == 2 and not outcome.worked:
        assert db_state(db) == before, what
    return outcome


def run_cli(args: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return Outcome(code, out.getvalue(), err.getvalue())


@pytest.fixture
def fake_engine(monkeypatch, tmp_path):
    """`gbdesk run` in this process without a model: the fake backend, a fake model file
    (as `tests.adversarial.driver` does for subprocesses)."""
    import gbdesk.engine.llama_backend as llama_backend
    import gbdesk.workflows.runs as runs
    from tests.fakes import FakeBackend, fake_model

    def make(*_args, **_kwargs):
        return FakeBackend()

    monkeypatch.setattr(llama_backend, "LlamaCppBackend", make)
    monkeypatch.setattr(runs, "llama_backend_factory", lambda model, generation, **_kw: make())
    monkeypatch.setattr(runs, "resolve_model", lambda store, spec: fake_model(store, tmp_path))
