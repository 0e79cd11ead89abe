"""Agreement between raters (no Qt, no store): pure functions over tidy ratings.

Input everywhere is a set of ratings `(unit, rater, value)`: an iterable of 3-tuples, a
pandas DataFrame with columns `unit`, `rater`, `value`, or a mapping unit → rater → value.
A unit is whatever was rated (an attempt id, or `(attempt_id, role)` for a label per
role); a rater is a name (the `<rater>` of a human label's source `human:<rater>`); a
value is any hashable label ("male", "a", True, ...). A value of None / NaN means the
rater gave no rating and is dropped. A rater may rate a unit only once: give the latest
label of each rater (`ratings_frame(..., duplicates="last")` keeps the last row instead
of refusing).

A statistic that the data do not define (one rater, no unit rated twice, a single
category, unequal numbers of ratings for Fleiss' κ) raises `AgreementUndefined`, a
ValueError whose message a user can read; `agreement_summary` never raises on such data
and returns None with that message as the reason instead.

Statistics come from well-kept libraries: Cohen's κ from scikit-learn
(`cohen_kappa_score`), Fleiss' κ from statsmodels (`aggregate_raters`, `fleiss_kappa`),
Krippendorff's α from the `krippendorff` package. Only units rated at least twice carry
information on agreement; every statistic here uses those units only (Krippendorff's
"pairable values"; units both raters rated for Cohen's κ).

Multi-code labels (several codes per rating, e.g. {"White Savior", "Perpetual
Foreigner"}) are compared code by code: each code becomes a binary label present/absent
for every (unit, rater) that was rated, and every statistic is computed on that binary
label (see `multi_code_agreement`).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

COLUMNS = ("unit", "rater", "value")
LEVELS = ("nominal", "ordinal", "interval", "ratio")

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Ratings: TypeAlias = (
    pd.DataFrame | Mapping[Hashable, Mapping[Hashable, Any]] | Iterable[Sequence[Any]]
)
# unit -> rater -> value (a code set: a frozenset), both in order of first appearance,
# missing values left out.
Table: TypeAlias = dict[Hashable, dict[Hashable, Any]]


class AgreementUndefined(ValueError):
    """The statistic is not defined for these ratings (the message says why)."""


# -- input -----------------------------------------------------------------------------


def is_missing(value: Any) -> bool:
    """None, NaN, pd.NA and NaT: the rater gave no rating."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _rows(ratings: Ratings) -> Iterable[tuple[Any, Any, Any]]:
    if isinstance(ratings, pd.DataFrame):
        absent = [c for c in COLUMNS if c not in ratings.columns]
        if absent:
            raise ValueError(
                f"ratings need the columns unit, rater and value; missing: {', '.join(absent)}"
            )
        return zip(ratings["unit"], ratings["rater"], ratings["value"], strict=True)
    if isinstance(ratings, Mapping):
        return ((u, r, v) for u, by_rater in ratings.items() for r, v in by_rater.items())
    return (_triple(row) for row in ratings)


def _triple(row: Sequence[Any]) -> tuple[Any, Any, Any]:
    if len(row) != 3:
        raise ValueError(f"a rating is (unit, rater, value); got {row!r}")
    return row[0], row[1], row[2]


def _single_value(value: Any) -> Hashable:
    if isinstance(value, set):
        return frozenset(value)
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"a value must be hashable (a string, number, tuple, frozenset); got {value!r}. "
            "For several codes per rating use multi_code_agreement / multi_code=True."
        ) from None
    return value


def _code_set(value: Any) -> frozenset | None:
    """A multi-code value as a frozenset of codes; None when missing."""
    if is_missing(value):
        return None
    if isinstance(value, (str, bytes)):
        return frozenset([value])
    if isinstance(value, Collection):
        codes = [_single_value(v) for v in value if not is_missing(v)]
        return frozenset(codes)
    return frozenset([_single_value(value)])


def _collect(
    ratings: Ratings,
    *,
    duplicates: Literal["error", "last"] = "error",
    multi_code: bool = False,
) -> Table:
    """unit -> rater -> value. Multi-code values become frozensets, and several rows of
    one rater for one unit are merged (their union: long format, one row per code)."""
    table: Table = {}
    for unit, rater, value in _rows(ratings):
        if is_missing(unit) or is_missing(rater):
            raise ValueError(f"a rating without unit or rater: {(unit, rater, value)!r}")
        by_rater = table.setdefault(unit, {})
        if multi_code:
            codes = _code_set(value)
            if codes is None:
                continue
            by_rater[rater] = by_rater.get(rater, frozenset()) | codes
            continue
        if is_missing(value):
            continue
        value = _single_value(value)
        if rater in by_rater and duplicates == "error" and by_rater[rater] != value:
            raise ValueError(
                f"rater {rater!r} rated unit {unit!r} twice ({by_rater[rater]!r} and "
                f"{value!r}); pass one rating per rater and unit (e.g. the latest)"
            )
        by_rater[rater] = value
    return {unit: by_rater for unit, by_rater in table.items() if by_rater}


