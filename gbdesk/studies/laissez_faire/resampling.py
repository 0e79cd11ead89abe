"""Laissez-Faire metrics on resamples of a run's stories, fast (no Qt).

Every ratio and coverage share of `LaissezFaireProbe.metrics` is a function of sums of
per-unit character counts and name likelihoods, so its value on a resample is computed
from those sums with the resample's unit multiplicities (`gbdesk.maths.resampling`). The
metrics are the one definition of `metrics` (`metrics.resampled_from_facts`) over the
units' facts; the identity-term counts are not resampled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gbdesk.contract import ItemResult, MetricKey
from gbdesk.contract.capabilities import Ppi, Resampling
from gbdesk.maths.resampling import Values
from gbdesk.studies.laissez_faire.metrics import (
    facts_from_results,
    representation_values,
    resampled_from_facts,
    subordination_values,
)

__all__ = [
    "paired_test_exclusion",
    "ppi",
    "prepared",
    "representation_values",
    "resampled_metrics",
    "resampling",
    "subordination_values",
]


def resampling(probe: Any) -> Resampling:
    """The probe's `Resampling`: every ratio and coverage share on each resample."""
    return Resampling(
        lambda results, params, w, idx=None: resampled_metrics(probe, results, params, w)
    )


def ppi(probe: Any, base: Ppi) -> Ppi:
    """The probe's `Ppi`: the ratios count characters, so one story per review unit works
    as well as one prompt; identity-term counts get no paired test."""
    return base.with_(
        resampled=lambda units, params, w: resampled_metrics(probe, units, params, w),
        evaluator=lambda units, params: prepared(probe, units, params),
        paired_test_exclusion=paired_test_exclusion,
    )


def paired_test_exclusion(metric: str) -> str | None:
    """Why an identity-term count gets no paired test between two runs (None: tested)."""
    if MetricKey.parse(metric).family == "identity":
        return (
            "a count of stories mentioning the term, not a mean over items (it grows with "
            "the number of stories)"
        )
    return None


def resampled_metrics(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, weights: np.ndarray
) -> Values:
    """Every ratio and coverage share of `LaissezFaireProbe.metrics` on each resample
    (rows of `weights`: how often each item is drawn)."""
    return prepared(probe, results, params)(weights)


def prepared(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None
) -> Callable[[np.ndarray], Values]:
    """`resampled_metrics` of these units for any weight matrix: the facts are gathered
    once (sparse), so chunks of resamples cost only their products."""
    return resampled_from_facts(facts_from_results(probe, results, params, terms=False))
