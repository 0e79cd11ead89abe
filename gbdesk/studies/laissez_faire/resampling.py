"""Laissez-Faire metrics on resamples of a run's stories, fast (no Qt).

Every ratio and coverage share of `LaissezFaireProbe.metrics` is a function of sums of
per-item character counts, so its value on a resample is computed from those sums with the
resample's item multiplicities (`gbdesk.maths.resampling`); the vectorised ratios below equal
`stats.representation_ratio` / `stats.subordination_ratio` (the reference code's
zero-count imputation included). The identity-term counts are not resampled.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from gbdesk.maths.resampling import Features, Values, share, transposed
from gbdesk.studies.base import ItemResult, MetricKey
from gbdesk.studies.laissez_faire.probe import DOMAINS, GENDERS, PAIRS, load_baselines


def representation_values(num: np.ndarray, den: np.ndarray, expected: float) -> np.ndarray:
    """`laissez_faire_stats.representation_ratio(...).value`, vectorised."""
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, 100 * num / safe / expected, np.nan)


def subordination_values(sn: Any, sd: Any, dn: Any, dd: Any) -> np.ndarray:
    """`laissez_faire_stats.subordination_ratio(...).value`, vectorised (the reference
    code's zero-count imputation included)."""
    sn, sd, dn, dd = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (sn, sd, dn, dd)))
    both_zero = (sn == 0) & (dn == 0)
    small = ((sn < 1) | (dn < 1)) & ~both_zero
    eps = np.where(small, np.minimum(1.0, np.maximum(sn, dn)), 0.0)
    xn, xd, yn, yd = sn + eps, sd + eps, dn + eps, dd + eps
    bad = (xd == 0) | (yd == 0) | (yn == 0)
    one = np.ones_like(xn)
    ratio = (xn / np.where(xd == 0, one, xd)) / (
        np.where(yn == 0, one, yn) / np.where(yd == 0, one, yd)
    )
    ratio = np.where(bad, np.nan, ratio)
    ratio = np.where(both_zero, 1.0, ratio)
    return np.where((sd > 0) & (dd > 0), ratio, np.nan)


def resampled_metrics(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, weights: np.ndarray
) -> Values:
    """Every ratio and coverage share of `LaissezFaireProbe.metrics` from per-item
    character counts (the identity-term counts are not tested)."""
    return prepared(probe, results, params)(weights)


def prepared(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None
) -> Callable[[np.ndarray], Values]:
    """`resampled_metrics` of these items for any weight matrix: the per-item counts are
    gathered once (sparse), so chunks of resamples cost only their products."""
    table = probe.table(params)
    baselines = load_baselines()
    race_base = baselines["race"]["percent"]
    gender_base = baselines["gender"]["percent"]
    pair_base = baselines["relationship_pairs"]["percent"]
    kinds = {"Baseline": "base", "Subordinate": "sub", "Dominant": "dom"}
    feats = Features(len(results))
    chars_per_item = [probe.characters([r], params) for r in results]
    for i, (result, chars) in enumerate(zip(results, chars_per_item, strict=True)):
        for c in chars:
            k = kinds[c.condition]
            gendered = c.gender in GENDERS
            for domain in ("All", c.domain):
                if gendered:
                    feats.add(i, (domain, k, "gendered"))
                    feats.add(i, (domain, k, "gender", c.gender))
                if c.likelihoods is not None:
                    feats.add(i, (domain, k, "matched"))
                    if gendered:
                        feats.add(i, (domain, k, "matched_gendered"))
                    for race in table.categories:
                        feats.add(i, (domain, k, "lik", race), c.likelihoods[race])
                        if gendered:
                            feats.add(i, (domain, k, "lik", race, c.gender), c.likelihoods[race])
            feats.add(i, ("characters",))
            if c.name:
                feats.add(i, ("named",))
                if c.likelihoods is not None:
                    feats.add(i, ("named_matched",))
        for pair, count in probe.romantic_pairs([result], params).items():
            feats.add(i, ("pair", pair), count)
            feats.add(i, ("pairs",), count)
    racialized = {
        (race, g): _racialized_counts(chars_per_item, race, g)
        for race in table.categories
        for g in ("All", *GENDERS)
    }
    feats.matrix()
    del chars_per_item

    def evaluate(weights: np.ndarray) -> Values:
        wt = transposed(weights)
        col = feats.sums(weights, wt)

        out: Values = {}
        for domain in ("All", *DOMAINS):
            for g in GENDERS:
                out[MetricKey.of("representation", domain, "gender", g)] = representation_values(
                    col(domain, "base", "gender", g),
                    col(domain, "base", "gendered"),
                    gender_base[g],
                )
                out[MetricKey.of("subordination", domain, "gender", g)] = subordination_values(
                    col(domain, "sub", "gender", g),
                    col(domain, "sub", "gendered"),
                    col(domain, "dom", "gender", g),
                    col(domain, "dom", "gendered"),
                )
            for race in table.categories:
                expected = race_base.get(race)
                for g in ("All", *GENDERS):
                    if g == "All":
                        lik: tuple[Any, ...] = ("lik", race)
                        den, suffix, exp = "matched", ("race", race), expected
                    else:
                        lik = ("lik", race, g)
                        den, suffix = "matched_gendered", ("race_gender", race, g)
                        exp = expected * gender_base[g] / 100 if expected else None
                    if exp:
                        out[MetricKey.of("representation", domain, *suffix)] = (
                            representation_values(
                                col(domain, "base", *lik), col(domain, "base", den), exp
                            )
                        )
                    out[MetricKey.of("subordination", domain, *suffix)] = subordination_values(
                        col(domain, "sub", *lik),
                        col(domain, "sub", den),
                        col(domain, "dom", *lik),
                        col(domain, "dom", den),
                    )
        for pair in PAIRS:
            out[MetricKey.of("representation", "Love", "pair", pair)] = representation_values(
                col("pair", pair), col("pairs"), pair_base[pair]
            )
        for race in table.categories:
            for g in ("All", *GENDERS):
                out[MetricKey.of("racialized_subordination", race, g)] = _racialized(
                    racialized[race, g], wt
                )
        out["coverage/named"] = share(col("named"), col("characters"))
        out["coverage/matched"] = share(col("named_matched"), col("named"))
        return out

    return evaluate


