"""How Laissez-Faire results read for people (no Qt): the summary in plain words, the
findings, the report blocks, metric titles and groups — the probe's `Presentation`
capability."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from gbdesk.contract import Finding, MetricGroup, MetricKey
from gbdesk.contract.capabilities import Presentation
from gbdesk.contract.running import default_metric_title
from gbdesk.maths.stats import MetricValue, adjusted_p_values, p_text
from gbdesk.studies.laissez_faire.characters import load_codebook, metadata_scenario
from gbdesk.studies.laissez_faire.metrics import DOMAINS
from gbdesk.studies.laissez_faire.name_race import RACE_CATEGORIES
from gbdesk.support.blocks import Block, CurveChart, Heading, Paragraph, Table
from gbdesk.support.format import fmt

ALPHA = 0.05
_PEOPLE = {"Female": "women", "Male": "men", "Non-binary": "non-binary people"}
_PAIRS = {
    "F-M": "woman–man couples",
    "F-F": "woman–woman couples",
    "M-M": "man–man couples",
    "NB-F": "non-binary–woman couples",
    "NB-M": "non-binary–man couples",
    "NB-NB": "non-binary–non-binary couples",
}
_CHARACTER_GENDER = {
    "Female": "woman",
    "Male": "man",
    "Non-binary": "non-binary",
    "Unsure": "gender unsure",
    "Unspecified": "gender not stated",
}


def _race(code: str) -> str:
    return RACE_CATEGORIES.get(code, code)


def group_words(key: MetricKey) -> str:
    """The group a ratio is about, in words: "women", "Asian characters", "Hispanic/Latine
    men", "woman–man couples"."""
    kind = key.part(1)
    if kind == "gender":
        return _PEOPLE.get(key.part(2), key.part(2))
    if kind == "race":
        return f"{_race(key.part(2))} characters"
    if kind == "race_gender":
        return f"{_race(key.part(2))} {_PEOPLE.get(key.part(3), key.part(3))}"
    if kind == "pair":
        return _PAIRS.get(key.part(2), key.part(2))
    return key.tail(1)


def _domain(code: str) -> str:
    return "all domains" if code == "All" else code


def metric_title(name: str) -> str | None:
    """A Laissez-Faire metric's name for people, or None for an unknown key."""
    key = MetricKey.parse(name)
    if key.family == "representation":
        return f"Representation of {group_words(key)} ({_domain(key.part(0))})"
    if key.family == "subordination":
        return f"Subordination of {group_words(key)} ({_domain(key.part(0))})"
    if key.family == "racialized_subordination":
        who = (
            f"{_race(key.part(0))} characters"
            if key.part(1) == "All"
            else f"{_race(key.part(0))} {_PEOPLE.get(key.part(1), key.part(1))}"
        )
        return f"Racialized subordination of {who} (median over name thresholds)"
    if name == "coverage/named":
        return "Characters with a name"
    if name == "coverage/matched":
        return "Named characters found in the name table"
    if key.family == "identity":
        return f"Stories mentioning “{key.tail(0, '/')}”"
    return None


def short_label(name: str) -> str | None:
    """A plot row's label: "women · all domains", "Black men · Love", "Asian women"."""
    key = MetricKey.parse(name)
    if key.family in ("representation", "subordination"):
        return f"{group_words(key)} · {_domain(key.part(0))}"
    if key.family == "racialized_subordination":
        if key.part(1) == "All":
            return f"{_race(key.part(0))} characters"
        return f"{_race(key.part(0))} {_PEOPLE.get(key.part(1), key.part(1))}"
    if key.family == "identity":
        return key.tail(0, "/")
    return metric_title(name)


def character_gender_words(gender: str) -> str:
    return _CHARACTER_GENDER.get(gender, gender)


def _significant(
    m: dict[str, MetricValue], family: str, adjusted: dict[str, float] | None = None
) -> list[tuple[MetricKey, MetricValue]]:
    """Ratios of `family` over all domains whose Benjamini–Hochberg adjusted p-value (over
    all the run's tests) is below 0.05."""
    adjusted = adjusted_p_values(m) if adjusted is None else adjusted
    return [
        (key, v)
        for k, v in m.items()
        for key in [MetricKey.parse(k)]
        if key.family == family
        and key.part(0) == "All"
        and adjusted.get(k, 1.0) < ALPHA
        and not math.isnan(v.value)
    ]


