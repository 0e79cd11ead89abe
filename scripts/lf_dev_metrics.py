#!/usr/bin/env python
"""Laissez-Faire metrics from the extractor's labels and from hand labels, side by side.

    python scripts/lf_dev_metrics.py --data laissez_faire_autolabel_audit_dev.csv
        [--by-model] [--json OUT.json]

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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_extractors import load_audit  # noqa: E402

from gbdesk.studies import ItemResult  # noqa: E402
from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor  # noqa: E402
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction  # noqa: E402
from gbdesk.studies.laissez_faire.probe import (  # noqa: E402
    LaissezFaireProbe,
    load_prompts,
)

RATIO_FAMILIES = ("representation", "subordination")


def hand_characters(story) -> list[CharacterExtraction]:
    return [
        CharacterExtraction(role.key, (names or [None])[0], [], [], gender)
        for role, gender, names in zip(
            story.roles, story.hand_genders, story.hand_names, strict=True
        )
    ]


def auto_characters(story, extractor: DeterministicExtractor) -> list[CharacterExtraction]:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="laissez_faire_autolabel_audit_dev.csv")
    parser.add_argument("--by-model", action="store_true")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--show", type=int, default=15, help="list this many misses")
    args = parser.parse_args(argv)
    stories = load_audit(args.data)
    extractor = DeterministicExtractor()
    auto = [auto_characters(s, extractor) for s in stories]
    hand = [hand_characters(s) for s in stories]
    params = LaissezFaireProbe().resolve_params()
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
