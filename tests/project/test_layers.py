"""The core's layers: every package imports only downward (issue 25).

Every `import` and `from … import` of a gbdesk module counts — at the top of a module, inside a
function, or under `if TYPE_CHECKING:` — because a function-level import is still a
dependency: it is how the import loops of the old flat layout were held together.

The layers, lowest first (docs/layout.md says why each sits where it does):

    support → maths → store → engine → contract → analysis → people → report → workflows
    → the studies (`gbdesk.studies` and its study packages) → app (cli, ui)

A package may import its own modules and any lower layer, never a higher one or a sideways
one. The study packages (`gbdesk/studies/<study>/`) are plug-ins: they may use every core
layer below the app, never another study, and only their `_qt` sub-packages may import the
app's `gbdesk.ui`. Nothing below the study packages names one (they are found through entry
points). And no module takes part in an import loop.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

import tests as _tests

ROOT = _tests.ROOT


def _figures():
    """scripts/architecture_figures.py: the import graph its figures are measured on."""
    path = ROOT / "scripts" / "architecture_figures.py"
    spec = importlib.util.spec_from_file_location("architecture_figures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURES = _figures()

#: lowest first; each layer names the module prefixes it holds
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("support", ("gbdesk.support", "gbdesk")),  # `gbdesk` itself holds only __version__
    ("maths", ("gbdesk.maths",)),
    ("store", ("gbdesk.store",)),
    ("engine", ("gbdesk.engine",)),
    ("contract", ("gbdesk.contract",)),  # items, probe, running, registry, capabilities …
    ("analysis", ("gbdesk.analysis",)),
    ("people", ("gbdesk.people",)),
    ("report", ("gbdesk.report",)),
    ("workflows", ("gbdesk.workflows",)),
    ("study packages", ("gbdesk.studies",)),  # the built-in studies and the old paths
    ("app", ("gbdesk.cli", "gbdesk.ui", "gbdesk.__main__")),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
#: modules of gbdesk/studies/ itself: the contract's old paths, kept for third-party studies
SHIMS = {"base", "importing", "capabilities"}


MODULES = FIGURES.modules()


def study_of(module: str) -> str | None:
    """The study package a module belongs to (`laissez_faire`), or None for the core."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "studies" and parts[2] not in SHIMS:
        return parts[2]
    return None


def layer_of(module: str) -> str:
    if study_of(module):
        return "study packages"
    best = ""
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, found = prefix, name
    assert best, f"{module} is in no layer: add it to LAYERS in tests/project/test_layers.py"
    return found


def imports(module: str) -> Iterator[tuple[int, str]]:
    """(line, gbdesk module) for every import anywhere in the module's source."""
    return FIGURES.imports(module, MODULES[module], set(MODULES))


def _allowed(module: str, target: str) -> bool:
    if target == "gbdesk":  # __version__
        return True
    source, dest = layer_of(module), layer_of(target)
    own, theirs = study_of(module), study_of(target)
    if source == "study packages":
        if theirs:
            return theirs == own  # never another study
        if dest == "app":  # only a study's Qt views may use the app's widgets
            return ".".join(target.split(".")[:2]) == "gbdesk.ui" and "._qt" in module
        return True
    if source == dest:
        return True
    return RANK[dest] < RANK[source]


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_packages_import_only_downward():
    wrong = [
        f"{MODULES[m].relative_to(ROOT)}:{line} imports {t} "
        f"({layer_of(m)} → {layer_of(t)})"
        for m in MODULES
        for line, t in imports(m)
        if not _allowed(m, t)
    ]
    assert not wrong, "upward or sideways imports:\n" + "\n".join(wrong)


def test_no_import_loops():
    loops = FIGURES.cycles({m: {t for _, t in imports(m)} for m in MODULES})
    assert not loops, "modules that import each other:\n" + "\n".join(", ".join(c) for c in loops)


# -- the checker itself ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("module", "target", "ok"),
    [
        ("gbdesk.analysis.results", "gbdesk.maths.stats", True),
        ("gbdesk.maths.stats", "gbdesk.analysis.results", False),  # upward
        ("gbdesk.engine.base", "gbdesk.store", True),
        ("gbdesk.store", "gbdesk.engine.base", False),
        ("gbdesk.people.review", "gbdesk.workflows.runs", False),
        ("gbdesk.workflows.audit", "gbdesk.report.pdf", True),
        ("gbdesk.contract.probe", "gbdesk.analysis.results", False),
        ("gbdesk.analysis.results", "gbdesk.contract", True),
        ("gbdesk.analysis.results", "gbdesk.studies", False),  # the core never names studies
        ("gbdesk.workflows.runs", "gbdesk.studies.base", False),
        ("gbdesk.studies.base", "gbdesk.contract.probe", True),
        ("gbdesk.studies.laissez_faire.probe", "gbdesk.workflows.runs", True),
        ("gbdesk.studies.laissez_faire.probe", "gbdesk.studies.genderbench.common", False),
        ("gbdesk.studies.laissez_faire.probe", "gbdesk.ui.theme", False),
        ("gbdesk.studies.laissez_faire._qt.views", "gbdesk.ui.theme", True),
        ("gbdesk.studies.laissez_faire._qt.views", "gbdesk.cli", False),
        ("gbdesk.report.pdf", "gbdesk.studies.laissez_faire", False),
        ("gbdesk.ui.main_window", "gbdesk.workflows.runs", True),
    ],
)
def test_the_rule(module, target, ok):
    assert _allowed(module, target) is ok


def test_function_level_and_type_checking_imports_count(tmp_path, monkeypatch):
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gbdesk.analysis.results import x\n"
        "def f():\n    from gbdesk.workflows import runs\n"
    )
    path = tmp_path / "probe_mod.py"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setitem(MODULES, "gbdesk.maths.probe_mod", path)
    found = {t for _, t in imports("gbdesk.maths.probe_mod")}
    # `from gbdesk.workflows import runs` also runs the package's __init__
    assert found == {"gbdesk.analysis.results", "gbdesk.workflows.runs", "gbdesk.workflows"}


def test_no_arrow_back_up_in_the_house():
    """Between top-level packages too: the contract sits below the core that uses it, the
    studies above it (`scripts/architecture_figures.py`, figure 7)."""
    assert FIGURES.arrows_back_up() == []
