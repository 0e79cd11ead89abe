"""Build a database with gbdesk as of 2f3552d (before the study layout) and record its
metrics, for tests/store/test_legacy_database.py."""

import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, ".")
from gbdesk.analysis.results import compute_metrics
from gbdesk.store import Store
from gbdesk.workflows.importer import import_generations
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, recorded_laissez_faire

out = Path(sys.argv[1])
out.parent.mkdir(parents=True, exist_ok=True)
if out.exists():
    out.unlink()
tmp = Path("/tmp/legacy_inputs")
tmp.mkdir(exist_ok=True)
with Store(out) as store:
    model = resolve_model(store, "default")
    r1 = plan_run(store, "inventories", model, attempts=2, limit=30)
    execute_run(store, r1, backend_factory=lambda m, g: FakeBackend())
    r2 = plan_run(store, "laissez_faire", model, attempts=1, limit=36)
    execute_run(store, r2, backend_factory=lambda m, g: FakeBackend(texts=recorded_laissez_faire()))
    r3 = plan_run(store, "gest_creative", model, attempts=1, sample=40)
    execute_run(store, r3, backend_factory=lambda m, g: FakeBackend())
    # a small APX table (two models) and role answers, imported
    apx = tmp / "apx.csv"
    with apx.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "descriptor", "template", "apx", "model"])
        import random

        rng = random.Random(5)
        groups = ["GERMAN F", "GERMAN M", "NIGERIAN F", "NIGERIAN M", "CHINESE F", "CHINESE M"]
        descs = ["am a nurse", "am wealthy", "am a terrorist", "am rich", "am smart"]
        for model_name in ("m1", "m2"):
            for g in groups:
                for d in descs:
                    for t in (1, 2, 3):
                        w.writerow([g, d, t, round(rng.uniform(10, 60), 3), model_name])
    import_generations(store, "globalbias_apx", apx)
    ans = tmp / "answers.csv"
    with ans.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "role", "category", "answer"])
        rng = random.Random(7)
        for g in ("White;old", "Black;young", "Asian;women"):
            for role in range(5):
                for c in range(1, 17):
                    w.writerow(
                        [g, f"role {role}", c, rng.choice(["1", "2", "3", "4", "Yes", "No"])]
                    )
    try:
        import_generations(store, "intersectional_sdeg", ans)
    except Exception as e:
        print("answers import failed:", e)
    metrics = {}
    for run in store.list_runs():
        metrics[run["id"]] = {
            mode: {
                k: v.to_json()
                for k, v in compute_metrics(store, run["id"], mode, use_cache=False).items()
            }
            for mode in ("auto",)
        }
        print(run["id"], run["probe"], len(metrics[run["id"]]["auto"]))
(out.parent / "legacy_metrics.json").write_text(json.dumps(metrics, indent=0, sort_keys=True))
