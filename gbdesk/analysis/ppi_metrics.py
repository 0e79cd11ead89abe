"""A run's metrics from automatic labels corrected by a random reviewed sample (no Qt).

`gbdesk sample RUN --size N` draws a uniformly random set of review *units* (seeded,
`gbdesk.maths.ppi.review_sample`) — what the probe's metrics average over (`Ppi.unit`):
attempts (stories, roles) for most probes, whole items (all their attempts) where the
metric is a mean over items (e.g. the rates of the profile probes). Reviewing them by hand lets
`compute_metrics(..., "ppi")` give every metric as a prediction-powered estimate
(`gbdesk.maths.ppi.ppi_bootstrap_many`): the automatic labels of all units plus the human labels
of the reviewed sample units. Units reviewed outside the sample (e.g. least-sure-first)
count as unreviewed here — only a uniformly random sample supports these intervals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gbdesk.contract import ItemResult, Probe, get_probe
from gbdesk.contract.running import RunItems, new_item_result
from gbdesk.maths.ppi import PPIResult, ppi_bootstrap_many, review_sample
from gbdesk.maths.resampling import one_blas_thread, recomputed
from gbdesk.maths.stats import MetricValue
from gbdesk.store import Store
from gbdesk.support.errors import UserError

DEFAULT_RESAMPLES = 1000
UNIT_CHUNK = 5_000  # attempts read at a time by `run_units`


def sample_units(store: Store, run_id: int) -> tuple[str, list[str]]:
    """The probe's review unit ("attempt" or "item") and the run's units as strings
    ("<attempt id>" or "<item key>")."""
    probe = get_probe(store.get_run(run_id)["probe"])
    if probe.capabilities.ppi.unit == "item":
        done = {a["item"] for a in store.attempts(run_id)}
        return "item", [r["item"] for r in store.run_items(run_id) if r["item"] in done]
    return "attempt", [str(a["id"]) for a in store.attempts(run_id)]


def draw_sample(store: Store, run_id: int, size: int, seed: int = 0) -> dict[str, Any]:
    """Draw (or redraw) the run's random review sample: `size` units, seeded; returns the
    sample's description. The attempts of the sampled units are what a reviewer labels."""
    if size < 1:
        raise UserError("--size must be at least 1")
    probe = get_probe(store.get_run(run_id)["probe"])
    if not probe.capabilities.review.reviewable:
        raise UserError(f"run {run_id}'s labels are not reviewed by people (nothing to sample)")
    unit, units = sample_units(store, run_id)
    if not units:
        raise UserError(f"run {run_id} has no stored attempts to sample from")
    chosen = review_sample(units, size, seed)
    if unit == "item":
        keys = set(chosen)
        attempts = [a["id"] for a in store.attempts(run_id) if a["item"] in keys]
    else:
        attempts = [int(u) for u in chosen]
    store.save_review_sample(run_id, attempts, seed=seed, size=len(chosen), unit=unit)
    return {
        "run_id": run_id,
        "unit": unit,
        "size": len(chosen),
        "of": len(units),
        "seed": seed,
        "attempts": len(attempts),
    }


def sample_progress(store: Store, run_id: int) -> dict[str, Any] | None:
    """How far the review of the random sample is ({unit, size, reviewed, seed}), or None."""
    info = store.review_sample_info(run_id)
    if info is None:
        return None
    human = store.labels(run_id, "human")
    ids = set(store.review_sample(run_id))
    if info["unit"] == "item":
        by_item: dict[str, list[int]] = {}
        for a in store.attempts(run_id):
            if a["id"] in ids:
                by_item.setdefault(a["item"], []).append(a["id"])
        reviewed = sum(all(i in human for i in v) for v in by_item.values())
    else:
        reviewed = sum(1 for i in ids if i in human)
    return {**info, "reviewed": reviewed}


def _unit(
    items: RunItems,
    key: str,
    group: list[dict[str, Any]],
    labels: list[dict[str, Any] | None],
) -> ItemResult:
    unit = new_item_result(items.by_key[key])
    unit.labels = [(lab or {}).get("label", "undetected") for lab in labels]
    unit.label_data = [(lab or {}).get("data") or {} for lab in labels]
    unit.responses = [a["response"] for a in group]
    if unit.prompts:
        unit.prompt_indices = [items.prompt_index(key, a["attempt"]) for a in group]
    return unit


