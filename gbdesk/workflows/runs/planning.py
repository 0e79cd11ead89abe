"""Planning a run: its parameters checked, its items drawn and stored (no Qt)."""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.contract import Probe, get_probe
from gbdesk.contract.running import SAMPLE_SEED
from gbdesk.engine.base import (
    DEFAULT_MIN_P,
    DEFAULT_TOP_K,
)
from gbdesk.store import Store
from gbdesk.support.errors import UserError
from gbdesk.support.limits import LIMITS, SEED_RANGE

# `plan_run(batch_size=AUTO_BATCH)`: continuous batching, sequences at once chosen from the
# model's size and the free memory when the run starts (`gbdesk.engine.slots`)
AUTO_BATCH = 0

RUN_STATUSES = ("created", "running", "paused", "cancelled", "interrupted", "failed", "done")


def _whole_in(value: Any, flag: str, low: int, high: int) -> None:
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not whole or not low <= value <= high:
        raise UserError(f"{flag} must be a whole number from {low:,} to {high:,}")


def _finite_number(value: Any, flag: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UserError(f"{flag} must be a finite number")
    return float(value)


def check_generation(generation: dict[str, Any]) -> None:
    """Refuse generation settings out of range (the CLI's argument types check the same,
    earlier): NaN or infinite numbers would be stored as invalid JSON and sizes beyond
    `LIMITS` are typos."""
    _whole_in(generation["attempts"], "--attempts", 1, LIMITS["attempts"])
    _whole_in(generation["batch_size"], "--batch", 0, LIMITS["batch_size"])
    _whole_in(generation["max_tokens"], "--max-tokens", 1, LIMITS["max_tokens"])
    _whole_in(generation["seed"], "--seed", *SEED_RANGE)
    if _finite_number(generation["temperature"], "--temperature") < 0:
        raise UserError("--temperature must be ≥ 0")
    if not 0 < _finite_number(generation["top_p"], "--top-p") <= 1:
        raise UserError("--top-p must be in (0, 1]")
    if generation["prompt_mode"] not in ("auto", "chat", "completion"):
        raise UserError("--prompt-mode must be auto, chat or completion")


#: a stored capability check younger than this is trusted when it says "no"; older ones
#: are checked again before a probe is refused (the server at that address may have changed)
CAPABILITIES_FRESH_S = 120.0


def unmet_engine_need(store: Store, probe: Probe, model: dict[str, Any] | None) -> str | None:
    """The one line that refuses `probe` on `model` when the model — an endpoint — cannot
    do what the probe needs (`Running.engine_needs`, e.g. a scoring probe's log-probabilities
    of prompt tokens on Ollama); None when it can. The endpoint's stored capabilities
    decide; where they are missing, or say "no" and are not fresh, the endpoint is asked
    again (one small request each; `UserError` when it cannot be reached). Local models
    can do everything."""
    needs = sorted(probe.capabilities.running.engine_needs)
    if not needs or not model or model.get("kind") != "endpoint":
        return None
    from gbdesk.engine.http import (
        check_capabilities,
        endpoint_capabilities,
        unmet_capability,
    )

    def lacking(found: dict[str, Any] | None) -> list[str]:
        return [n for n in needs if not (found or {}).get(n, {}).get("ok")]

    found = endpoint_capabilities(model)
    if found is None or (lacking(found) and not _fresh(found.get("checked_at"))):
        found = check_capabilities(store, model)
    missing = lacking(found)
    return unmet_capability(probe.card.title, model, missing[0], found) if missing else None


def check_engine_needs(store: Store, probe: Probe, model: dict[str, Any] | None) -> None:
    """Refuse (`UserError`, one line) before any run row is written a probe that needs
    what its endpoint cannot do (`unmet_engine_need`)."""
    unmet = unmet_engine_need(store, probe, model)
    if unmet:
        raise UserError(unmet)


def _fresh(stamp: Any) -> bool:
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - when).total_seconds() < CAPABILITIES_FRESH_S


def _planned(
    store: Store,
    probe_name: str,
    *,
    attempts: int | None,
    seed: int,
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    prompt_mode: str,
    batch_size: int,
    **probe_params: Any,
) -> tuple[Probe, dict[str, Any], dict[str, Any]]:
    """(probe, the run's parameters, its generation settings) as `plan_run` stores them."""
    probe = get_probe(probe_name)
    params = probe.capabilities.parameters.bind(store, probe.resolve_params(**probe_params))
    attempts = probe.default_attempts if attempts is None else attempts
    defaults = probe.default_generation
    generation = {
        "attempts": attempts,
        "seed": seed,
        "temperature": defaults["temperature"] if temperature is None else temperature,
        "top_p": defaults["top_p"] if top_p is None else top_p,
        "max_tokens": defaults["max_tokens"] if max_tokens is None else max_tokens,
        "top_k": DEFAULT_TOP_K,
        "min_p": DEFAULT_MIN_P,
        "prompt_mode": prompt_mode,
        # local decoding: 0 continuous batching with an automatic sequence count (the
        # default), N > 1 with N sequences, 1 one attempt at a time. Recorded so a resume
        # decodes the same way (batched texts differ from one-at-a-time ones — other
        # arithmetic settings — but not between batch sizes)
        "batch_size": batch_size,
    }
    check_generation(generation)
    return probe, params, generation


