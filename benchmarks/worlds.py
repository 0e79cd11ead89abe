"""Simulated models of known truth for every marked GenderBench probe (shared by
`benchmarks/interval_coverage.py`, `benchmarks/audit_simulation.py` and their tests).

A **world** is one probe under a simulated model: every item of the `genderbench-1.1`
harness (its pool, `pool_items`, in the audit's draw order, `draw_order`) gets fixed
answer probabilities per prompt, and answers are drawn from them. Answers are given as
**labels** (the evaluator's reading: "yes", "male", an emotion …), not texts — the
labelling is tested elsewhere; business vocabulary's answers carry their word counts as
label data, which its calculator reads. `World.text` turns a label into an answer text
the probe's own evaluator reads back as that label, for the probes the CLI check imports.

**Items that vary.** With ``spread=κ > 0`` an item's main probability is the quantile
u_i of a Beta(rκ, (1 − r)κ) around the world's rate r, u_i ∈ (0, 1) a stable digest of
the item's key (blake2b: no salted `hash()`, the same in every process); ``spread=0``
(the default) gives every item the rate itself.

**Truth** (`World.truth`): each marked metric at infinite attempts on the whole pool —
1.1.0's formula on the expected counts. A rate pooled over answers becomes the mean over
the pool's items of their probabilities (every item has the same number of prompts and
attempts, every answer readable), a mean of item shares the same, a slope 1.1.0's
bounded least-squares fit (`lsq_linear`) of the items' probabilities. It is computed from
the probabilities, never from a sample.

Specs (`parse_world`): ``PROBE:KEY=VALUE[,KEY=VALUE…]``; keys per probe (defaults in
brackets; every probe also takes ``spread`` [0]):

* ``direct``: ``fail`` [0.1] — P(yes) to every statement.
* ``discrimination_tamkin``: ``base`` [0.6], ``gap`` [0] — P(yes) for a man minus for a
  woman (man base + gap/2, woman base − gap/2), ``nb`` [0] — non-binary minus base.
* ``bbq``: ``stereo`` [0.1], ``anti`` [0.1] — P(stereotypical), P(anti-stereotypical);
  the rest "unknown".
* ``inventories``, ``gest_creative``, ``hiring_bloomberg``: ``base`` [0.5] — P(a male
  character), ``pull`` [0] — added for male-stereotyped traits / stereotypes / jobs
  (software engineer, financial analyst), subtracted for female ones.
* ``jobs_lum``: ``base`` [0.5], ``slope`` [0] — P(male) = base + slope·(x − x̄), x the
  occupation's stereotype score.
* ``hiring_an``: ``base`` [0.5], ``gap`` [0] — P(accept) men minus women, ``slope`` [0] —
  the men's stereotype slope minus the women's (each ± slope/2).
* ``relationship_levy``: ``man`` [0.5] — P(the man is right).
* ``diversity_med_qa``: ``base`` [0.7], ``gap`` [0] — P(correct) male patient minus female.
* ``dreaddit``: ``base`` [0.5], ``gap`` [0] — P(stressed) male writer minus female, ``nb``
  [0] — non-binary minus base.
* ``isear``: ``gap`` [0] — a woman's P(sadness) up by it (down, when negative, at most
  to 0), her other emotions down (up) in proportion (the other genders: 1/12 each);
  ``spread=κ`` here gives each item a favoured emotion (from u_i) with κ/(κ + 12) of the
  answers on top of the even share, for every gender.
* ``gest``: ``s`` [0.4] — P(the stereotype's gender), ``o`` [0.3] — P(the other); the
  rest "neither".
* ``business_vocabulary``: ``base`` [0.5], ``gap`` [0] — masculine share of coded words
  for male names minus female ones, ``words`` [4] — coded words per inventory and answer.

`edge_worlds(probe)`: for each marked metric, worlds whose truth sits at every interior
band edge and ±0.005, ±0.01 from it, and at the bound 0 (a rate 0, a gap 0, |0.5 − rate| 0),
each with constant items and with varying ones (``spread=8``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import random
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.optimize import brentq, lsq_linear  # noqa: E402
from scipy.special import betaincinv  # noqa: E402

from gbdesk.contract import ItemResult  # noqa: E402
from gbdesk.contract.registry import get_probe  # noqa: E402
from gbdesk.contract.running import draw_order  # noqa: E402

TEMPLATE = "genderbench-1.1"
#: every probe with marks, in the harness's order
PROBES = (
    "direct", "discrimination_tamkin", "bbq", "inventories", "relationship_levy", "hiring_an",
    "business_vocabulary", "diversity_med_qa", "dreaddit", "gest", "gest_creative",
    "hiring_bloomberg", "isear", "jobs_lum",
)  # fmt: skip
#: the spread of the varying items of `edge_worlds`
EDGE_SPREAD = 8.0


def unit(key: str) -> float:
    """A stable uniform number in (0, 1) from a text (blake2b)."""
    h = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return (int.from_bytes(h, "big") + 0.5) / 2.0**64


@functools.cache
def harness_items(probe: str) -> tuple[Any, ...]:
    """The probe's `genderbench-1.1` items in the harness's order."""
    p = get_probe(probe)
    return tuple(p.items(p.resolve_params(template=TEMPLATE)))


@functools.cache
def pool_items(probe: str) -> tuple[Any, ...]:
    """The probe's `genderbench-1.1` items in the audit's draw order."""
    items = harness_items(probe)
    return tuple(items[i] for i in draw_order(get_probe(probe), list(items)))


def redraw(probe: str, rng: random.Random, n: int) -> list[Any]:
    """The first `n` items of a draw made as the audit's (`draw_order`: stratified by the
    probe's balance key, one of every group first, then each group kept at its share)
    but seeded by `rng` — another random sample of the pool, for coverage over the
    sampling of items. With ``random.Random(SAMPLE_SEED)`` and every item it is the
    audit's draw order itself."""
    items = harness_items(probe)
    positions = draw_order(get_probe(probe), list(items), rng=rng, limit=n)
    return [items[i] for i in positions[:n]]


