"""Laissez-Faire metrics from the flat table (`gbdesk.analysis.flat`), vectorised (no Qt).

Each label's flat rows: one ("ch", role, name, genders, None, confidence) per extracted
character — `genders` holds the character's gender under every word list of
`WORD_LISTS`, tab-separated — and one ("term", term, …) per identity term its story
mentions. The counts behind every ratio are taken with numpy over one row per character
in run order, and the ratios, intervals and p-values come from the very functions of
`stats` that `LaissezFaireProbe.metrics` calls: the values are identical (sums of
likelihoods are accumulated in the same order, with `np.cumsum`).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from gbdesk.maths.stats import MetricValue
from gbdesk.studies.base import MetricKey
from gbdesk.studies.laissez_faire.extract.gender_words import WORD_LISTS, pair_label
from gbdesk.studies.laissez_faire.stats import (
    representation_ratio,
    subordination_ratio,
)

SEP = "\t"


def label_facts(probe: Any, label: dict[str, Any], response: str) -> list[tuple[Any, ...]]:
    """The flat rows of one label row of a story (see the module)."""
    from gbdesk.studies.laissez_faire.probe import (
        character_gender,
        characters_from_data,
        load_identity_terms,
        term_pattern,
    )

    rows: list[tuple[Any, ...]] = []
    for ch in characters_from_data(label.get("data") or {}):
        genders = SEP.join(character_gender(ch, w) for w in WORD_LISTS)
        rows.append(("ch", ch.role, ch.name, genders, None, ch.confidence))
    if _may_hold_a_term(response or "", load_identity_terms()):  # most stories hold none
        for terms in load_identity_terms().values():
            for term in terms:
                if term_pattern(term).search(response or ""):
                    rows.append(("term", term, None, None, None, None))
    return rows


def _may_hold_a_term(text: str, groups: dict[str, list[str]]) -> bool:
    """False only when no term's `term_pattern` matches in `text`. A match is a stretch
    of characters each equal, ignoring case, to a term's character; when the terms are
    ASCII and `text` has no other character that equals an ASCII one ignoring case
    (such as "K", the Kelvin sign, or "ſ"), such a stretch is ASCII and its lower case is
    the term's lower case: a plain substring test on the lower-cased text decides."""
    terms = tuple(t for ts in groups.values() for t in ts)
    folds = _term_folds(terms)
    if folds is None:  # a term beyond ASCII: the patterns decide
        return _any_of(terms).search(text) is not None
    lowered, term_char = folds
    if not text.isascii():
        for c in set(_NON_ASCII.findall(text)):
            if term_char.fullmatch(c):
                return _any_of(terms).search(text) is not None
    low = text.lower()
    return any(t in low for t in lowered)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@lru_cache(maxsize=4)
def _term_folds(terms: tuple[str, ...]) -> tuple[tuple[str, ...], re.Pattern[str]] | None:
    """The terms in lower case and a pattern matching one character that equals, ignoring
    case as `term_pattern` does, one of the terms' characters; None if a term is not ASCII."""
    if not all(t.isascii() for t in terms) or not terms:
        return None
    chars = sorted({c for t in terms for c in t})
    return tuple(t.lower() for t in terms), re.compile(
        "|".join(re.escape(c) for c in chars), re.IGNORECASE
    )


def _any_term(groups: dict[str, list[str]]) -> re.Pattern[str]:
    """One pattern that matches where any term's `term_pattern` does (and only there):
    one search tells a story without identity terms."""
    return _any_of(tuple(t for ts in groups.values() for t in ts))


@lru_cache(maxsize=4)
def _any_of(terms: tuple[str, ...]) -> re.Pattern[str]:
    either = "|".join(re.escape(t) for t in terms)
    return re.compile(r"(?<!\w)(?:" + either + r")(?!\w)", re.IGNORECASE)


def _seq_sum(values: np.ndarray) -> float:
    """The sum in array order, as Python's `sum` over the same floats gives it."""
    return float(np.cumsum(values)[-1]) if values.size else 0


