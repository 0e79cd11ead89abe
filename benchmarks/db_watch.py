"""What the app's database watcher (`gbdesk.ui.watcher`) costs on the UI thread.

On a copy of a database (any gbdesk database; a big one from `benchmarks/scale.py` shows
the worst case) it measures, on the watcher's own read-only connection
(`gbdesk.store.watch.WatchConnection`):

  tick      SQLite's data version when nothing changed — what every second costs;
  snapshot  reading the snapshot after a commit elsewhere (runs, highest attempt and label
            ids, samples, codings, model rows);
  labels    finding the runs of `--labels` new labels written by another connection
            (the lookup an external review or import triggers).

Median and worst of `--rounds` rounds, in milliseconds. Target: tick < 1 ms, snapshot and
labels < 20 ms (a UI frame), so the watcher never stalls the window.

    python benchmarks/db_watch.py --db PATH [--labels 500] [--rounds 50]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def ms(samples: list[float]) -> str:
    return f"median {1000 * statistics.median(samples):.3f} ms, worst {1000 * max(samples):.3f} ms"


def main() -> int:
    from gbdesk.store import Store
    from gbdesk.store.watch import WatchConnection

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "watch.sqlite"
        shutil.copyfile(args.db, db)
        writer = Store(db)  # migrates an older copy; the other process
        counts = writer.conn.execute(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM attempts), "
            "(SELECT COUNT(*) FROM labels)"
        ).fetchone()
        print(f"database: {counts[0]:,} runs, {counts[1]:,} attempts, {counts[2]:,} labels")
        conn = WatchConnection(db)
        ticks = []
        for _ in range(args.rounds * 20):
            started = time.perf_counter()
            conn.data_version()
            ticks.append(time.perf_counter() - started)
        print(f"tick      {ms(ticks)}")
        snaps, lookups = [], []
        attempt_ids = [r[0] for r in writer.conn.execute("SELECT id FROM attempts LIMIT ?",
                                                         (args.labels,))]  # fmt: skip
        for _ in range(args.rounds):
            before = conn.snapshot().labels_max
            for attempt_id in attempt_ids:
                writer.add_human_label(attempt_id, "bench", "female")
            started = time.perf_counter()
            now = conn.snapshot()
            snaps.append(time.perf_counter() - started)
            started = time.perf_counter()
            runs = conn.runs_labelled_since(before)
            lookups.append(time.perf_counter() - started)
            assert now.labels_max > before and runs
        print(f"snapshot  {ms(snaps)}")
        print(f"labels    {ms(lookups)} ({len(attempt_ids)} new labels each round)")
        conn.close()
        writer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
