"""Laissez-Faire metrics of the four paths (plain, flat, resampled, PPI) on seeded runs,
as numbers only: what `scripts/lf_metric_snapshot.py` recorded in
`tests/fixtures/lf_metric_snapshot.json` before the metrics were written once
(`gbdesk.studies.laissez_faire.metrics`), and what
`test_laissez_faire_metric_snapshot.py` beside it compares with it.

The runs are the tests' own: recorded stories with varied names (`tests.synthetic`), with
romantic couples (`tests.analysis.test_flat_metrics`), reviewed in part, under both name tables and
both word lists, and the recorded model output run through a fake backend with a reviewed
random sample (`tests.analysis.test_ppi_metrics`). The snapshot holds metric names and values, no
text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

#: (case, builder, params overriding the probe's defaults, review seed or None)
CASES: tuple[tuple[str, str, dict[str, Any], int | None], ...] = (
    ("couples720", "couples:720:5", {}, 3),
    ("couples240_census", "couples:240:11", {"name_table": "census2020"}, 7),
    ("variants300_code", "variants:300:3", {"word_list": "code"}, 4),
    ("recorded100", "recorded", {}, None),
)
RESAMPLES = 4


def _json_value(x: Any) -> Any:
    """A float as JSON keeps it (NaN as the string "nan": the fixture is strict JSON)."""
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, (list, tuple)):
        return [_json_value(v) for v in x]
    return x


def _metric_json(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, m in metrics.items():
        out[name] = {
            "value": _json_value(float(m.value)),
            "ci": _json_value([float(v) for v in m.ci]),
            "n": m.n,
            "p": _json_value(None if m.p_value is None else float(m.p_value)),
        }
    return out


def _values_json(values: dict[str, np.ndarray] | None) -> dict[str, Any]:
    return {k: _json_value([float(x) for x in np.asarray(v)]) for k, v in (values or {}).items()}


def _build(store: Any, builder: str, params: dict[str, Any]) -> int:
    from tests import synthetic

    kind, *args = builder.split(":")
    if kind == "couples":
        from tests.analysis.test_flat_metrics import _lf_run_with_couples

        run_id = _lf_run_with_couples(store, n=int(args[0]), seed=int(args[1]))
    elif kind == "variants":
        run_id = synthetic.laissez_faire_run(store, n=int(args[0]), seed=int(args[1]))
    else:
        from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
        from tests.fakes import FakeBackend, recorded_laissez_faire

        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=100)
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
    if params:
        store.update_run_params(run_id, {**store.get_run(run_id)["params"], **params})
    return run_id


def _review(store: Any, run_id: int, seed: int | None) -> None:
    if seed is None:
        from tests.analysis.test_ppi_metrics import review_sample_with_corrections

        review_sample_with_corrections(store, run_id)
    else:
        from tests.analysis.test_flat_metrics import _review_some

        _review_some(store, run_id, seed=seed)


def _resampled(probe: Any, results: list[Any], params: Any, seed: int) -> dict[str, Any]:
    from gbdesk.analysis.compare import draw_resamples
    from gbdesk.maths.resampling import weights

    idx = draw_resamples(len(results), RESAMPLES, seed=seed)
    w = weights(idx, len(results))
    with np.errstate(invalid="ignore", divide="ignore"):
        return _values_json(probe.capabilities.resampling.metrics(results, params, w, idx))


def _ppi(store: Any, run_id: int, probe: Any, params: Any) -> dict[str, Any]:
    """The PPI evaluator on each unit set (point and seeded multinomial weights)."""
    from gbdesk.analysis.ppi_metrics import run_units

    source = probe.capabilities.labelling.auto_source(params)
    human, labeled, unlabeled, _ = run_units(store, run_id, source)
    out: dict[str, Any] = {}
    rng = np.random.default_rng(run_id)
    for which, units in (("human", human), ("all", [*labeled, *unlabeled])):
        if not units:
            continue
        n = len(units)
        w = np.vstack([np.ones(n), rng.multinomial(n, np.full(n, 1 / n), size=RESAMPLES)])
        with np.errstate(invalid="ignore", divide="ignore"):
            evaluate = probe.capabilities.ppi.evaluator(units, params)
            out[which] = _values_json(evaluate(w.astype(float)))
    return out


def _digest(extra: dict[str, Any]) -> str:
    """The extra results (curves, top names, term stories) as one SHA-256: they hold first
    names and item keys, which the fixture keeps out; equal results give equal digests."""
    import hashlib
    import json

    text = json.dumps(extra, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(tmp: Path) -> dict[str, Any]:
    """Every case's metrics of the four paths (see the module)."""
    from gbdesk.analysis.ppi_metrics import draw_sample
    from gbdesk.analysis.results import compute_metrics, extra_results, item_results
    from gbdesk.contract import get_probe
    from gbdesk.store import Store

    probe = get_probe("laissez_faire")
    out: dict[str, Any] = {}
    for case, builder, params, review_seed in CASES:
        path = tmp / f"{case}.sqlite"
        with Store(path) as store:
            run_id = _build(store, builder, params)
            run_params = store.get_run(run_id)["params"]
            draw_sample(store, run_id, 40, seed=1)
            _review(store, run_id, review_seed)
            got: dict[str, Any] = {}
            for mode in ("auto", "reviewed"):
                got[f"plain/{mode}"] = _metric_json(
                    compute_metrics(store, run_id, mode, use_cache=False, flat=False)
                )
                got[f"flat/{mode}"] = _metric_json(
                    compute_metrics(store, run_id, mode, use_cache=False, flat=True)
                )
                for flat in (False, True):
                    extra = extra_results(store, run_id, mode, flat=flat)
                    got[f"extra/{mode}/{'flat' if flat else 'plain'}"] = _digest(extra)
                results = [r for r in item_results(store, run_id, mode) if r.labels]
                got[f"resampled/{mode}"] = _resampled(probe, results, run_params, seed=run_id)
            got["ppi"] = _ppi(store, run_id, probe, run_params)
            out[case] = got
    return out