def run_units(
    store: Store, run_id: int, auto_source: str | None
) -> tuple[list[ItemResult], list[ItemResult], list[ItemResult], int]:
    """(human units, their automatic twins, the other units, disagreements) of a run: the
    reviewed units of the random sample with their latest human labels, the same units
    and every other unit with their automatic labels. Attempt units are read a chunk at
    a time (`UNIT_CHUNK`): only what a unit keeps (label, data, text) stays in memory."""
    probe = get_probe(store.get_run(run_id)["probe"])
    items = RunItems.of(store, run_id)
    human = store.labels(run_id, "human")
    sampled = set(store.review_sample(run_id))
    if probe.capabilities.ppi.unit == "item":
        auto = store.labels(run_id, "auto", auto_source)
        groups: dict[str, list[dict[str, Any]]] = {}
        for a in store.attempts(run_id):
            groups.setdefault(a["item"], []).append(a)
        parts: Any = [(auto, list(groups.items()))]
    else:
        parts = (
            (
                store.labels(run_id, "auto", auto_source, attempt_ids=[a["id"] for a in chunk]),
                [(a["item"], [a]) for a in chunk],
            )
            for chunk in store.attempt_chunks(run_id, UNIT_CHUNK)
        )
    h_units, l_units, u_units, differ = [], [], [], 0
    for auto, keyed in parts:
        for key, group in keyed:
            ids = [a["id"] for a in group]
            auto_unit = _unit(items, key, group, [auto.get(i) for i in ids])
            if all(i in sampled and i in human for i in ids):
                human_unit = _unit(items, key, group, [human[i] for i in ids])
                h_units.append(human_unit)
                l_units.append(auto_unit)
                differ += any(
                    probe.capabilities.labelling.labels_differ(auto.get(i) or {}, human[i])
                    for i in ids
                )
            else:
                u_units.append(auto_unit)
    return h_units, l_units, u_units, differ


def ppi_results(
    probe: Probe,
    params: dict[str, Any] | None,
    human: Sequence[ItemResult],
    labeled: Sequence[ItemResult],
    unlabeled: Sequence[ItemResult],
    disagreements: int,
    *,
    unlabeled_counts: Sequence[float] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, PPIResult]:
    """Every metric of the probe as a prediction-powered estimate (see the module)."""
    counts = np.ones(len(unlabeled)) if unlabeled_counts is None else np.asarray(unlabeled_counts)
    sets = {"human": list(human), "labeled": list(labeled), "unlabeled": list(unlabeled),
            "all": [*labeled, *unlabeled], "mixed": [*human, *labeled]}  # fmt: skip

    evaluators: dict[str, Any] = {}  # per set, asked for every chunk of resamples

    def theta(which: str, w: np.ndarray) -> dict[str, np.ndarray]:
        units = sets[which]
        if not units or w.size == 0:
            return {}
        with one_blas_thread(), np.errstate(invalid="ignore", divide="ignore"):
            if which not in evaluators:
                evaluators[which] = probe.capabilities.ppi.evaluator(units, params)
            values = evaluators[which](w)
        return values if values is not None else recomputed(probe, units, params, w)

    return ppi_bootstrap_many(
        theta, len(human), counts, disagreements, n_resamples=resamples, seed=seed
    )


def ppi_metric_values(store: Store, run_id: int, resamples: int = DEFAULT_RESAMPLES) -> dict:
    """`MetricValue`s of a run from PPI (details: automatic value, bias, validity)."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    if store.review_sample_info(run_id) is None:
        raise UserError(
            f"run {run_id} has no random review sample: draw one (gbdesk sample {run_id} "
            "--size N, or Review → Draw a review sample) and review its attempts first"
        )
    human, labeled, unlabeled, differ = run_units(
        store, run_id, probe.capabilities.labelling.auto_source(run["params"])
    )
    results = ppi_results(
        probe, run["params"], human, labeled, unlabeled, differ, resamples=resamples, seed=run_id
    )
    out = {}
    for name, r in results.items():
        if probe.capabilities.ppi.paired_test_exclusion(name) is not None:
            continue  # counts and other non-estimands: no PPI version
        marks = probe.mark_definitions.get(name)
        mark = marks.mark(r.ci) if marks is not None and r.valid else None
        out[name] = MetricValue(
            value=r.value if r.valid else math.nan,
            ci=r.ci,
            mark=mark,
            n=r.n_total,
            details=ppi_details(r),
        )
    return out


def ppi_details(r: PPIResult) -> dict[str, Any]:
    data = r.to_json()
    data["kind"] = "ppi"
    return json.loads(json.dumps(data))
