"""One import path for the contract: `gbdesk.contract`. The old paths (`gbdesk.studies`,
`gbdesk.studies.base`, `.capabilities`, `.importing`) are thin deprecated aliases for
third-party studies: each name they gave comes with a DeprecationWarning and is the
contract's own object, they give nothing private, and no file of gbdesk, of its tests or
of its documentation imports the contract by them."""

from __future__ import annotations

import ast
import importlib
import re
import warnings

import pytest

import gbdesk.contract
import tests as _tests

ROOT = _tests.ROOT
OLD_PATHS = (
    "gbdesk.studies",
    "gbdesk.studies.base",
    "gbdesk.studies.capabilities",
    "gbdesk.studies.importing",
)
ALIASES = {
    ROOT / "gbdesk" / "studies" / f
    for f in ("__init__.py", "base.py", "capabilities.py", "importing.py")
}
STUDY_PACKAGES = {"genderbench", "laissez_faire", "globalbias", "intersectional"}


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_path_gives_the_contracts_names_with_a_warning(old):
    module = importlib.import_module(old)
    names = dir(module)
    assert names and not [n for n in names if n.startswith("_")]
    for name in names:
        with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)}\.{name} is deprecated"):
            value = getattr(module, name)
        home = gbdesk.contract if name in gbdesk.contract.__all__ else None
        if home is not None:
            assert value is getattr(home, name)


def test_the_old_package_still_imports_its_studies():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from gbdesk.studies import genderbench

    assert genderbench.STUDY.name == "genderbench"
    with pytest.raises(AttributeError):
        importlib.import_module("gbdesk.studies")._instances  # noqa: B018


def _old_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in OLD_PATHS and node.level == 0:
            names = [a.name for a in node.names if a.name not in STUDY_PACKAGES]
            if names:
                found.append(f"from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.ImportFrom) and node.module == "gbdesk":
            if any(a.name == "studies" for a in node.names):
                found.append("from gbdesk import studies")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in OLD_PATHS[1:]]
    return found


def test_nothing_imports_the_contract_by_an_old_path():
    problems = []
    for folder in ("gbdesk", "tests", "benchmarks", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if path in ALIASES:
                continue
            found = _old_imports(ast.parse(path.read_text(encoding="utf-8")))
            problems += [f"{path.relative_to(ROOT)}: {f}" for f in found]
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            try:
                found = _old_imports(ast.parse(block))
            except SyntaxError:
                found = re.findall(r"from gbdesk\.studies(?:\.\w+)? import [\w, ]+", block)
            problems += [f"{path.relative_to(ROOT)}: {f}" for f in found]
    assert not problems, problems
