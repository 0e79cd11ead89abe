"""CSV export of runs (the same files from the CLI and the GUI).

Text cells that start with `=`, `+`, `-`, `@` (or a tab / carriage return) get a
leading apostrophe so spreadsheet programs do not execute them as formulas (OWASP
"CSV injection"); numbers are written as numbers. Evidence offsets refer to the
stored text, without that apostrophe.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from gbdesk.errors import UserError
from gbdesk.results import compute_metrics, ensure_auto_labels
from gbdesk.store import Store

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas in text; leave numbers and empty cells alone."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([safe_cell(row.get(c)) for c in columns])


def attempt_rows(store: Store, run_id: int) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per attempt: texts, item metadata, detection, review, generation stats."""
    ensure_auto_labels(store, run_id)
    run_items = store.run_items(run_id)
    items = {row["item"]: row["metadata"] for row in run_items}
    item_index = {row["item"]: row["idx"] for row in run_items}  # the run's item order
    meta_cols: list[str] = []
    for meta in items.values():
        for key in meta:
            if key not in meta_cols:
                meta_cols.append(key)
    auto = store.labels(run_id, "auto")
    human = store.labels(run_id, "human")
    rows = []
    data_cols: list[str] = []
    for attempt in store.attempts(run_id):
        label = auto.get(attempt["id"])
        review = human.get(attempt["id"])
        row: dict[str, Any] = {
            "run_id": run_id,
            "item": attempt["item"],
            "attempt": attempt["attempt"],
            "prompt": attempt["prompt"],
            "response": attempt["response"],
            **items.get(attempt["item"], {}),
            "detected": label["label"] if label else "",
            "detector": label["source"] if label else "",
        }
        for key, value in ((label or {}).get("data") or {}).items():
            row[key] = value
            if key not in data_cols:
                data_cols.append(key)
        row.update(
            {
                "human_label": review["label"] if review else "",
                "reviewer": review["source"].removeprefix("human:") if review else "",
                "reviewed_at": review["created_at"] if review else "",
                "seed": attempt["seed"],
                "tokens_in": attempt["tokens_in"],
                "tokens_out": attempt["tokens_out"],
                "latency_s": attempt["latency_s"],
                "finish_reason": attempt["finish_reason"],
                "prompt_mode": attempt["prompt_mode"],
                "item_index": item_index.get(attempt["item"]),
            }
        )
        rows.append(row)
    columns = [
        "run_id",
        "item",
        "attempt",
        "prompt",
        "response",
        *meta_cols,
        "detected",
        *data_cols,
        "detector",
        "human_label",
        "reviewer",
        "reviewed_at",
        "seed",
        "tokens_in",
        "tokens_out",
        "latency_s",
        "finish_reason",
        "prompt_mode",
        "item_index",
    ]
    return columns, rows


def metric_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    run = store.get_run(run_id)
    model = store.get_model(run["model_id"]) if run["model_id"] else {}
    modes = ["auto"]
    if store.labels(run_id, "human"):
        modes.append("reviewed")
    rows = []
    for mode in modes:
        for name, m in compute_metrics(store, run_id, mode).items():
            rows.append(
                {
                    "run_id": run_id,
                    "probe": run["probe"],
                    "model": model.get("name", ""),
                    "model_sha256": model.get("sha256", ""),
                    "label_mode": mode,
                    "metric": name,
                    "value": m.value,
                    "ci_low": m.ci[0],
                    "ci_high": m.ci[1],
                    "mark": m.mark or "",
                    "p_value": m.p_value,
                    "n": m.n,
                }
            )
    return rows


METRIC_COLUMNS = [
    "run_id",
    "probe",
    "model",
    "model_sha256",
    "label_mode",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "mark",
    "p_value",
    "n",
]


def probe_tables(
    store: Store, run_id: int, label_mode: str = "reviewed"
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """The probe's own CSV tables (e.g. Laissez-Faire's characters.csv) for a run,
    from reviewed labels (a reviewer's where present) by default."""
    from gbdesk.results import effective_labels
    from gbdesk.studies import ScoringProbe, get_probe

    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    ensure_auto_labels(store, run_id)
    labels = effective_labels(store, run_id, label_mode)
    items = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    attempts = [
        {**a, "metadata": items.get(a["item"], {}), "label": labels.get(a["id"]), "scores": []}
        for a in store.attempts(run_id)
    ]
    if isinstance(probe, ScoringProbe):
        by_item = {a["item"]: a for a in attempts}
        for score in store.scores(run_id):
            by_item[score["item"]]["scores"].append(score)
    return probe.export_tables(attempts, run["params"])


def export_run_csv(store: Store, run_ids: list[int], out_dir: str | Path) -> list[Path]:
    """Write attempts.csv, metrics.csv and each probe's own tables for the runs."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"--csv must name a folder, and {out} is a file")
    out.mkdir(parents=True, exist_ok=True)
    all_columns: list[str] = []
    all_rows: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    extra: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for run_id in run_ids:
        columns, rows = attempt_rows(store, run_id)
        for c in columns:
            if c not in all_columns:
                all_columns.append(c)
        all_rows += rows
        metrics += metric_rows(store, run_id)
        for name, (cols, table_rows) in probe_tables(store, run_id).items():
            known_cols, known_rows = extra.setdefault(name, ([], []))
            known_cols += [c for c in cols if c not in known_cols]
            known_rows += table_rows
    attempts_path, metrics_path = out / "attempts.csv", out / "metrics.csv"
    write_csv(attempts_path, all_columns, all_rows)
    write_csv(metrics_path, METRIC_COLUMNS, metrics)
    written = [attempts_path, metrics_path]
    for name, (cols, table_rows) in extra.items():
        write_csv(out / name, cols, table_rows)
        written.append(out / name)
    return written