@functools.cache
def _positions(probe: str) -> dict[str, int]:
    return {item.key: k for k, item in enumerate(pool_items(probe))}


def _rate(r: float, spread: float, u: float) -> float:
    """The item's probability: r itself, or the u-quantile of Beta(rκ, (1 − r)κ)."""
    r = min(1.0, max(0.0, r))
    if spread <= 0 or r in (0.0, 1.0):
        return r
    return float(betaincinv(r * spread, (1 - r) * spread, u))


def _clip(p: float) -> float:
    return min(1.0, max(0.0, p))


# -- each probe's model: (item, prompt metadata, u) → {label: probability} ------------------
Model = Callable[[dict[str, float], Any, dict[str, Any], float], dict[str, float]]


def _binary(yes: str, no: str, p: float) -> dict[str, float]:
    return {yes: p, no: 1 - p}


def _direct(w: dict[str, float], item: Any, prompt: dict[str, Any], u: float) -> dict[str, float]:
    return _binary("yes", "no", _rate(w["fail"], w["spread"], u))


def _tamkin(w: dict[str, float], item: Any, prompt: dict[str, Any], u: float) -> dict[str, float]:
    b = _rate(w["base"], w["spread"], u)
    shift = {"male": w["gap"] / 2, "female": -w["gap"] / 2, "nonbinary": w["nb"]}
    return _binary("yes", "no", _clip(b + shift[prompt["gender"]]))


def _bbq(w: dict[str, float], item: Any, prompt: dict[str, Any], u: float) -> dict[str, float]:
    s = _rate(w["stereo"], w["spread"], u)
    a = min(w["anti"], 1 - s)
    return {"stereotypical": s, "anti-stereotypical": a, "unknown": 1 - s - a}


def _pulled(w: dict[str, float], toward_male: bool, u: float) -> dict[str, float]:
    p = _clip(w["base"] + (w["pull"] if toward_male else -w["pull"]))
    return _binary("male", "female", _rate(p, w["spread"], u))


def _inventories(w, item, prompt, u):
    return _pulled(w, item.metadata["gender"] == "male", u)


def _gest_creative(w, item, prompt, u):
    return _pulled(w, int(item.metadata["stereotype_id"]) >= 8, u)


def _hiring_bloomberg(w, item, prompt, u):
    return _pulled(w, item.metadata["role"] in ("software engineer", "financial analyst"), u)


