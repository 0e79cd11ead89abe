"""Metrics, import, the Results query and the PDF at the Laissez-Faire paper's scale.

Builds (once, in a child process, so that this process's peak memory is the
measurements' own) a database with a run of `--n` stories (default 500,000) and a run of
`--baseline-n` (default 50,000): copies of the 36 recorded stories of tests/fixtures with
their characters' first names swapped, labelled as the deterministic extractor labels
them, written with the flat rows an import writes (`tests.synthetic.
laissez_faire_scale_run`). No data of the paper is used. Then, in this process:

  new    metrics (`compute_metrics`, no cache, flat table), the Results pane's query
         (`run_results`, in this process — the app runs it in a worker process for
         big runs: metrics, review counts, extra results), the PDF (`export_pdf`), on the
         big run, each with the peak memory so far;
  old    the reference path (every label's JSON and every text: `flat=False`) on the
         baseline run, with the new path on the same run for the ratio — the old path on the
         big run itself with `--full-baseline` (minutes and several GB);
  import `gbdesk import` of `--import-n` stories (default 8,000, the extractor run on each)
         from a JSONL file, labelled in this process (the default) and in two worker
         processes (`GBDESK_IMPORT_WORKERS=2`), stories/s and CPU ms per story (the
         workers' CPU included); with `--compare-with CHECKOUT` also this checkout against
         another one (e.g. main before a change), each import in a child process with only
         its checkout on the path, taking turns (`--rounds`, default 2) so that the load of
         a shared machine falls on both alike;
  back-fill  the first metrics of a run written without flat rows (an older database).
  baseline (only with `--baseline CHECKOUT`, e.g. a worktree of the commit before a change)
         instead of the sections above: the big run's metrics (no cache), the Results query
         (no cache), the PDF, and the import of `--import-n` stories, with this checkout's
         code and with CHECKOUT's, each in a child process with only its checkout on the
         path, taking turns (`--rounds`, default 3); each side reads a database its own code
         built (`DB` and `DB.baseline-<commit>.sqlite`: the schema may differ). Every figure
         is printed with the load average beside it, then the medians and their ratios.
  ppi    (only with `--only ppi`) `compute_metrics(…, "ppi")` on the big run: a random review
         sample of `--sample` stories (default 500, drawn if the run has none) whose human
         labels are the automatic ones with every tenth story's first character's gender
         changed (written into the database if missing), then the prediction-powered
         metrics without cache: wall and CPU seconds and the peak memory.
  review (only with `--only review`) the Review pane's queue of the big run
         (`review.review_queue`, hardest first, as the pane loads it in a thread): wall
         and CPU seconds and the peak memory, each in a child process of its own; with
         `--compare-with CHECKOUT` the other checkout's queue too, taking turns.

    python benchmarks/scale.py [--db PATH] [--n 500000] [--baseline-n 50000]
                               [--import-n 5000] [--full-baseline]
                               [--only import|review|ppi] [--compare-with CHECKOUT] [--rounds 2]
    python benchmarks/scale.py --baseline CHECKOUT [--db PATH] [--n 500000] [--import-n 21010]
                               [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

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
            if not size:
                continue
            started = time.perf_counter()
            run_id = synthetic.laissez_faire_scale_run(store, size, seed=size, facts=facts)
            took = time.perf_counter() - started
            print(
                f"built run {run_id}: {size:,} stories{'' if facts else ' without flat rows'} "
                f"in {took:.0f} s ({size / took:,.0f} stories/s written)",
                flush=True,
            )


def entry_points() -> tuple[Callable, Callable, Callable, ModuleType]:
    """compute_metrics, run_results, export_pdf and the importer module where the gbdesk
    on the path has them (before the layered core, 656ad03 and earlier: `gbdesk.results`,
    `gbdesk.importer`), so that a child can time an older checkout too."""
    from gbdesk.report.pdf import export_pdf

    try:
        import gbdesk.workflows.importer as importer
        from gbdesk.analysis.results import compute_metrics
        from gbdesk.report.run_results import run_results
    except ImportError:  # an older checkout
        import gbdesk.importer as importer  # type: ignore[no-redef]
        from gbdesk.results import compute_metrics, run_results  # type: ignore[no-redef]
    return compute_metrics, run_results, export_pdf, importer


def use_checkout(root: Path) -> None:
    """Put `root` first on the path (a child process of a comparison) and check that
    gbdesk comes from there."""
    sys.path.insert(0, str(root))
    import gbdesk

    if not Path(gbdesk.__file__).resolve().is_relative_to(root.resolve()):
        raise SystemExit(f"gbdesk comes from {gbdesk.__file__}, not from {root}")


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


def import_once(jsonl: Path, workers: int) -> tuple[float, float]:
    """Import `jsonl` into a new database with `workers` label processes (1: here):
    (wall s, CPU s of this process and its finished children)."""
    from gbdesk.store import Store

    importer = entry_points()[3]

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    os.environ["GBDESK_IMPORT_WORKERS"] = str(workers)
    threshold = importer.PARALLEL_LABELS
    importer.PARALLEL_LABELS = 1 if workers > 1 else 10**12
    try:
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "i.sqlite") as store:
            started, used = time.perf_counter(), cpu()
            importer.import_generations(store, "laissez_faire", jsonl)
            return time.perf_counter() - started, cpu() - used
    finally:
        importer.PARALLEL_LABELS = threshold
        os.environ.pop("GBDESK_IMPORT_WORKERS", None)


def show(label: str, n: int, wall: float, cpu: float) -> None:
    print(
        f"{label:<40} {wall:8.2f} s  cpu {cpu:7.2f} s  {n / wall:7,.0f} stories/s  "
        f"{cpu / n * 1e3:.3f} ms CPU/story",
        flush=True,
    )


def import_child(root: Path, jsonl: Path) -> int:
    """Child of `--compare-with`: one import with the gbdesk of `root`; prints JSON."""
    import json

    use_checkout(root)
    load = os.getloadavg()[0]
    wall, cpu = import_once(jsonl, 1)
    print(json.dumps({"wall": wall, "cpu": cpu, "load": max(load, os.getloadavg()[0])}))
    return 0


def ppi_benchmark(db: Path, sample: int) -> None:
    """The ppi section (see the module)."""
    from gbdesk.analysis.ppi_metrics import draw_sample
    from gbdesk.analysis.results import compute_metrics
    from gbdesk.store import Store

    with Store(db) as store:
        run_id = min(r["id"] for r in store.list_runs())
        if store.review_sample_info(run_id) is None:
            draw_sample(store, run_id, sample, seed=1)
        ids = store.review_sample(run_id)
        human = store.labels(run_id, "human", attempt_ids=ids)
        auto = store.labels(run_id, "auto", attempt_ids=ids)
        with store.transaction():
            for k, i in enumerate(ids):
                if i in human:
                    continue
                data = auto[i]["data"]
                chars = data.get("characters") or []
                if k % 10 == 0 and chars:
                    g = chars[0].get("gender")
                    chars[0]["gender"] = "Unspecified" if g != "Unspecified" else "Female"
                store.add_human_label(i, "bench", auto[i]["label"], data)
        n = store.count_attempts(run_id)
        print(f"— PPI metrics of run {run_id}: {n:,} stories, {len(ids)} reviewed at random —")
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        metrics, _ = timed(f"PPI metrics, {n:,} stories", compute_metrics, store, run_id,
                           "ppi", use_cache=False)  # fmt: skip
        valid = sum(1 for m in metrics.values() if (m.details or {}).get("valid"))
        print(f"{len(metrics)} metrics, {valid} with a PPI interval; peak {peak_mb():.0f} MB")


def review_child(root: Path, db: Path, run_id: int) -> int:
    """Child of the review section: the Review queue of `run_id` with the gbdesk of `root`;
    prints JSON (wall s, CPU s, peak MB of this process, queue length)."""
    import json

    use_checkout(root)
    from gbdesk.people.review import review_queue
    from gbdesk.store import Store

    with Store(db) as store:
        started, cpu = time.perf_counter(), time.process_time()
        queue = review_queue(store, run_id, "all", None, "hard")
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "peak": peak_mb(), "n": len(queue)}))
    return 0


def review_benchmark(db: Path, compare_with: Path | None, rounds: int) -> None:
    """The review section (see the module)."""
    import json

    from gbdesk.store import Store

    with Store(db) as store:
        run_id = min(r["id"] for r in store.list_runs())
    print(f"— the Review queue of run {run_id} of {db} —")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    sides = [("this", ROOT)] if compare_with is None else [("baseline", compare_with),
                                                           ("this", ROOT)]  # fmt: skip
    took: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for _ in range(rounds if compare_with is not None else 1):
        for name, root in sides:
            cmd = [sys.executable, __file__, "--review-child", str(run_id), "--db", str(db),
                   "--root", str(root.resolve())]  # fmt: skip
            env = {**os.environ, "PYTHONPATH": str(root.resolve())}
            out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
            got = json.loads(out.stdout.strip().splitlines()[-1])
            took[name].append(got)
            print(f"Review queue, {name:<8} {got['n']:>9,} attempts {got['wall']:8.2f} s  "
                  f"cpu {got['cpu']:7.2f} s   peak {got['peak']:6.0f} MB", flush=True)  # fmt: skip
    if compare_with is not None:
        b = {k: min(v, key=lambda g: g["wall"]) for k, v in took.items()}
        print(f"best of {rounds}: this / baseline ×{b['baseline']['wall'] / b['this']['wall']:.2f}"
              f" faster, peak memory ×{b['this']['peak'] / b['baseline']['peak']:.2f}")  # fmt: skip


def import_benchmark(n: int, compare_with: Path | None, rounds: int) -> float:
    """The import section (see the module); returns this checkout's stories/s here."""
    import json

    from tests import synthetic

    print(f"— import of {n:,} stories with extraction —")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = synthetic.write_stories_jsonl(Path(tmp) / "s.jsonl", n, seed=11)
        import_once(jsonl, 1)  # warm-up: imports, word lists, the confidence model
        t_one, c_one = import_once(jsonl, 1)
        show("import, labelled in this process", n, t_one, c_one)
        t_pool, c_pool = import_once(jsonl, 2)
        show("import, labelled in 2 worker processes", n, t_pool, c_pool)
        print(f"workers / this process: ×{t_one / t_pool:.2f} stories/s")
        if compare_with is not None:
            print(f"— {compare_with} (baseline) against {ROOT}, in child processes, taking turns —")
            took: dict[str, list[tuple[float, float]]] = {"baseline": [], "this": []}
            for _ in range(rounds):
                for name, root in (("baseline", compare_with), ("this", ROOT)):
                    cmd = [sys.executable, __file__, "--import-child", str(jsonl),
                           "--root", str(root.resolve())]  # fmt: skip
                    env = {**os.environ, "PYTHONPATH": str(root.resolve())}
                    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
                    got = json.loads(out.stdout.strip().splitlines()[-1])
                    took[name].append((got["wall"], got["cpu"]))
                    show(f"import, {name}", n, got["wall"], got["cpu"])
            best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in took.items()}
            (w0, c0), (w1, c1) = best["baseline"], best["this"]
            print(f"best of {rounds}: baseline {n / w0:,.0f} stories/s, {c0 / n * 1e3:.3f} ms "
                  f"CPU/story; this {n / w1:,.0f} stories/s, {c1 / n * 1e3:.3f} ms CPU/story; "
                  f"this / baseline ×{w0 / w1:.2f} stories/s, ×{c0 / c1:.2f} less CPU")  # fmt: skip
    return n / t_one


