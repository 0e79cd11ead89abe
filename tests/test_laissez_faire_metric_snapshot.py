"""The Laissez-Faire metrics of all four paths (plain, flat, resampled, PPI) equal the
numbers recorded before each metric was written once (`tests/lf_metric_cases.py`,
`scripts/lf_metric_snapshot.py`): plain and flat values, intervals, n and p-values
exactly, and the extra results (curves, top names, term stories; as a digest) alike;
the resampled and PPI values to 1e-12 (relative), because their sums of name
likelihoods are now taken per cell of the facts table instead of per feature column, a
different order of the same float additions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.lf_metric_cases import snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "lf_metric_snapshot.json"
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