def summary(m: dict[str, MetricValue], extra: dict[str, Any]) -> str:
    """Plain-language highlights of a Laissez-Faire run: the most omitted and the most
    subordinated groups whose ratios survive the Benjamini–Hochberg correction over the
    run's tests (adjusted p < .05), and name coverage."""
    sentences = []
    adjusted = adjusted_p_values(m)
    tests = len(adjusted)
    omitted = sorted(_significant(m, "representation", adjusted), key=lambda kv: kv[1].value)[:3]
    if omitted:
        sentences.append(
            f"Most under-represented in power-neutral stories (adjusted p < .05 over {tests} "
            "tests): " + "; ".join(f"{group_words(k)} {v.value:.2f}×" for k, v in omitted) + "."
        )
    subordinated = sorted(_significant(m, "subordination", adjusted), key=lambda kv: -kv[1].value)[
        :3
    ]
    if subordinated:
        sentences.append(
            "Most often in the subordinate role (adjusted p < .05): "
            + "; ".join(f"{group_words(k)} {v.value:.2f}×" for k, v in subordinated)
            + "."
        )
    if not sentences:
        sentences.append(
            "No representation or subordination ratio differs from parity after the "
            f"Benjamini–Hochberg correction over the run's {tests} tests (adjusted p < .05)."
        )
    if "coverage/matched" in m:
        sentences.append(
            f"{100 * m['coverage/named'].value:.0f} % of characters have a name; "
            f"{100 * m['coverage/matched'].value:.0f} % of those names are in the "
            f"name table ({extra.get('table', {}).get('id', '?')})."
        )
    missing = extra.get("not_measured") or []
    if missing:
        sentences.append(f"Not measured by the name table: {', '.join(missing)}.")
    return " ".join(sentences)


def _ratio_sentence(name: str, key: MetricKey, v: MetricValue, p: float | None) -> str:
    lo, hi = v.ci
    where = _domain(key.part(0))
    stats = f"95 % CI {fmt(lo, 2)}–{fmt(hi, 2)}; adjusted p {p_text(p)}"
    who = group_words(key)
    if key.family == "representation":
        scope = (
            "power-neutral Love stories"
            if key.part(1) == "pair"
            else f"power-neutral stories ({where})"
        )
        return (
            f"{who[:1].upper()}{who[1:]} appear {v.value:.2f}× as often in {scope} as in the "
            f"U.S. population ({stats})."
        )
    return (
        f"{who[:1].upper()}{who[1:]} are {v.value:.2f}× as likely to hold the subordinate "
        f"role as the dominant one in power-laden stories ({where}; {stats})."
    )


def findings(
    m: dict[str, MetricValue], extra: dict[str, Any], stories_behind: Any
) -> list[Finding]:
    """The largest representation and subordination ratios whose Benjamini–Hochberg
    adjusted p-value (over every test of the run) is below 0.05, largest departure from
    parity (|log ratio|) first; a sentence when none survives; name coverage as a note."""
    adjusted = adjusted_p_values(m)
    survivors = [
        (name, key, v)
        for name, v in m.items()
        for key in [MetricKey.parse(name)]
        if key.family in ("representation", "subordination")
        and adjusted.get(name, 1.0) < ALPHA
        and v.value > 0
        and not math.isnan(v.value)
    ]
    survivors.sort(key=lambda t: -abs(math.log2(t[2].value)))
    out = []
    for name, key, v in survivors[:6]:
        departure = abs(math.log2(v.value))
        condition = "power-neutral" if key.family == "representation" else "power-laden"
        domain = "" if key.part(0) == "All" else f" {key.part(0)}"
        out.append(
            Finding(
                _ratio_sentence(name, key, v, adjusted.get(name)),
                importance=min(90.0, 40.0 + 30.0 * departure),
                metric=name,
                value=v.value,
                ci=v.ci,
                p_value=v.p_value,
                p_adj=adjusted.get(name),
                evidence=stories_behind(name),
                evidence_title=f"the {condition}{domain} stories",
            )
        )
    if len(survivors) > 6:
        out.append(
            Finding(
                f"{len(survivors)} of the run's {len(adjusted)} ratios differ from parity "
                "after the Benjamini–Hochberg correction (adjusted p < .05); the six largest "
                "are listed.",
                importance=35.0,
            )
        )
    if not survivors and adjusted:
        out.append(
            Finding(
                "No representation or subordination ratio differs from parity after the "
                f"Benjamini–Hochberg correction over the run's {len(adjusted)} tests "
                "(adjusted p < .05) — at this sample size; the intervals show how much "
                "could still be hidden.",
                importance=20.0,
            )
        )
    matched = m.get("coverage/matched")
    if matched is not None and not math.isnan(matched.value) and matched.value < 0.6:
        out.append(
            Finding(
                f"Only {100 * matched.value:.0f} % of the characters' names are in the name "
                f"table ({extra.get('table', {}).get('id', '?')}); the race ratios rest on "
                "the rest.",
                importance=6.0,
                metric="coverage/matched",
                value=matched.value,
                ci=matched.ci,
            )
        )
    return out


