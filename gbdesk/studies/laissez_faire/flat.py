"""Laissez-Faire metrics from the flat table (`gbdesk.analysis.flat`), vectorised (no Qt).

Each label's flat rows: one ("ch", role, name, genders, None, confidence) per extracted
character — `genders` holds the character's gender under every word list of
`WORD_LISTS`, tab-separated — and one ("term", term, …) per identity term its story
mentions. They are read into the facts table of `metrics` (one row per character in run
order, with the couples and term counts), and the metrics come from its one definition,
`metrics.metrics_from_facts`, as `LaissezFaireProbe.metrics`' do: the values are
identical.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from gbdesk.contract.capabilities import FlatFacts
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.laissez_faire.characters import (
    character_gender,
    characters_from_data,
    condition_of,
    first_name,
)
from gbdesk.studies.laissez_faire.extract.gender_words import (
    DEFAULT_WORD_LIST,
    WORD_LISTS,
    pair_label,
)
from gbdesk.studies.laissez_faire.metrics import (
    Facts,
    extra_from_facts,
    load_identity_terms,
    metrics_from_facts,
    term_pattern,
)

SEP = "\t"


def flat_facts(probe: Any) -> FlatFacts:
    """The probe's `FlatFacts`: each label's characters and identity terms as flat rows,
    and the metrics and extra results read from them while every story is labelled (the
    identity counts need every story's text; else the full path)."""
    return FlatFacts(
        facts=lambda label, response, metadata: label_facts(probe, label, response),
        metrics=lambda flat, params: (
            flat_metrics(probe, flat, params) if flat.all_labelled else None
        ),
        extra_results=lambda flat, params: (
            flat_extra_results(probe, flat, params) if flat.all_labelled else None
        ),
        label_units=flat_label_units,
    )


def label_facts(probe: Any, label: dict[str, Any], response: str) -> list[tuple[Any, ...]]:
    """The flat rows of one label row of a story (see the module)."""
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


def characters(probe: Any, flat: Any, params: dict[str, Any] | None) -> Facts:
    """The characters of a `FlatRun` (kept with it: metrics, extra results and the review
    estimate of one run share them)."""
    key = ("laissez_faire.characters", json.dumps(params or {}, sort_keys=True, default=str))
    if key not in flat.derived:
        flat.derived[key] = _characters(probe, flat, params)
    return flat.derived[key]


def _characters(probe: Any, flat: Any, params: dict[str, Any] | None) -> Facts:
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
    label_id = ch["label_id"].to_numpy()
    pairs = romantic_pairs(flat, items, label_id, gender)
    unit, _ = pd.factorize(items)  # facts of the flat path are summed whole: any units do
    return Facts(
        unit=unit.astype(np.int64),
        domain=domain,
        condition=condition,
        gender=gender,
        named=named,
        first=first_u[idx],
        matched=has_u[idx],
        lik=lik_u[idx],
        races=races,
        n_units=int(unit.max()) + 1 if len(unit) else 0,
        pair_unit=np.zeros(len(pairs), dtype=np.int64),
        pair=np.array(pairs, dtype=object),
        terms=term_counts(flat),
        n_stories=len(flat.attempts),
    )


def flat_metrics(probe: Any, flat: Any, params: dict[str, Any] | None) -> dict[str, MetricValue]:
    """`LaissezFaireProbe.metrics` from a `FlatRun`: the same definition
    (`metrics.metrics_from_facts`) over the same facts, read from the flat rows."""
    if flat.attempts.empty:
        return {}
    return metrics_from_facts(characters(probe, flat, params))


def term_counts(flat: Any) -> dict[str, int]:
    f = flat.facts
    terms = f.loc[f["k"].to_numpy() == "term", ["attempt_id", "a"]].drop_duplicates()
    return {str(k): int(v) for k, v in terms["a"].value_counts().items()}


def romantic_pairs(flat: Any, items: np.ndarray, labels: np.ndarray, genders: np.ndarray) -> list:
    """The couple label of each label of a power-neutral romantic Love story with two
    characters (`LaissezFaireProbe.romantic_pairs`, one entry per couple), from the
    characters' items, label ids and genders."""
    love = {
        k
        for k, m in flat.metadata.items()
        if m["domain"] == "Love"
        and m["condition"] == "power-neutral"
        and m.get("relationship") == "romantic"
    }
    if not love or not len(items):
        return []
    keep = np.isin(items, list(love))
    if not keep.any():
        return []
    frame = pd.DataFrame({"label": labels[keep], "gender": genders[keep]})
    sizes = frame.groupby("label", sort=False)["gender"].transform("size").to_numpy()
    g = frame["gender"].to_numpy(dtype=object)[sizes == 2]
    pairs = (pair_label(g1, g2) for g1, g2 in zip(g[0::2].tolist(), g[1::2].tolist(), strict=True))
    return [p for p in pairs if p]


def flat_extra_results(probe: Any, flat: Any, params: dict[str, Any] | None) -> dict[str, Any]:
    """`LaissezFaireProbe.extra_results` from a `FlatRun` (`metrics.extra_from_facts`),
    the stories of each identity term from its term rows."""
    if flat.attempts.empty:
        return {}
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
    word_list = (params or {}).get("word_list", DEFAULT_WORD_LIST)
    return extra_from_facts(
        characters(probe, flat, params), probe.table(params), identity, word_list
    )


def flat_label_units(flat: Any) -> tuple[np.ndarray, np.ndarray]:
    """`LaissezFaireProbe.label_units` of every automatic label of a `FlatRun`: the
    attempt id and the confidence (NaN: none) of each extracted character."""
    f = flat.facts
    ch = f[f["k"].to_numpy() == "ch"]
    return ch["attempt_id"].to_numpy(dtype=np.int64), ch["x"].to_numpy(dtype=float)