def measure_child(root: Path, db: Path) -> int:
    """Child of `--baseline`: the big run's metrics (no cache), the Results query (no
    cache) and the PDF with the gbdesk of `root`; prints JSON: per step wall s, CPU s and
    the load average (the higher of before and after)."""
    import json

    use_checkout(root)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gbdesk.store import Store

    compute_metrics, run_results, export_pdf, _ = entry_points()
    got: dict[str, dict[str, float]] = {}

    def step(name: str, fn, *args, **kwargs) -> None:
        load, started, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
        fn(*args, **kwargs)
        got[name] = {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                     "load": max(load, os.getloadavg()[0])}  # fmt: skip

    with Store(db) as store, tempfile.TemporaryDirectory() as tmp:
        big = min(r["id"] for r in store.list_runs())
        step("metrics", compute_metrics, store, big, "auto", use_cache=False)
        store.conn.execute("DELETE FROM metrics")
        step("results", run_results, store, [big], "auto")
        step("pdf", export_pdf, store, [big], Path(tmp) / "r.pdf", "auto")
        got["n"] = {"stories": store.count_attempts(big)}
    print(json.dumps(got))
    return 0


def _child(args: list[str], root: Path, answer: bool = True) -> dict:
    """Run this script as a child with only `root`'s gbdesk on the path; its JSON answer
    (the last line it prints), or {} with `answer=False` (its output shown as it comes)."""
    import json

    cmd = [sys.executable, __file__, *args, "--root", str(root.resolve())]
    env = {**os.environ, "PYTHONPATH": str(root.resolve())}
    if not answer:
        subprocess.run(cmd, check=True, env=env)
        return {}
    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_benchmark(db: Path, baseline: Path, n: int, import_n: int, rounds: int) -> None:
    """The baseline section (see the module)."""
    import statistics

    from tests import synthetic

    git = ["git", "-C", str(baseline), "rev-parse", "--short", "HEAD"]
    rev = subprocess.run(git, capture_output=True, text=True).stdout.strip() or baseline.name
    sides = {"baseline": (baseline, db.with_name(f"{db.stem}.baseline-{rev}.sqlite")),
             "this": (ROOT, db)}  # fmt: skip
    for root, side_db in sides.values():
        if not side_db.exists():
            print(f"building {side_db} with the code of {root} …", flush=True)
            _child(["--build-only", "--db", str(side_db), "--n", str(n), "--baseline-n", "0",
                    "--backfill-n", "0"], root, answer=False)  # fmt: skip
    print(f"— {baseline} ({rev}, baseline) against {ROOT}, {rounds} rounds taking turns, "
          f"on {os.cpu_count()} cores —", flush=True)  # fmt: skip
    took: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = synthetic.write_stories_jsonl(Path(tmp) / "s.jsonl", import_n, seed=11)
        for k in range(rounds):
            for name, (root, side_db) in sides.items():
                got = _child(["--measure-child", "--db", str(side_db)], root)
                got["import"] = _child(["--import-child", str(jsonl)], root)
                stories = {"import": import_n, **dict.fromkeys(("metrics", "results", "pdf"),
                                                               got["n"]["stories"])}  # fmt: skip
                for step in ("metrics", "results", "pdf", "import"):
                    g = got[step]
                    took.setdefault((step, name), []).append(g)
                    print(f"round {k + 1} {name:<8} {step:<8} {stories[step]:>9,} stories "
                          f"{g['wall']:8.2f} s  cpu {g['cpu']:7.2f} s  load {g['load']:5.2f}",
                          flush=True)  # fmt: skip
    print(f"medians of {rounds} (baseline → this; ratio baseline / this: > 1 is faster now)")
    for step in ("metrics", "results", "pdf", "import"):
        b, t = took[(step, "baseline")], took[(step, "this")]
        med = {key: (statistics.median(g[key] for g in b), statistics.median(g[key] for g in t))
               for key in ("wall", "cpu")}  # fmt: skip
        loads = [g["load"] for g in b + t]
        extra = ""
        if step == "import":
            extra = (f"; {import_n / med['wall'][0]:,.0f} → {import_n / med['wall'][1]:,.0f} "
                     f"stories/s")  # fmt: skip
        print(f"  {step:<8} wall {med['wall'][0]:7.2f} → {med['wall'][1]:7.2f} s "
              f"(×{med['wall'][0] / med['wall'][1]:.2f}), cpu {med['cpu'][0]:7.2f} → "
              f"{med['cpu'][1]:7.2f} s (×{med['cpu'][0] / med['cpu'][1]:.2f}){extra}; "
              f"load {min(loads):.1f}–{max(loads):.1f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="database to build or reuse")
    parser.add_argument("--n", type=int, default=500_000)
    parser.add_argument("--baseline-n", type=int, default=50_000)
    parser.add_argument("--backfill-n", type=int, default=20_000)
    parser.add_argument("--import-n", type=int, default=8_000)
    parser.add_argument("--full-baseline", action="store_true")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=["import", "review", "ppi"], help="run only this section")
    parser.add_argument("--sample", type=int, default=500, help="ppi: stories reviewed")
    parser.add_argument("--compare-with", type=Path, help="another checkout: import there too")
    parser.add_argument("--rounds", type=int, help="turns of --compare-with (2), --baseline (3)")
    parser.add_argument("--baseline", type=Path, help="another checkout: every figure there too")
    parser.add_argument("--measure-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--import-child", type=Path, help=argparse.SUPPRESS)  # a JSONL
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # the child's checkout
    parser.add_argument("--review-child", type=int, help=argparse.SUPPRESS)  # a run id
    args = parser.parse_args()
    if args.import_child:
        return import_child(args.root, args.import_child)
    if args.measure_child:
        return measure_child(args.root, args.db)
    if args.review_child:
        return review_child(args.root, args.db, args.review_child)
    if args.only in ("review", "ppi"):
        if args.db is None or not args.db.exists():
            parser.error(f"--only {args.only} needs --db: a database this script built")
        if args.only == "review":
            review_benchmark(args.db, args.compare_with, args.rounds or 2)
        else:
            ppi_benchmark(args.db, args.sample)
        return 0
    if args.only == "import":
        import_benchmark(args.import_n, args.compare_with, args.rounds or 2)
        return 0
    db = args.db or Path(tempfile.gettempdir()) / f"gbdesk-scale-{args.n}.sqlite"
    if args.build_only:
        if args.root:
            use_checkout(args.root)
        build(db, args.n, args.baseline_n, args.backfill_n)
        return 0
    if args.baseline:
        baseline_benchmark(db, args.baseline, args.n, args.import_n, args.rounds or 3)
        return 0
    if not db.exists():
        print(f"building {db} …", flush=True)
        cmd = [sys.executable, __file__, "--build-only", "--db", str(db), "--n", str(args.n),
               "--baseline-n", str(args.baseline_n),
               "--backfill-n", str(args.backfill_n)]  # fmt: skip
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gbdesk.store import Store

    compute_metrics, _compute, export_pdf, _ = entry_points()

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

    rate = import_benchmark(args.import_n, args.compare_with, args.rounds or 2)
    print(
        f"SUMMARY metrics {n_big:,} stories {t_metrics:.1f} s; Results query {t_results:.1f} s; "
        f"PDF {t_pdf:.1f} s; new-path peak {new_peak:.0f} MB; old/new at {n_small:,} "
        f"{t_old_s / t_new_s:.1f}×; back-fill {t_fill:.1f} s; import "
        f"{rate:,.0f} stories/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
