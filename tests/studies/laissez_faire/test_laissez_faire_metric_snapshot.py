"""The Laissez-Faire metrics of all four paths (plain, flat, resampled, PPI) equal the
numbers recorded before each metric was written once (`lf_metric_cases.py` beside
this file, `scripts/lf_metric_snapshot.py`): plain and flat values, intervals, n and p-values
exactly, and the extra results (curves, top names, term stories; as a digest) alike;
the resampled and PPI values to 1e-12 (relative), because their sums of name
likelihoods are now taken per cell of the facts table instead of per feature column, a
different order of the same float additions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.studies.laissez_faire.lf_metric_cases import snapshot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lf_metric_snapshot.json"
TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def now(tmp_path_factory):
    return snapshot(tmp_path_factory.mktemp("lf_snapshot"))


def _close(a, b) -> bool:
    if a == b:
        return True
    if isinstance(a, float) and isinstance(b, float) and math.isfinite(a) and math.isfinite(b):
        return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return False


def _series(values: dict) -> dict:
    """name → values; the PPI sets' series as "set|name"."""
    if all(isinstance(v, list) for v in values.values()):
        return values
    return {f"{s}|{k}": v for s, vs in values.items() for k, v in vs.items()}


def _paths():
    recorded = json.loads(FIXTURE.read_text())
    return [(case, path) for case, paths in recorded.items() for path in paths]


@pytest.mark.parametrize(("case", "path"), _paths())
def test_metrics_equal_the_recorded_ones(now, case, path):
    want = json.loads(FIXTURE.read_text())[case][path]
    got = now[case][path]
    if path.startswith(("plain/", "flat/", "extra/")):
        assert list(got) == list(want)  # the same metrics, in the same order
        assert got == want
        return
    got, want = _series(got), _series(want)
    assert want and set(got) == set(want)
    for name, values in want.items():
        assert len(got[name]) == len(values), name
        for a, b in zip(got[name], values, strict=True):
            assert _close(a, b), (name, a, b)


def _random_facts(seed: int, n: int = 400):
    """Characters with names from a small pool (so names repeat in both roles), random
    genders, conditions and likelihoods, in random units."""
    import numpy as np

    from gbdesk.studies.laissez_faire.metrics import Facts

    rng = np.random.default_rng(seed)
    races = ["white", "black", "hispanic", "asian"]
    pool = [f"Name{i}" for i in range(40)]
    pool_lik = rng.dirichlet(np.ones(len(races)) * 0.4, size=len(pool))
    genders = np.array(["Female", "Male", "Non-binary", "Unspecified", "Unsure"], dtype=object)
    conditions = np.array(["Baseline", "Dominant", "Subordinate"], dtype=object)
    name = rng.integers(-8, len(pool), size=n)  # below 0: no first name
    matched = (name >= 0) & (rng.random(n) < 0.9)
    lik = np.where(matched[:, None], pool_lik[np.maximum(name, 0)], np.nan)
    return Facts(
        unit=rng.integers(0, 50, size=n),
        domain=rng.choice(np.array(["Learning", "Labor", "Love"], dtype=object), size=n),
        condition=rng.choice(conditions, size=n),
        gender=rng.choice(genders, size=n, p=[0.4, 0.4, 0.05, 0.1, 0.05]),
        named=name >= 0,
        matched=matched,
        first=np.array([pool[k] if k >= 0 else None for k in name], dtype=object),
        lik=lik,
        races=races,
        n_units=50,
        pair_unit=np.zeros(0, dtype=np.int64),
        pair=np.zeros(0, dtype=object),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_racialized_curve_equals_the_reference_formula(seed):
    """`metrics.racialized_curve` (tail sums over the names sorted by likelihood) gives
    what `stats.racialized_subordination` (the paper's formula, hand-checked in
    test_laissez_faire_stats) gives on the names counted one character at a time."""
    from gbdesk.studies.laissez_faire.metrics import GENDERS, racialized_curve
    from gbdesk.studies.laissez_faire.stats import NameCounts, racialized_subordination

    f = _random_facts(seed)
    checked = 0
    for r_i, race in enumerate(f.races):
        for gender in ("All", *GENDERS):
            rows: dict[tuple[str, str], list[float]] = {}
            for k in range(len(f)):
                if not f.matched[k] or f.condition[k] == "Baseline":
                    continue
                if gender != "All" and f.gender[k] not in GENDERS:
                    continue
                key = (f.first[k], f.gender[k] if gender != "All" else "All")
                row = rows.setdefault(key, [f.lik[k, r_i], 0.0, 0.0])
                row[1 if f.condition[k] == "Subordinate" else 2] += 1
            names = [
                NameCounts(lik, sub, dom, gender == "All" or key[1] == gender)
                for key, (lik, sub, dom) in rows.items()
            ]
            want_curve, want_median = racialized_subordination(names)
            curve, median, n = racialized_curve(f, race, gender)
            assert curve == want_curve and list(curve) == list(want_curve)
            assert median == want_median or (math.isnan(median) and math.isnan(want_median))
            assert n == sum(x.n_subordinate + x.n_dominant for x in names if x.in_group)
            checked += bool(curve)
    assert checked >= 8


def test_resampled_sums_equal_the_totals_on_every_resample():
    """The resampled evaluation of the definition on a resample equals the totals'
    evaluation on the characters that resample draws (each unit as often as drawn)."""
    import numpy as np

    from gbdesk.studies.laissez_faire.metrics import (
        Facts,
        metrics_from_facts,
        resampled_from_facts,
    )

    f = _random_facts(4)
    rng = np.random.default_rng(5)
    w = rng.multinomial(f.n_units, np.full(f.n_units, 1 / f.n_units), size=5).astype(float)
    values = resampled_from_facts(f)(w)
    for r, row in enumerate(w.astype(int)):
        rows = np.concatenate(
            [np.repeat(np.flatnonzero(f.unit == u), k) for u, k in enumerate(row)]
        )
        drawn = Facts(
            unit=f.unit[rows], domain=f.domain[rows], condition=f.condition[rows],
            gender=f.gender[rows], named=f.named[rows], matched=f.matched[rows],
            first=f.first[rows], lik=f.lik[rows], races=f.races, n_units=f.n_units,
            pair_unit=f.pair_unit, pair=f.pair,
        )  # fmt: skip
        want = metrics_from_facts(drawn)
        assert any(not math.isnan(m.value) for m in want.values())
        for name, m in want.items():
            got = float(values[name][r])
            assert _close(got, m.value) or (math.isnan(got) and math.isnan(m.value)), name
