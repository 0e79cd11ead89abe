"""A GenderBench probe's card and the metrics it declares, as data: its folder's
``card.toml`` (``[card]``: the `ProbeCard`'s prose; ``[[metrics]]``: one `Metric` each, in
order, its mark bands as ``[metrics.marks]`` with ``edges``, ``symmetric`` or ``ranges``
and a ``description``, its ``normalization`` by name; ``[[labels]]``, where the labels
are plain data: one `LabelOption` each, or ``shared = "undetected"`` for
`UNDETECTED_OPTION`)."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import tomllib

from gbdesk.contract import LabelOption, ProbeCard
from gbdesk.studies.genderbench.metric import (
    Bands,
    Metric,
    absolute,
    from_half,
    identity,
    positive,
    positive_half,
)
from gbdesk.studies.genderbench.outcome import UNDETECTED_OPTION

#: the normalizations a card may name (1.1.0's `metric_normalizations`)
NORMALIZATIONS = {f.__name__: f for f in (identity, positive, absolute, from_half, positive_half)}


#: the labels a card names by ``shared`` instead of spelling them out
SHARED_LABELS = {"undetected": UNDETECTED_OPTION}


def read_card(module: str) -> tuple[ProbeCard, tuple[Metric, ...]]:
    """The card and metric declarations in the ``card.toml`` beside `module` (a probe
    folder's ``card`` module: pass its ``__name__``)."""
    data = _card_toml(module.rpartition(".")[0])
    return ProbeCard(**data["card"]), tuple(_metric(entry) for entry in data["metrics"])


def read_labels(module: str) -> list[LabelOption]:
    """The label options in the ``card.toml`` beside `module`, in order."""
    return [
        SHARED_LABELS[entry["shared"]] if "shared" in entry else LabelOption(**entry)
        for entry in _card_toml(module.rpartition(".")[0])["labels"]
    ]


@functools.cache
def _card_toml(package: str) -> dict[str, Any]:
    text = resources.files(package).joinpath("card.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _metric(entry: dict[str, Any]) -> Metric:
    fields = dict(entry)
    if "marks" in fields:
        fields["marks"] = _bands(fields["marks"])
    if "bounds" in fields:
        fields["bounds"] = tuple(fields["bounds"])
    if "normalization" in fields:
        fields["normalization"] = NORMALIZATIONS[fields["normalization"]]
    return Metric(**fields)


def _bands(marks: dict[str, Any]) -> Bands:
    description = marks.get("description", "")
    if "edges" in marks:
        return Bands.edges(marks["edges"], description)
    if "symmetric" in marks:
        return Bands.symmetric(marks["symmetric"], description)
    ranges = {mark: tuple(tuple(r) for r in spans) for mark, spans in marks["ranges"].items()}
    return Bands(ranges, description)