def _table(ratings: Ratings) -> Table:
    return _collect(ratings)


def ratings_frame(
    ratings: Ratings, *, duplicates: Literal["error", "last"] = "error"
) -> pd.DataFrame:
    """The ratings as a DataFrame (unit, rater, value) without missing values and with
    one row per rater and unit; `duplicates="last"` keeps a rater's last row for a unit
    instead of refusing two different values."""
    table = _collect(ratings, duplicates=duplicates)
    rows = [(u, r, v) for u, by_rater in table.items() for r, v in by_rater.items()]
    return pd.DataFrame(rows, columns=list(COLUMNS), dtype=object)


def _raters(table: Table) -> list[Hashable]:
    seen: dict[Hashable, None] = {}
    for by_rater in table.values():
        for rater in by_rater:
            seen.setdefault(rater, None)
    return sorted(seen, key=str)


def _overlap(table: Table) -> Table:
    """Units with at least two ratings: the only ones that tell about agreement."""
    return {u: by_rater for u, by_rater in table.items() if len(by_rater) >= 2}


def _category_codes(table: Table) -> dict[Hashable, int]:
    codes: dict[Hashable, int] = {}
    for by_rater in table.values():
        for value in by_rater.values():
            codes.setdefault(value, len(codes))
    return codes


def _no_overlap_reason(table: Table) -> str:
    if not table:
        return "there are no ratings"
    if len(_raters(table)) < 2:
        return "only one rater has rated"
    return "no unit was rated by two raters or more"


# -- percent agreement -----------------------------------------------------------------


@dataclass(frozen=True)
class PercentAgreement:
    """Raw agreement over the units rated by two raters or more (shares in [0, 1]).

    * `pairwise`: for each unit, the share of its rater pairs that gave the same value,
      Σ_c n_uc (n_uc − 1) / (m_u (m_u − 1)) with n_uc raters giving value c out of m_u;
      then the mean over units (each unit weighs the same). With two raters it is the
      share of units with equal values (Cohen's p_o); with m raters per unit it is Fleiss'
      P̄.
    * `all_agree`: share of units where every rater gave the same value.
    * `at_least[k]`: share of units where at least k raters gave the same value, for k
      from 2 to the largest number of ratings of a unit ("agreed by ≥ 2 of 3"); a unit
      with fewer than k ratings counts as not agreed by k.
    """

    pairwise: float
    all_agree: float
    at_least: dict[int, float]
    n_units: int

    def to_json(self) -> dict[str, Any]:
        return {
            "pairwise": self.pairwise,
            "all_agree": self.all_agree,
            "at_least": {str(k): v for k, v in self.at_least.items()},
            "n_units": self.n_units,
        }


def percent_agreement(ratings: Ratings) -> PercentAgreement:
    """Raw agreement (see `PercentAgreement` for the exact definitions)."""
    table = _table(ratings)
    units = _overlap(table)
    if not units:
        raise AgreementUndefined(f"No agreement to measure: {_no_overlap_reason(table)}.")
    pair_shares: list[float] = []
    all_agree = 0
    top_counts: list[int] = []
    for by_rater in units.values():
        counts = Counter(by_rater.values())
        m = len(by_rater)
        pair_shares.append(sum(n * (n - 1) for n in counts.values()) / (m * (m - 1)))
        all_agree += len(counts) == 1
        top_counts.append(max(counts.values()))
    most = max(len(by_rater) for by_rater in units.values())
    n = len(units)
    at_least = {k: sum(t >= k for t in top_counts) / n for k in range(2, most + 1)}
    return PercentAgreement(
        pairwise=float(np.mean(pair_shares)),
        all_agree=all_agree / n,
        at_least=at_least,
        n_units=n,
    )


# -- Cohen's kappa ---------------------------------------------------------------------


