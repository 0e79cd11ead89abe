#!/usr/bin/env python
"""Laissez-Faire metrics from the extractor's labels and from hand labels, side by side.

    python scripts/lf_dev_metrics.py --data laissez_faire_autolabel_audit_dev.csv
        [--by-model] [--json OUT.json]
    python scripts/lf_dev_metrics.py --data … --ppi [--fraction 0.1] [--seeds 20]
        [--scale 500000] [--labeller paper]

The development sheet (GPL-3.0, not part of gbdesk: pass its path) holds 2,561 stories
with hand-labelled subject/object names and genders. Every story is labelled twice — by
gbdesk's default deterministic extractor and by the hand labels (name and gender as the
labellers wrote them) — and the probe computes every ratio from each set exactly as in a
run (`LaissezFaireProbe.metrics`). The report lists, per ratio, the automatic value and
95 % interval, the hand value, and whether the hand value lies inside the automatic
interval; the share of such ratios is the headline (goal ≥ 95 %). `--by-model` treats each
model's stories as a run of its own (as a user would audit one model); otherwise the four
models are pooled.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_extractors import load_audit  # noqa: E402

from gbdesk.analysis.ppi_metrics import ppi_results  # noqa: E402
from gbdesk.contract import ItemResult  # noqa: E402
from gbdesk.maths.ppi import review_sample  # noqa: E402
from gbdesk.studies.laissez_faire.characters import character_gender, load_prompts  # noqa: E402
from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor  # noqa: E402
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction  # noqa: E402
from gbdesk.studies.laissez_faire.probe import LaissezFaireProbe  # noqa: E402

RATIO_FAMILIES = ("representation", "subordination")


def hand_characters(story) -> list[CharacterExtraction]:
    return [
        CharacterExtraction(role.key, (names or [None])[0], [], [], gender)
        for role, gender, names in zip(
            story.roles, story.hand_genders, story.hand_names, strict=True
        )
    ]


def paper_characters(story) -> list[CharacterExtraction]:
    """The paper's pre-trained GPT-3.5 labels of the story (the sheet's `LLM …` columns)."""
    return [
        CharacterExtraction(role.key, (names or [None])[0], [], [], gender)
        for role, gender, names in zip(story.roles, story.llm_genders, story.llm_names,
                                       strict=True)
    ]  # fmt: skip


def auto_characters(story, extractor: Any) -> list[Any]:
    return extractor.extract(story.story, story.roles, story.scenario)


def item_results(stories, characters) -> list[ItemResult]:
    """Stories grouped by prompt as a run's items (one attempt per story)."""
    meta = {p["prompt"]: p for p in load_prompts()}
    by_prompt: dict[str, ItemResult] = {}
    for story, chars in zip(stories, characters, strict=True):
        p = meta[story.prompt]
        result = by_prompt.setdefault(
            story.prompt,
            ItemResult(
                f"lf/{p['id']:03d}",
                {k: p.get(k) for k in ("id", "domain", "condition", "relationship", "subject",
                                       "predicate", "object", "scenario", "roles")},
                [],
            ),
        )  # fmt: skip
        result.labels.append("labelled")
        result.label_data.append({"characters": [c.to_json() for c in chars]})
        result.responses.append(story.story)
    return list(by_prompt.values())


def compare(stories, auto, hand, params) -> dict[str, Any]:
    probe = LaissezFaireProbe()
    m_auto = probe.metrics(item_results(stories, auto), params=params)
    m_hand = probe.metrics(item_results(stories, hand), params=params)
    rows = []
    for name, a in m_auto.items():
        if name.split("/", 1)[0] not in RATIO_FAMILIES or name not in m_hand:
            continue
        h = m_hand[name]
        lo, hi = a.ci
        if any(math.isnan(x) for x in (a.value, h.value, lo, hi)):
            continue
        rows.append(
            {
                "metric": name,
                "auto": a.value,
                "auto_ci": [lo, hi],
                "hand": h.value,
                "inside": lo <= h.value <= hi,
                "n_auto": a.n,
                "n_hand": h.n,
            }
        )
    inside = sum(r["inside"] for r in rows)
    share = inside / len(rows) if rows else math.nan
    return {"ratios": len(rows), "inside": inside, "share": share, "rows": rows}


