"""Several raters of one run (no Qt): who rated what, agreement, disputes, adjudication.

A rater is the `<name>` of a human label's source `human:<name>`; an adjudicated label is
a label of kind 'consensus' (source `consensus:<who decided>`). A label becomes *rated
units* through the probe (`Ratings.units`): e.g. one unit per attempt for a
profile's gender, one per (attempt, character role) for a story character's gender or
name, one per (attempt, category) for a role's answer. Labels of another facet
(`CODES`: a codebook coding, several codes per text) are compared as code sets and code by
code. Every statistic comes from `gbdesk.maths.agreement` (scikit-learn, statsmodels,
krippendorff).

Figures are given twice: *initial* (each rater's first label of a unit, before any change
of mind) and *current* (each rater's latest label); the *adjudication* part says how many
disputed units were settled by a consensus label and how far each rater is from the final
labels (the consensus where there is one, else the value every rater gave).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from gbdesk.contract import Probe, get_probe
from gbdesk.contract.running import RunItems
from gbdesk.maths import agreement
from gbdesk.store import Store

log = logging.getLogger(__name__)

CODES = "codes"  # the facet of codebook codings
AUTO_RATER = "(automatic)"  # the automatic labeller, when it is counted as a rater
FINAL = "(final)"  # the final labels, compared with each rater

Unit = tuple[int, str]  # (attempt id, part of the attempt; "" for the whole attempt)
Rating = tuple[Unit, str, Hashable]


# -- rated units -----------------------------------------------------------------------
def _metadata_by_attempt(store: Store, run_id: int) -> dict[int, dict[str, Any]]:
    items = RunItems.of(store, run_id)
    return {a["id"]: items.metadata(a["item"], a["attempt"]) for a in store.attempts(run_id)}


def label_units(probe: Probe, row: dict[str, Any], metadata: dict[str, Any]) -> dict[str, dict]:
    """kind → {unit part → value} of one label row (values None are left out)."""
    try:
        units = probe.capabilities.ratings.units(row, metadata)
    except Exception:  # a malformed stored label must not hide every other figure
        log.warning("label %s could not be read as rated units", row.get("id"), exc_info=True)
        return {}
    return {
        kind: {part: value for part, value in parts.items() if not agreement.is_missing(value)}
        for kind, parts in units.items()
    }


def unit_ratings(
    store: Store,
    run_id: int,
    *,
    which: str = "latest",
    include_auto: bool = False,
) -> dict[str, list[Rating]]:
    """kind → [((attempt id, part), rater, value)] from every rater's labels (the probe's
    own labels, facet ''): `which` "latest" or "first" label of each rater; with
    `include_auto`, the automatic labeller counts as the rater `AUTO_RATER`."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    metadata = _metadata_by_attempt(store, run_id)
    by_rater = store.rater_labels(run_id, which=which)
    if include_auto:
        auto = store.labels(run_id, "auto", probe.capabilities.labelling.auto_source(run["params"]))
        by_rater = {AUTO_RATER: auto, **by_rater}
    out: dict[str, list[Rating]] = {kind: [] for kind in probe.capabilities.ratings.kinds()}
    for rater, labels in by_rater.items():
        for attempt_id, row in labels.items():
            units = label_units(probe, row, metadata.get(attempt_id, {}))
            for kind, parts in units.items():
                for part, value in parts.items():
                    out.setdefault(kind, []).append(((attempt_id, str(part)), rater, value))
    return out


def consensus_units(store: Store, run_id: int) -> tuple[dict[str, dict[Unit, Hashable]], set[int]]:
    """(kind → unit → adjudicated value, the attempts with a consensus label)."""
    probe = get_probe(store.get_run(run_id)["probe"])
    metadata = _metadata_by_attempt(store, run_id)
    out: dict[str, dict[Unit, Hashable]] = defaultdict(dict)
    rows = store.labels(run_id, "consensus")
    for attempt_id, row in rows.items():
        for kind, parts in label_units(probe, row, metadata.get(attempt_id, {})).items():
            for part, value in parts.items():
                out[kind][(attempt_id, str(part))] = value
    return dict(out), set(rows)


def raters_disagree(probe: Probe, rows: dict[str, dict[str, Any]], metadata: dict) -> bool:
    """Do these raters' labels of one attempt (rater → label row) differ on any unit?"""
    if len(rows) < 2:
        return False
    values: dict[tuple[str, str], set] = defaultdict(set)
    raters: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows.values():
        for kind, parts in label_units(probe, row, metadata).items():
            for part, value in parts.items():
                values[(kind, str(part))].add(value)
                raters[(kind, str(part))] += 1
    # a unit only one rater rated is no disagreement (a missing rating, as in the statistics)
    return any(len(v) > 1 for k, v in values.items() if raters[k] >= 2)