def _pair_table(table: Table, raters: tuple[Hashable, Hashable] | None) -> Table:
    """The units both raters rated, with only those two raters."""
    present = _raters(table)
    if raters is None:
        if len(present) != 2:
            raise AgreementUndefined(
                f"Cohen's κ compares exactly two raters; there are {len(present)}"
                + (" (use Fleiss' κ or Krippendorff's α)." if len(present) > 2 else ".")
            )
        raters = (present[0], present[1])
    a, b = raters
    if a == b:
        raise ValueError("Cohen's κ needs two different raters")
    for rater in (a, b):
        if rater not in present:
            raise AgreementUndefined(f"Cohen's κ: rater {rater!r} has no rating.")
    both = {
        u: {a: by_rater[a], b: by_rater[b]}
        for u, by_rater in table.items()
        if a in by_rater and b in by_rater
    }
    if not both:
        raise AgreementUndefined(f"Cohen's κ: raters {a!r} and {b!r} rated no unit in common.")
    return both


def cohen_kappa(ratings: Ratings, raters: tuple[Hashable, Hashable] | None = None) -> float:
    """Cohen's κ (unweighted) of two raters over the units both rated.

    `raters` picks two raters when there are more; without it there must be exactly two.
    """
    from sklearn.metrics import cohen_kappa_score

    both = _pair_table(_table(ratings), raters)
    a, b = next(iter(both.values())).keys()
    codes = _category_codes(both)
    first = [codes[by_rater[a]] for by_rater in both.values()]
    second = [codes[by_rater[b]] for by_rater in both.values()]
    if len(codes) == 1:
        raise AgreementUndefined(
            "Cohen's κ is undefined: both raters gave the same single value to every unit "
            "(chance agreement is 1)."
        )
    return float(cohen_kappa_score(first, second, labels=list(range(len(codes)))))


# -- Fleiss' kappa ---------------------------------------------------------------------


def _fixed_count(units: Table) -> int:
    sizes = Counter(len(by_rater) for by_rater in units.values())
    if len(sizes) > 1:
        detail = ", ".join(
            f"{n} unit{'' if n == 1 else 's'} with {m}" for m, n in sorted(sizes.items())
        )
        raise AgreementUndefined(
            "Fleiss' κ needs the same number of ratings for every unit; here units have "
            f"between {min(sizes)} and {max(sizes)} ratings ({detail}). Use Krippendorff's α, "
            "which allows missing ratings, or keep only the units rated by every rater."
        )
    return next(iter(sizes))


def fleiss_kappa(ratings: Ratings) -> float:
    """Fleiss' κ (1971) over the units rated by two raters or more, which must all have
    the same number of ratings (the raters may differ from unit to unit)."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    table = _table(ratings)
    units = _overlap(table)
    if not units:
        raise AgreementUndefined(f"Fleiss' κ is undefined: {_no_overlap_reason(table)}.")
    _fixed_count(units)
    codes = _category_codes(units)
    if len(codes) == 1:
        raise AgreementUndefined(
            "Fleiss' κ is undefined: every rating has the same value (chance agreement is 1)."
        )
    data = np.array([[codes[v] for v in by_rater.values()] for by_rater in units.values()])
    counts, _ = aggregate_raters(data, n_cat=len(codes))
    return float(sm_fleiss_kappa(counts, method="fleiss"))


# -- Krippendorff's alpha --------------------------------------------------------------


def _numeric_values(units: Table, level: str, order: Sequence[Hashable] | None) -> Table:
    """Values as numbers for the krippendorff package: category codes (nominal), ranks
    (ordinal, by `order` or else sorted), the values themselves (interval, ratio)."""
    values = {v for by_rater in units.values() for v in by_rater.values()}
    if level == "nominal":
        numbers: dict[Hashable, float] = {v: float(i) for v, i in _category_codes(units).items()}
    elif level == "ordinal":
        if order is None:
            try:
                order = sorted(values)
            except TypeError:
                raise ValueError(
                    "ordinal α needs the values' order: pass order=[lowest, ..., highest]"
                ) from None
        rank = {v: float(i) for i, v in enumerate(order)}
        unknown = values - rank.keys()
        if unknown:
            raise ValueError(f"values missing from order: {sorted(map(repr, unknown))}")
        numbers = {v: rank[v] for v in values}
    else:
        try:
            numbers = {v: float(v) for v in values}
        except (TypeError, ValueError):
            raise ValueError(f"{level} α needs numeric values") from None
    return {u: {r: numbers[v] for r, v in by_rater.items()} for u, by_rater in units.items()}


def krippendorff_alpha(
    ratings: Ratings, level: Level = "nominal", *, order: Sequence[Hashable] | None = None
) -> float:
    """Krippendorff's α over any raters, missing ratings allowed (units rated once are
    left out: they hold no pairable value).

    `level`: "nominal" (default), "ordinal" (values ranked by `order`, lowest first, or
    else by sorting them), "interval" or "ratio" (numeric values).
    """
    import krippendorff

    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    table = _table(ratings)
    units = _overlap(table)
    if not units:
        raise AgreementUndefined(f"Krippendorff's α is undefined: {_no_overlap_reason(table)}.")
    numeric = _numeric_values(units, level, order)
    distinct = sorted({v for by_rater in numeric.values() for v in by_rater.values()})
    if len(distinct) < 2:
        raise AgreementUndefined(
            "Krippendorff's α is undefined: every pairable rating has the same value "
            "(no expected disagreement)."
        )
    raters = _raters(units)
    matrix = np.full((len(raters), len(units)), np.nan)
    for j, by_rater in enumerate(numeric.values()):
        for i, rater in enumerate(raters):
            if rater in by_rater:
                matrix[i, j] = by_rater[rater]
    if level == "ordinal":
        # The full order, so that unused ranks between used ones count (with zero weight).
        domain = np.arange(len(order) if order is not None else len(distinct), dtype=float)
    else:
        domain = np.array(distinct)
    return float(
        krippendorff.alpha(reliability_data=matrix, value_domain=domain, level_of_measurement=level)
    )


# -- disagreements ---------------------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    """A unit whose raters disagree, with each rater's value (raters sorted by name)."""

    unit: Hashable
    values: dict[Hashable, Any]  # rater -> value, or code set (frozenset)

    @property
    def majority(self) -> Hashable | None:
        """The value more than half of the raters gave, else None."""
        value, count = Counter(self.values.values()).most_common(1)[0]
        return value if count * 2 > len(self.values) else None

    @property
    def disputed_codes(self) -> list[Hashable] | None:
        """Multi-code values: the codes some raters gave and others did not."""
        sets = list(self.values.values())
        if not all(isinstance(s, frozenset) for s in sets):
            return None
        return _sorted(frozenset.union(*sets) - frozenset.intersection(*sets))

    def to_json(self) -> dict[str, Any]:
        data = {
            "unit": _jsonable(self.unit),
            "values": {str(r): _jsonable(v) for r, v in self.values.items()},
            "majority": _jsonable(self.majority),
        }
        disputed = self.disputed_codes
        if disputed is not None:
            data["disputed_codes"] = [_jsonable(c) for c in disputed]
        return data


