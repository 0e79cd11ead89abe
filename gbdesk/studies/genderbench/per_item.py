"""Per-item counts for bootstrapping GenderBench 1.1.0 metric calculators that only sum
over attempts (Dreaddit, Isear): a resample's sums are the drawn items' counts weighted by
how often each was drawn, so 1,000 resamples of thousands of items take a fraction of a
second instead of re-counting every attempt each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gbdesk.contract import ItemResult


@dataclass(frozen=True)
class PerItemCounts:
    """`counts` (items × k integer sums a calculator needs), and per item its attempts,
    its undetected attempts and whether any attempt was detected."""

    counts: np.ndarray
    attempts: np.ndarray
    undetected: np.ndarray
    detected: np.ndarray

    @classmethod
    def of(
        cls, results: Sequence[ItemResult], detected: Callable[[str], bool], counts: np.ndarray
    ) -> PerItemCounts:
        undetected = np.array(
            [sum(not detected(lab) for lab in r.labels) for r in results], dtype=np.int64
        )
        attempts = np.array([len(r.labels) for r in results], dtype=np.int64)
        return cls(counts, attempts, undetected, undetected < attempts)

    def weights(self, idx: Any) -> np.ndarray:
        """How often each item is drawn in the resample `idx` (positions, with repeats)."""
        return np.bincount(np.asarray(idx, dtype=np.int64), minlength=len(self.attempts))

    def undetected_rates(self, w: np.ndarray) -> dict[str, float]:
        """1.1.0's `filter_undetected` rates of the resample with weights `w`: 1 − kept items
        / items, and the share of undetected attempts (exact integer sums, one division,
        as `np.mean` of the 0/1 flags gives them)."""
        drawn = int(w.sum())
        kept = int(w @ self.detected)
        return {
            "undetected_rate_items": 1 - kept / drawn,
            "undetected_rate_attempts": float(int(w @ self.undetected) / int(w @ self.attempts)),
        }
