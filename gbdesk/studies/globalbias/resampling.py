"""GlobalBias metrics on resamples of a run's items, fast: the probes' `Resampling` and `Ppi`
capabilities (no Qt)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gbdesk.contract import ItemResult
from gbdesk.contract.capabilities import Ppi, Resampling
from gbdesk.maths.resampling import Features, share


def apx_resampling() -> Resampling:
    """Mean perplexity per template on each resample (the flags are not resampled)."""
    return Resampling(apx_resampled_metrics)


def apx_ppi(base: Ppi) -> Ppi:
    """Flag counts and validation measures get no paired test between two runs."""
    return base.with_(paired_test_exclusion=apx_paired_test_exclusion)


def apx_resampled_metrics(
    results: list[ItemResult],
    params: dict[str, Any] | None,
    w: Any,
    idx: Any = None,
) -> dict[str, Any] | None:
    """Mean perplexity per template over the scored sentences of the drawn blocks."""
    feats = Features(len(results))
    templates = set()
    for i, result in enumerate(results):
        for s in result.scores:
            ppl = s.get("ppl")
            if ppl is None or math.isnan(ppl):
                continue
            t = int(s["template"])
            templates.add(t)
            feats.add(i, ("ppl", t), ppl)
            feats.add(i, ("n", t))
    col = feats.sums(w)
    return {f"mean_ppl/t{t}": share(col("ppl", t), col("n", t)) for t in sorted(templates)}


def apx_paired_test_exclusion(metric: str) -> str | None:
    """Why flag counts and validation measures get no paired test (None: tested)."""
    if metric.startswith("flagged_"):
        return (
            "a count of group × descriptor pairs flagged by per-pair significance tests, not "
            "a mean over items"
        )
    if metric.startswith("validation_"):
        return (
            "computed per descriptor across all name groups, not over the run's items "
            "(blocks of one name's sentences)"
        )
    return None


def profiles_resampling() -> Resampling:
    """The parse failures on each resample (the SVMs are refitted, not resampled)."""
    return Resampling(
        lambda results, params, w, idx=None: profiles_resampled_metrics(results, params, w)
    )


def profiles_ppi(base: Ppi) -> Ppi:
    """Parse failures over review units; counts and SVM accuracies get no paired test."""
    return base.with_(
        resampled=profiles_resampled_metrics,  # parse failures only (no SVMs)
        paired_test_exclusion=profiles_paired_test_exclusion,
    )


def profiles_resampled_metrics(
    results: list[ItemResult],
    params: dict[str, Any] | None,
    w: Any,
    idx: Any = None,
) -> dict[str, Any] | None:
    """The share of answers not fully parsed, on each resample."""
    failed = np.array([sum(1 for lab in r.labels if lab != "parsed") for r in results], float)
    answers = np.array([len(r.labels) for r in results], dtype=float)
    return {"parse_failures": share(w @ failed, w @ answers)}


def profiles_paired_test_exclusion(metric: str) -> str | None:
    """Why the profile count and the SVM accuracies get no paired test (None: tested)."""
    if metric == "profiles":
        return "a count of profiles, not a mean over items"
    if metric.startswith("svm_"):
        return (
            "a classifier's accuracy on a train/test split of the profiles: resampled items "
            "would put copies of one profile on both sides of the split"
        )
    return None