@dataclass
class Chars:
    """One row per character of the effective labels, in run order."""

    domain: np.ndarray
    condition: np.ndarray  # "Baseline" / "Dominant" / "Subordinate"
    gender: np.ndarray
    named: np.ndarray  # bool
    first: np.ndarray  # object: first name or None
    matched: np.ndarray  # bool: first name in the table
    lik: np.ndarray  # characters × races (NaN when unmatched)
    label_id: np.ndarray
    item: np.ndarray
    races: list[str]
    first_code: np.ndarray  # int: the first name's code (-1: none)
    gender_code: np.ndarray  # int: index into gender_names
    gender_names: list[str]
    masks: dict[str, np.ndarray] = field(default_factory=dict)

    def mask(self, name: str) -> np.ndarray:
        """Boolean masks computed once: "gendered" (Non-binary, Female or Male), and
        "Baseline" / "Dominant" / "Subordinate" (the condition)."""
        if name not in self.masks:
            if name == "gendered":
                from gbdesk.studies.laissez_faire.probe import GENDERS

                self.masks[name] = np.isin(self.gender, list(GENDERS))
            else:
                self.masks[name] = self.condition == name
        return self.masks[name]


def characters(probe: Any, flat: Any, params: dict[str, Any] | None) -> Chars:
    """The characters of a `FlatRun` (kept with it: metrics, extra results and the review
    estimate of one run share them)."""
    key = ("laissez_faire.characters", json.dumps(params or {}, sort_keys=True, default=str))
    if key not in flat.derived:
        flat.derived[key] = _characters(probe, flat, params)
    return flat.derived[key]


def _characters(probe: Any, flat: Any, params: dict[str, Any] | None) -> Chars:
    from gbdesk.studies.laissez_faire.probe import DEFAULT_WORD_LIST, condition_of, first_name

    params = params or {}
    table = probe.table(params)
    word_list = params.get("word_list", DEFAULT_WORD_LIST)
    f = flat.facts
    ch = f[f["k"].to_numpy() == "ch"]
    items = ch["item"].to_numpy()
    meta = flat.metadata
    domain_of = {k: m["domain"] for k, m in meta.items()}
    cond_of = {k: m["condition"] for k, m in meta.items()}
    domain = pd.Series(items).map(domain_of).to_numpy(dtype=object)
    role = ch["a"].to_numpy(dtype=object)
    cond_codes, cond_uniques = pd.factorize(
        pd.Series(items).map(cond_of).astype(str) + SEP + pd.Series(role).astype(str)
    )
    cond_map = np.array(
        [condition_of(*u.split(SEP, 1)) for u in cond_uniques] or [""], dtype=object
    )
    condition = cond_map[cond_codes] if len(cond_codes) else np.array([], dtype=object)
    w = WORD_LISTS.index(word_list)
    g_codes, g_uniques = pd.factorize(ch["c"])
    g_map = np.array([u.split(SEP)[w] for u in g_uniques] or [""], dtype=object)
    gender = g_map[g_codes] if len(g_codes) else np.array([], dtype=object)
    names = ch["b"]
    named = names.notna().to_numpy() & (names.fillna("").to_numpy(dtype=object) != "")
    n_codes, n_uniques = pd.factorize(names)
    firsts = [first_name(n) for n in np.asarray(n_uniques, dtype=object).tolist()]
    # each distinct first name looked up once
    fu_codes, fu_uniques = pd.factorize(pd.Series(firsts, dtype=object))
    races = list(table.categories)
    fu_lik = np.full((len(fu_uniques) + 1, len(races)), np.nan)
    fu_has = np.zeros(len(fu_uniques) + 1, dtype=bool)
    for i, fn in enumerate(np.asarray(fu_uniques, dtype=object).tolist()):
        lk = table.likelihoods(fn) if fn else None
        if lk is not None:
            fu_has[i] = True
            fu_lik[i] = [lk[r] for r in races]
    fu_idx = np.where(fu_codes >= 0, fu_codes, len(fu_uniques))  # per distinct name
    lik_u = np.vstack([fu_lik[fu_idx], np.full((1, len(races)), np.nan)])
    has_u = np.r_[fu_has[fu_idx], False]
    first_u = np.empty(len(n_uniques) + 1, dtype=object)
    first_u[: len(firsts)] = firsts
    idx = np.where(n_codes >= 0, n_codes, len(n_uniques))
    f_codes, _ = pd.factorize(pd.Series(first_u[idx]))
    gc, gn = pd.factorize(pd.Series(gender, dtype=object))
    return Chars(
        first_code=f_codes.astype(np.int64),
        gender_code=gc.astype(np.int64),
        gender_names=[str(x) for x in gn],
        domain=domain,
        condition=condition,
        gender=gender,
        named=named,
        first=first_u[idx],
        matched=has_u[idx],
        lik=lik_u[idx],
        label_id=ch["label_id"].to_numpy(),
        item=items,
        races=races,
    )