def plan_run(
    store: Store,
    probe_name: str,
    model: dict[str, Any] | None,
    *,
    attempts: int | None = None,
    seed: int = 0,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    prompt_mode: str = "auto",
    source: str = "generated",
    batch_size: int = AUTO_BATCH,
    **probe_params: Any,
) -> int:
    """Store a new run with its items; return its id. Nothing is generated yet."""
    probe, params, generation = _planned(
        store, probe_name, attempts=attempts, seed=seed, temperature=temperature, top_p=top_p,
        max_tokens=max_tokens, prompt_mode=prompt_mode, batch_size=batch_size, **probe_params,
    )  # fmt: skip
    check_engine_needs(store, probe, model)
    items = probe.items(params)
    return store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model["id"] if model else None,
        params=params,
        generation=generation,
        items=[i.as_row() for i in items],
        attempts_per_item=generation["attempts"],
        app_version=__version__,
        llama_cpp_version=None,
        source=source,
    )


def same_run(
    store: Store,
    probe_name: str,
    model: dict[str, Any],
    *,
    attempts: int | None = None,
    seed: int = 0,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    prompt_mode: str = "auto",
    batch_size: int = AUTO_BATCH,
    **probe_params: Any,
) -> dict[str, Any] | None:
    """The latest run in `store` that `plan_run` with these arguments would make again, or
    None: generated here (not imported), the same probe and version, the same model (a
    GGUF by its sha256, wherever the file lies; an endpoint by its row), parameters,
    generation settings and items. `gbdesk run` continues it (or shows it, when done)
    instead of starting an identical run."""
    probe, params, generation = _planned(
        store, probe_name, attempts=attempts, seed=seed, temperature=temperature, top_p=top_p,
        max_tokens=max_tokens, prompt_mode=prompt_mode, batch_size=batch_size, **probe_params,
    )  # fmt: skip
    by_file = model.get("kind") != "endpoint" and model.get("sha256")
    rows = store.generated_runs(
        probe.name,
        probe.version,
        model_sha256=model["sha256"] if by_file else None,
        model_id=None if by_file else model["id"],
    )
    keys: list[str] | None = None
    for run_id, params_json, generation_json, kind, path in rows:
        if json.loads(params_json) != params or json.loads(generation_json) != generation:
            continue
        if kind == "gguf" and path != model.get("path") and not Path(path).is_file():
            continue  # the same weights, but that run's copy is gone (a resume checks it)
        if keys is None:
            keys = [i.key for i in probe.items(params)]
        if [i["item"] for i in store.run_items(run_id)] == keys:
            return store.get_run(run_id)
    return None


def subset_note(probe: Probe, params: dict[str, Any]) -> str:
    """What a run's --sample and --limit kept, in words: "12 of 149 items, chosen to keep
    every group (6 groups that the stereotype rate compares)", "the first 12 of 149
    items", "a random sample of 20 of 149 items (seed 123)", "all 149 items". `params`
    as the run stores them (bound)."""
    limit, sample = params.get("limit"), params.get("sample")
    everything = probe.items({**params, "limit": None, "sample": None})
    n_all = len(everything)
    if not limit and not sample:
        return f"all {n_all:,} items"
    pool = probe.items({**params, "limit": None}) if sample else everything
    chosen = len(probe.items(params)) if limit else len(pool)
    if sample and len(pool) < n_all:
        seed = params.get("sample_seed", SAMPLE_SEED)
        drawn = f"a random sample of {len(pool):,} of {n_all:,} items (seed {seed})"
    else:
        drawn = ""
    if not limit or limit >= len(pool):
        return drawn or f"all {n_all:,} items"
    sizing = probe.capabilities.audit
    groups = {sizing.balance_key(i.metadata) for i in pool}
    if groups != {None} and limit < len(groups):
        return (
            f"the first {chosen:,} of {n_all:,} items — too few to keep the {len(groups)} "
            f"groups that {sizing.balance_needed_for} compares, so it cannot be measured "
            f"(use --limit {len(groups)} or more)"
        )
    if groups == {None}:
        how = "the first ones"
    else:
        how = (
            f"chosen to keep every group ({len(groups)} groups that "
            f"{sizing.balance_needed_for} compares)"
        )
    if drawn:
        return f"{chosen:,} of {n_all:,} items: {drawn}, then {chosen:,} of those {how}"
    if groups == {None}:
        return f"the first {chosen:,} of {n_all:,} items"
    return f"{chosen:,} of {n_all:,} items, {how}"