@functools.cache
def _mean_job_score() -> float:
    return float(np.mean([i.metadata["score"] for i in pool_items("jobs_lum")]))


def _jobs_lum(w, item, prompt, u):
    p = _clip(w["base"] + w["slope"] * (float(item.metadata["score"]) - _mean_job_score()))
    return _binary("male", "female", _rate(p, w["spread"], u))


@functools.cache
def _mean_stereotype() -> float:
    return float(np.mean([i.metadata["stereotype"] for i in pool_items("hiring_an")]))


def _hiring_an(w, item, prompt, u):
    sign = 1 if item.metadata["gender"] == "male" else -1
    x = float(item.metadata["stereotype"]) - _mean_stereotype()
    p = _clip(w["base"] + sign * w["gap"] / 2 + sign * w["slope"] / 2 * x)
    return _binary("accepted", "rejected", _rate(p, w["spread"], u))


def _levy(w, item, prompt, u):
    return _binary("man", "woman", _rate(w["man"], w["spread"], u))


def _medqa(w, item, prompt, u):
    b = _rate(w["base"], w["spread"], u)
    shift = w["gap"] / 2 if prompt["gender"] == "male" else -w["gap"] / 2
    return _binary("correct", "incorrect", _clip(b + shift))


def _dreaddit(w, item, prompt, u):
    b = _rate(w["base"], w["spread"], u)
    shift = {"male": w["gap"] / 2, "female": -w["gap"] / 2, "non-binary": w["nb"]}
    return _binary("stressed", "not stressed", _clip(b + shift[prompt["gender"]]))


@functools.cache
def _emotions() -> tuple[str, ...]:
    from gbdesk.studies.genderbench.probes.isear.probe import EMOTIONS

    return tuple(EMOTIONS)


def _isear(w, item, prompt, u):
    emotions = _emotions()
    k = len(emotions)
    favoured = emotions[int(u * k) % k]
    share = w["spread"] / (w["spread"] + k)  # the item's extra share of its own emotion
    q = {e: (1 - share) / k + (share if e == favoured else 0.0) for e in emotions}
    if prompt["gender"] == "a woman":  # gap moved to sadness from the others, in proportion
        rest = 1 - q["sadness"]
        d = max(-q["sadness"], min(w["gap"], rest))  # a probability stays a probability
        q = {e: (v + d if e == "sadness" else v * (rest - d) / rest) for e, v in q.items()}
    return q


def _gest(w, item, prompt, u):
    s = _rate(w["s"], w["spread"], u)
    o = min(w["o"], 1 - s)
    own = "male" if int(item.metadata["stereotype_id"]) >= 8 else "female"
    other = "female" if own == "male" else "male"
    return {own: s, other: o, "neither": 1 - s - o}


def _vocabulary(w, item, prompt, u):
    g = w["gap"] / 2 if item.metadata["is_male"] else -w["gap"] / 2
    return {"masculine": _rate(_clip(w["base"] + g), w["spread"], u)}  # share of coded words


@dataclass(frozen=True)
class ProbeModel:
    model: Model
    defaults: dict[str, float]
    #: marked metric → the parameter that moves it (for `edge_worlds`)
    moves: dict[str, str]


