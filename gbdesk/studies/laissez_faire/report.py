"""The Laissez-Faire summary in plain words and its report blocks (no Qt)."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.format import fmt
from gbdesk.report.blocks import Block, CurveChart, Heading, Paragraph, Table
from gbdesk.stats import MetricValue
from gbdesk.studies.base import MetricKey
from gbdesk.studies.laissez_faire.name_race import RACE_CATEGORIES


def _significant(m: dict[str, MetricValue], family: str) -> list[tuple[MetricKey, MetricValue]]:
    return [
        (key, v)
        for k, v in m.items()
        for key in [MetricKey.parse(k)]
        if key.family == family
        and key.part(0) == "All"
        and v.p_value is not None
        and not math.isnan(v.p_value)
        and v.p_value < 0.05
        and not math.isnan(v.value)
    ]


def summary(m: dict[str, MetricValue], extra: dict[str, Any]) -> str:
    """Plain-language highlights of a Laissez-Faire run: the most omitted and the most
    subordinated groups with p < .05, and name coverage."""
    sentences = []
    omitted = sorted(_significant(m, "representation"), key=lambda kv: kv[1].value)[:3]
    if omitted:
        sentences.append(
            "Most under-represented in power-neutral stories (p < .05): "
            + "; ".join(f"{k.tail(1)} {v.value:.2f}×" for k, v in omitted)
            + "."
        )
    subordinated = sorted(_significant(m, "subordination"), key=lambda kv: -kv[1].value)[:3]
    if subordinated:
        sentences.append(
            "Most often in the subordinate role (p < .05): "
            + "; ".join(f"{k.tail(1)} {v.value:.2f}×" for k, v in subordinated)
            + "."
        )
    if not sentences:
        sentences.append("No representation or subordination ratio differs from parity at p < .05.")
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
    return out
