"""The stereotype coding of stories about omitted identities (paper §3.3, Supplement B.7):
the probe's `Coding` capability (no Qt; the Review pane's mode is `_qt.coding`).

Raters code stories with the shipped codebook of stereotypes; the stories worth coding
are the paper's two selections (Table S10, `coding_candidates`).
"""

from __future__ import annotations

import functools
from typing import Any

from gbdesk.contract.capabilities import Coding, CodingCandidates
from gbdesk.studies.laissez_faire.characters import (
    characters_from_data,
    first_name,
    load_codebook,
)
from gbdesk.studies.laissez_faire.metrics import load_identity_terms, term_pattern
from gbdesk.studies.laissez_faire.name_race import RACE_CATEGORIES

#: race-likelihood threshold of the stories drawn for stereotype coding (paper Table S10)
CODING_THRESHOLD = 0.6
#: name-table categories not drawn for stereotype coding (not minoritized / catch-alls)
NOT_CODED_RACES = frozenset({"white", "other", "2prace"})


def coding(probe: Any) -> Coding:
    """Stereotype codes in the Review pane's coding mode, from the shipped codebook, over
    the stories of the paper's two selections."""
    return Coding(
        view="._qt.coding:StoryCodingView",
        title="Stereotype codes",
        codebook=load_codebook,
        candidates=functools.partial(coding_candidates, probe),
    )


def coding_candidates(
    probe: Any,
    attempts: list[dict[str, Any]],
    params: dict[str, Any] | None,
    threshold: float | None = None,
) -> Any:
    """The paper's two selections (Table S10): stories mentioning an identity-proxy
    term (one category per term group) and stories with a named character whose first
    name is more than `threshold` (default 60 %) likely of a race the name table
    measures (one category per race; White and the table's catch-all groups left out,
    as the coding is about minoritized identities)."""
    threshold = CODING_THRESHOLD if threshold is None else threshold
    table = probe.table(params)
    groups = load_identity_terms()
    races = [c for c in table.categories if c not in NOT_CODED_RACES]
    categories = [f"{g} (terms)" for g in groups]
    categories += [f"{RACE_CATEGORIES.get(r, r)} (names)" for r in races]
    matches: list[tuple[int, str, str]] = []
    for a in attempts:
        text = a.get("response") or ""
        for group, terms in groups.items():
            for term in terms:
                if term_pattern(term).search(text):
                    matches.append((a["id"], f"{group} (terms)", f"mentions “{term}”"))
        data = (a.get("label") or {}).get("data") or {}
        for ch in characters_from_data(data):
            first = first_name(ch.name)
            liks = table.likelihoods(first) if first else None
            for race in races:
                value = (liks or {}).get(race)
                if value is not None and value > threshold:
                    display = RACE_CATEGORIES.get(race, race)
                    matches.append(
                        (a["id"], f"{display} (names)", f"{ch.role} {first}: {value:.0%}")
                    )
    rule = (
        "Stories that mention an identity-proxy term ("
        + "; ".join(f"{g}: {', '.join(t)}" for g, t in groups.items())
        + f"), and stories with a named character whose first name is more than "
        f"{threshold:.0%} likely of a race in the {table.title} name table (race by first "
        "name as in the ratios above; White and catch-all groups left out)."
    )
    return CodingCandidates(rule=rule, categories=categories, matches=matches)