MODELS: dict[str, ProbeModel] = {
    "direct": ProbeModel(_direct, {"fail": 0.1}, {"fail_rate": "fail"}),
    "discrimination_tamkin": ProbeModel(
        _tamkin, {"base": 0.6, "gap": 0.0, "nb": 0.0},
        {"max_diff": "gap", "diff_mvf_success_rate": "gap"},
    ),
    "bbq": ProbeModel(_bbq, {"stereo": 0.1, "anti": 0.1}, {"stereotype_rate": "stereo"}),
    "inventories": ProbeModel(
        _inventories, {"base": 0.5, "pull": 0.0},
        {"stereotype_rate": "pull", "masculine_rate": "base", "disparity": "base"},
    ),
    "gest_creative": ProbeModel(
        _gest_creative, {"base": 0.5, "pull": 0.0},
        {"stereotype_rate": "pull", "masculine_rate": "base", "disparity": "base"},
    ),
    "hiring_bloomberg": ProbeModel(
        _hiring_bloomberg, {"base": 0.5, "pull": 0.0},
        {"stereotype_rate": "pull", "masculine_rate": "base", "disparity": "base"},
    ),
    "jobs_lum": ProbeModel(
        _jobs_lum, {"base": 0.5, "slope": 0.0},
        {"stereotype_rate": "slope", "masculine_rate": "base", "disparity": "base"},
    ),
    "hiring_an": ProbeModel(
        _hiring_an, {"base": 0.5, "gap": 0.0, "slope": 0.0},
        {"diff_acceptance_rate": "gap", "diff_abs_acceptance_rate": "gap",
         "diff_regression": "slope"},
    ),
    "relationship_levy": ProbeModel(
        _levy, {"man": 0.5}, {"diff_abs_success_rate": "man", "diff_success_rate": "man"}
    ),
    "diversity_med_qa": ProbeModel(
        _medqa, {"base": 0.7, "gap": 0.0},
        {"diff_abs_success_rate": "gap", "diff_success_rate": "gap"},
    ),
    "dreaddit": ProbeModel(
        _dreaddit, {"base": 0.5, "gap": 0.0, "nb": 0.0}, {"max_diff_stress_rate": "gap"}
    ),
    "isear": ProbeModel(_isear, {"gap": 0.0}, {"max_diff": "gap"}),
    "gest": ProbeModel(_gest, {"s": 0.4, "o": 0.3}, {"stereotype_rate": "s"}),
    "business_vocabulary": ProbeModel(
        _vocabulary, {"base": 0.5, "gap": 0.0, "words": 4.0}, {"mean_diff": "gap"}
    ),
}  # fmt: skip


def _prompts(item: Any) -> list[dict[str, Any]]:
    return [p.metadata for p in (item.prompts or ())] or [{}]


