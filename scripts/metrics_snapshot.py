"""Every run's metrics in a database, as `gbdesk metrics RUN --json` prints them — to show
that a change of the code leaves stored data and numbers as they were (issue 25).

    python scripts/metrics_snapshot.py DB OUT.json [--labels auto]
    python scripts/metrics_snapshot.py --compare BEFORE.json AFTER.json

The database is copied first (computing metrics may write automatic labels and caches),
and each run's metrics come from the CLI in a subprocess of the code on `PYTHONPATH` (or
the installed one), so the same database can be read by two versions side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def snapshot(db: Path, labels: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / db.name
        shutil.copy(db, copy)
        with sqlite3.connect(copy) as con:
            runs = [(r[0], r[1]) for r in con.execute("SELECT id, probe FROM runs ORDER BY id")]
        out: dict[str, Any] = {}
        for run_id, probe in runs:
            done = subprocess.run(
                [sys.executable, "-m", "gbdesk", "--db", str(copy), "metrics", str(run_id),
                 "--labels", labels, "--json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                out[str(run_id)] = {"probe": probe, "error": done.stderr.strip()[-500:]}
                continue
            payload = json.loads(done.stdout)
            out[str(run_id)] = {"probe": probe, "metrics": payload.get("metrics")}
        return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    differ = [r for r in before if not _same(before[r], after.get(r))]
    differ += [r for r in after if r not in before]
    metrics = sum(len(v.get("metrics") or {}) for v in before.values())
    probes = sorted({v["probe"] for v in before.values()})
    errors = [r for r, v in before.items() if "error" in v]
    print(f"{len(before)} runs of {len(probes)} probes ({', '.join(probes)}), {metrics} metrics")
    if errors:
        print(f"runs whose metrics failed in both (compared as errors): {errors}")
    if differ:
        print(f"DIFFERENT: runs {differ}")
        return 1
    print("identical: every run's metrics, intervals and marks are equal")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs=2)
    parser.add_argument("--labels", default="auto")
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.paths)
        return compare(a, b)
    result = snapshot(Path(args.paths[0]), args.labels)
    Path(args.paths[1]).write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(result)} runs written to {args.paths[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
