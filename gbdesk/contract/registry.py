"""The catalogue of studies and their probes, found through entry points.

Every study — the built-in ones in `gbdesk.studies.<study>` and any a research group
ships as its own package — registers a `Study` in the ``gbdesk.studies`` entry-point
group of its package metadata (see pyproject.toml and docs/adding_a_study.md). The core
(runs, store, results, report, the app's panes) reaches studies only through this
catalogue and the contract (`gbdesk.contract`).
"""

from __future__ import annotations

import logging
import pkgutil
import threading
from importlib import import_module, metadata
from typing import Any

from gbdesk.contract.probe import Harness, Probe, Study
from gbdesk.support.errors import UserError

ENTRY_POINT_GROUP = "gbdesk.studies"
#: the package of the built-in studies (scanned when gbdesk is not installed)
BUILT_IN = "gbdesk.studies"
log = logging.getLogger(__name__)

_lock = threading.RLock()
_studies: dict[str, Study] | None = None
_probes: dict[str, type[Probe]] = {}
_instances: dict[str, Probe] = {}


def _discover() -> dict[str, Study]:
    """Studies from the entry points; in a source tree without package metadata, the
    built-in study packages beside this module."""
    found: dict[str, Study] = {}
    points = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    own = [ep for ep in points if ep.value.startswith(BUILT_IN + ".")]
    if not own:  # not installed (e.g. run from a checkout): look in the built-in package
        log.warning("no %s entry points of gbdesk itself; scanning %s", ENTRY_POINT_GROUP, BUILT_IN)
        for info in pkgutil.iter_modules(import_module(BUILT_IN).__path__):
            if info.ispkg and not info.name.startswith("_"):
                module = import_module(f"{BUILT_IN}.{info.name}")
                if isinstance(getattr(module, "STUDY", None), Study):
                    found[module.STUDY.name] = module.STUDY
    for ep in points:
        try:
            study = ep.load()
        except Exception:  # a broken third-party study must not stop the app
            log.exception("could not load the study %r (%s)", ep.name, ep.value)
            continue
        if not isinstance(study, Study):
            log.error("entry point %r (%s) is not a gbdesk Study", ep.name, ep.value)
            continue
        found.setdefault(study.name, study)
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def _load() -> dict[str, Study]:
    global _studies
    with _lock:
        if _studies is None:
            studies = _discover()
            probes: dict[str, type[Probe]] = {}
            for study in studies.values():
                for cls in study.probes:
                    if cls.name in probes:
                        log.error(
                            "probe %r of study %r is already defined; ignored",
                            cls.name,
                            study.name,
                        )
                        continue
                    probes[cls.name] = cls
            _probes.clear()
            _probes.update(probes)
            _instances.clear()
            _studies = studies
        return _studies


def reload() -> None:
    """Forget the catalogue (after installing or removing a study package)."""
    global _studies
    with _lock:
        _studies = None
        _probes.clear()
        _instances.clear()


def studies() -> list[Study]:
    return list(_load().values())


def get_study(name: str) -> Study:
    known = _load()
    if name not in known:
        raise UserError(f"unknown study {name!r}; available: {', '.join(known)}")
    return known[name]


def probe_names() -> list[str]:
    _load()
    return list(_probes)


def get_probe(name: str) -> Probe:
    _load()
    with _lock:
        if name not in _probes:
            raise UserError(f"unknown probe {name!r}; available: {', '.join(_probes)}")
        if name not in _instances:
            _instances[name] = _probes[name]()
        return _instances[name]


def harnesses() -> dict[str, Harness]:
    """Every study's harnesses by name."""
    return {h.name: h for study in studies() for h in study.harnesses}


def metric_sections() -> dict[tuple[str, str], tuple[int, str]]:
    """(probe, metric) → (its place, its harm section's title) over every harness's
    sections (`Harness.sections`), in their order; the first harness naming it wins."""
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for harness in harnesses().values():
        for title, keys in harness.sections:
            for key in keys:
                out.setdefault(tuple(key), (len(out), title))  # type: ignore[arg-type]
    return out


def get_harness(name: str) -> Harness:
    known = harnesses()
    if name not in known:
        raise UserError(f"unknown harness {name!r}; available: {', '.join(known) or 'none'}")
    return known[name]


def study_reports(runs: list[Any]) -> list[Any]:
    """The cross-run reports (`Study.cross_run_report`) of the studies whose probes ran:
    each study's hook gets its own runs (`gbdesk.support.blocks.StudyRun`), in order."""
    _load()
    out = []
    for study in studies():
        if not study.cross_run_report:
            continue
        mine = [r for r in runs if r.probe in {p.name for p in study.probes}]
        if not mine:
            continue
        module, _, attr = study.cross_run_report.partition(":")
        try:
            report = getattr(import_module(module), attr)(mine)
        except Exception:  # one study's report must not stop the others'
            log.exception("the cross-run report of study %r failed", study.name)
            continue
        if report is not None:
            out.append(report)
    return out


def probe_table_markdown() -> str:
    """The README's probe table, generated from the catalogue."""
    rows = ["| probe | study | items | what it measures |", "|---|---|---|---|"]
    for name in probe_names():
        probe = get_probe(name)
        items = probe.all_items(next(iter(probe.templates.values())))
        size = f"{len(items):,}"
        running = probe.capabilities.running
        if probe.capabilities.scores is not None:
            size += f" blocks ({running.work_units(items, 1):,} {running.unit})"
        study = get_study(probe.study).title if probe.study in _load() else probe.study
        rows.append(f"| `{name}` | {study} | {size} | {probe.card.measures_short} |")
    return "\n".join(rows)
