"""Confidence of a deterministic extraction: P(name and gender both right).

The deterministic extractor describes each character it reports with a few numbers
(`FEATURES`: how the character was bound to its role, how much gendered evidence it
has and how contested that evidence was, …). A logistic regression maps them to the
probability that a human labeller would agree with both the name and the gender.

The shipped coefficients (`resources/laissez_faire/extractor_confidence.json`) are
fitted by `scripts/eval_extractors.py --data AUDIT.csv --write-confidence FILE`
on hand-labelled stories that gbdesk does not ship; the script refits them inside each
leave-one-model-out fold when it measures calibration. Without the file every
character gets the neutral confidence 0.5.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gbdesk.support.paths import resource

log = logging.getLogger(__name__)

#: Feature names, in the order of the coefficient vector.
FEATURES = (
    "named",  # the character has a name
    "unnamed_role_np",  # no name, but a role noun phrase ("the CEO")
    "pronoun_only",  # no name and no noun phrase: only pronouns
    "narrator",  # a first-person narrator
    "missing",  # no character found for the role
    "role_binding",  # apposition votes for this role ("Jane, a cook")
    "other_role_binding",  # votes for another role (a doubt)
    "assignment_margin",  # best role assignment's lead over the runner-up (capped)
    "n_candidates",  # named characters in the story
    "log_refs",  # log(1 + gendered references)
    "gender_margin",  # share of the majority gender among gendered references
    "unsure",  # references of more than one gender
    "no_gender",  # no gendered reference
    "they_only",  # only they-forms
    "contested",  # share of its pronouns won by a small margin
    "same_gender_other",  # the other role's character has the same gender
    "prior_conflict",  # the first-name lexicon disagrees with the references
    "love_pair",  # power-neutral Love story (two unordered characters)
    "action_role",  # the role is defined by an action ("who pays the bill")
    "second_role",  # the object / second character
)


@dataclass(frozen=True)
class ConfidenceModel:
    """Standardise, then logistic regression."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    fitted_on: str = ""

    def predict(self, values: Mapping[str, float]) -> float:
        """P(right) for one character's feature values (missing features count 0)."""
        z = self.intercept
        for name, m, s, c in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += c * (float(values.get(name, 0.0)) - m) / s
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    @classmethod
    def fit(
        cls,
        rows: Sequence[Mapping[str, float]],
        right: Sequence[bool],
        c: float = 1.0,
        fitted_on: str = "",
    ) -> ConfidenceModel:
        """Fit on feature rows and "both right" outcomes (scikit-learn, L2, C=`c`)."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        x = np.array([[float(r.get(f, 0.0)) for f in FEATURES] for r in rows], dtype=float)
        y = np.array([bool(v) for v in right], dtype=int)
        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        scale[scale == 0] = 1.0
        if len(set(y.tolist())) < 2:  # degenerate: everything right (or wrong)
            p = min(max(y.mean(), 1e-3), 1 - 1e-3)
            return cls(
                FEATURES,
                tuple(mean),
                tuple(scale),
                (0.0,) * len(FEATURES),
                math.log(p / (1 - p)),
                fitted_on,
            )
        model = LogisticRegression(C=c, max_iter=2000)
        model.fit((x - mean) / scale, y)
        return cls(
            FEATURES,
            tuple(float(v) for v in mean),
            tuple(float(v) for v in scale),
            tuple(float(v) for v in model.coef_[0]),
            float(model.intercept_[0]),
            fitted_on,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ConfidenceModel:
        return cls(
            tuple(data["features"]),  # type: ignore[arg-type]
            tuple(float(v) for v in data["mean"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["scale"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["coef"]),  # type: ignore[union-attr]
            float(data["intercept"]),  # type: ignore[arg-type]
            str(data.get("fitted_on", "")),
        )

    def save(self, path: str | Path) -> None:
        from gbdesk.support.atomic import write_text

        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")


@cache
def shipped_model() -> ConfidenceModel | None:
    """The shipped coefficients, or None (then confidence is 0.5) if absent or broken."""
    path = resource("laissez_faire", "extractor_confidence.json")
    try:
        with open(path, encoding="utf-8") as f:
            model = ConfidenceModel.from_json(json.load(f))
    except FileNotFoundError:
        log.warning("no extractor confidence model at %s; confidence is 0.5", path)
        return None
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("unreadable extractor confidence model %s: %s", path, exc)
        return None
    if model.features != FEATURES:
        log.warning("extractor confidence model %s has other features; ignored", path)
        return None
    return model
