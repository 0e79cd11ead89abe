"""Prediction-powered inference (PPI): intervals that stay valid when automatic labels are wrong.

gbdesk labels most units automatically (pronoun detector, character extractor, answer
mapper). Estimates computed from those labels alone inherit the labeller's errors, and
their intervals cover the labeller's answer, not the truth. PPI (Angelopoulos, Bates,
Fannjiang, Jordan & Zrnic, *Science* 2023) combines the automatic labels of all units with
human labels of a **uniformly random** sample of them (`review_sample`): the human sample
measures the labeller's error (the "rectifier") and removes it, so the interval is valid
whatever the labeller gets wrong; the more the labeller agrees with the humans, the
narrower the interval.

* `ppi_mean` — means and shares (a per-unit value averaged over units): PPI++
  (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) through the authors' package
  `ppi_py` (`ppi_mean_pointestimate`, `ppi_mean_ci`) with its power-tuning parameter λ
  estimated from the data and clipped to [0, 1] (λ = 1 is classic PPI, λ = 0 the
  human-only estimate). Normal-approximation interval.
* `ppi_bootstrap` — any statistic of a table of units (ratios, SDeg, disparities): the
  prediction-powered bootstrap of Zrnic (2024, arXiv:2405.18379), the algorithm of
  `ppi_py.ppboot` re-implemented here because `ppboot` draws from numpy's global random
  state and only resamples arrays. Same resampling order and formulas, so with a
  `numpy.random.RandomState` it reproduces `ppboot` to the last digit (tested); gbdesk
  passes a seeded `numpy.random.Generator`.
* `review_sample` — the uniformly random set of units to label by hand.

`ppi_py` (and numba, statsmodels, scikit-learn under it) costs about a second to import,
so it is imported inside the functions; importing it also switches every Python warning
off for the whole process (`warnings.simplefilter("ignore")` at its top level), which
`common._ppi_py` leaves out.

The estimators by module: `mean` (`ppi_mean`, `power_tuning_lambda`), `bootstrap`
(`ppi_bootstrap`), `many` (`ppi_bootstrap_many`, the vectorised bootstrap of many
statistics), `sample` (`review_sample`); `common` holds what they share (`PPIResult`, the
thresholds).
"""

from gbdesk.maths.ppi.bootstrap import RandomSource, Statistic, ppi_bootstrap
from gbdesk.maths.ppi.common import (
    MAX_UNDEFINED_RESAMPLES,
    MIN_DISAGREEMENTS,
    MIN_HUMAN,
    MIN_PER_OUTCOME,
    NAN_CI,
    Interval,
    PPIResult,
)
from gbdesk.maths.ppi.many import MAX_WEIGHT_CELLS, ThetaMany, ppi_bootstrap_many
from gbdesk.maths.ppi.mean import power_tuning_lambda, ppi_mean
from gbdesk.maths.ppi.sample import review_sample

__all__ = [
    "MAX_UNDEFINED_RESAMPLES",
    "MAX_WEIGHT_CELLS",
    "MIN_DISAGREEMENTS",
    "MIN_HUMAN",
    "MIN_PER_OUTCOME",
    "NAN_CI",
    "Interval",
    "PPIResult",
    "RandomSource",
    "Statistic",
    "ThetaMany",
    "power_tuning_lambda",
    "ppi_bootstrap",
    "ppi_bootstrap_many",
    "ppi_mean",
    "review_sample",
]
