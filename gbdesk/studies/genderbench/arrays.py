"""Array forms of GenderBench 1.1.0's means, for metric calculators vectorised over a
bootstrap resample (positions in draw order, as 1.1.0's lists of items)."""

from __future__ import annotations

import math

import numpy as np


def group_means(
    values: np.ndarray, groups: np.ndarray, kept: np.ndarray, n_groups: int
) -> np.ndarray:
    """Per group, the mean of each row of `values` (rows × items) over the kept items
    (positions in draw order) of that group — NaN for a group with none: 1.1.0's
    `nanmean([score(item) for item in items if item is in the group])` for every group and
    row at once, with the same sums. A stable sort keeps each group's draw order, and a
    reduction along a row's contiguous axis sums pairwise as `np.mean` of a 1-D array does.
    """
    codes = groups[kept]
    order = np.argsort(codes, kind="stable")
    block = np.ascontiguousarray(values[:, kept[order]])
    bounds = np.searchsorted(codes[order], np.arange(n_groups + 1))
    out = np.full((values.shape[0], n_groups), math.nan)
    for g in range(n_groups):
        lo, hi = bounds[g], bounds[g + 1]
        if hi > lo:
            out[:, g] = np.add.reduce(block[:, lo:hi], axis=1) / (hi - lo)
    return out


def row_means(values: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The mean of each row of `values` (rows × items) over the kept items, in draw order
    (NaN for none), summed as `np.mean` of each row's 1-D array."""
    if len(kept) == 0:
        return np.full(values.shape[0], math.nan)
    return np.add.reduce(np.ascontiguousarray(values[:, kept]), axis=1) / len(kept)