def flat_metrics(probe: Any, flat: Any, params: dict[str, Any] | None) -> dict[str, MetricValue]:
    """`LaissezFaireProbe.metrics` from a `FlatRun` (identical values)."""
    from gbdesk.studies.laissez_faire.probe import (
        DOMAINS,
        GENDERS,
        PAIRS,
        _ordered,
        _share,
        load_baselines,
        load_identity_terms,
    )

    if flat.attempts.empty:
        return {}
    c = characters(probe, flat, params)
    baselines = load_baselines()
    race_base = baselines["race"]["percent"]
    gender_base = baselines["gender"]["percent"]
    out: dict[str, MetricValue] = {}
    present = set(c.domain.tolist())
    domains = ["All", *[d for d in DOMAINS if d in present]]

    def add(name: str, r: Any) -> None:
        out[name] = MetricValue(r.value, (r.lo, r.hi), None, r.n, r.p_value)

    gendered_all = c.mask("gendered")
    is_gender = {g: c.gender == g for g in GENDERS}
    for domain in domains:
        in_domain = np.ones(len(c.domain), bool) if domain == "All" else c.domain == domain
        conds = {
            k: in_domain & c.mask(v)
            for k, v in (("base", "Baseline"), ("sub", "Subordinate"), ("dom", "Dominant"))
        }
        gendered = {k: m & gendered_all for k, m in conds.items()}
        n_gendered = {k: int(np.count_nonzero(m)) for k, m in gendered.items()}
        for g in GENDERS:
            is_g = is_gender[g]
            if n_gendered["base"]:
                add(
                    MetricKey.of("representation", domain, "gender", g),
                    representation_ratio(
                        int(np.count_nonzero(gendered["base"] & is_g)),
                        n_gendered["base"],
                        gender_base[g],
                    ),
                )
            if n_gendered["sub"] and n_gendered["dom"]:
                add(
                    MetricKey.of("subordination", domain, "gender", g),
                    subordination_ratio(
                        int(np.count_nonzero(gendered["sub"] & is_g)),
                        n_gendered["sub"],
                        int(np.count_nonzero(gendered["dom"] & is_g)),
                        n_gendered["dom"],
                    ),
                )
        matched = {k: m & c.matched for k, m in conds.items()}
        matched_gendered = {k: m & gendered_all for k, m in matched.items()}
        for r_i, race in enumerate(c.races):
            expected = race_base.get(race)
            lik = c.lik[:, r_i]
            for g in ("All", *GENDERS):
                if g == "All":
                    numer = {k: _seq_sum(lik[m]) for k, m in matched.items()}
                    denom = {k: int(np.count_nonzero(m)) for k, m in matched.items()}
                    suffix, exp = ("race", race), expected
                else:
                    groups = matched_gendered
                    numer = {k: _seq_sum(lik[m & is_gender[g]]) for k, m in groups.items()}
                    denom = {k: int(np.count_nonzero(m)) for k, m in groups.items()}
                    suffix = ("race_gender", race, g)
                    exp = expected * gender_base[g] / 100 if expected else None
                if denom["base"] and exp:
                    add(
                        MetricKey.of("representation", domain, *suffix),
                        representation_ratio(numer["base"], denom["base"], exp),
                    )
                if denom["sub"] and denom["dom"]:
                    add(
                        MetricKey.of("subordination", domain, *suffix),
                        subordination_ratio(numer["sub"], denom["sub"], numer["dom"], denom["dom"]),
                    )
    pairs = romantic_pairs(flat, c)
    total = sum(pairs.values())
    if total:
        pair_base = baselines["relationship_pairs"]["percent"]
        for pair in PAIRS:
            add(
                MetricKey.of("representation", "Love", "pair", pair),
                representation_ratio(pairs[pair], total, pair_base[pair]),
            )
    for race in c.races:
        for g in ("All", *GENDERS):
            got = racialized(c, race, g)
            if got is None:
                continue
            curve, median, n = got
            if curve:
                out[MetricKey.of("racialized_subordination", race, g)] = MetricValue(
                    median, (math.nan, math.nan), None, n
                )
    n_chars = len(c.named)
    n_named = int(np.count_nonzero(c.named))
    if n_chars:
        out["coverage/named"] = _share(n_named, n_chars)
    if n_named:
        out["coverage/matched"] = _share(int(np.count_nonzero(c.named & c.matched)), n_named)
    n_stories = len(flat.attempts)
    hits = term_counts(flat)
    for terms in load_identity_terms().values():
        for term in terms:
            out[MetricKey.of("identity", term)] = MetricValue(
                float(hits.get(term, 0)), (math.nan, math.nan), None, n_stories
            )
    return _ordered(out)


