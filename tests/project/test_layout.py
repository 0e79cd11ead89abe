"""The package layout: the core knows studies only through the catalogue and base classes.

Fails when a probe's or a study's name appears in code outside `gbdesk/studies/` (as a
string or an import), when core code imports a study's modules or calls a study's
private function, or when the README's probe table differs from the catalogue's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tests as _tests
from gbdesk.contract import get_probe, probe_names, probe_table_markdown, studies

ROOT = _tests.ROOT
PACKAGE = ROOT / "gbdesk"


def core_files() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "studies" not in p.relative_to(PACKAGE).parts]


def names() -> tuple[set[str], set[str]]:
    probes = set(probe_names())
    study_names = {s.name for s in studies()}
    study_names |= {p.name for p in (PACKAGE / "studies").iterdir() if p.is_dir()}
    return probes, study_names - {"__pycache__"}


def offending_strings(tree: ast.AST, probes: set[str], study_names: set[str]) -> list[str]:
    """String constants naming a probe (as a word) or a study (as an identifier: the
    whole string, a path or module segment)."""
    probe_re = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, probes)) + r")(?![\w-])")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if probe_re.search(text):
                out.append(text)
                continue
            segments = re.split(r"[/.:\\\\]", text)
            if any(seg in study_names for seg in segments) and (
                text in study_names or len(segments) > 1
            ):
                out.append(text)
    return out


def test_no_study_name_outside_the_studies():
    probes, study_names = names()
    assert {"inventories", "laissez_faire", "intersectional_sdeg"} <= probes
    problems = {}
    for path in core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = offending_strings(tree, probes, study_names)
        if found:
            problems[str(path.relative_to(ROOT))] = found
    assert not problems, problems


def test_no_study_named_in_the_core_prose():
    """Comments, docstrings and messages of the core speak of probes in general: a study's
    name in any spelling (laissez_faire, Laissez-Faire, GlobalBias …) stays in its package."""
    _, study_names = names()
    spelled = "|".join(re.escape(n).replace("_", "[-_ ]?") for n in study_names)
    pattern = re.compile(rf"\b({spelled})\b", re.IGNORECASE)
    problems = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in core_files()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not problems, problems


def test_core_imports_no_study_module():
    """The core knows the studies through the contract (`gbdesk.contract`) alone: it
    imports nothing from `gbdesk.studies`, not even the contract's deprecated old paths."""
    problems = []
    for path in core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            problems += [
                f"{path.name}: imports {m}"
                for m in modules
                if m == "gbdesk.studies" or m.startswith("gbdesk.studies.")
            ]
    assert not problems, problems


def test_core_calls_no_private_function_of_a_probe():
    problems = []
    for path in core_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and (
                    (isinstance(node.value, ast.Name) and "probe" in node.value.id.lower())
                    or (
                        isinstance(node.value, ast.Call)
                        and getattr(node.value.func, "id", "") == "get_probe"
                    )
                )
            ):
                problems.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not problems, problems


def test_the_checks_catch_what_they_should():
    probes, study_names = names()
    bad = ast.parse(
        'x = "laissez_faire"\n'
        'y = resource("globalbias/names.csv")\n'
        'z = "a run of inventories"\n'
        'ok = "gender and intersectional bias"\n'
    )
    found = offending_strings(bad, probes, study_names)
    assert sorted(found) == ["a run of inventories", "globalbias/names.csv", "laissez_faire"]


def test_every_probe_belongs_to_a_registered_study():
    by_study = {s.name: [p.name for p in s.probes] for s in studies()}
    assert set(by_study) >= {"genderbench", "laissez_faire", "globalbias", "intersectional"}
    for name in probe_names():
        probe = get_probe(name)
        assert name in by_study[probe.study]


def test_readme_probe_table_is_the_catalogue():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- probes:start -->", "<!-- probes:end -->"
    assert start in text and end in text, "README lacks the generated probe table markers"
    table = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert table == probe_table_markdown(), (
        "README's probe table is stale: regenerate it with `gbdesk probes --markdown`"
    )