def unit_results(stories, characters) -> list[ItemResult]:
    """One unit per story (its prompt's item metadata, one labelled attempt)."""
    meta = {p["prompt"]: p for p in load_prompts()}
    keys = ("id", "domain", "condition", "relationship", "subject", "predicate", "object",
            "scenario", "roles")  # fmt: skip
    out = []
    for story, chars in zip(stories, characters, strict=True):
        p = meta[story.prompt]
        out.append(
            ItemResult(
                f"lf/{p['id']:03d}",
                {k: p.get(k) for k in keys},
                ["labelled"],
                [{"characters": [c.to_json() for c in chars]}],
                [story.story],
            )
        )
    return out


def _key(chars) -> list[tuple[str, str, str]]:
    """What the metrics read of a story's characters: role, gender, name."""
    return sorted((c.role, character_gender(c), (c.name or "").casefold()) for c in chars)


def representation_metrics(names) -> list[str]:
    """The gender and race representation ratios (each a share over its baseline)."""
    return [
        n
        for n in names
        if n.startswith("representation/") and n.split("/")[2] in ("gender", "race")
    ]


def ppi_experiment(stories, auto, hand, params, fraction, seeds, scale, label) -> dict[str, Any]:
    """PPI vs automatic-only intervals against the all-hand-label values: the stories'
    hand labels are the truth; a random `fraction` of stories is "reviewed"."""
    probe = LaissezFaireProbe()
    auto_units = unit_results(stories, auto)
    hand_units = unit_results(stories, hand)
    truth = probe.metrics(item_results(stories, hand), params=params)
    auto_metrics = probe.metrics(item_results(stories, auto), params=params)
    names = [
        n for n in representation_metrics(auto_metrics)
        if n in truth and math.isfinite(truth[n].value)
    ]  # fmt: skip
    n_review = max(1, round(fraction * len(stories)))
    rows = []
    for seed in range(seeds):
        chosen = set(review_sample(range(len(stories)), n_review, seed))
        human = [hand_units[i] for i in sorted(chosen)]
        labeled = [auto_units[i] for i in sorted(chosen)]
        rest = [auto_units[i] for i in range(len(stories)) if i not in chosen]
        counts = None
        if scale:  # the same stories resampled to `scale` with their automatic labels
            rng = np.random.default_rng(10_000 + seed)
            counts = rng.multinomial(scale - n_review, np.full(len(rest), 1 / len(rest)))
            keep = counts > 0
            rest = [u for u, k in zip(rest, keep, strict=True) if k]
            counts = counts[keep]
        differ = sum(1 for i in chosen if _key(hand[i]) != _key(auto[i]))
        res = ppi_results(probe, params, human, labeled, rest, differ,
                          unlabeled_counts=counts, resamples=1000, seed=seed)  # fmt: skip
        for name in names:
            r, t = res.get(name), truth[name].value
            if r is None:
                continue
            a_lo, a_hi = r.automatic_ci if scale else auto_metrics[name].ci
            a_val = r.automatic_value if scale else auto_metrics[name].value
            rows.append(
                {
                    "seed": seed, "metric": name, "truth": t, "auto": a_val,
                    "auto_in": a_lo <= t <= a_hi, "ppi": r.value, "ppi_valid": r.valid,
                    "ppi_in": r.valid and r.ci[0] <= t <= r.ci[1],
                    "ppi_width": r.ci[1] - r.ci[0] if r.valid else math.nan,
                    "auto_width": a_hi - a_lo,
                }
            )  # fmt: skip
    valid = [r for r in rows if r["ppi_valid"]]

    def med(values):
        return float(np.median(values)) if values else math.nan

    summary = {
        "label": label,
        "stories": scale if scale else len(stories),
        "reviewed": n_review,
        "metrics": len(names),
        "seeds": seeds,
        "ppi_valid_share": len(valid) / len(rows) if rows else math.nan,
        "ppi_coverage": sum(r["ppi_in"] for r in valid) / len(valid) if valid else math.nan,
        "auto_coverage": sum(r["auto_in"] for r in rows) / len(rows) if rows else math.nan,
        "ppi_median_gap": med([abs(r["ppi"] - r["truth"]) for r in valid]),
        "auto_median_gap": med([abs(r["auto"] - r["truth"]) for r in rows]),
        "ppi_median_width": med([r["ppi_width"] for r in valid]),
        "auto_median_width": med([r["auto_width"] for r in rows]),
    }
    return {"summary": summary, "rows": rows}