@dataclass(frozen=True)
class World:
    """One probe under a simulated model (see the module)."""

    probe: str
    params: tuple[tuple[str, float], ...]
    key: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def values(self) -> dict[str, float]:
        return {"spread": 0.0, **MODELS[self.probe].defaults, **dict(self.params)}

    @property
    def spec(self) -> str:
        return f"{self.probe}:" + ",".join(f"{k}={v:g}" for k, v in self.params)

    def probabilities(self, item: Any, prompt: dict[str, Any]) -> dict[str, float]:
        """The answer's label probabilities for one prompt of one item."""
        return MODELS[self.probe].model(self.values, item, prompt, unit(item.key))

    def answer(
        self,
        item_metadata: dict[str, Any],
        prompt_metadata: dict[str, Any],
        rng: random.Random,
        key: str | None = None,
    ) -> str:
        """One answer (a label) to a prompt; `key`: the item's key (its stable spread)."""
        from types import SimpleNamespace

        item = SimpleNamespace(metadata=item_metadata, key=key or repr(sorted(item_metadata)))
        probs = MODELS[self.probe].model(self.values, item, prompt_metadata, unit(item.key))
        return _draw(probs, rng)

    def table(self) -> list[list[dict[str, float]]]:
        """Per pool item (draw order), per prompt: the label probabilities (cached)."""
        if "table" not in self._cache:
            self._cache["table"] = [
                [self.probabilities(i, p) for p in _prompts(i)] for i in pool_items(self.probe)
            ]
        return self._cache["table"]

    def _plan(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Every pool item's prompts as rows (draw order): the labels, their cumulative
        probabilities (rows × labels), each item's first row and number of rows."""
        if "plan" not in self._cache:
            table = self.table()
            labels = sorted({lab for probs in table for pr in probs for lab in pr})
            rows = [[pr.get(lab, 0.0) for lab in labels] for probs in table for pr in probs]
            p = np.clip(np.array(rows, dtype=float).reshape(-1, len(labels)), 0, None)
            cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
            sizes = np.array([len(probs) for probs in table])
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            self._cache["plan"] = (labels, cum, starts, sizes)
        return self._cache["plan"]

    def results(
        self,
        n: int,
        rng: random.Random | np.random.Generator,
        attempts: int | None = None,
        items: Sequence[Any] | None = None,
    ) -> list[ItemResult]:
        """The first `n` items of the draw order (or `items`, e.g. a `redraw`),
        answered: `attempts` per prompt, default the harness's."""
        gen = (
            rng
            if isinstance(rng, np.random.Generator)
            else np.random.default_rng(rng.getrandbits(64))
        )
        k = attempts or get_probe(self.probe).harness_attempts
        items = list(pool_items(self.probe)[:n] if items is None else items)
        where = _positions(self.probe)
        at = [where[i.key] for i in items]
        if self.probe == "business_vocabulary":
            return self._vocabulary_results(items, at, k, gen)
        labels, cum, starts, sizes = self._plan()
        rows = np.concatenate([np.arange(starts[a], starts[a] + sizes[a]) for a in at])
        u = gen.random((len(rows), k))
        drawn = np.minimum((u[:, :, None] > cum[rows][:, None, :]).sum(axis=2), len(labels) - 1)
        out = []
        row = 0
        for item, a in zip(items, at, strict=True):
            size = int(sizes[a])
            prompts = [p.metadata for p in (item.prompts or ())]
            got = [labels[d] for d in drawn[row : row + size].ravel()]
            indices = [j for j in range(size) for _ in range(k)] if prompts else []
            row += size
            out.append(
                ItemResult(
                    item.key, item.metadata, got, prompts=prompts, prompt_indices=indices,
                    label_data=[{} for _ in got],
                )
            )  # fmt: skip
        return out

    def _vocabulary_results(
        self, items: Sequence[Any], at: list[int], k: int, gen: np.random.Generator
    ) -> list[ItemResult]:
        table = self.table()
        out = []
        for item, probs in ((i, table[a]) for i, a in zip(items, at, strict=True)):
            data = [
                {"counts": _word_counts(self.values["words"], probs[0]["masculine"], gen)}
                for _ in range(k)
            ]
            out.append(ItemResult(item.key, item.metadata, ["balanced"] * k, label_data=data))
        return out

    def text(self, label: str, metadata: dict[str, Any]) -> str:
        """An answer text the probe's own evaluator reads as `label` (`metadata`: the
        prompt's over the item's; the probes of `TEXTS`, which the CLI check imports)."""
        return TEXTS[self.probe](label, metadata)

    def truth(self) -> dict[str, float]:
        """Every marked metric at infinite attempts on the whole pool (see the module)."""
        if "truth" not in self._cache:
            self._cache["truth"] = TRUTHS[self.probe](self)
        return self._cache["truth"]


def _draw(probs: dict[str, float], rng: random.Random) -> str:
    weights = [max(0.0, v) for v in probs.values()]
    return rng.choices(list(probs), weights=weights)[0]


def _word_counts(words: float, masculine: float, gen: np.random.Generator) -> dict[str, list[int]]:
    from gbdesk.studies.genderbench.probes.business_vocabulary.probe import INVENTORIES

    total = gen.poisson(words, size=len(INVENTORIES))
    male = gen.binomial(total, masculine)
    return {name: [int(m), int(t - m)] for name, m, t in zip(INVENTORIES, male, total, strict=True)}


def _pronouns(label: str, meta: dict[str, Any]) -> str:
    pronoun = "he" if label == "male" else "she"
    return f"{pronoun.capitalize()} is kind, and {pronoun} works hard."


def _levy_text(label: str, meta: dict[str, Any]) -> str:
    first = bool(meta["male_first"]) == (label == "man")  # the first name is the chosen one
    return "(a)" if first else "(b)"


#: answer texts for the probes the CLI check imports: label → a text read as that label
TEXTS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "direct": lambda label, meta: f"{label.capitalize()}.",
    "discrimination_tamkin": lambda label, meta: f"{label.capitalize()}.",
    "inventories": _pronouns,
    "jobs_lum": _pronouns,
    "relationship_levy": _levy_text,
}


# -- truths --------------------------------------------------------------------------------
def _per_item(world: World, label: str, gender: str | None = None) -> np.ndarray:
    """Each pool item's mean probability of `label` (over its prompts of `gender`)."""
    out = []
    for item, probs in zip(pool_items(world.probe), world.table(), strict=True):
        prompts = _prompts(item)
        ps = [pr.get(label, 0.0) for pr, m in zip(probs, prompts, strict=True)
              if gender is None or m.get("gender") == gender]  # fmt: skip
        out.append(sum(ps) / len(ps) if ps else math.nan)
    return np.array(out)


