"""gbdesk's tests, in folders that mirror the packages (tests/<package>/, tests/studies/<study>/),
with shared helpers at this level and shared fixtures in conftest.py."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"
