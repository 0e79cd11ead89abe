"""Learned parts of the deterministic extractor: small logistic models, no model at run time
beyond a dot product.

Two decisions of `DeterministicExtractor` can use coefficients fitted on hand-labelled
stories instead of hand-set weights:

* **roles** — which named character (or nobody) fills each role of a power-laden or
  single-role prompt: a logistic model of P(this character is this role's character)
  over (role, candidate) features (`role_features.role_features`: order of appearance, name
  count, appositive bindings, unbound role noun phrases, agents and patients of the
  prompt's action, speakers of offers, …); the assignment maximises the summed
  log-probabilities;
* **pronouns** — which character a gendered pronoun refers to: a logistic model of
  P(candidate is the antecedent) over (pronoun, candidate) features that do not look
  at gender (distance, grammatical roles, binding, parallelism, the candidate's role,
  …); gender agreement stays a rule on top (`antecedents.choose`).

Each is consulted only where the rules are unsure (the rules' best choice leads by
less than `ExtractorWeights.learned_role_margin` / `learned_below_margin`; for pronouns
only between two named role characters of the same known gender or none).

Coefficients are fitted by `scripts/eval_extractors.py --data AUDIT.csv --write-learned
FILE` on hand-labelled stories gbdesk does not ship, and refitted inside each
leave-one-model-out fold by `--learned` when it measures accuracy. gbdesk ships none:
on the development models they did not improve on the hand-set rules, so
`DeterministicExtractor` uses the rules unless given `LearnedModels` (`load(FILE)`); an
unreadable file gives `RULES_ONLY` with a warning in the log.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

#: Sections of the learned-coefficients file, one `PairModel` each.
SECTIONS = ("roles", "pronouns")


@dataclass(frozen=True)
class PairModel:
    """Standardise named features, then logistic regression (missing features are 0)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({f: k for k, f in enumerate(self.features)})
        # z = intercept + Σ coef·(x − mean)/scale = base + Σ w·x
        object.__setattr__(
            self, "_w", tuple(c / s for c, s in zip(self.coef, self.scale, strict=True))
        )
        object.__setattr__(
            self,
            "_base",
            self.intercept
            - sum(c * m / s for c, m, s in zip(self.coef, self.mean, self.scale, strict=True)),
        )

    def logit(self, values: Mapping[str, float]) -> float:
        """The log-odds for one row of feature values (unknown names are ignored)."""
        z = self._base  # type: ignore[attr-defined]
        w = self._w  # type: ignore[attr-defined]
        index = self._index
        for name, x in values.items():
            k = index.get(name)
            if k is not None and x:
                z += w[k] * float(x)
        return z

    def log_probability(self, values: Mapping[str, float]) -> float:
        """log P(label is true) for one row: −log(1 + e^−z), computed stably."""
        z = self.logit(values)
        return -math.log1p(math.exp(-z)) if z > -30 else z

    @classmethod
    def fit(
        cls,
        rows: Sequence[Mapping[str, float]],
        labels: Sequence[bool],
        c: float = 1.0,
        weights: Sequence[float] | None = None,
    ) -> PairModel:
        """Fit on feature rows (dicts) and binary labels (scikit-learn, L2, C=`c`).
        Features are the union of the rows' keys, sorted; a constant feature keeps
        scale 1. Degenerate labels (all true or all false) give a constant model."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        names = tuple(sorted({k for r in rows for k in r}))
        index = {n: k for k, n in enumerate(names)}
        x = np.zeros((len(rows), len(names)), dtype=float)
        for i, r in enumerate(rows):
            for k, v in r.items():
                x[i, index[k]] = float(v)
        y = np.array([bool(v) for v in labels], dtype=int)
        mean = x.mean(axis=0) if len(rows) else np.zeros(len(names))
        scale = x.std(axis=0) if len(rows) else np.ones(len(names))
        scale[scale == 0] = 1.0
        if len(set(y.tolist())) < 2:
            p = min(max(float(y.mean()) if len(y) else 0.5, 1e-3), 1 - 1e-3)
            return cls(
                names,
                tuple(float(v) for v in mean),
                tuple(float(v) for v in scale),
                (0.0,) * len(names),
                math.log(p / (1 - p)),
            )
        model = LogisticRegression(C=c, max_iter=5000)
        model.fit((x - mean) / scale, y, sample_weight=None if weights is None else weights)
        return cls(
            names,
            tuple(float(v) for v in mean),
            tuple(float(v) for v in scale),
            tuple(float(v) for v in model.coef_[0]),
            float(model.intercept_[0]),
        )

    @classmethod
    def fit_ranking(
        cls, groups: Sequence[Sequence[tuple[Mapping[str, float], bool]]], c: float = 1.0
    ) -> PairModel:
        """Fit a scoring function for choosing among options: each group holds the
        options of one decision (features, right?); the model learns P(a beats b) =
        σ(w·(x_a − x_b)) from every (right, wrong) pair of a group, both ways round
        (logistic regression without intercept, L2, C=`c`). `logit` then scores an
        option; only differences of scores mean anything."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        names = tuple(sorted({k for g in groups for f, _ in g for k in f}))
        index = {n: k for k, n in enumerate(names)}

        def vec(f: Mapping[str, float]) -> np.ndarray:
            v = np.zeros(len(names))
            for k, x in f.items():
                v[index[k]] = float(x)
            return v

        options = [vec(f) for g in groups for f, _ in g]
        scale = np.std(np.array(options), axis=0) if options else np.ones(len(names))
        scale[scale == 0] = 1.0
        diffs = []
        for g in groups:
            pos = [vec(f) / scale for f, y in g if y]
            neg = [vec(f) / scale for f, y in g if not y]
            diffs += [p - n for p in pos for n in neg]
        zero = (0.0,) * len(names)
        if not diffs:
            return cls(names, zero, tuple(float(v) for v in scale), zero, 0.0)
        x = np.array(diffs + [-d for d in diffs])
        y = np.array([1] * len(diffs) + [0] * len(diffs))
        model = LogisticRegression(C=c, fit_intercept=False, max_iter=5000)
        model.fit(x, y)
        return cls(
            names,
            zero,
            tuple(float(v) for v in scale),
            tuple(float(v) for v in model.coef_[0]),
            0.0,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": [round(v, 6) for v in self.mean],
            "scale": [round(v, 6) for v in self.scale],
            "coef": [round(v, 6) for v in self.coef],
            "intercept": round(self.intercept, 6),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PairModel:
        features = tuple(str(f) for f in data["features"])  # type: ignore[union-attr]
        mean = tuple(float(v) for v in data["mean"])  # type: ignore[union-attr]
        scale = tuple(float(v) for v in data["scale"])  # type: ignore[union-attr]
        coef = tuple(float(v) for v in data["coef"])  # type: ignore[union-attr]
        if not len(features) == len(mean) == len(scale) == len(coef):
            raise ValueError("features, mean, scale and coef differ in length")
        if any(s == 0 for s in scale):
            raise ValueError("zero scale")
        return cls(features, mean, scale, coef, float(data["intercept"]))  # type: ignore[arg-type]


@dataclass(frozen=True)
class LearnedModels:
    """The learned decisions; a missing section (None) falls back to the rules."""

    roles: PairModel | None = None
    pronouns: PairModel | None = None
    fitted_on: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"fitted_on": self.fitted_on}
        for name in SECTIONS:
            model = getattr(self, name)
            if model is not None:
                data[name] = model.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LearnedModels:
        parts = {
            name: PairModel.from_json(data[name])  # type: ignore[arg-type]
            for name in SECTIONS
            if data.get(name) is not None
        }
        return cls(fitted_on=str(data.get("fitted_on", "")), **parts)

    def save(self, path: str | Path) -> None:
        from gbdesk.support.atomic import write_text

        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


#: No learned decisions: the extractor's hand-set rules only.
RULES_ONLY = LearnedModels()


def load(path: str | Path) -> LearnedModels:
    """Learned models from a JSON file; `RULES_ONLY` (with a warning in the log) when
    the file is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return LearnedModels.from_json(json.load(f))
    except FileNotFoundError:
        log.warning("no learned extractor coefficients at %s; using the rules", path)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("unreadable learned extractor coefficients %s: %s; using the rules", path, exc)
    return RULES_ONLY
