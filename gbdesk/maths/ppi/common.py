"""What every PPI estimator shares: the thresholds, the result (`PPIResult`), the lazy
import of `ppi_py` that keeps warnings on, and the small interval helpers."""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Fewest human labels for an interval (means, shares and bootstrap statistics alike).
MIN_HUMAN = 30
#: Fewest human labels of each outcome for a binary share.
MIN_PER_OUTCOME = 5
#: Fewest reviewed units whose human and automatic values differ, for PPI's correction.
MIN_DISAGREEMENTS = 5
#: Largest share of bootstrap resamples on which the statistic may be undefined (NaN/inf).
MAX_UNDEFINED_RESAMPLES = 0.01

Interval = tuple[float, float]
NAN_CI: Interval = (math.nan, math.nan)


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate with its interval and diagnostics.

    `value`/`ci`: the PPI estimate and its interval (`ci` is NaN when `valid` is False).
    `automatic_value`/`automatic_ci`: the same estimand from the automatic labels of all
    `n_total` units, with the plain interval that ignores labelling errors (Wilson for a
    binary share, normal for another mean, percentile bootstrap for a statistic).
    `bias`/`bias_ci`: the labeller's bias on the human sample (automatic − human; for a
    mean, mean(ŷ − y); for a statistic, θ(Ŷ) − θ(Y) on the labelled units).
    `lam`: the power-tuning λ used. `notes`: dropped units and other remarks.
    """

    value: float
    ci: Interval
    automatic_value: float
    automatic_ci: Interval
    bias: float
    bias_ci: Interval
    n_human: int
    n_total: int
    valid: bool
    reason: str = ""
    lam: float = math.nan
    method: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (NaN and infinities become None)."""
        return {
            "value": _json_float(self.value),
            "ci": [_json_float(v) for v in self.ci],
            "automatic_value": _json_float(self.automatic_value),
            "automatic_ci": [_json_float(v) for v in self.automatic_ci],
            "bias": _json_float(self.bias),
            "bias_ci": [_json_float(v) for v in self.bias_ci],
            "n_human": self.n_human,
            "n_total": self.n_total,
            "valid": self.valid,
            "reason": self.reason,
            "lam": _json_float(self.lam),
            "method": self.method,
            "notes": list(self.notes),
        }


def _json_float(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


# What `warnings.simplefilter("ignore")` adds to `warnings.filters`.
_IGNORE_ALL = ("ignore", None, Warning, None, 0)


def _ppi_py() -> Any:
    """Import `ppi_py` lazily, without the blanket "ignore every warning" filter it installs.

    The filters the libraries under it add on import (scipy, statsmodels, …) are kept.
    """
    if "ppi_py" in sys.modules:
        return sys.modules["ppi_py"]
    before = list(warnings.filters)
    with warnings.catch_warnings():
        import ppi_py

        added: list[tuple[Any, ...]] = [
            f for f in warnings.filters if f not in before and f != _IGNORE_ALL
        ]
    for action, message, category, module, lineno in reversed(added):
        warnings.filterwarnings(
            action,
            message.pattern if message is not None else "",
            category,
            module.pattern if module is not None else "",
            lineno,
        )
    return ppi_py


def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def _pair(lo: Any, hi: Any) -> Interval:
    return (float(np.asarray(lo).squeeze()), float(np.asarray(hi).squeeze()))


def _note_few_disagreements(
    disagreements: int, n: int, min_disagreements: int, what: str, notes: list[str]
) -> bool:
    """Whether human and automatic `what` differ on too few of the `n` reviewed units to
    estimate the labeller's error (then said in `notes`)."""
    few = disagreements < min_disagreements
    if few:
        notes.append(
            f"human and automatic {what} differ on {disagreements} of {n} reviewed units "
            f"(at least {min_disagreements} needed to estimate the labeller's error)"
        )
    return few


def _percentile(
    values: list[float], lo_q: float, hi_q: float, notes: list[str], label: str
) -> Interval:
    """Percentile interval of the finite bootstrap values (a note counts the others)."""
    arr = np.asarray(values, float)
    finite = arr[np.isfinite(arr)]
    if len(finite) < len(arr):
        notes.append(
            f"{label} interval: statistic undefined on {len(arr) - len(finite)} of "
            f"{len(arr)} resamples (left out)"
        )
    if len(finite) == 0:
        return NAN_CI
    return _pair(np.quantile(finite, lo_q), np.quantile(finite, hi_q))