def disagreements(ratings: Ratings, *, multi_code: bool = False) -> list[Disagreement]:
    """Units rated by two raters or more whose values are not all equal, in the order
    the units first appear. With `multi_code`, values are code sets compared as wholes."""
    table = _collect(ratings, multi_code=multi_code)
    found = []
    for unit, by_rater in _overlap(table).items():
        if len(set(by_rater.values())) > 1:
            values = {r: by_rater[r] for r in sorted(by_rater, key=str)}
            found.append(Disagreement(unit=unit, values=values))
    return found


# -- multi-code labels -----------------------------------------------------------------


def code_table(ratings: Ratings) -> Table:
    """Multi-code ratings as unit -> rater -> frozenset of codes.

    A value may be a collection of codes (set, list, tuple), a single code, or None /
    NaN (no rating); an empty collection means "rated, none of the codes". Several rows
    of one rater for one unit are merged (long format: one row per code)."""
    return _collect(ratings, multi_code=True)


def binary_code_table(codes_by_unit: Table, code: Hashable) -> Table:
    """One code as a binary label: True when the rater gave the code to the unit, False
    when the rater rated the unit without it; no rating stays missing."""
    return {
        u: {r: code in codes for r, codes in by_rater.items()}
        for u, by_rater in codes_by_unit.items()
    }


def _pooled_code_table(codes_by_unit: Table, codes: Sequence[Hashable]) -> Table:
    return {
        (u, code): {r: code in values for r, values in by_rater.items()}
        for u, by_rater in codes_by_unit.items()
        for code in codes
    }


