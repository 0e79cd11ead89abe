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

from gbdesk.maths.resampling import Values
from gbdesk.studies.base import ItemResult
from gbdesk.studies.laissez_faire.metrics import (
    facts_from_results,
    representation_values,
    resampled_from_facts,
    subordination_values,
)

__all__ = ["prepared", "representation_values", "resampled_metrics", "subordination_values"]


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
