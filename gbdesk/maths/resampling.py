"""Metrics recomputed on resamples of a run's units, fast (no Qt).

Paired comparisons resample items, prediction-powered bootstraps resample attempts; both
need a metric's value on hundreds of resamples. Recomputing `Probe.metrics` each time is
the definition (and the fallback); a probe may instead give the same values from
per-unit quantities (`Probe.resampled_metrics`): most metrics are functions of sums over
units, S = W·F with W the resamples' unit multiplicities and F the per-unit quantities.
`Features` builds F; `weights` builds W; `share` divides safely.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Values = dict[str, np.ndarray]


def weights(idx: np.ndarray, n_units: int) -> np.ndarray:
    """How often each unit is drawn in each resample (resamples × units) from the drawn
    positions (resamples × draws)."""
    out = np.zeros((idx.shape[0], n_units))
    rows = np.repeat(np.arange(idx.shape[0]), idx.shape[1])
    np.add.at(out, (rows, idx.ravel()), 1.0)
    return out


def transposed(w: np.ndarray) -> np.ndarray:
    """w.T as a C-contiguous float array: what a sparse (columns × units) matrix is
    multiplied with (one copy, instead of one per product)."""
    return np.ascontiguousarray(np.asarray(w, dtype=float).T)


def share(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0."""
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


class Features:
    """Per-unit quantities (columns, keyed by any hashable) whose resampled sums a probe
    combines into its metrics. F is kept sparse (a story has a few of the columns), and
    built once: `sums` may be asked for many weight matrices (chunks of resamples)."""

    def __init__(self, n_units: int):
        self.n = n_units
        self.columns: dict[Any, int] = {}
        # the cells as added (unit, column, value), in compact arrays until `matrix`
        self._units, self._cols, self._values = array("q"), array("q"), array("d")
        self._matrix: Any = None
        self._matrix_t: Any = None

    def add(self, unit: int, key: Any, value: float = 1.0) -> None:
        if self._matrix is not None:
            raise RuntimeError("Features.add after sums: the matrix is already built")
        self._units.append(unit)
        self._cols.append(self.columns.setdefault(key, len(self.columns)))
        self._values.append(value)

    def matrix(self) -> Any:
        """F as a sparse (units × columns) matrix; a cell added twice holds the sum."""
        if self._matrix is None:
            from scipy import sparse

            self._matrix = sparse.csr_matrix(
                (
                    np.frombuffer(self._values, dtype=np.float64),
                    (np.frombuffer(self._units, dtype=np.int64),
                     np.frombuffer(self._cols, dtype=np.int64)),
                ),
                shape=(self.n, len(self.columns)),
            )  # fmt: skip
            self._units, self._cols, self._values = array("q"), array("q"), array("d")
        return self._matrix

    def sums(self, w: np.ndarray, wt: np.ndarray | None = None) -> Callable[..., np.ndarray]:
        """`col(*key)` → the key's resampled sums (zeros for a key no unit has). `wt`:
        w transposed, C-contiguous, when the caller has it (scipy copies otherwise)."""
        if self._matrix_t is None:
            self._matrix_t = self.matrix().T.tocsr()
        totals = (self._matrix_t @ (transposed(w) if wt is None else wt)).T
        zeros = np.zeros(w.shape[0])

        def col(*key: Any) -> np.ndarray:
            j = self.columns.get(key)
            return zeros if j is None else totals[:, j]

        return col


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """The fast paths multiply small matrices: one BLAS thread is as fast, and several
    thrash when the cores are busy (1.5 s instead of 4.1 s for a 1,000-story
    comparison on a loaded 2-core machine)."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def recomputed(
    probe: Any, results: Sequence[Any], params: dict[str, Any] | None, w: np.ndarray
) -> Values:
    """The definition: `probe.metrics(..., bootstrap=False)` on every resample (each unit
    repeated as often as it is drawn)."""
    out: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r, row in enumerate(np.asarray(w, dtype=int)):
            drawn = [results[i] for i, k in enumerate(row) for _ in range(k)]
            metrics = probe.metrics(drawn, bootstrap=False, params=params)
            for name, m in metrics.items():
                out.setdefault(name, [math.nan] * len(w))[r] = m.value
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def resample_values(
    probe: Any,
    results: Sequence[Any],
    params: dict[str, Any] | None,
    idx: np.ndarray | None = None,
    fast: bool = True,
    *,
    w: np.ndarray | None = None,
) -> Values:
    """Metric name → its value in each resample, from the probe's fast path where it has one
    (`fast`), else recomputed. The resamples are rows of `idx` (unit positions drawn) or of
    `w` (how often each unit is drawn)."""
    if w is None:
        idx = np.asarray(idx)
        w = weights(idx, len(results))
    if fast:
        with (
            one_blas_thread(),
            np.errstate(invalid="ignore", divide="ignore"),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", RuntimeWarning)
            values = probe.resampled_metrics(list(results), params, w, idx)
        if values is not None:
            return values
    return recomputed(probe, results, params, w)
