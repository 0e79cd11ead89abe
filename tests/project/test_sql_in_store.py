"""All SQL lives in `gbdesk/store/` (issue 25): the rest of the package calls typed store
methods, so a schema change touches one package and no caller builds SQL from names.

The detector is `scripts/architecture_figures.py`'s (the figure "lines holding SQL outside
store/" the issue measures), so the guard and the figure cannot disagree.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import tests as _tests

ROOT = _tests.ROOT


def figures() -> ModuleType:
    path = ROOT / "scripts" / "architecture_figures.py"
    spec = importlib.util.spec_from_file_location("architecture_figures", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_no_sql_outside_the_store():
    found = figures().sql_lines()
    assert found == [], "SQL outside gbdesk/store/ (move it into a store method):\n" + "\n".join(
        found
    )


def test_the_detector_finds_sql_as_the_project_writes_it():
    detect = figures().sql_in_source
    source = '''
a = "SELECT id FROM runs WHERE id = ?"
b = (
    "SELECT id, model_id, budget "
    "FROM audits WHERE id = ?"
)
c = f"UPDATE audits SET {cols} WHERE id = ?"
d = "PRAGMA data_version"
e = "INSERT INTO labels (a) VALUES (?)"
f = """
    SELECT l.* FROM labels l
"""
g = "Select the items from the list, then insert into the report"  # prose
h = "update the table; set the budget"
'''
    assert detect(source) == [2, 4, 7, 8, 9, 11]  # f: the line that holds it


def test_the_store_is_where_sql_is_allowed(tmp_path):
    package = tmp_path / "pkg"
    (package / "store").mkdir(parents=True)
    (package / "store" / "db.py").write_text('Q = "SELECT id FROM runs"\n', encoding="utf-8")
    (package / "flat.py").write_text(
        'X = 1\nQ = ("SELECT a, b "\n     "FROM t")\n', encoding="utf-8"
    )
    found = figures().sql_lines(package)
    assert found == ['pkg/flat.py:2: Q = ("SELECT a, b "']
    # and the real store does hold the package's SQL (the detector sees it there)
    store = ROOT / "gbdesk" / "store" / "audits.py"
    assert figures().sql_in_source(store.read_text(encoding="utf-8"))