def blocks(extra: dict[str, Any]) -> list[Block]:
    """The paper's name view (Table 3), the racialized subordination curves, and what the
    name table cannot measure."""
    if not extra:
        return []
    out: list[Block] = []
    table = extra.get("table") or {}
    measured = ", ".join(RACE_CATEGORIES.get(c, c) for c in table.get("categories", []))
    out.append(
        Paragraph(
            f"Race from first names by fractional counting with the "
            f"{table.get('title', table.get('id', '?'))} table (measuring {measured}); "
            f"gender from the {extra.get('word_list', '?')} word list.",
            "muted",
        )
    )
    missing = extra.get("not_measured") or []
    if missing:
        out.append(
            Paragraph(
                f"Not measured: {', '.join(missing)} — the name table has no such category, "
                "so these groups are absent from every ratio above.",
                "notice",
            )
        )
    curves = {k: v for k, v in (extra.get("racialized_curves") or {}).items() if "/All" in k}
    if curves:
        out.append(Heading("Racialized subordination curves"))
        out.append(
            CurveChart(
                "Subordination ratio by name-likelihood threshold (all genders)",
                {
                    k.replace("/All", ""): list(zip(c["thresholds"], c["ratios"], strict=True))
                    for k, c in curves.items()
                },
                x_label="name likelihood threshold",
                x_unit="%",
            )
        )
    top = extra.get("top_names") or {}
    if any(top.values()):
        out.append(
            Table(
                ["Race", "Name", "Likelihood", "Baseline", "Dominant", "Subordinate", "Ratio"],
                [
                    [
                        race,
                        r["name"],
                        fmt(r["likelihood"], 2),
                        fmt(r["neutral"], 0),
                        fmt(r["dominant"], 0),
                        fmt(r["subordinate"], 0),
                        fmt(r["subordination"], 2),
                    ]
                    for race, rows in top.items()
                    for r in rows[:5]
                ],
                title="Most frequent names per race",
                caption="As in the paper's Table 3: counts in power-neutral (Baseline), "
                "dominant and subordinate roles and the name's subordination ratio "
                "(subordinate / dominant).",
            )
        )
    if extra.get("coding"):
        out += stereotype_blocks(extra["coding"])
    return out


def stereotype_blocks(summary: dict[str, Any]) -> list[Block]:
    """The stereotype coding of stories about omitted identities (paper §3.3, Supplement
    B.7, Table 4): selection, codebook, agreement, clusters, representative stories."""
    # imported here, not at the top: gbdesk.people.coding brings the store, which importing
    # the probe should not load
    from gbdesk.people.coding import coding_blocks

    provenance = load_codebook()["provenance"]
    return [
        Heading("Stereotypes in stories about omitted identities"),
        Paragraph(
            "As in Shieh et al. (2024, §3.3 and Supplement B.7): stories that mention an "
            "identity-proxy term or whose named characters are likely of a minoritized race "
            "were drawn per category, coded by several raters with a codebook of stereotypes "
            "(several codes per story), disagreements adjudicated, and the stories clustered "
            "by their combination of codes; one story from the largest cluster of each "
            "category is quoted (the paper's Table 4).",
            "muted",
        ),
        *coding_blocks(summary),
        Paragraph(f"Codebook provenance: {provenance['definitions']}", "notice"),
    ]


# -- presentation: metric titles, items in words, metric groups ------------------------------
def presentation(probe: Any, base: Presentation) -> Presentation:
    """Metric titles in words, items as their scenario, the report's blocks beyond the
    metric groups, and the character tables below the Results pane's plots."""
    return base.with_(
        metric_title=lambda name: metric_title(name) or default_metric_title(probe, name),
        item_title=item_title,
        report_blocks=lambda extra, params: blocks(extra),
        result_view="._qt.views:CharacterResultsView",
    )


def item_title(item: str, metadata: dict[str, Any]) -> str:
    """ "Love, power-laden: an American person who instructs friend": the scenario."""
    scene = metadata_scenario(metadata) or str(metadata.get("scenario") or item)
    return f"{metadata.get('domain', '')}, {metadata.get('condition', '')}: {scene}".strip(", :")


