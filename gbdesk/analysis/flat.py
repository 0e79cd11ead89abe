"""The flat table of label facts, and the runs read from it for fast metrics (no Qt).

A probe that has a flat form (its `FlatFacts` capability) gets, for every label, a few rows
(k, a, b, c, d, x) in `label_facts` — for example one per extracted character — written
with the labels of an import. Metrics at scale then read those rows, the label strings
and the attempts' keys with a handful of queries into pandas frames (`FlatRun`) instead of
every label's JSON and every text. Labels that have no rows yet (an older database, a
reviewer's label, a relabelling) are flattened first (`flatten`), once.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gbdesk.contract import Probe
from gbdesk.store import Store
from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)

FACT_COLUMNS = ["label_id", "idx", "k", "a", "b", "c", "d", "x"]
#: rows read at a time: small enough that building one chunk's frame (which holds the GIL)
#: stays short for the UI thread of the app
CHUNK = 50_000


@dataclass
class FlatRun:
    """A run's attempts with their effective labels, and those labels' facts.

    `attempts`: attempt_id, item, attempt, item_idx, label_id (-1: none), in run order.
    `facts`: the effective labels' rows with attempt_id, item, attempt, item_idx, sorted in
    run order (item, attempt, row). `metadata`: item key → metadata; `items`: the run's
    item keys in run order."""

    run: dict[str, Any]
    items: list[str]
    metadata: dict[str, dict[str, Any]]
    attempts: pd.DataFrame
    facts: pd.DataFrame
    #: what a probe derives from the frames (e.g. one row per character), kept with them
    derived: dict[Any, Any] = field(default_factory=dict)

    @property
    def all_labelled(self) -> bool:
        return bool((self.attempts["label_id"] >= 0).all())


def facts_of(probe: Probe, label: str, data_json: str | None, response: str, metadata: dict):
    flat = probe.capabilities.flat
    if flat is None:
        return None
    data = json.loads(data_json) if data_json else None
    return flat.facts({"label": label, "data": data}, response or "", metadata)


def flatten(store: Store, run_id: int, probe: Probe) -> pd.DataFrame | None:
    """Write the flat rows of the run's labels that have none yet. Returns rows that could
    not be stored (a read-only database) as a frame to use in memory, else None."""
    if probe.capabilities.flat is None:
        return None
    ids = store.unflattened_labels(run_id)
    if not ids:
        return None
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    kept: list[tuple[Any, ...]] = []
    done = 0
    writable = True
    for start in range(0, len(ids), 5_000):
        facts = {}
        for part in range(start, min(len(ids), start + 5_000), 900):
            for label_id, label, data_json, response, item in store.labels_to_flatten(
                ids[part : min(part + 900, start + 5_000)]
            ):
                facts[label_id] = (
                    facts_of(probe, label, data_json, response, metadata.get(item, {})) or []
                )
        done += len(facts)
        if writable:
            try:
                store.put_label_facts(run_id, facts)
                continue
            except (sqlite3.Error, UserError) as exc:  # read-only, locked: rows in memory
                log.warning("flat rows of run %s not stored: %s", run_id, exc)
                writable = False
        kept.extend(
            (label_id, i, *row) for label_id, rows in facts.items() for i, row in enumerate(rows)
        )
    if done:
        log.info("flattened %d labels of run %s", done, run_id)
    if not kept:
        return None
    return pd.DataFrame(kept, columns=FACT_COLUMNS)


def _frame(cur: sqlite3.Cursor, columns: list[str]) -> pd.DataFrame:
    """The cursor's rows as a frame, read `CHUNK` rows at a time."""
    parts = []
    while True:
        rows = cur.fetchmany(CHUNK)
        if not rows:
            break
        part = pd.DataFrame.from_records(rows, columns=columns)
        for name in part.columns:  # one object per distinct text: a fraction of the memory
            if part[name].dtype == object:
                codes, uniques = pd.factorize(part[name])
                values = np.asarray(uniques, dtype=object)
                part[name] = np.where(codes >= 0, values[codes] if len(values) else None, None)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