def _meta(world: World, key: str) -> np.ndarray:
    return np.array([i.metadata.get(key) for i in pool_items(world.probe)], dtype=object)


def _largest(rates: list[float]) -> float:
    return max(abs(a - b) for a, b in combinations(rates, 2))


def _truth_direct(w: World) -> dict[str, float]:
    return {"fail_rate": float(_per_item(w, "yes").mean())}


def _truth_tamkin(w: World) -> dict[str, float]:
    r = {g: float(_per_item(w, "yes", g).mean()) for g in ("female", "male", "nonbinary")}
    return {
        "max_diff": _largest(list(r.values())),
        "diff_mvf_success_rate": r["male"] - r["female"],
    }


def _truth_bbq(w: World) -> dict[str, float]:
    s, cat = _per_item(w, "stereotypical"), _meta(w, "category")
    used = ("ambiguous", "disambiguous_antistereotypical")
    return {"stereotype_rate": float(np.mean([s[cat == c].mean() for c in used]))}


def _truth_inventories(w: World) -> dict[str, float]:
    male = _per_item(w, "male")
    source, gender = _meta(w, "source"), _meta(w, "gender")
    sources = sorted(set(source.tolist()))
    masculine = float(np.mean([male[source == s].mean() for s in sources]))
    stereo = float(np.mean([
        male[(source == s) & (gender == "male")].mean()
        - male[(source == s) & (gender == "female")].mean() for s in sources
    ]))  # fmt: skip
    return {
        "stereotype_rate": stereo,
        "masculine_rate": masculine,
        "disparity": abs(0.5 - masculine),
    }


def _truth_gest_creative(w: World) -> dict[str, float]:
    male = _per_item(w, "male")
    ids = np.array([int(x) for x in _meta(w, "stereotype_id")])
    rate = {i: male[ids == i].mean() for i in range(1, 17)}
    masculine = float(np.nanmean(list(rate.values())))
    stereo = float(np.mean([rate[i] for i in range(8, 17) if i != 15])
                   - np.mean([rate[i] for i in range(1, 8)]))  # fmt: skip
    return {
        "stereotype_rate": stereo,
        "masculine_rate": masculine,
        "disparity": abs(0.5 - masculine),
    }


def _truth_hiring_bloomberg(w: World) -> dict[str, float]:
    male, role = _per_item(w, "male"), _meta(w, "role")
    rate = {r: male[role == r].mean() for r in sorted(set(role.tolist()))}
    masculine = float(np.mean(list(rate.values())))
    stereo = (rate["software engineer"] + rate["financial analyst"] - rate["retail"]
              - rate["HR specialist"]) / 4  # fmt: skip
    return {"stereotype_rate": float(stereo), "masculine_rate": masculine,
            "disparity": abs(0.5 - masculine)}  # fmt: skip


def _bounded_slope(x: np.ndarray, y: np.ndarray) -> float:
    design = np.column_stack((x, np.ones(len(x))))
    return float(lsq_linear(design, y, bounds=([-1, 0], [1, 1])).x[0])


def _truth_jobs_lum(w: World) -> dict[str, float]:
    male = _per_item(w, "male")
    x = np.array([float(v) for v in _meta(w, "score")])
    masculine = float(male.mean())
    return {"stereotype_rate": _bounded_slope(x, male), "masculine_rate": masculine,
            "disparity": abs(0.5 - masculine)}  # fmt: skip


def _truth_hiring_an(w: World) -> dict[str, float]:
    p, gender = _per_item(w, "accepted"), _meta(w, "gender")
    x = np.array([float(v) for v in _meta(w, "stereotype")])
    m, f = gender == "male", gender == "female"
    diff = float(p[m].mean() - p[f].mean())
    return {"diff_acceptance_rate": diff, "diff_abs_acceptance_rate": abs(diff),
            "diff_regression": _bounded_slope(x[m], p[m]) - _bounded_slope(x[f], p[f])}  # fmt: skip


def _truth_levy(w: World) -> dict[str, float]:
    d = float(2 * _per_item(w, "man").mean() - 1)
    return {"diff_abs_success_rate": abs(d), "diff_success_rate": d}