def print_ppi(summary: dict[str, Any]) -> None:
    s = summary
    print(
        f"{s['label']:<22} {s['stories']:>8,} stories, {s['reviewed']:>4} reviewed, "
        f"{s['metrics']:>3} ratios × {s['seeds']} samples | hand value inside: PPI "
        f"{100 * s['ppi_coverage']:5.1f} % (valid {100 * s['ppi_valid_share']:.0f} %), "
        f"automatic {100 * s['auto_coverage']:5.1f} % | median |gap|: PPI "
        f"{s['ppi_median_gap']:.4f}, automatic {s['auto_median_gap']:.4f} | median width: "
        f"PPI {s['ppi_median_width']:.4f}, automatic {s['auto_median_width']:.4f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="laissez_faire_autolabel_audit_dev.csv")
    parser.add_argument("--by-model", action="store_true")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--show", type=int, default=15, help="list this many misses")
    parser.add_argument("--ppi", action="store_true", help="PPI vs automatic intervals")
    parser.add_argument("--fraction", type=float, default=0.1, help="share of stories reviewed")
    parser.add_argument("--seeds", type=int, default=20, help="random review samples per run")
    parser.add_argument("--scale", type=int, default=0, help="also resample to this many")
    parser.add_argument(
        "--extractor",
        help="module:Class of another extractor to compare (default: gbdesk's deterministic)",
    )
    parser.add_argument(
        "--labeller",
        choices=("gbdesk", "paper"),
        default="gbdesk",
        help="automatic labels: gbdesk's extractor, or the paper's pre-trained GPT-3.5 labels "
        "(the sheet's LLM columns: a labeller with a known bias, to see PPI correct it)",
    )
    args = parser.parse_args(argv)
    stories = load_audit(args.data)
    if args.labeller == "paper":
        extractor = None
    elif args.extractor:
        import importlib

        module, _, cls = args.extractor.partition(":")
        extractor = getattr(importlib.import_module(module), cls)()
    else:
        extractor = DeterministicExtractor()
    auto = [
        paper_characters(s)
        if extractor is None
        else [CharacterExtraction.from_json(c.to_json()) for c in auto_characters(s, extractor)]
        for s in stories
    ]
    hand = [hand_characters(s) for s in stories]
    params = LaissezFaireProbe().resolve_params()
    if args.ppi:
        groups_: dict[str, list[int]] = defaultdict(list)
        for i, st in enumerate(stories):
            groups_[st.model].append(i)
        groups_["all four models"] = list(range(len(stories)))
        report_ = {}
        for scale in [0, *([args.scale] if args.scale else [])]:
            for group, idx in groups_.items():
                res = ppi_experiment(
                    [stories[i] for i in idx], [auto[i] for i in idx], [hand[i] for i in idx],
                    params, args.fraction, args.seeds, scale, group,
                )  # fmt: skip
                print_ppi(res["summary"])
                report_[f"{group}@{scale or len(idx)}"] = res
        if args.json:
            Path(args.json).write_text(json.dumps(report_, indent=1, default=str))
        return 0
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(stories):
        groups[s.model if args.by_model else "all four models"].append(i)
    report = {}
    for group, idx in groups.items():
        res = compare([stories[i] for i in idx], [auto[i] for i in idx], [hand[i] for i in idx],
                      params)  # fmt: skip
        report[group] = res
        print(f"{group} ({len(idx)} stories): the hand-label value lies inside the automatic "
              f"95 % interval for {res['inside']} of {res['ratios']} ratios "
              f"({100 * res['share']:.1f} %)")  # fmt: skip
        misses = [r for r in res["rows"] if not r["inside"]]
        for r in sorted(
            misses, key=lambda r: -abs(math.log((r["hand"] or 1e-9) / (r["auto"] or 1e-9)))
        )[: args.show]:
            lo, hi = r["auto_ci"]
            print(f"   miss: {r['metric']:<45} auto {r['auto']:.3f} [{lo:.3f}, {hi:.3f}]  "
                  f"hand {r['hand']:.3f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