_recent: dict[tuple[Any, ...], FlatRun] = {}
_recent_lock = threading.Lock()
KEEP = 1  # runs kept read (the Results pane reads one run three times: metrics, review, extra)


def load_flat(
    store: Store,
    run_id: int,
    label_mode: str,
    run: dict[str, Any] | None = None,
    probe: Probe | None = None,
) -> FlatRun | None:
    """The run read from the flat table with the labels the metrics use in `label_mode`
    ("auto": the run's automatic labels; "reviewed": a person's latest where present),
    or None when its probe has no flat form (`run`, `probe`: its row and probe, when the
    caller has them). The last runs read are kept while their labels, attempts and
    parameters stay the same."""
    run = store.get_run(run_id) if run is None else run
    probe = _probe(run["probe"]) if probe is None else probe
    if probe.capabilities.flat is None:
        return None
    extra = flatten(store, run_id, probe)
    key = (
        str(store.path),
        run_id,
        label_mode,
        store.labels_fingerprint(run_id),
        json.dumps(run["params"], sort_keys=True, default=str),
    )
    with _recent_lock:
        if extra is None and key in _recent:
            return _recent[key]
        _recent.clear()  # let the frames of the run read before go first (peak memory)
    flat = _read(store, run, probe, label_mode, extra)
    if extra is None:
        with _recent_lock:
            _recent[key] = flat
            while len(_recent) > KEEP:
                _recent.pop(next(iter(_recent)))
    return flat


def _read(
    store: Store, run: dict[str, Any], probe: Probe, label_mode: str, extra: pd.DataFrame | None
) -> FlatRun:
    run_id = run["id"]
    items = store.run_items(run_id)
    item_idx = {r["item"]: r["idx"] for r in items}
    attempts = _frame(store.attempt_key_rows(run_id), ["attempt_id", "item", "attempt"])
    attempts["item_idx"] = attempts["item"].map(item_idx).astype(np.int64)
    order = np.lexsort((attempts["attempt"].to_numpy(), attempts["item_idx"].to_numpy()))
    attempts = attempts.iloc[order].reset_index(drop=True)
    labels = _frame(
        store.probe_label_rows(run_id, probe.capabilities.labelling.auto_source(run["params"])),
        ["label_id", "attempt_id", "human"],
    )
    if label_mode != "reviewed":
        labels = labels[labels["human"] == 0]
    # the latest label per attempt, a person's before the extractor's
    labels = labels.sort_values(["attempt_id", "human", "label_id"]).drop_duplicates(
        "attempt_id", keep="last"
    )
    attempts = attempts.merge(
        labels[["attempt_id", "label_id"]], on="attempt_id", how="left", sort=False
    )
    attempts["label_id"] = attempts["label_id"].fillna(-1).astype(np.int64)
    used = attempts["label_id"].to_numpy()
    used = used[used >= 0]
    if used.size:  # the clustered key's range: no lookups through the run index
        facts = _frame(
            store.label_fact_rows(run_id, int(used.min()), int(used.max())), FACT_COLUMNS
        )
    else:
        facts = pd.DataFrame(columns=FACT_COLUMNS)
    if extra is not None:
        facts = pd.concat([facts, extra], ignore_index=True)
    keys = attempts.loc[
        attempts["label_id"] >= 0, ["label_id", "attempt_id", "item", "attempt", "item_idx"]
    ]
    facts = facts.merge(keys, on="label_id", how="inner", sort=False)
    facts = facts.sort_values(["item_idx", "attempt", "idx"], kind="stable").reset_index(drop=True)
    return FlatRun(
        run=run,
        items=[r["item"] for r in items],
        metadata={r["item"]: r["metadata"] for r in items},
        attempts=attempts,
        facts=facts,
    )


def _probe(name: str) -> Probe:
    from gbdesk.contract import get_probe

    return get_probe(name)
