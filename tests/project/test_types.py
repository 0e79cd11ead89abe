"""mypy, as pyproject.toml configures it, finds no type error in the contract, the maths,
the store and the analysis (so the README's test command and `.ci/run` run the type
checker), and it would find one there: a wrong type against those packages fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tests as _tests

CHECKED = ("gbdesk/contract", "gbdesk/maths", "gbdesk/store", "gbdesk/analysis")


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """mypy on `args` from the repository, with pyproject.toml's configuration."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", *args],
        cwd=_tests.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_checked_packages_have_no_type_error():
    done = mypy(*CHECKED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_a_wrong_type_against_the_maths_is_an_error(tmp_path: Path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "from gbdesk.maths.stats import MetricValue\n\n"
        "def width(m: MetricValue) -> float:\n"
        "    return m.ci[1] - m.ci[0]\n\n"
        'width("not a metric")\n',
        encoding="utf-8",
    )
    done = mypy(str(wrong))
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'Argument 1 to "width" has incompatible type "str"' in done.stdout