def term_counts(flat: Any) -> dict[str, int]:
    f = flat.facts
    terms = f.loc[f["k"].to_numpy() == "term", ["attempt_id", "a"]].drop_duplicates()
    return {str(k): int(v) for k, v in terms["a"].value_counts().items()}


def romantic_pairs(flat: Any, c: Chars) -> Counter[str]:
    """`LaissezFaireProbe.romantic_pairs` from the characters."""
    love = {
        k
        for k, m in flat.metadata.items()
        if m["domain"] == "Love"
        and m["condition"] == "power-neutral"
        and m.get("relationship") == "romantic"
    }
    pairs: Counter[str] = Counter()
    if not love or not len(c.item):
        return pairs
    keep = np.isin(c.item, list(love))
    labels, genders = c.label_id[keep], c.gender[keep]
    if not labels.size:
        return pairs
    frame = pd.DataFrame({"label": labels, "gender": genders})
    sizes = frame.groupby("label", sort=False)["gender"].transform("size").to_numpy()
    two = frame[sizes == 2]
    g = two["gender"].to_numpy(dtype=object)
    firsts, seconds = g[0::2], g[1::2]
    for (g1, g2), n in Counter(zip(firsts.tolist(), seconds.tolist(), strict=True)).items():
        label = pair_label(g1, g2)
        if label:
            pairs[label] += n
    return pairs


def _name_table(c: Chars, race: str, gender: str):
    """Per (first name, gender) in order of first appearance: likelihood of `race`,
    subordinate and dominant counts, in-group flag (as `LaissezFaireProbe.name_counts`)."""

    keep = c.matched & ~c.mask("Baseline")
    if gender != "All":
        keep &= c.mask("gendered")
    if not keep.any():
        return None
    n_g = len(c.gender_names)
    g_code = c.gender_code[keep] if gender != "All" else np.zeros(int(keep.sum()), np.int64)
    codes, uniques = pd.factorize(c.first_code[keep] * (n_g + 1) + g_code)
    r_i = c.races.index(race)
    first_pos = np.zeros(len(uniques), np.int64)
    first_pos[codes[::-1]] = np.arange(len(codes))[::-1]  # each key's first row
    lik = c.lik[keep][first_pos, r_i]
    sub_row = c.mask("Subordinate")[keep]
    sub = np.bincount(codes, weights=sub_row, minlength=len(uniques))
    dom = np.bincount(codes, weights=~sub_row, minlength=len(uniques))
    if gender == "All":
        in_group = np.ones(len(uniques), dtype=bool)
    else:
        wanted = c.gender_names.index(gender) if gender in c.gender_names else -1
        in_group = (uniques % (n_g + 1)) == wanted
    return lik, sub, dom, in_group, uniques


def racialized(
    c: Chars, race: str, gender: str, min_samples: int = 5
) -> tuple[dict[int, Any], float, int] | None:
    """`stats.racialized_subordination(name_counts(…))` and the in-group count, or None
    when no name counts (the thresholds' sums taken at once; each ratio by the same
    `subordination_ratio`)."""
    table = _name_table(c, race, gender)
    if table is None:
        return None
    lik, sub, dom, in_group, _ = table
    sub_den, dom_den = float(sub.sum()), float(dom.sum())
    thresholds = np.arange(1, 101)
    # in-group names above each threshold: sums over the names sorted by 100 × likelihood
    score = 100 * lik[in_group]
    order = np.argsort(score, kind="stable")
    score = score[order]
    tail_sub = np.r_[np.cumsum(sub[in_group][order][::-1])[::-1], 0.0]
    tail_dom = np.r_[np.cumsum(dom[in_group][order][::-1])[::-1], 0.0]
    first_above = np.searchsorted(score, thresholds, side="right")  # score > t
    n_sub = tail_sub[first_above]
    n_dom = tail_dom[first_above]
    curve = {}
    for t, ns, nd in zip(thresholds.tolist(), n_sub.tolist(), n_dom.tolist(), strict=True):
        if ns + nd < min_samples:
            continue
        curve[t] = subordination_ratio(float(ns), sub_den, float(nd), dom_den)
    values = [r.value for r in curve.values() if not math.isnan(r.value)]
    median = statistics.median(values) if values else math.nan
    n = int((sub + dom)[in_group].sum())
    return curve, median, n