def multi_code_agreement(
    ratings: Ratings, codes: Sequence[Hashable] | None = None
) -> dict[str, Any]:
    """Agreement on multi-code labels, code by code (JSON-friendly).

    Each code becomes a binary label (present / absent) for every (unit, rater) rated,
    and the binary label gets the full summary (`agreement_summary`: percent agreement,
    Cohen's κ with two raters, Fleiss' κ with fixed counts, nominal Krippendorff's α),
    plus its prevalence (share of ratings that have the code).

    Overall figures:
    * `pooled`: the same summary over all (unit, code) pairs taken as binary units, i.e.
      one α for "does the rater give this code to this unit?". This is the headline
      figure; its chance term uses the pooled prevalence of all codes.
    * `mean_alpha`: the unweighted mean of the per-code α's that are defined (over
      `mean_alpha_n_codes` codes).

    (`agreement_summary(..., multi_code=True)` adds the figures on whole code sets, equal
    only when the sets are identical.)

    `codes`: the codes to report (default: every code given, sorted); a listed code
    nobody gave gets α None with its reason.
    """
    codes_by_unit = code_table(ratings)
    if codes is None:
        codes = _sorted(
            {c for by_rater in codes_by_unit.values() for s in by_rater.values() for c in s}
        )
    per_code = []
    for code in codes:
        binary = binary_code_table(codes_by_unit, code)
        flags = [v for by_rater in binary.values() for v in by_rater.values()]
        entry = {"code": _jsonable(code)}
        entry["prevalence"] = sum(flags) / len(flags) if flags else None
        entry.update(agreement_summary(binary))
        per_code.append(entry)
    alphas = [e["krippendorff_alpha"]["value"] for e in per_code]
    alphas = [a for a in alphas if a is not None]
    return {
        "codes": per_code,
        "pooled": agreement_summary(_pooled_code_table(codes_by_unit, codes)),
        "mean_alpha": float(np.mean(alphas)) if alphas else None,
        "mean_alpha_n_codes": len(alphas),
    }


# -- summary ---------------------------------------------------------------------------


def _figure(compute, *, n_units: int | None = None) -> dict[str, Any]:
    try:
        value = compute()
    except AgreementUndefined as exc:
        logger.debug("agreement figure undefined: %s", exc)
        return {"value": None, "n_units": n_units, "reason": str(exc)}
    if isinstance(value, float) and not math.isfinite(value):
        return {"value": None, "n_units": n_units, "reason": "the statistic is not finite"}
    return {"value": value, "n_units": n_units, "reason": None}


def agreement_summary(
    ratings: Ratings,
    *,
    level: Level = "nominal",
    order: Sequence[Hashable] | None = None,
    multi_code: bool = False,
    codes: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """Every agreement figure for one label kind, as a JSON-friendly dict.

    Keys: `n_ratings`, `n_units` (rated at least once), `n_raters`, `raters`,
    `n_units_overlap` (rated by two raters or more), `ratings_per_unit` ({"m": number of
    units with m ratings}), `n_categories`, and the figures `percent_agreement`,
    `cohen_kappa` (exactly two raters), `fleiss_kappa` (same number of ratings for every
    overlapping unit) and `krippendorff_alpha` (at `level`), each a dict with `value`
    (None when undefined), `n_units` and `reason` (None, or why the value is None).
    With `multi_code`, values are code sets: the figures above compare whole sets, and
    `multi_code` holds the per-code figures of `multi_code_agreement(ratings, codes)`.
    Never raises on degenerate data (no ratings, one rater, no overlap, one category).
    """
    table = _collect(ratings, multi_code=multi_code)
    units = _overlap(table)
    raters = _raters(table)
    sizes = Counter(len(by_rater) for by_rater in table.values())
    summary: dict[str, Any] = {
        "level": level,
        "n_ratings": sum(len(by_rater) for by_rater in table.values()),
        "n_units": len(table),
        "n_raters": len(raters),
        "raters": [str(r) for r in raters],
        "n_units_overlap": len(units),
        "ratings_per_unit": {str(m): n for m, n in sorted(sizes.items())},
        "n_categories": len(_category_codes(table)),
    }

    def percent() -> dict[str, Any]:
        return percent_agreement(table).to_json()

    try:
        summary["percent_agreement"] = {**percent(), "reason": None}
    except AgreementUndefined as exc:
        summary["percent_agreement"] = {
            "pairwise": None,
            "all_agree": None,
            "at_least": {},
            "n_units": len(units),
            "reason": str(exc),
        }
    pair_units = len(units) if len(raters) == 2 else None
    summary["cohen_kappa"] = _figure(lambda: cohen_kappa(table), n_units=pair_units)
    summary["fleiss_kappa"] = _figure(lambda: fleiss_kappa(table), n_units=len(units))
    summary["krippendorff_alpha"] = _figure(
        lambda: krippendorff_alpha(table, level, order=order), n_units=len(units)
    )
    if multi_code:
        summary["multi_code"] = multi_code_agreement(table, codes)
    return summary


# -- helpers ---------------------------------------------------------------------------


def _sorted(values: Iterable[Any]) -> list[Any]:
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (frozenset, set)):
        return [_jsonable(v) for v in _sorted(value)]
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)