def _truth_medqa(w: World) -> dict[str, float]:
    d = float(_per_item(w, "correct", "male").mean() - _per_item(w, "correct", "female").mean())
    return {"diff_abs_success_rate": abs(d), "diff_success_rate": d}


def _truth_dreaddit(w: World) -> dict[str, float]:
    r = [float(_per_item(w, "stressed", g).mean()) for g in ("male", "female", "non-binary")]
    return {"max_diff_stress_rate": _largest(r)}


def _truth_isear(w: World) -> dict[str, float]:
    genders = ("a man", "a woman", "a non-binary person")
    best = 0.0
    for e in _emotions():
        best = max(best, _largest([float(_per_item(w, e, g).mean()) for g in genders]))
    return {"max_diff": best}


def _truth_gest(w: World) -> dict[str, float]:
    from gbdesk.studies.genderbench.probes.gest.probe import FEMALE_IDS, MALE_IDS_COUNTED

    ids = np.array([int(x) for x in _meta(w, "stereotype_id")])
    p = {o: _per_item(w, o) for o in ("male", "female")}

    def freq(id_list: tuple[int, ...], option: str) -> float:
        return float(np.nanmean([p[option][ids == i].mean() if (ids == i).any() else np.nan
                                 for i in id_list]))  # fmt: skip

    rate = (freq(MALE_IDS_COUNTED, "male") - freq(MALE_IDS_COUNTED, "female")
            + freq(FEMALE_IDS, "female") - freq(FEMALE_IDS, "male")) / 2  # fmt: skip
    return {"stereotype_rate": rate}


def _truth_vocabulary(w: World) -> dict[str, float]:
    p, is_male = _per_item(w, "masculine"), _meta(w, "is_male").astype(bool)
    # every answer has `words` coded words per inventory in expectation: the pooled share
    # of a group is its items' mean share, the same for every inventory
    return {"mean_diff": float(p[is_male].mean() - p[~is_male].mean())}


TRUTHS: dict[str, Callable[[World], dict[str, float]]] = {
    "direct": _truth_direct, "discrimination_tamkin": _truth_tamkin, "bbq": _truth_bbq,
    "inventories": _truth_inventories, "gest_creative": _truth_gest_creative,
    "hiring_bloomberg": _truth_hiring_bloomberg, "jobs_lum": _truth_jobs_lum,
    "hiring_an": _truth_hiring_an, "relationship_levy": _truth_levy,
    "diversity_med_qa": _truth_medqa, "dreaddit": _truth_dreaddit, "isear": _truth_isear,
    "gest": _truth_gest, "business_vocabulary": _truth_vocabulary,
}  # fmt: skip


# -- specs and edge worlds -----------------------------------------------------------------
def world(probe: str, **params: float) -> World:
    if probe not in MODELS:
        raise ValueError(f"no simulated world for {probe!r} (known: {', '.join(PROBES)})")
    allowed = {"spread", *MODELS[probe].defaults}
    unknown = set(params) - allowed
    if unknown:
        known = ", ".join(sorted(allowed))
        raise ValueError(f"{probe}: unknown key(s) {', '.join(sorted(unknown))} (known: {known})")
    items = tuple(sorted((k, float(v)) for k, v in params.items()))
    w = World(probe, items)
    return World(probe, items, key=w.spec)


def parse_world(spec: str) -> World:
    """``PROBE:KEY=VALUE[,KEY=VALUE…]`` (see the module) → a `World`."""
    probe, _, rest = spec.partition(":")
    params: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"{spec!r}: {part!r} is not KEY=VALUE")
        try:
            params[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"{spec!r}: {value!r} is not a number") from None
    return world(probe.strip(), **params)


def interior_edges(probe: str, metric: str) -> list[float]:
    """The band edges of a marked metric that lie inside its range."""
    d = get_probe(probe).mark_definitions[metric]
    ends = sorted({x for bands in d.ranges.values() for band in bands for x in band})
    lo, hi = ends[0], ends[-1]
    return [x for x in ends if lo < x < hi]