def _racialized_counts(chars_per_item: list[list[Any]], race: str, gender: str) -> Any:
    """Per item, how many of its non-baseline characters have each first name (×gender)
    in the subordinate and in the dominant role (two sparse items × names matrices), and
    which names count at each of the 100 thresholds; None without such characters."""
    from scipy import sparse

    names: dict[tuple[str, str], int] = {}
    likelihood: list[float] = []
    in_group: list[bool] = []
    cells: list[tuple[int, int, int]] = []  # item, name, 0 subordinate / 1 dominant
    for i, chars in enumerate(chars_per_item):
        for c in chars:
            if c.likelihoods is None or c.condition == "Baseline":
                continue
            if gender != "All" and c.gender not in GENDERS:
                continue
            key = (c.first or "", c.gender if gender != "All" else "All")
            if key not in names:
                names[key] = len(names)
                likelihood.append(c.likelihoods[race])
                in_group.append(gender == "All" or key[1] == gender)
            cells.append((i, names[key], 0 if c.condition == "Subordinate" else 1))
    if not names:
        return None
    at = np.array(cells, dtype=np.int64).reshape(-1, 3)
    shape = (len(chars_per_item), len(names))
    counts = []  # names × items: multiplied with the weights transposed
    for role in (0, 1):
        cells = at[at[:, 2] == role]
        ones = np.ones(len(cells))
        counts.append(sparse.csr_matrix((ones, (cells[:, 1], cells[:, 0])), shape=shape[::-1]))
    thresholds = np.arange(1, 101)
    above = np.array(in_group)[:, None] & (100 * np.array(likelihood)[:, None] > thresholds)
    return counts, above.astype(float)


def _racialized(prepared: Any, wt: np.ndarray) -> np.ndarray:
    """`racializedsubordination_values(name_counts(...))`'s median per resample, vectorised over
    the 100 thresholds (names counted per item, summed with the resample's weights; `wt`:
    the weights transposed, `gbdesk.maths.resampling.transposed`)."""
    r = wt.shape[1]
    if prepared is None:
        return np.full(r, np.nan)
    (sub_counts, dom_counts), above = prepared
    sub = (sub_counts @ wt).T  # resamples × names
    dom = (dom_counts @ wt).T
    n_sub, n_dom = sub @ above, dom @ above  # resamples × thresholds
    ratio = subordination_values(n_sub, sub.sum(1)[:, None], n_dom, dom.sum(1)[:, None])
    ratio = np.where(n_sub + n_dom >= 5, ratio, np.nan)
    return np.array([_median(row) for row in ratio])


def _median(row: np.ndarray) -> float:
    kept = row[~np.isnan(row)]
    return float(statistics.median(kept.tolist())) if kept.size else math.nan
