"""A database written by an earlier gbdesk opens and gives the same metrics.

The fixture was written by gbdesk before studies moved to `gbdesk/studies/` (see
fixtures/README.md); its runs are recomputed from their stored labels (no cache)."""

from __future__ import annotations

import gzip
import json
import math
import shutil

import tests as _tests
from gbdesk.analysis.results import compute_metrics
from gbdesk.store import Store

FIXTURES = _tests.FIXTURES


def same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def test_legacy_database_gives_the_same_metrics(tmp_path):
    db = tmp_path / "legacy.sqlite"
    with gzip.open(FIXTURES / "legacy_v0.1.sqlite.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    expected = json.loads((FIXTURES / "legacy_metrics.json").read_text())
    with Store(db) as store:
        runs = {r["id"]: r for r in store.list_runs()}
        assert [r["probe"] for r in runs.values()] == [
            "inventories",
            "laissez_faire",
            "gest_creative",
            "globalbias_apx",
            "globalbias_apx",
            "intersectional_sdeg",
        ]
        for run_id, modes in expected.items():
            got = compute_metrics(store, int(run_id), "auto", use_cache=False)
            want = modes["auto"]
            assert set(got) == set(want), run_id
            for name, m in want.items():
                g = got[name].to_json()
                assert same(g["value"], m["value"]), (run_id, name, g, m)
                assert all(same(x, y) for x, y in zip(g["ci"], m["ci"], strict=True)), name
                assert g["mark"] == m["mark"] and g["n"] == m["n"], name
                assert same(g.get("p_value"), m.get("p_value")), name
