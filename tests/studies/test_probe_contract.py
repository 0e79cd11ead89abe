"""The probe contract (issue 25): the `Probe` base a study implements stays small, every
optional feature is a capability object the probe provides, and the core asks for the
capability — never for the probe's class or for a hook's existence."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import pytest

from gbdesk.contract import ChainProbe, GenerationProbe, Probe, ScoringProbe, get_probe, probe_names
from gbdesk.contract.capabilities import Capabilities
from gbdesk.contract.running import default_capabilities

ROOT = Path(__file__).resolve().parents[2]
MAX_MEMBERS = 20

sys.path.insert(0, str(ROOT / "scripts"))
from architecture_figures import probe_members  # noqa: E402

#: what a study implements or declares (the contract; docs/adding_a_study.md lists it)
CONTRACT = {
    "all_items",
    "capabilities",
    "default_attempts",
    "default_generation",
    "extra_results",
    "findings",
    "headline_metrics",
    "items",
    "label",
    "label_options",
    "mark_definitions",
    "metric_groups",
    "metric_titles",
    "metrics",
    "options",
    "perform",
    "resolve_params",
    "study",
    "summary",
}
#: declared by every probe without a default (class annotations only)
DECLARED = {"name", "version", "card", "templates", "template_slots"}


def test_the_base_has_at_most_twenty_public_members():
    members = set(probe_members())  # as scripts/architecture_figures.py counts them
    assert members == {n for n in dir(Probe) if not n.startswith("_")}
    assert len(members) <= MAX_MEMBERS, sorted(members)
    assert members == CONTRACT, sorted(members ^ CONTRACT)
    annotated = {n for n in Probe.__annotations__ if not n.startswith("_")}
    assert annotated - members == DECLARED


def test_the_three_kinds_say_what_they_are_through_capabilities():
    """GenerationProbe, ScoringProbe and ChainProbe implement `perform` with their own
    building blocks (a scoring probe's `frame_metrics`, a chain's `attempt_chain`); the
    core learns of them only from the capabilities they wire."""
    for kind in (GenerationProbe, ScoringProbe, ChainProbe):
        assert "perform" in vars(kind) and "capabilities" in vars(kind)
    apx = get_probe("globalbias_apx")
    assert apx.capabilities.scores.metrics == apx.frame_metrics  # type: ignore[union-attr]
    sdeg = get_probe("intersectional_sdeg")
    assert sdeg.capabilities.running.chain == sdeg.attempt_chain  # type: ignore[attr-defined]
    assert sdeg.capabilities.running.engine_needs == frozenset()
    assert apx.capabilities.running.engine_needs == {"prompt_logprobs"}
    caps = {p.capabilities.running.kind for p in map(get_probe, probe_names())}
    assert caps == {"generation", "scoring", "chain"}


@pytest.mark.parametrize("name", probe_names())
def test_every_probe_works_through_its_capabilities(name):
    probe = get_probe(name)
    caps = probe.capabilities
    assert isinstance(caps, Capabilities)
    assert probe.capabilities is caps  # built once per probe
    for f in dataclasses.fields(caps):  # every capability is a frozen dataclass
        value = getattr(caps, f.name)
        if value is not None:
            assert dataclasses.is_dataclass(value), f.name
            assert type(value).__dataclass_params__.frozen, f.name  # type: ignore[attr-defined]
    params = probe.resolve_params()
    template = next(iter(probe.templates.values()))
    # the defaults a probe may change, asked the way the core asks them
    assert isinstance(caps.running.unit, str) and caps.running.rate_unit.endswith("/s")
    sizes = caps.audit.sizes()
    assert isinstance(sizes, list)
    if sizes:
        assert sizes[-1].attempts >= 1
    assert isinstance(caps.labelling.detector_title(params), str)
    assert isinstance(caps.labelling.source_prefix(), str)
    assert set(caps.exporting.files) >= {"attempts.csv", "metrics.csv"}
    assert caps.ppi.unit in ("attempt", "item")
    assert isinstance(caps.review.filters, dict)
    if name != "intersectional_filter":  # its items come from a dataset in the database
        items = probe.all_items(template)[:3]
        for item in items:
            assert isinstance(caps.presentation.item_title(item.key, item.metadata), str)
        assert caps.running.work_units(items, 2) >= len(items)
    for metric in [*probe.mark_definitions, *probe.headline_metrics]:
        assert caps.presentation.metric_title(metric)
        bounds = caps.presentation.metric_bounds(metric)
        assert bounds is None or bounds[0] < bounds[1]
    # capabilities only some probes have come as a whole or not at all
    assert (caps.scores is not None) == isinstance(probe, ScoringProbe)
    assert (caps.running.chain is not None) <= isinstance(probe, ChainProbe)
    assert caps.running.batchable == isinstance(probe, GenerationProbe)


def test_study_probes_provide_capabilities_instead_of_overriding_base_hooks():
    """A study class's methods named like a capability field are the study's own
    building blocks: the core never reaches them as `probe.<hook>`, so a probe that
    changes a default does so in `capabilities` (checked: the wired value is the probe's)."""
    lf = get_probe("laissez_faire")
    caps = lf.capabilities
    assert caps.flat is not None and caps.resampling is not None
    assert caps.coding.view and caps.review.view and caps.presentation.result_view
    assert caps.labelling.passes()  # the extractor's labelling passes
    sdeg = get_probe("intersectional_sdeg").capabilities
    assert sdeg.running.chain is not None and sdeg.audit.priority == 30
    assert get_probe("globalbias_apx").capabilities.scores is not None
    assert get_probe("inventories").capabilities.audit.refuse_unbalanced is False
    assert get_probe("isear").capabilities.review.filters  # undetected and ties
    # a probe that changes nothing has exactly the defaults
    plain = default_capabilities(lf)
    assert plain.flat is None and plain.resampling is None and plain.scores is None
    assert plain.coding.view is None and plain.review.view is None


def _core_modules() -> list[Path]:
    """gbdesk's modules outside the studies (their `_qt` views and study code may know
    their own classes) and outside the contract's probe kinds (which bind their own)."""
    return [
        p
        for p in (ROOT / "gbdesk").rglob("*.py")
        if "studies" not in p.relative_to(ROOT / "gbdesk").parts
        and p != ROOT / "gbdesk" / "contract" / "probe.py"
    ]


PROBE_CLASSES = {"Probe", "GenerationProbe", "ScoringProbe", "ChainProbe"}
#: the hooks the base had before capabilities (issue 25): the core must not look for them
OLD_HOOKS = {
    "has_label_facts", "label_facts", "flat_metrics", "flat_extra_results",
    "flat_label_units", "frame_metrics", "frame_extra_results", "resampled_metrics",
    "ppi_resampled_metrics", "ppi_unit", "ppi_evaluator", "review_category",
    "review_margin", "review_filters", "review_title", "review_extras", "review_quality",
    "review_view", "label_confidence", "coding_view", "coding_title", "default_codebook",
    "coding_candidates", "plan_import", "import_item", "import_hint", "audit_sizes",
    "audit_precision", "audit_priority", "audit_tokens", "chain_batchable",
    "attempt_chain", "builtin_source_prefix", "human_label_from_rows", "labelling_passes",
    "rated_units", "rating_kinds", "accuracy_words", "export_files", "export_tables",
    "export_tables_per_attempt", "view_class",
}  # fmt: skip


def test_the_core_does_not_test_probe_classes_or_look_for_hooks():
    offences = []
    for path in _core_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                    kinds = node.args[1]
                    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
                    if any(isinstance(n, ast.Name) and n.id in PROBE_CLASSES for n in names):
                        offences.append(f"{path.name}:{node.lineno} isinstance on a probe class")
                if node.func.id in ("hasattr", "getattr") and len(node.args) >= 2:
                    arg = node.args[1]
                    if isinstance(arg, ast.Constant) and arg.value in OLD_HOOKS:
                        offences.append(f"{path.name}:{node.lineno} looks for {arg.value}")
            if isinstance(node, ast.Attribute) and node.attr in OLD_HOOKS:
                offences.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not offences, offences


@pytest.mark.parametrize("name", probe_names())
def test_every_qt_view_a_probe_names_imports(name):
    """A probe's review, coding and result views ("module:Class", relative to the probe's
    package) resolve to a class: a probe moved to another package keeps its views."""
    pytest.importorskip("PySide6")
    from gbdesk.contract.running import view_class

    probe = get_probe(name)
    caps = probe.capabilities
    for target in (caps.review.view, caps.coding.view, caps.presentation.result_view):
        if target:
            assert isinstance(view_class(probe, target), type), (name, target)