# -- code sets ---------------------------------------------------------------------------
def code_set(row: dict[str, Any] | None) -> frozenset[str] | None:
    """The codes of a coding label row (None: no coding)."""
    if row is None:
        return None
    codes = (row.get("data") or {}).get("codes")
    if codes is None:
        return None
    return frozenset(str(c) for c in codes)


def code_ratings(store: Store, run_id: int, which: str = "latest") -> list[Rating]:
    """[((attempt id, ""), rater, frozenset of codes)] of every rater's codings."""
    out: list[Rating] = []
    for rater, labels in store.rater_labels(run_id, CODES, which=which).items():
        for attempt_id, row in labels.items():
            codes = code_set(row)
            if codes is not None:
                out.append(((attempt_id, ""), rater, codes))
    return out


def consensus_codes(store: Store, run_id: int) -> dict[Unit, frozenset[str]]:
    out = {}
    for attempt_id, row in store.labels(run_id, "consensus", facet=CODES).items():
        codes = code_set(row)
        if codes is not None:
            out[(attempt_id, "")] = codes
    return out


# -- adjudication --------------------------------------------------------------------------
def final_values(
    ratings: list[Rating], consensus: dict[Unit, Hashable], adjudicated_attempts: set[int]
) -> tuple[dict[Unit, Hashable], list[Unit]]:
    """(unit → final value, the disputed units nobody settled yet). The final value is the
    consensus where the attempt has a consensus label, else the value every rater gave."""
    table = agreement.code_table(ratings) if _sets(ratings) else _table(ratings)
    final: dict[Unit, Hashable] = {}
    unresolved: list[Unit] = []
    for unit, by_rater in table.items():
        if unit[0] in adjudicated_attempts:
            if unit in consensus:
                final[unit] = consensus[unit]
            continue
        values = set(by_rater.values())
        if len(values) == 1:
            final[unit] = values.pop()
        else:
            unresolved.append(unit)
    for unit, value in consensus.items():  # adjudicated units no rater rated
        final.setdefault(unit, value)
    return final, unresolved


def _sets(ratings: list[Rating]) -> bool:
    return any(isinstance(v, frozenset) for _, _, v in ratings)


def _table(ratings: list[Rating]) -> dict[Unit, dict[str, Hashable]]:
    table: dict[Unit, dict[str, Hashable]] = {}
    for unit, rater, value in ratings:
        table.setdefault(unit, {})[rater] = value
    return table


def _figure(compute) -> float | None:
    try:
        value = compute()
    except agreement.AgreementUndefined:
        return None
    return value if value == value else None


def adjudication(
    ratings: list[Rating],
    consensus: dict[Unit, Hashable],
    adjudicated_attempts: set[int],
    codes: list[str] | None = None,
) -> dict[str, Any]:
    """How far disputes are settled, and each rater against the final labels (share of
    equal values and Cohen's κ over the units both have). With `codes`, values are code
    sets and each code is also compared as present / absent."""
    table = agreement.code_table(ratings) if codes is not None else _table(ratings)
    overlap = {u: r for u, r in table.items() if len(r) >= 2}
    disputed = [u for u, r in overlap.items() if len(set(r.values())) > 1]
    settled = [u for u in disputed if u[0] in adjudicated_attempts]
    final, unresolved = final_values(ratings, consensus, adjudicated_attempts)
    raters = sorted({r for _, r, _ in ratings})

    def against_final(
        rows: list[Rating], final_of: dict[Unit, Hashable]
    ) -> dict[str, dict[str, Any]]:
        out = {}
        for rater in raters:
            mine = [(u, rater, v) for u, r, v in rows if r == rater and u in final_of]
            pairs = mine + [(u, FINAL, final_of[u]) for u, _, _ in mine]
            n = len(mine)
            same = sum(1 for u, _, v in mine if final_of[u] == v)
            out[rater] = {
                "n_units": n,
                "agreement": same / n if n else None,
                "cohen_kappa": _figure(
                    lambda p=pairs, r=rater: agreement.cohen_kappa(p, (r, FINAL))
                ),
            }
        return out

    result: dict[str, Any] = {
        "n_units_overlap": len(overlap),
        "n_disputed": len(disputed),
        "n_adjudicated": len(settled),
        "n_unresolved": len(unresolved),
        "n_final": len(final),
        "unresolved": [list(u) for u in unresolved[:200]],
        "raters_vs_final": against_final(ratings, final),
    }
    if codes is not None:
        per_code = {}
        for code in codes:
            binary = [(u, r, code in v) for u, r, v in ratings]
            per_code[code] = against_final(binary, {u: code in v for u, v in final.items()})
        result["per_code"] = per_code
    return result