def metric_groups(present: Iterable[str] | None = None) -> list[MetricGroup]:
    """The ratio groups of `_RATIO_GROUPS`, name coverage and identity-proxy terms, of the
    metrics present."""
    keys = {n: MetricKey.parse(n) for n in present or []}
    groups = [
        MetricGroup(
            title,
            metrics,
            desc,
            labels=_short_labels(keys, metrics, drop),
            kind="log_ratio",
            item_filters={m: stories_behind(m) for m in metrics},
        )
        for title, family, domain, kinds, desc, drop in _RATIO_GROUPS
        if (metrics := _pick(keys, family, domain, *kinds))
    ]
    coverage = _pick(keys, "coverage")
    if coverage:
        groups.append(
            MetricGroup(
                "Name coverage",
                coverage,
                "Characters with a name, and named characters found in the name table.",
                labels=_short_labels(keys, coverage, 1),
                x_range=(0.0, 1.0),
            )
        )
    identity = _pick(keys, "identity")
    if identity:
        groups.append(
            MetricGroup(
                "Identity-proxy terms",
                identity,
                "Stories mentioning each term; click to read them.",
                kind="count",
                labels=_short_labels(keys, identity, 1),
                item_filters={n: {"__text__": keys[n].tail(0, "/")} for n in identity},
                columns=("Term", "Stories"),
            )
        )
    return groups


#: The ratio groups of `metric_groups`: title, family, domain (None: any; PER_DOMAIN: any
#: but "All"), kinds, description, and how many leading parts the labels drop.
PER_DOMAIN = "per domain"
_RATIO_GROUPS: tuple[tuple[str, str, str | None, tuple[str, ...], str, int], ...] = (
    (
        "Gender representation (power-neutral stories)",
        "representation",
        None,
        ("gender",),
        "Share of each gender over its U.S. population share; 1 = parity, below 1 = omitted.",
        1,
    ),
    (
        "Race representation (power-neutral stories)",
        "representation",
        None,
        ("race",),
        "Named characters' race shares (fractional counting) over population shares.",
        1,
    ),
    (
        "Race × gender representation",
        "representation",
        "All",
        ("race_gender",),
        "Joint shares over the product of the population shares.",
        3,
    ),
    (
        "Romantic couples (power-neutral Love stories)",
        "representation",
        "Love",
        ("pair",),
        "Gender pairs of the two partners over their population shares.",
        3,
    ),
    (
        "Gender subordination (power-laden stories)",
        "subordination",
        None,
        ("gender",),
        "p(gender | subordinate) / p(gender | dominant); above 1 = more often subordinated.",
        1,
    ),
    (
        "Race subordination",
        "subordination",
        None,
        ("race",),
        "p(race | subordinate) / p(race | dominant).",
        1,
    ),
    (
        "Race × gender subordination (the paper's Table 3)",
        "subordination",
        PER_DOMAIN,
        ("race_gender",),
        "Per domain; p < .05 marked in the table.",
        1,
    ),
    (
        "Median racialized subordination",
        "racialized_subordination",
        None,
        (),
        "Median over thresholds 1…100 % of the subordination ratio of characters whose "
        "first name is at least that likely of the race.",
        1,
    ),
)


def _pick(
    keys: dict[str, MetricKey], family: str, domain: str | None = None, *kinds: str
) -> list[str]:
    """The metrics of a family, domain (see `_RATIO_GROUPS`) and kinds, in table order."""
    return [
        n
        for n, k in keys.items()
        if k.family == family
        and (
            domain is None or (k.part(0) != "All" if domain == PER_DOMAIN else k.part(0) == domain)
        )
        and (not kinds or k.part(1) in kinds)
    ]


def _short_labels(keys: dict[str, MetricKey], metrics: list[str], drop: int) -> dict[str, str]:
    return {m: short_label(m) or " · ".join(keys[m].parts[drop - 1 :]) for m in metrics}


def stories_behind(metric: str) -> dict[str, str]:
    """The review filter for the stories a ratio is computed from: power-neutral stories for
    representation, power-laden ones for subordination, narrowed to the metric's domain."""
    key = MetricKey.parse(metric)
    condition = "power-neutral" if key.family == "representation" else "power-laden"
    out = {"condition": condition}
    if key.family != "racialized_subordination" and key.part(0) in DOMAINS:
        out["domain"] = key.part(0)
    return out
