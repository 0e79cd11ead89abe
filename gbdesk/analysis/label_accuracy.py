"""How right a run's automatic labels are — measured on its random review sample (no Qt).

A labeller's own confidence is a poor headline: a story extractor's was well calibrated on
the stories it was fitted on (ECE 0.9 points, leave one model out) and five points
optimistic on stories of models it had never seen (ECE 5.8). So the figure a
reviewer reads comes, in this order of preference, from

1. **the random review sample** (`gbdesk sample`, Review → "Draw a review sample…"): the
   share of its reviewed units (e.g. a story's characters) whose automatic label agrees
   with the reviewer's — all label kinds at once, and per kind (e.g. gender, name) — with a
   95 % interval (`measured_share`: Wilson's, on the units' effective number, as the units
   of one attempt err together); units reviewed outside the sample (least sure first,
   hardest first) are not a random sample and never feed it;
2. for the share right *now* (reviewed units counted right), the unchecked units at the
   labeller's confidence **recalibrated** on the reviewed sample (`recalibrate`: a shift
   of its log-odds, Platt scaling with the slope fixed at 1) once the sample holds
   `MIN_RECALIBRATION` units, else at the measured share;
3. without a reviewed sample, the labeller's **own confidence**, said to be its own
   estimate and optimistic on models it was not developed on.

`label_accuracy` computes it for any probe; a probe whose labeller gives a confidence says
so through `Ratings.label_units` (and `FlatFacts.label_units` for its flat table). The
Review pane, the Results caption, the PDF and `gbdesk metrics --json` ("review") all show
`LabelAccuracy.text` / `to_json()` of the same object.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gbdesk.analysis.results import auto_source, ensure_auto_labels, flat_run, none_if_nan
from gbdesk.contract import AccuracyWords, Probe, get_probe
from gbdesk.contract.running import label_values
from gbdesk.store import Store

log = logging.getLogger(__name__)

#: reviewed random-sample units from which the confidences are recalibrated
MIN_RECALIBRATION = 50
LEVEL = 0.95


@dataclass(frozen=True)
class MeasuredShare:
    """The share of reviewed units a labeller got right, with its 95 % interval."""

    right: int
    units: int
    clusters: int  # sampled stories (attempts, or items) the units belong to
    ci: tuple[float, float] | None
    #: the units' effective number behind `ci` (≤ `units`: fewer when the units of a story
    #: err together)
    effective: float = 0.0

    @property
    def value(self) -> float | None:
        return self.right / self.units if self.units else None


def measured_share(
    right: Sequence[int] | np.ndarray, units: Sequence[int] | np.ndarray
) -> MeasuredShare:
    """Share right from per-story counts (`right[i]` of `units[i]` units of story i) and
    its 95 % interval: Wilson's (statsmodels) on the units' *effective* number — their
    number divided by the design effect of the stories (Korn & Graubard 1998), i.e.
    p(1 − p) / v with v the cluster-robust variance of the share over stories
    (statsmodels OLS, cluster covariance), never more than the units themselves. The
    characters of one story err together (a swapped pair is two wrong characters), so
    Wilson on the characters alone is too narrow; a percentile bootstrap over stories
    collapses to a point when every sampled unit is right and undercovers when few are
    wrong. On hand-labelled stories of models the extractor was not fitted on, reviewed
    at random (10 % of a model's stories, 200 seeds; 3 %, 100 seeds), this interval
    covered the share right of all the model's characters 94.0–98.5 % and 93–99 % of the
    time; Wilson alone 91.0–96.5 % and 91–95 %, the percentile bootstrap 91.5–93.5 % and
    55–81 % (scripts/eval_review_accuracy.py, docs/label_accuracy.md)."""
    r = np.asarray(right, dtype=np.int64)
    n = np.asarray(units, dtype=np.int64)
    keep = n > 0
    r, n = r[keep], n[keep]
    total, hits = int(n.sum()), int(r.sum())
    if not total:
        return MeasuredShare(0, 0, 0, None)
    from statsmodels.regression.linear_model import OLS
    from statsmodels.stats.proportion import proportion_confint

    effective = float(total)
    if len(n) >= 2 and 0 < hits < total:
        p = hits / total
        y = np.zeros(total)
        starts = np.r_[0, np.cumsum(n)[:-1]]
        for start, k in zip(starts.tolist(), r.tolist(), strict=True):
            y[start : start + k] = 1.0  # the story's right units, then its wrong ones
        fit = OLS(y, np.ones(total)).fit(
            cov_type="cluster", cov_kwds={"groups": np.repeat(np.arange(len(n)), n)}
        )
        variance = float(fit.bse[0]) ** 2
        if variance > 0:
            effective = min(effective, p * (1 - p) / variance)
    lo, hi = proportion_confint(hits / total * effective, effective, 1 - LEVEL, "wilson")
    return MeasuredShare(hits, total, len(n), (float(lo), float(hi)), effective)


def recalibrate(
    confidence: Sequence[float] | np.ndarray, right: Sequence[bool] | np.ndarray
) -> Callable[[np.ndarray], np.ndarray]:
    """A map from the labeller's confidence c to the chance of being right, fitted on
    reviewed units (`confidence`, `right`): Platt scaling with the slope fixed at 1, i.e.
    σ(logit c + b), one shift b of the log-odds fitted by maximum likelihood (statsmodels'
    binomial GLM with logit c as offset) to Platt's (1999) targets — (N₊+1)/(N₊+2) for a
    right unit, 1/(N₋+2) for a wrong one — so that a sample without a wrong unit (or
    without a right one) still gives a finite shift. At the fit the mapped confidences of
    the fitted units sum to the targets' sum (about the number right). One parameter, not
    two (Platt's slope) nor a step function (isotonic regression): fitted on 10 % of a
    held-out model's stories (55–157 characters), its estimate of the share right among
    the characters left after a least-sure-first review erred least of the three on three
    models of four, with the lowest ECE of the three on three (docs/label_accuracy.md)."""
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    c = np.asarray(confidence, dtype=float)
    y = np.asarray(right, dtype=bool)
    pos, neg = int(y.sum()), int((~y).sum())
    target = np.where(y, (pos + 1) / (pos + 2), 1 / (neg + 2))
    with warnings.catch_warnings():
        # raised for targets near 0 or 1 (a sample nearly all right); the shift is finite
        warnings.simplefilter("ignore", PerfectSeparationWarning)
        # a single unit leaves no degree of freedom for the scale, which the shift ignores
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = GLM(target, np.ones((len(c), 1)), family=Binomial(), offset=_logit(c)).fit()
    shift = float(fit.params[0])
    return lambda q: 1 / (1 + np.exp(-(_logit(np.asarray(q, dtype=float)) + shift)))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


@dataclass
class LabelAccuracy:
    """What a run's labels are worth, as the app, the report and `metrics --json` say it."""

    words: AccuracyWords
    units: int  # the run's units (e.g. characters)
    reviewed: int  # units a person checked, in any order
    sample_drawn: bool
    sample: MeasuredShare | None  # all kinds right, on the reviewed random-sample units
    by_kind: dict[str, MeasuredShare] = field(default_factory=dict)
    kind_titles: dict[str, str] = field(default_factory=dict)
    estimate: float | None = None  # share right now (reviewed units count as right)
    basis: str | None = None  # "measured" | "recalibrated" | "confidence"
    recalibrated_on: int = 0  # sample units the recalibration was fitted on
    has_confidence: bool = False  # the labeller gives a confidence for every unit
    #: what the random sample draws, in words: the probe's (`AccuracyWords.stories`), or
    #: "items" for a sample of items
    sampled: str = "attempts"

    def to_json(self) -> dict[str, Any]:
        """The `review` object of `gbdesk metrics --json`."""
        sample = None
        if self.sample_drawn:
            s = self.sample
            # in the probe's own units: characters of stories, labels of attempts or items
            sample = {
                "units": s.units if s else 0,
                "unit": self.words.units,
                "sampled": s.clusters if s else 0,
                "sampled_unit": self.sampled,
                "accuracy": s.value if s else None,
                "ci": list(s.ci) if s and s.ci else None,
                "effective_units": s.effective if s else None,
            }
            for kind in self.kind_titles:
                k = self.by_kind.get(kind)
                sample[f"{kind}_accuracy"] = k.value if k else None
                sample[f"{kind}_ci"] = list(k.ci) if k and k.ci else None
        estimate = None
        if self.estimate is not None:
            estimate = {"accuracy": self.estimate, "basis": self.basis}
            if self.basis == "recalibrated":
                estimate["recalibrated_on"] = self.recalibrated_on
        return {
            "reviewed": self.reviewed,
            "units": self.units,
            "unit": self.words.unit,
            "random_sample": sample,
            "estimate": estimate,
            "text": self.text,
        }

    @property
    def measured(self) -> bool:
        return self.sample is not None and self.sample.units > 0

    @property
    def text(self) -> str:
        """The figure in words: the measured share first, then the share right now."""
        w = self.words
        parts = []
        if self.measured:
            s = self.sample
            assert s is not None and s.ci is not None
            kinds = [
                f"{self.kind_titles[k]} {_pct(self.by_kind[k].value)}"
                for k in self.kind_titles
                if k in self.by_kind and len(self.kind_titles) > 1
            ]
            per_kind = f"; {', '.join(kinds)}" if kinds else ""
            how = (
                f"Wilson on {s.effective:,.0f} effective {w.units}, as those of a story err "
                "together"
                if s.effective < s.units - 0.5
                else "Wilson"
            )
            parts.append(
                f"Measured on the random review sample: {_pct(s.value)} of its {s.units:,} "
                f"reviewed {w.units} {w.right} (95 % interval {_pct(s.ci[0])}–"
                f"{_pct(s.ci[1])}, {how}{per_kind})."
            )
        elif self.sample_drawn:
            parts.append(
                f"No accuracy measured yet: none of the random review sample's {self.sampled} "
                "is reviewed."
            )
        else:
            parts.append(
                "No accuracy measured: this run has no random review sample (Review → Draw "
                "a review sample…)."
            )
        checked = f"the {self.reviewed:,} of {self.units:,} {w.units} a person checked"
        share = w.share[:1].upper() + w.share[1:]
        if self.basis == "recalibrated":
            parts.append(
                f"{share} now: {_pct(self.estimate)} ({checked} count as right, the others "
                f"at the {w.labeller}'s confidence recalibrated on the "
                f"{self.recalibrated_on:,} reviewed sample {w.units})."
            )
        elif self.basis == "measured":
            more = (
                f"; {MIN_RECALIBRATION} reviewed sample {w.units} recalibrate the "
                f"{w.labeller}'s confidence"
                if self.has_confidence
                else ""
            )
            parts.append(
                f"{share} now: {_pct(self.estimate)} ({checked} count as right, the others "
                f"at the measured share{more})."
            )
        elif self.basis == "confidence":
            counted = f", with {checked} counted as right" if self.reviewed else ""
            parts.append(
                f"The {w.labeller}'s own estimate of the {w.share} now: "
                f"{_pct(self.estimate)}{counted} (it has been optimistic on models it was not "
                "developed on — review a random sample to measure it)."
            )
        else:
            parts.append(f"{self.reviewed:,} of {self.units:,} {w.units} checked by a person.")
        return " ".join(parts)


def _pct(x: float | None) -> str:
    return "—" if x is None or math.isnan(x) else f"{100 * x:.1f} %"


# -- computing it ------------------------------------------------------------------------------
@dataclass
class _Compared:
    """The reviewed sample, unit by unit."""

    cluster_right: list[int] = field(default_factory=list)
    cluster_units: list[int] = field(default_factory=list)
    kind_right: dict[str, list[int]] = field(default_factory=dict)
    kind_units: dict[str, list[int]] = field(default_factory=dict)
    confidence: list[float] = field(default_factory=list)  # units with a confidence
    right: list[bool] = field(default_factory=list)


def compare_units(
    probe: Probe,
    auto: dict[str, Any] | None,
    human: dict[str, Any],
    metadata: dict[str, Any],
) -> list[tuple[Hashable, dict[str, bool], float | None]]:
    """Each unit the reviewer rated (`Probe.rated_units` of the human label): whether the
    automatic label agrees with it, per kind the reviewer rated, and the automatic
    label's confidence for that unit (`Probe.label_units`; None: none given)."""
    h = probe.capabilities.ratings.units(human, metadata)
    a = probe.capabilities.ratings.units(auto, metadata) if auto is not None else {}
    confidences = probe.capabilities.ratings.label_units(auto, metadata) if auto is not None else {}
    parts: dict[Hashable, dict[str, bool]] = {}
    for kind, values in h.items():
        for part, value in values.items():
            if value is None:
                continue
            parts.setdefault(part, {})[kind] = (a.get(kind) or {}).get(part) == value
    return [(part, ok, confidences.get(part)) for part, ok in parts.items()]


def label_accuracy(
    store: Store,
    run_id: int,
    *,
    human: dict[int, dict[str, Any]] | None = None,
    reviewed_auto: dict[int, dict[str, Any]] | None = None,
    flat: bool = True,
) -> LabelAccuracy | None:
    """The run's `LabelAccuracy` (None for a probe whose labels people do not review).
    `human`: the run's latest human labels and `reviewed_auto` the automatic labels of
    those attempts, when the caller has them; `flat`: read the unchecked units'
    confidences from the probe's flat table where it has one (`FlatFacts.label_units`)."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    caps = probe.capabilities
    if not caps.review.reviewable:
        return None
    ensure_auto_labels(store, run_id)
    source = caps.labelling.auto_source(run["params"])
    human = store.labels(run_id, "human") if human is None else human
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    sample_ids = store.review_sample(run_id)
    got = None
    if flat and caps.flat is not None:
        fr = flat_run(store, run_id, "auto")
        got = caps.flat.label_units(fr)
    if got is not None:
        item_of, open_conf = _open_from_flat(fr, got, set(human) | set(sample_ids), human)
        if reviewed_auto is None:
            reviewed_auto = store.labels_of(human, "auto", source)
    else:
        item_of = {a["id"]: a["item"] for a in store.attempts(run_id)}
        auto = store.labels(run_id, "auto", source)
        open_conf = _open_from_labels(caps, auto, human, item_of, metadata)
        reviewed_auto = {a: auto[a] for a in human if a in auto}
    reviewed = 0
    compared: dict[int, list[tuple[Hashable, dict[str, bool], float | None]]] = {}
    for attempt_id, row in human.items():
        if attempt_id not in item_of:
            continue  # another run's attempt (a caller's dict) or a deleted one
        compared[attempt_id] = compare_units(
            probe, reviewed_auto.get(attempt_id), row, metadata.get(item_of[attempt_id], {})
        )
        reviewed += len(compared[attempt_id])
    info = store.review_sample_info(run_id)
    result = _sample(info, sample_ids, compared, item_of)
    words = caps.ratings.words
    kinds = dict(words.kinds) or {k: v.lower() for k, v in caps.ratings.kinds().items()}
    sample = measured_share(result.cluster_right, result.cluster_units)
    by_kind = {
        k: measured_share(result.kind_right[k], result.kind_units[k])
        for k in kinds
        if k in result.kind_right and sum(result.kind_units[k]) > 0
    }
    units = reviewed + len(open_conf)
    has_conf = bool(len(open_conf) or result.confidence) and not np.isnan(open_conf).any()
    acc = LabelAccuracy(
        words=words,
        units=units,
        reviewed=reviewed,
        sample_drawn=info is not None,
        sample=sample if info is not None else None,
        by_kind=by_kind,
        kind_titles=kinds,
        has_confidence=has_conf,
        sampled="items" if info is not None and info.get("unit") == "item" else words.stories,
    )
    if units:
        _estimate_accuracy(acc, result, open_conf, run_id)
    return acc


def _open_from_flat(
    fr: Any, got: tuple[Any, Any], wanted: set[int], human: dict[int, dict[str, Any]]
) -> tuple[dict[int, str], np.ndarray]:
    """(item of each reviewed or sampled attempt, the confidences of the units no person
    checked) from the probe's flat table's label units `got` (unit ids, confidences)."""
    unit_ids, conf = got
    att = fr.attempts
    known = att[att["attempt_id"].isin(list(wanted))]
    item_of = dict(zip(known["attempt_id"].tolist(), known["item"].tolist(), strict=True))
    reviewed_ids = np.fromiter(human, dtype=np.int64, count=len(human))
    return item_of, np.asarray(conf, dtype=float)[~np.isin(unit_ids, reviewed_ids)]


def _open_from_labels(
    caps: Any,
    auto: dict[int, dict[str, Any]],
    human: dict[int, dict[str, Any]],
    item_of: dict[int, str],
    metadata: dict[str, Any],
) -> np.ndarray:
    """The confidences of the units no person checked, from the stored automatic labels
    (NaN where a unit has none)."""
    values = []
    for attempt_id, row in auto.items():
        if attempt_id not in human:
            labelled = caps.ratings.label_units(row, metadata.get(item_of.get(attempt_id, ""), {}))
            values += [math.nan if c is None else float(c) for c in labelled.values()]
    return np.asarray(values, dtype=float)


def _estimate_accuracy(acc: LabelAccuracy, result: Any, open_conf: np.ndarray, run_id: int) -> None:
    """`acc`'s estimate over all its units and its basis: the reviewed units count as right,
    the others by their recalibrated confidences (enough reviewed confidences), else the
    measured share of the sample, else their raw confidences."""
    reviewed, units = acc.reviewed, acc.units
    if acc.has_confidence and len(result.confidence) >= MIN_RECALIBRATION:
        try:
            fitted = recalibrate(result.confidence, result.right)
            acc.estimate = (reviewed + math.fsum(fitted(open_conf))) / units
            acc.basis, acc.recalibrated_on = "recalibrated", len(result.confidence)
        except (ValueError, np.linalg.LinAlgError) as exc:  # the measured share stands in
            log.warning("run %s: confidences not recalibrated (%s)", run_id, exc)
    if acc.basis is None and acc.measured:
        assert acc.sample is not None and acc.sample.value is not None
        acc.estimate = (reviewed + acc.sample.value * len(open_conf)) / units
        acc.basis = "measured"
    elif acc.basis is None and acc.has_confidence:
        acc.estimate = (reviewed + math.fsum(open_conf)) / units
        acc.basis = "confidence"


def _sample(
    info: dict[str, Any] | None,
    ids: list[int],
    compared: dict[int, list[tuple[Hashable, dict[str, bool], float | None]]],
    item_of: dict[int, str],
) -> _Compared:
    """The reviewed units of the random sample, by story: an attempt of the sample that a
    person reviewed (for a sample of items, every attempt of the item reviewed)."""
    out = _Compared()
    if info is None:
        return out
    if info["unit"] == "item":
        groups: dict[str, list[int]] = {}
        for a in ids:
            groups.setdefault(item_of.get(a, ""), []).append(a)
        clusters = [g for g in groups.values() if all(a in compared for a in g)]
    else:
        clusters = [[a] for a in ids if a in compared]
    for cluster in clusters:
        units = [u for a in cluster for u in compared[a]]
        out.cluster_units.append(len(units))
        out.cluster_right.append(sum(all(ok.values()) for _, ok, _ in units))
        for kind in {k for _, ok, _ in units for k in ok}:
            out.kind_units.setdefault(kind, []).append(sum(kind in ok for _, ok, _ in units))
            out.kind_right.setdefault(kind, []).append(
                sum(ok.get(kind, False) for _, ok, _ in units)
            )
        for _, ok, c in units:
            if c is not None and not math.isnan(c):
                out.confidence.append(float(c))
                out.right.append(all(ok.values()))
    return out


@dataclass
class ReviewStats:
    """How the detector fares against the reviewers' labels."""

    attempts: int
    reviewed: int
    corrected: int
    per_label: dict[str, dict[str, float]]  # label → precision, recall, support
    accuracy: float
    quality: dict[str, Any] = field(default_factory=dict)  # probe-specific (e.g. names)
    #: the labels' accuracy: measured on the random review sample, else estimated
    label_accuracy: LabelAccuracy | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "reviewed": self.reviewed,
            "corrected": self.corrected,
            "accuracy": none_if_nan(self.accuracy),
            "per_label": {
                k: {m: none_if_nan(v) if isinstance(v, float) else v for m, v in d.items()}
                for k, d in self.per_label.items()
            },
            "quality": self.quality,
            "label_accuracy": self.label_accuracy.to_json() if self.label_accuracy else None,
        }


def review_stats(store: Store, run_id: int, flat: bool = True) -> ReviewStats:
    """Reviewed/corrected counts and the detector's precision and recall per label,
    taking the latest human label of each reviewed attempt as the truth (with a flat
    table, only the reviewed attempts' automatic labels are read)."""
    probe = get_probe(store.get_run(run_id)["probe"])
    ensure_auto_labels(store, run_id)
    human = store.labels(run_id, "human")
    auto = store.labels_of(human, "auto", auto_source(store, run_id))
    accuracy = label_accuracy(store, run_id, human=human, reviewed_auto=auto, flat=flat)
    rows = [(auto[a], h) for a, h in human.items() if a in auto]
    pairs = [(a["label"], h["label"]) for a, h in rows]
    per_label: dict[str, dict[str, float]] = {}
    predicted = Counter(p for p, _ in pairs)
    actual = Counter(t for _, t in pairs)
    hits = Counter(p for p, t in pairs if p == t)
    for value in label_values(probe):
        per_label[value] = {
            "precision": hits[value] / predicted[value] if predicted[value] else math.nan,
            "recall": hits[value] / actual[value] if actual[value] else math.nan,
            "support": actual[value],  # reviewed generations a person gave this label
            "predicted": predicted[value],  # reviewed generations the detector gave it
        }
    correct = sum(hits.values())
    return ReviewStats(
        attempts=store.count_attempts(run_id),
        reviewed=len(pairs),
        corrected=len(pairs) - correct,
        per_label=per_label,
        accuracy=correct / len(pairs) if pairs else math.nan,
        quality=probe.capabilities.review.quality(rows) if rows else {},
        label_accuracy=accuracy,
    )
