"""ruff, as pyproject.toml configures it, finds nothing in the code, the tests, the
benchmarks and the scripts (so the README's test command and `.ci/run` run the linter)."""

from __future__ import annotations

import subprocess
import sys

import tests as _tests

CHECKED = ("gbdesk", "tests", "benchmarks", "scripts")


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *CHECKED],
        cwd=_tests.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