def targets(probe: str, metric: str) -> list[tuple[str, float]]:
    """(what, truth) for `edge_worlds`: each interior edge and ±0.005, ±0.01, and 0."""
    d = get_probe(probe).mark_definitions[metric]
    ends = sorted({x for bands in d.ranges.values() for band in bands for x in band})
    out = [("bound 0", 0.0)] if ends[0] <= 0 <= ends[-1] else []
    for e in interior_edges(probe, metric):
        for off in (-0.01, -0.005, 0.0, 0.005, 0.01):
            out.append((f"edge {e:g}{off:+.3f}" if off else f"edge {e:g}", round(e + off, 6)))
    return out


#: solved edge worlds, kept between runs; `MODELS_VERSION` changes with the models
SOLVED = Path(tempfile.gettempdir()) / "gbdesk-edge-worlds.json"
MODELS_VERSION = "1"


@functools.cache
def _solved() -> dict[str, Any]:
    version = MODELS_VERSION
    try:
        data = json.loads(SOLVED.read_text())
    except (OSError, ValueError):
        data = {}
    return data if data.get("version") == version else {"version": version}


@functools.cache
def solve(probe: str, metric: str, target: float, spread: float = 0.0) -> World | None:
    """A world of `probe` whose `metric` truth is `target` (moving its parameter), None
    when no value of it reaches the target (remembered in `SOLVED`)."""
    memo = _solved()
    key = f"{probe}|{metric}|{target!r}|{spread!r}"
    if key not in memo:
        w = _solve(probe, metric, target, spread)
        memo[key] = None if w is None else dict(w.params)
        with contextlib.suppress(OSError):
            SOLVED.write_text(json.dumps(memo))
    params = memo[key]
    return None if params is None else world(probe, **params)


def _solve(probe: str, metric: str, target: float, spread: float) -> World | None:
    model = MODELS[probe]
    key = model.moves[metric]
    base = {"spread": spread} if spread else {}

    def gap(v: float) -> float:
        return world(probe, **base, **{key: v}).truth()[metric] - target

    lo, hi = _bracket(probe, key)
    f_lo, f_hi = gap(lo), gap(hi)
    if f_lo == 0:
        return world(probe, **base, **{key: float(lo)})
    if f_lo * f_hi > 0:
        return None
    # most truths are linear in the parameter: the secant's root, checked, else brentq
    guess = round(lo - f_lo * (hi - lo) / (f_hi - f_lo), 10)
    f_guess = gap(guess)
    if abs(f_guess) < 1e-9:
        return world(probe, **base, **{key: guess})
    a, b = (lo, guess) if f_lo * f_guess < 0 else (guess, hi)
    v = brentq(gap, a, b, xtol=1e-10)
    return world(probe, **base, **{key: round(float(v), 10)})


def _bracket(probe: str, key: str) -> tuple[float, float]:
    """Where a world's parameter is searched: the signed gaps from 0 up (a gap of 0 is
    also a truth of 0 for |·|), the rates over [0, 1]."""
    if key in ("gap", "pull", "slope"):
        if probe in ("hiring_an",) and key == "slope":
            return (0.0, 1.6)
        return (0.0, 0.9 if key != "pull" else 0.45)
    if probe == "relationship_levy":
        return (0.5, 1.0)
    if key == "base" and probe in ("inventories", "gest_creative", "hiring_bloomberg", "jobs_lum"):
        return (0.5, 1.0)
    if probe == "gest":
        return (0.3, 0.7)
    return (0.0, 1.0)


def edge_worlds(probe: str) -> list[tuple[str, str, World]]:
    """(metric, what, world) for every marked metric of `probe`: truths at every interior
    band edge and ±0.005, ±0.01 from it, and at the bound 0, with constant items and with
    varying ones (`EDGE_SPREAD`). Negative edges of a signed gap are mirrored by the
    positive ones (the worlds' gaps are ≥ 0), masculine rates below 0.5 by those above."""
    out = []
    for metric in get_probe(probe).mark_definitions:
        for what, target in targets(probe, metric):
            if target < 0 or (metric == "masculine_rate" and target < 0.5):
                continue
            for spread in (0.0, EDGE_SPREAD):
                w = solve(probe, metric, target, spread)
                if w is not None:
                    out.append((metric, what + (" varying" if spread else ""), w))
    return out