# -- plain rows (no store) -----------------------------------------------------------------
def agreement_by_kind(
    rows: Iterable[tuple[str, Hashable, str, Hashable]],
    consensus: Mapping[tuple[str, Hashable], Hashable] | None = None,
    *,
    first_rows: Iterable[tuple[str, Hashable, str, Hashable]] | None = None,
    codes: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Agreement per label kind from plain `(kind, item, rater, value)` rows — for any
    caller that keeps its own ratings (e.g. validators of a generated dataset), with the
    same figures as a run's (`labels_agreement`).

    `rows`: each rater's current value of an item (the last row of a (kind, item, rater)
    wins; None = no rating). `consensus`: (kind, item) → adjudicated value. `first_rows`:
    each rater's first values, for the *initial* figures (default: the same as `rows`).
    `codes`: kind → its codes, for kinds whose values are code sets (several codes per
    item; compared whole and code by code). Returns kind → {"current", "initial",
    "changed", "adjudication"} as `labels_agreement` does."""

    def by_kind(source) -> dict[str, list[Rating]]:
        latest: dict[tuple[str, Unit, str], Hashable] = {}
        for kind, item, rater, value in source:
            latest[(str(kind), (item, ""), str(rater))] = value
        out: dict[str, list[Rating]] = defaultdict(list)
        for (kind, unit, rater), value in latest.items():
            if not agreement.is_missing(value):
                if kind in (codes or {}):
                    value = frozenset(str(c) for c in value)
                out[kind].append((unit, rater, value))
        return out

    rows = list(rows)
    current = by_kind(rows)
    initial = by_kind(rows if first_rows is None else first_rows)
    settled: dict[str, dict[Unit, Hashable]] = defaultdict(dict)
    for (kind, item), value in (consensus or {}).items():
        if not agreement.is_missing(value):
            if kind in (codes or {}):
                value = frozenset(str(c) for c in value)
            settled[str(kind)][(item, "")] = value
    out = {}
    for kind in dict.fromkeys([*current, *initial, *settled]):
        kind_codes = list((codes or {}).get(kind, [])) if kind in (codes or {}) else None
        summary = {"multi_code": True, "codes": kind_codes} if kind_codes is not None else {}
        now = current.get(kind, [])
        out[kind] = {
            "current": agreement.agreement_summary(now, **summary),
            "initial": agreement.agreement_summary(initial.get(kind, []), **summary),
            "changed": _changed(initial.get(kind, []), now),
            "adjudication": adjudication(
                now,
                settled.get(kind, {}),
                {unit[0] for unit in settled.get(kind, {})},
                codes=kind_codes,
            ),
        }
    return out


# -- everything about a run ----------------------------------------------------------------
def labels_agreement(store: Store, run_id: int, include_auto: bool = False) -> dict[str, Any]:
    """Agreement on the probe's own labels, per label kind: initial, current and
    adjudication (see the module docstring)."""
    probe = get_probe(store.get_run(run_id)["probe"])
    titles = probe.capabilities.ratings.kinds()
    initial = unit_ratings(store, run_id, which="first", include_auto=include_auto)
    current = unit_ratings(store, run_id, which="latest", include_auto=include_auto)
    consensus, adjudicated = consensus_units(store, run_id)
    out = {}
    for kind in dict.fromkeys([*titles, *initial, *current]):
        now = current.get(kind, [])
        out[kind] = {
            "title": titles.get(kind, kind),
            "initial": agreement.agreement_summary(initial.get(kind, [])),
            "current": agreement.agreement_summary(now),
            "changed": _changed(initial.get(kind, []), now),
            "adjudication": adjudication(now, consensus.get(kind, {}), adjudicated),
        }
    return out


def _changed(first: list[Rating], latest: list[Rating]) -> int:
    """How many (unit, rater) values a rater changed after the first label."""
    before = {(u, r): v for u, r, v in first}
    return sum(1 for u, r, v in latest if (u, r) in before and before[(u, r)] != v)


def codes_agreement(store: Store, run_id: int) -> dict[str, Any] | None:
    """Agreement on codebook codings: whole code sets, code by code and pooled (initial
    and current), and adjudication; None when nobody coded."""
    current = code_ratings(store, run_id, "latest")
    if not current:
        return None
    initial = code_ratings(store, run_id, "first")
    book = [c["code"] for c in store.codebook(run_id)]
    used = sorted({c for _, _, v in current + initial for c in v} - set(book))
    codes = book + used
    consensus = consensus_codes(store, run_id)
    adjudicated = set(store.labels(run_id, "consensus", facet=CODES))
    return {
        "codes": codes,
        "names": {c["code"]: c["name"] for c in store.codebook(run_id)},
        "initial": agreement.agreement_summary(initial, multi_code=True, codes=codes),
        "current": agreement.agreement_summary(current, multi_code=True, codes=codes),
        "changed": _changed(initial, current),
        "adjudication": adjudication(current, consensus, adjudicated, codes=codes),
    }


def run_agreement(store: Store, run_id: int, include_auto: bool = False) -> dict[str, Any]:
    """Every agreement figure of a run (JSON-friendly): raters, per label kind, codes."""
    run = store.get_run(run_id)
    raters = list(store.rater_labels(run_id))
    coders = list(store.rater_labels(run_id, CODES))
    return {
        "run_id": run_id,
        "probe": run["probe"],
        "raters": raters,
        "coders": coders,
        "adjudicators": sorted(
            {
                row["source"].removeprefix("consensus:")
                for facet in ("", CODES)
                for row in store.labels(run_id, "consensus", facet=facet).values()
            }
        ),
        "with_automatic": include_auto,
        "labels": labels_agreement(store, run_id, include_auto),
        "codes": codes_agreement(store, run_id),
    }


def disputed_attempts(store: Store, run_id: int) -> dict[int, bool]:
    """attempt id → adjudicated? for every attempt whose raters' latest labels (the
    probe's own) differ."""
    probe = get_probe(store.get_run(run_id)["probe"])
    metadata = _metadata_by_attempt(store, run_id)
    by_attempt: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for rater, labels in store.rater_labels(run_id).items():
        for attempt_id, row in labels.items():
            by_attempt[attempt_id][rater] = row
    consensus = set(store.labels(run_id, "consensus"))
    return {
        a: a in consensus
        for a, rows in by_attempt.items()
        if raters_disagree(probe, rows, metadata.get(a, {}))
    }


