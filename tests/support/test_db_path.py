"""A mistyped database path is refused (issue 26): a missing folder is an error and is
never created; a new database file is made only by commands that write (and the app),
in an existing folder. And without a display, the app says how to get one — or to use
the commands — never to start an invisible app."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gbdesk.store.db import check_db_path
from gbdesk.support.errors import UserError


def gbdesk(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "gbdesk", *args], capture_output=True, text=True, timeout=300,
        cwd=cwd,
    )  # fmt: skip


def test_reading_commands_refuse_a_missing_folder_and_file_and_create_nothing(tmp_path):
    done = gbdesk("runs", "--db", "nonexist/x.sqlite", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "gbdesk: error: the folder of the database nonexist/x.sqlite does not exist (a "
        "mistyped path?); nothing was created — create the folder first or choose another path"
    )
    assert list(tmp_path.iterdir()) == []
    # an existing folder, no file: a command that only reads makes none
    for args in (["runs"], ["metrics", "1"], ["models"], ["export", "1", "--csv", "out"]):
        done = gbdesk(*args, "--db", "typo.sqlite", cwd=tmp_path)
        assert done.returncode == 2, args
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("gbdesk: error: no database at typo.sqlite (a mistyped path?)")
        assert "commands that write (run, import, audit" in line
        assert list(tmp_path.iterdir()) == [], args


def test_writing_commands_refuse_a_missing_folder_but_create_in_an_existing_one(tmp_path):
    from gbdesk.contract import get_probe

    probe = get_probe("inventories")
    prompt = probe.all_items(probe.templates["card"])[0].prompt
    csv = tmp_path / "answers.csv"
    csv.write_text(f'item,attempt,prompt,response\nbsri/female/00,0,"{prompt}",He was kind.\n')
    done = gbdesk(
        "import", "--probe", "inventories", "--file", str(csv), "--db", "no/such/dir/x.sqlite",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not (tmp_path / "no").exists()
    done = gbdesk("import", "--probe", "inventories", "--file", str(csv), "--db", "new.sqlite",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new.sqlite").is_file()
    assert gbdesk("runs", "--db", "new.sqlite", cwd=tmp_path).returncode == 0


def test_the_app_refuses_a_missing_folder_before_any_window(tmp_path):
    done = gbdesk("--db", "nonexist/x.sqlite", cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_db_help_states_the_rule():
    done = gbdesk("runs", "--help")
    text = " ".join(done.stdout.split())
    assert "Its folder must exist; only commands that write (run, import, audit, label, models " \
        "--add …) create a new file there" in text


def test_check_db_path(tmp_path):
    with pytest.raises(UserError, match="is a file, not a folder"):
        (tmp_path / "f").write_text("x")
        check_db_path(tmp_path / "f" / "x.sqlite", create=True)
    with pytest.raises(UserError, match="points at a folder"):
        check_db_path(tmp_path, create=True)
    check_db_path(tmp_path / "new.sqlite", create=True)  # an existing folder: fine
    with pytest.raises(UserError, match="no database at"):
        check_db_path(tmp_path / "new.sqlite", create=False)


def test_open_database_in_the_app_refuses_a_missing_folder(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from gbdesk.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    first = str(tmp_path / "a.sqlite")
    window = MainWindow(first, settings)
    qtbot.addWidget(window)
    window.ctx.set_db(str(tmp_path / "gone" / "b.sqlite"))
    assert window.ctx.db_path == first and not (tmp_path / "gone").exists()
    assert "does not exist" in window.db_banner.text()
    window.ctx.set_db(str(tmp_path / "b.sqlite"))  # a new file in an existing folder
    assert window.ctx.db_path == str(tmp_path / "b.sqlite")


def test_no_display_says_how_to_get_one_not_an_invisible_app(monkeypatch):
    from gbdesk.ui import app

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(app.sys, "platform", "linux")
    with pytest.raises(UserError) as caught:
        app._check_display()
    message = str(caught.value)
    assert "\n" not in message
    assert "desktop session" in message and "ssh -X" in message and "gbdesk --help" in message
    assert "offscreen" not in message and "QT_QPA_PLATFORM" not in message


@pytest.mark.parametrize(
    "model",
    ["missing.gguf", "notes.txt", "short.gguf"],
    ids=["no-such-file", "a-text-file", "a-file-that-is-not-gguf"],
)
def test_a_refused_command_leaves_no_new_database(tmp_path, capsys, model):
    """Issue 43 (22): `gbdesk run --model FILE` refused in one line, and still created
    the database file (and its -wal, -shm)."""
    from gbdesk.cli import main

    (tmp_path / "notes.txt").write_text("not a model\n")
    (tmp_path / "short.gguf").write_bytes(b"GGU")
    db = tmp_path / "new.sqlite"
    code = main(["run", "--probe", "inventories", "--model", str(tmp_path / model),
                 "--db", str(db)])  # fmt: skip
    assert code == 2, capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"notes.txt", "short.gguf"}
    ), "a refused command made files"


def test_a_refused_command_keeps_a_database_that_was_there(tmp_path, capsys):
    from gbdesk.cli import main

    db = tmp_path / "old.sqlite"
    from gbdesk.store import Store

    Store(db).close()
    assert main(["run", "--probe", "inventories", "--model", "missing.gguf", "--db", str(db)]) == 2
    assert db.exists()