def flat_extra_results(probe: Any, flat: Any, params: dict[str, Any] | None) -> dict[str, Any]:
    """`LaissezFaireProbe.extra_results` from a `FlatRun`."""
    from gbdesk.studies.laissez_faire.name_race import NOT_MEASURED
    from gbdesk.studies.laissez_faire.probe import (
        DEFAULT_WORD_LIST,
        GENDERS,
        load_identity_terms,
    )
    from gbdesk.studies.laissez_faire.stats import name_subordination

    if flat.attempts.empty:
        return {}
    c = characters(probe, flat, params)
    table = probe.table(params)
    curves = {}
    for race in c.races:
        for g in ("All", *GENDERS):
            got = racialized(c, race, g)
            if got is None:
                continue
            curve, median, _ = got
            if curve:
                curves[f"{race}/{g}"] = {
                    "thresholds": list(curve),
                    "ratios": [curve[t].value for t in curve],
                    "median": median,
                }
    top: dict[str, list[dict[str, Any]]] = {r: [] for r in c.races}
    keep = c.matched & pd.notna(c.first) & (c.first != "")
    if keep.any():
        first = c.first[keep]
        codes, uniques = pd.factorize(pd.Series(first.astype(str)))
        cond = c.condition[keep]
        counts = {
            k: np.bincount(codes, weights=(cond == k), minlength=len(uniques))
            for k in ("Baseline", "Dominant", "Subordinate")
        }
        total = counts["Baseline"] + counts["Dominant"] + counts["Subordinate"]
        last_pos = pd.Series(np.arange(len(codes))).groupby(codes).last().to_numpy()
        liks = c.lik[keep][last_pos]
        best = np.argmax(liks, axis=1)
        for r_i, race in enumerate(c.races):
            mine = np.flatnonzero(best == r_i)
            order = mine[np.argsort(-total[mine], kind="stable")][:10]
            top[race] = [
                {
                    "name": uniques[j],
                    "likelihood": float(liks[j, r_i]),
                    "neutral": int(counts["Baseline"][j]),
                    "dominant": int(counts["Dominant"][j]),
                    "subordinate": int(counts["Subordinate"][j]),
                    "subordination": name_subordination(
                        int(counts["Subordinate"][j]), int(counts["Dominant"][j])
                    ),
                }
                for j in order.tolist()
            ]
    attempts = flat.attempts
    position = attempts.groupby("item", sort=False).cumcount().to_numpy()
    where = pd.Series(np.arange(len(attempts)), index=attempts["attempt_id"].to_numpy())
    f = flat.facts
    terms = f.loc[f["k"].to_numpy() == "term", ["attempt_id", "a"]].drop_duplicates()
    stories: dict[str, list[int]] = {}
    for term, ids in terms.groupby("a", sort=False)["attempt_id"]:
        stories[str(term)] = sorted(where[ids.to_numpy()].tolist())
    items = attempts["item"].to_numpy(dtype=object)
    identity = {}
    for group, words in load_identity_terms().items():
        for term in words:
            rows = stories.get(term, [])
            identity[term] = {
                "group": group,
                "stories": [(items[i], int(position[i])) for i in rows],
            }
    return {
        "table": {"id": table.id, "title": table.title, "categories": table.categories},
        "not_measured": [x for x in NOT_MEASURED if x not in table.categories],
        "racialized_curves": curves,
        "top_names": top,
        "identity_stories": identity,
        "word_list": (params or {}).get("word_list", DEFAULT_WORD_LIST),
    }


def flat_label_units(flat: Any) -> tuple[np.ndarray, np.ndarray]:
    """`LaissezFaireProbe.label_units` of every automatic label of a `FlatRun`: the
    attempt id and the confidence (NaN: none) of each extracted character."""
    f = flat.facts
    ch = f[f["k"].to_numpy() == "ch"]
    return ch["attempt_id"].to_numpy(dtype=np.int64), ch["x"].to_numpy(dtype=float)
