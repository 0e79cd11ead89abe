"""How long a run will take, from the speeds measured before (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.store.speed import generation_totals, scoring_totals
from gbdesk.workflows.runs.planning import subset_note


@dataclass
class Estimate:
    generations: int
    tokens_per_s: float | None
    tokens_per_generation: float | None
    seconds: float | None
    basis: str
    unit: str = "generations"  # "sentences" for perplexity probes (tokens_per_s: sentences/s)
    items_note: str = ""  # what --sample / --limit kept, in words (`subset_note`)


def measured_speed(
    store: Store,
    model_sha256: str | None,
    model_id: int | None = None,
    *,
    slots: int | None = None,
    probe: str | None = None,
) -> tuple[float, float, int] | None:
    """(tokens/s, tokens per generation, attempts measured) over this model's stored attempts
    (a GGUF by its sha256, an endpoint by its model row), or None when it never generated
    here. Rates are per request: with concurrent requests the caller divides time by them.

    `slots` keeps the runs decoded with that many sequences at once (1: one at a time;
    continuous batching records its count with the run, and an attempt's latency is its
    share of the batch's time, so the rate is the batch's throughput); `probe` keeps one
    probe's runs (its answers' length)."""
    if not model_sha256 and model_id is None:
        return None
    tokens, seconds, count, mean_tokens = generation_totals(
        store, model_sha256=model_sha256, model_id=model_id, slots=slots, probe=probe
    )
    if not count or not seconds:
        return None
    return tokens / seconds, mean_tokens, count


def measured_scoring_speed(store: Store, model_sha256: str | None) -> tuple[float, int] | None:
    """(sentences/s, sentences measured) over this model's stored scoring blocks."""
    if not model_sha256:
        return None
    sentences, seconds = scoring_totals(store, model_sha256)
    if not sentences or not seconds:
        return None
    return sentences / seconds, int(sentences)


def estimate_run(
    store: Store,
    probe_name: str,
    model_sha256: str | None,
    *,
    attempts: int,
    max_tokens: int,
    limit: int | None = None,
    sample: int | None = None,
    fallback_tokens_per_s: float | None = None,
    model_id: int | None = None,
    concurrency: int = 1,
    slots: int | None = None,
    **probe_params: Any,
) -> Estimate:
    """Generations a run would make and how long they should take on this machine.

    `slots`: sequences a local model decodes at once (`LlamaCppBackend.stream_slots`; 1
    or None: one at a time). The speed is this model's measured at that count on this
    probe when there is such a measurement, else at that count on any probe, else any."""
    probe = get_probe(probe_name)
    params = probe.capabilities.parameters.bind(
        store, probe.resolve_params(limit=limit, sample=sample, **probe_params)
    )
    items = probe.items(params)
    note = subset_note(probe, params)
    if probe.capabilities.scores is not None:  # speed in sentences, from scoring runs
        sentences = probe.capabilities.running.work_units(items, 1)
        measured = measured_scoring_speed(store, model_sha256)
        if measured is None:
            return Estimate(
                sentences,
                None,
                None,
                None,
                "scoring speed not measured yet — score a small sample first (limit a few items)",
                unit="sentences",
                items_note=note,
            )
        rate, count = measured
        return Estimate(
            sentences,
            rate,
            None,
            sentences / rate,
            f"measured on {count:,} sentences this model scored here",
            unit="sentences",
            items_note=note,
        )
    generations = probe.capabilities.running.work_units(items, attempts)
    speed, basis = None, ""
    at = f" with {slots} sequences at once" if slots and slots > 1 else ""
    tiers = [
        ({"probe": probe.name}, f"of this probe{at}"),
        ({}, f"of this model{at}"),
    ]
    if slots is not None:
        tiers = [({"slots": slots, **kw}, what) for kw, what in tiers]
        tiers.append(({}, "of this model (other batch sizes)"))
    else:
        tiers = [({}, "of this model")]
    for kw, what in tiers:
        speed = measured_speed(store, model_sha256, model_id, **kw)
        if speed is not None:
            basis = f"measured on {speed[2]:,} earlier generations {what}"
            same_probe = "probe" in kw
            break
    if speed is not None:
        tps, mean_tokens, count = speed
        per_generation = float(mean_tokens)
        chain = probe.capabilities.running.kind == "chain"
        if not (same_probe and chain):  # a chain's sum of answers
            per_generation = min(per_generation, float(max_tokens))
    elif fallback_tokens_per_s:
        tps, per_generation = fallback_tokens_per_s, float(max_tokens)
        basis = "measured by a test load; assumes every answer uses max_tokens"
    else:
        return Estimate(
            generations,
            None,
            None,
            None,
            "speed not measured yet — test-load the model in Models",
            items_note=note,
        )
    seconds = generations * per_generation / tps / max(1, concurrency)
    if concurrency > 1:
        basis += f"; {concurrency} requests at a time"
    return Estimate(generations, tps, per_generation, seconds, basis, items_note=note)