# -- report ------------------------------------------------------------------------------------
def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def agreement_blocks(agreement: dict[str, Any], raters_: list[str]) -> list[Any]:
    """Report blocks of the agreement between raters on the probe's labels (one row per
    label kind), when at least one unit was rated twice."""
    from gbdesk.support.blocks import Heading, Paragraph, Table

    rows = []
    for kind in agreement.values():
        now, first, adj = kind["current"], kind["initial"], kind["adjudication"]
        if not now["n_units_overlap"]:
            continue
        rows.append(
            [
                kind["title"],
                str(now["n_units_overlap"]),
                _pct(first["percent_agreement"]["pairwise"]),
                _pct(now["percent_agreement"]["pairwise"]),
                _num(now["cohen_kappa"]["value"]),
                _num(now["fleiss_kappa"]["value"]),
                _num(now["krippendorff_alpha"]["value"]),
                f"{adj['n_adjudicated']} / {adj['n_disputed']}",
            ]
        )
    if not rows:
        return []
    return [
        Heading("Agreement between raters"),
        Paragraph(f"Raters: {', '.join(raters_)}.", "muted"),
        Table(
            [
                "Label",
                "Units",
                "Initial %",
                "Now %",
                "Cohen's κ",
                "Fleiss' κ",
                "Kripp. α",
                "Adjudicated / disputed",
            ],
            rows,
            caption="Units: what each label rates (e.g. a character of a story), counted when "
            "two raters or more rated it. Initial: each rater's first label; now: the latest. "
            "% = percent agreement over rater pairs; "
            "Cohen's κ with two raters (scikit-learn), Fleiss' κ when every unit has the same "
            "number of ratings (statsmodels), Krippendorff's α nominal, missing ratings "
            "allowed (krippendorff package); — where undefined.",
        ),
    ]


def mode_counts(store: Store, run_id: int, mode: str) -> dict[str, int]:
    """How many attempts a label mode takes from each source (for the words that say which
    labels a result uses)."""
    human = store.labels(run_id, "human")
    consensus = store.labels(run_id, "consensus")
    by_rater = store.rater_labels(run_id)
    out = {"human": len(human), "consensus": len(consensus), "raters": len(by_rater)}
    if mode.startswith("rater:"):
        out["rater"] = len(by_rater.get(mode.removeprefix("rater:"), {}))
    out["unresolved"] = sum(
        1 for adjudicated in disputed_attempts(store, run_id).values() if not adjudicated
    )
    return out
