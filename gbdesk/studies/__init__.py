"""The probe catalogue."""

from __future__ import annotations

from gbdesk.errors import UserError
from gbdesk.studies.base import Item, ItemResult, Probe, ProbeCard
from gbdesk.studies.genderbench.probes import GestCreativeProbe, InventoriesProbe, JobsLumProbe
from gbdesk.studies.globalbias.probes import GlobalBiasApxProbe, GlobalBiasProfilesProbe
from gbdesk.studies.intersectional.probe import IntersectionalProbe
from gbdesk.studies.laissez_faire.probe import LaissezFaireProbe

_PROBES: dict[str, type[Probe]] = {
    cls.name: cls
    for cls in (
        InventoriesProbe,
        JobsLumProbe,
        GestCreativeProbe,
        LaissezFaireProbe,
        GlobalBiasApxProbe,
        GlobalBiasProfilesProbe,
        IntersectionalProbe,
    )
}
_cache: dict[str, Probe] = {}


def probe_names() -> list[str]:
    return list(_PROBES)


def get_probe(name: str) -> Probe:
    if name not in _PROBES:
        raise UserError(f"unknown probe {name!r}; available: {', '.join(_PROBES)}")
    if name not in _cache:
        _cache[name] = _PROBES[name]()
    return _cache[name]


__all__ = ["Item", "ItemResult", "Probe", "ProbeCard", "get_probe", "probe_names"]
