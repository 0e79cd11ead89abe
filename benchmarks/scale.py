"""Metrics, import, the Results query and the PDF at the Laissez-Faire paper's scale.

Builds (once, in a child process, so that this process's peak memory is the
measurements' own) a database with a run of `--n` stories (default 500,000) and a run of
`--baseline-n` (default 50,000): copies of the 36 recorded stories of tests/fixtures with
their characters' first names swapped, labelled as the deterministic extractor labels
them, written with the flat rows an import writes (`tests.synthetic.
laissez_faire_scale_run`). No data of the paper is used. Then, in this process:

  new    metrics (`compute_metrics`, no cache, flat table), the Results pane's query
         (`results.run_results`, in this process — the app runs it in a worker process for
         big runs: metrics, review counts, extra results), the PDF (`export_pdf`), on the
         big run, each with the peak memory so far;
  old    the reference path (every label's JSON and every text: `flat=False`) on the
         baseline run, with the new path on the same run for the ratio — the old path on the
         big run itself with `--full-baseline` (minutes and several GB);
  import `gbdesk import` of `--import-n` stories (default 8,000, the extractor run on each)
         in this process (as before) and in worker processes (`importer.label_all`),
         from a JSONL file, stories/s;
  back-fill  the first metrics of a run written without flat rows (an older database).

    python benchmarks/scale.py [--db PATH] [--n 500000] [--baseline-n 50000]
                               [--import-n 5000] [--full-baseline]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def build(db: Path, n: int, baseline_n: int, backfill_n: int) -> None:
    from gbdesk.store import Store
    from tests import synthetic

    with Store(db) as store:
        for size, facts in ((n, True), (baseline_n, True), (backfill_n, False)):
            started = time.perf_counter()
            run_id = synthetic.laissez_faire_scale_run(store, size, seed=size, facts=facts)
            took = time.perf_counter() - started
            print(
                f"built run {run_id}: {size:,} stories{'' if facts else ' without flat rows'} "
                f"in {took:.0f} s ({size / took:,.0f} stories/s written)",
                flush=True,
            )


def timed(label: str, fn, *args, **kwargs):
    """Wall time (returned) and this process's CPU time (printed too: other processes on a
    shared machine disturb it less)."""
    started, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"{label:<40} {took:8.2f} s  cpu {cpu:7.2f} s   rss {rss_mb():6.0f} MB   "
        f"peak {peak_mb():6.0f} MB",
        flush=True,
    )
    return out, took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="database to build or reuse")
    parser.add_argument("--n", type=int, default=500_000)
    parser.add_argument("--baseline-n", type=int, default=50_000)
    parser.add_argument("--backfill-n", type=int, default=20_000)
    parser.add_argument("--import-n", type=int, default=8_000)
    parser.add_argument("--full-baseline", action="store_true")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    db = args.db or Path(tempfile.gettempdir()) / f"gbdesk-scale-{args.n}.sqlite"
    if args.build_only:
        build(db, args.n, args.baseline_n, args.backfill_n)
        return 0
    if not db.exists():
        print(f"building {db} …", flush=True)
        cmd = [sys.executable, __file__, "--build-only", "--db", str(db), "--n", str(args.n),
               "--baseline-n", str(args.baseline_n),
               "--backfill-n", str(args.backfill_n)]  # fmt: skip
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gbdesk.report.pdf import export_pdf
    from gbdesk.results import compute_metrics
    from gbdesk.results import run_results as _compute
    from gbdesk.store import Store

    print(f"database {db} ({db.stat().st_size / 2**20:,.0f} MB); peak before {peak_mb():.0f} MB")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with Store(db) as store:
        runs = {r["id"]: r for r in store.list_runs()}
        big, small, unflat = sorted(runs)[:3]
        n_big = store.count_attempts(big)
        n_small = store.count_attempts(small)
        print(f"runs: {big} ({n_big:,} stories), {small} ({n_small:,}), {unflat} (no flat rows)")
        print("— new path (flat table) on the big run —")
        metrics, t_metrics = timed(
            f"metrics, {n_big:,} stories", compute_metrics, store, big, "auto", use_cache=False
        )
        timed("metrics again (cached)", compute_metrics, store, big, "auto")
        timed("metrics, reviewed labels", compute_metrics, store, big, "reviewed", use_cache=False)
        store.conn.execute("DELETE FROM metrics")
        _, t_results = timed("Results pane query (_compute), no cache", _compute, store, [big],
                             "auto")  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            _, t_pdf = timed("PDF report", export_pdf, store, [big], Path(tmp) / "r.pdf", "auto")
        new_peak = peak_mb()
        print(f"peak memory of the new path: {new_peak:.0f} MB ({len(metrics)} metrics)")

        print("— back-fill of a run without flat rows (an older database) —")
        with store.transaction():  # as it was written: no flat rows (also on a rerun)
            store.conn.execute("DELETE FROM label_facts WHERE run_id = ?", (unflat,))
            store.conn.execute(
                "UPDATE labels SET flat = NULL WHERE attempt_id IN "
                "(SELECT id FROM attempts WHERE run_id = ?)",
                (unflat,),
            )
        _, t_fill = timed(
            f"first metrics, {store.count_attempts(unflat):,} stories",
            compute_metrics, store, unflat, "auto", use_cache=False,
        )  # fmt: skip
        timed("second metrics", compute_metrics, store, unflat, "auto", use_cache=False)

        print(f"— old path (every label and text) against the new, {n_small:,} stories —")
        new_s, t_new_s = timed(
            "new metrics", compute_metrics, store, small, "auto", use_cache=False
        )
        old_s, t_old_s = timed(
            "old metrics", compute_metrics, store, small, "auto", use_cache=False, flat=False
        )
        same = list(new_s) == list(old_s) and all(
            new_s[k].to_json() == old_s[k].to_json() for k in new_s
        )
        print(f"old / new: {t_old_s / t_new_s:.1f}×; identical values: {same}")
        store.conn.execute("DELETE FROM metrics")
        _, t_res_new = timed("new Results query", _compute, store, [small], "auto")
        store.conn.execute("DELETE FROM metrics")
        _, t_res_old = timed("old Results query", _compute, store, [small], "auto", flat=False)
        print(f"Results query old / new: {t_res_old / t_res_new:.1f}×")
        if args.full_baseline:
            old_big, t_old_big = timed(
                f"old metrics, {n_big:,} stories",
                compute_metrics, store, big, "auto", use_cache=False, flat=False,
            )  # fmt: skip
            same = all(old_big[k].to_json() == metrics[k].to_json() for k in metrics)
            print(f"old / new at {n_big:,}: {t_old_big / t_metrics:.1f}×; identical: {same}")

    print(f"— import of {args.import_n:,} stories with extraction —")
    import gbdesk.importer as importer
    from tests import synthetic

    with tempfile.TemporaryDirectory() as tmp:
        jsonl = synthetic.write_stories_jsonl(Path(tmp) / "s.jsonl", args.import_n, seed=11)
        threshold = importer.PARALLEL_LABELS
        importer.PARALLEL_LABELS = 10**12  # the old way: every story labelled here
        with Store(Path(tmp) / "one.sqlite") as store:
            _, t_one = timed(
                "import, labelled in this process", importer.import_generations, store,
                "laissez_faire", jsonl,
            )  # fmt: skip
        importer.PARALLEL_LABELS = threshold
        with Store(Path(tmp) / "pool.sqlite") as store:
            _, t_import = timed(
                "import, labelled in worker processes", importer.import_generations, store,
                "laissez_faire", jsonl,
            )  # fmt: skip
    print(
        f"import: {args.import_n / t_import:,.0f} stories/s (one process: "
        f"{args.import_n / t_one:,.0f} stories/s; ×{t_one / t_import:.2f})"
    )
    print(
        f"SUMMARY metrics {n_big:,} stories {t_metrics:.1f} s; Results query {t_results:.1f} s; "
        f"PDF {t_pdf:.1f} s; new-path peak {new_peak:.0f} MB; old/new at {n_small:,} "
        f"{t_old_s / t_new_s:.1f}×; back-fill {t_fill:.1f} s; import "
        f"{args.import_n / t_import:,.0f} stories/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
