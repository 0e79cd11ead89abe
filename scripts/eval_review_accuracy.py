#!/usr/bin/env python
"""Does the label accuracy the app states cover the truth? A check on hand-labelled stories.

    python scripts/eval_review_accuracy.py --data AUDIT.csv [--model ChatGPT4 ...]
        [--fraction 0.1] [--seeds 50] [--least-sure 0.0] [--json]

The audit file (hand-labelled stories of several models, GPL-3.0, not part of gbdesk; see
scripts/eval_extractors.py) stands in for a run of a model the extractor was not fitted
on. For each held-out model:

1. the confidence model is fitted on the *other* models' stories
   (`eval_extractors.fit_confidence`, as leave-one-model-out) and the held-out model's
   stories are imported into a fresh database as a Laissez-Faire run (`gbdesk import`'s
   code path, labelled by the deterministic extractor with that confidence model);
2. a reviewer's label is made for every story from the hand labels: the automatic
   character where the hand labels agree with it (Table S8's rule: a name is right when it
   equals a hand name or its first word), the hand gender and the first hand name where
   not; the truth is the share of *all* the run's characters the extractor got right, as
   the app compares labels (`gbdesk.analysis.label_accuracy.compare_units`);
3. for each seed, in a copy of the database: a random review sample of `--fraction` of the
   stories is drawn (`gbdesk sample`'s `draw_sample`, that seed), its stories get the
   reviewer's labels (and with `--least-sure f`, the f least sure stories outside it too,
   as a least-sure-first review would), and `label_accuracy` — what the Review pane, the
   Results caption, the PDF and `gbdesk metrics --json` state — is read.

Printed per model: how often the stated 95 % interval covers the truth (all kinds, and
gender and name apart), the intervals' mean width, the same coverage for Wilson's
interval alone and the story bootstrap alone, and the error of the share-right-now
estimate (against the truth after that review), by basis.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_extractors as ev

from gbdesk.analysis.label_accuracy import compare_units, label_accuracy
from gbdesk.analysis.ppi_metrics import draw_sample
from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.studies.laissez_faire.extract import deterministic
from gbdesk.workflows.importer import import_generations


def reviewer_rows(s: ev.AuditStory, auto: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows (role, name, gender) a careful reviewer would give a story: the automatic
    character's name where the hand labels agree with it, else the first hand name (or
    none); always the hand gender."""
    from gbdesk.studies.laissez_faire.characters import character_gender, characters_from_data

    extracted = {c.role: c for c in characters_from_data(auto.get("data") or {})}
    preds = []
    for role in s.roles:
        c = extracted.get(role.key)
        preds.append((character_gender(c) if c else ev.UNSPECIFIED, c.name if c else None))
    order = ev.pair_order(s, preds)
    rows = []
    for slot, k in enumerate(order):
        role = s.roles[k].key
        hand = s.hand_names[slot]
        name = extracted[role].name if role in extracted else None
        keep = ev.name_matches(name, hand) if ev.normalise_name(name) else not hand
        rows.append(
            {
                "role": role,
                "name": name if keep else (hand[0] if hand else ""),
                "gender": s.hand_genders[slot],
                "references": [],
            }
        )
    return rows


def build_run(stories: list[ev.AuditStory], model: str, folder: Path) -> dict[str, Any]:
    """Import `model`'s stories as a run (confidence fitted on the other models); returns
    the database path, run id, every attempt's reviewer label and the truth."""
    others = [s for s in stories if s.model != model]
    base = ev.load_extractor("deterministic", {}, ev.DEFAULT_WORD_LIST, learned=ev.RULES_ONLY)
    fold = ev.fit_confidence(ev.predict_audit(others, base, ev.DEFAULT_WORD_LIST))
    mine = [s for s in stories if s.model == model]
    counts: Counter[str] = Counter()
    keyed: dict[tuple[str, int], ev.AuditStory] = {}
    path = folder / "stories.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for s in mine:
            item = f"lf/{s.prompt_id:03d}"
            keyed[(item, counts[item])] = s
            f.write(json.dumps({"item": item, "attempt": counts[item], "response": s.story}) + "\n")
            counts[item] += 1
    db = folder / "base.sqlite"
    shipped = deterministic.shipped_model
    deterministic.shipped_model = lambda: fold  # the fold's confidence, not the shipped one
    try:
        with Store(db) as store:
            run_id = import_generations(store, "laissez_faire", path, model_name=model)["run_id"]
            probe = get_probe("laissez_faire")
            auto = store.labels(run_id, "auto")
            metadata = {r["item"]: r["metadata"] for r in store.run_items(run_id)}
            reviews: dict[int, dict[str, Any]] = {}
            right = units = 0
            kinds: Counter[str] = Counter()
            kind_units: Counter[str] = Counter()
            confidence = 0.0
            for a in store.attempts(run_id):
                s = keyed[(a["item"], a["attempt"])]
                meta = metadata[a["item"]]
                label = probe.capabilities.labelling.from_rows(
                    a["response"], meta, reviewer_rows(s, auto[a["id"]]), "sim"
                )
                reviews[a["id"]] = label
                compared = compare_units(probe, auto[a["id"]], label, meta)
                for _, ok, c in compared:
                    units += 1
                    right += all(ok.values())
                    confidence += c or 0.0
                    for k, v in ok.items():
                        kind_units[k] += 1
                        kinds[k] += v
    finally:
        deterministic.shipped_model = shipped
    return {
        "db": db,
        "run_id": run_id,
        "reviews": reviews,
        "stories": len(mine),
        "units": units,
        "truth": right / units,
        "truth_kind": {k: kinds[k] / kind_units[k] for k in kind_units},
        "mean_confidence": confidence / units,
    }


def one_seed(
    built: dict[str, Any], seed: int, fraction: float, least_sure: float, folder: Path
) -> dict[str, Any]:
    """Review a random sample (and optionally the least sure stories) in a copy of the
    run's database; return what `label_accuracy` states and the truth after that review."""
    db = folder / f"seed{seed}.sqlite"
    shutil.copy(built["db"], db)
    run_id = built["run_id"]
    probe = get_probe("laissez_faire")
    try:
        with Store(db) as store:
            size = max(1, round(fraction * built["stories"]))
            draw_sample(store, run_id, size, seed)
            chosen = set(store.review_sample(run_id))
            if least_sure:
                auto = store.labels(run_id, "auto")
                rest = sorted(
                    (a for a in auto if a not in chosen),
                    key=lambda a: (
                        probe.capabilities.review.confidence("", auto[a]["data"]) or 0.0,
                        a,
                    ),
                )
                chosen |= set(rest[: round(least_sure * built["stories"])])
            for attempt_id in sorted(chosen):
                label = built["reviews"][attempt_id]
                store.add_human_label(
                    attempt_id, "sim", label["label"], label["data"], label.get("evidence")
                )
            acc = label_accuracy(store, run_id)
            auto = store.labels(run_id, "auto")
            metadata = {r["item"]: r["metadata"] for r in store.run_items(run_id)}
            items = {a["id"]: a["item"] for a in store.attempts(run_id)}
            sample_units: list[tuple[int, int]] = []
            now = 0
            for attempt_id, label in built["reviews"].items():
                compared = compare_units(
                    probe, auto[attempt_id], label, metadata[items[attempt_id]]
                )
                ok = sum(all(v.values()) for _, v, _ in compared)
                now += len(compared) if attempt_id in chosen else ok
                if attempt_id in set(store.review_sample(run_id)):
                    sample_units.append((ok, len(compared)))
    finally:
        db.unlink(missing_ok=True)
    assert acc is not None and acc.sample is not None
    return {
        "acc": acc,
        "truth_now": now / built["units"],
        "wilson": _wilson(sample_units),
        "bootstrap": _bootstrap(sample_units, seed),
    }


def _wilson(units: list[tuple[int, int]]) -> tuple[float, float]:
    from statsmodels.stats.proportion import proportion_confint

    right, n = sum(r for r, _ in units), sum(n for _, n in units)
    lo, hi = proportion_confint(right, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def _bootstrap(units: list[tuple[int, int]], seed: int) -> tuple[float, float]:
    """The story bootstrap alone (percentile), as `measured_share` computes it."""
    from scipy.stats import bootstrap

    r = np.array([u[0] for u in units if u[1]], dtype=float)
    n = np.array([u[1] for u in units if u[1]], dtype=float)
    if r.sum() in (0, n.sum()):
        return float(r.sum() / n.sum()), float(r.sum() / n.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = bootstrap(
            (r, n),
            lambda rr, nn, axis=-1: rr.sum(axis=axis) / nn.sum(axis=axis),
            paired=True,
            vectorized=True,
            n_resamples=2000,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    return float(b.confidence_interval.low), float(b.confidence_interval.high)


def covers(ci: Any, x: float) -> bool:
    return ci is not None and ci[0] <= x <= ci[1]


def summarise(built: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    truth = built["truth"]
    out: dict[str, Any] = {
        "stories": built["stories"],
        "characters": built["units"],
        "truth": truth,
        "truth_gender": built["truth_kind"].get("gender"),
        "truth_name": built["truth_kind"].get("name"),
        "mean_confidence": built["mean_confidence"],
        "seeds": len(results),
        "sample_characters": [r["acc"].sample.units for r in results],
        "coverage": statistics.mean(covers(r["acc"].sample.ci, truth) for r in results),
        "width": statistics.mean(r["acc"].sample.ci[1] - r["acc"].sample.ci[0] for r in results),
        "coverage_wilson": statistics.mean(covers(r["wilson"], truth) for r in results),
        "coverage_bootstrap": statistics.mean(covers(r["bootstrap"], truth) for r in results),
        "measured_error": [r["acc"].sample.value - truth for r in results],
    }
    for kind in ("gender", "name"):
        t = built["truth_kind"].get(kind)
        out[f"coverage_{kind}"] = statistics.mean(
            covers(r["acc"].by_kind[kind].ci, t) for r in results
        )
    by_basis: dict[str, list[float]] = {}
    for r in results:
        by_basis.setdefault(r["acc"].basis, []).append(r["acc"].estimate - r["truth_now"])
    out["estimate_error"] = by_basis
    return out


def format_summary(model: str, s: dict[str, Any]) -> str:
    def pct(x: float) -> str:
        return f"{100 * x:.1f} %"

    def err(v: list[float]) -> str:
        rmse = math.sqrt(statistics.mean(x * x for x in v))
        return f"mean {100 * statistics.mean(v):+.2f}, RMSE {100 * rmse:.2f} points"

    n = s["sample_characters"]
    lines = [
        f"{model}: {s['stories']} stories, {s['characters']} characters; truth (share with name "
        f"and gender right) {pct(s['truth'])} (gender {pct(s['truth_gender'])}, name "
        f"{pct(s['truth_name'])}); the extractor's own mean confidence {pct(s['mean_confidence'])}",
        f"  {s['seeds']} seeds, reviewed random-sample characters {min(n)}–{max(n)} "
        f"(median {statistics.median(n):.0f})",
        f"  stated 95 % interval covers the truth: {pct(s['coverage'])} (gender "
        f"{pct(s['coverage_gender'])}, name {pct(s['coverage_name'])}); mean width "
        f"{100 * s['width']:.1f} points",
        f"  for comparison — Wilson alone {pct(s['coverage_wilson'])}, story bootstrap alone "
        f"{pct(s['coverage_bootstrap'])}",
        f"  measured share − truth: {err(s['measured_error'])}",
    ]
    for basis, v in s["estimate_error"].items():
        lines.append(f"  share right now ({basis}) − truth after the review: {err(v)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the audit file (hand-labelled stories)")
    ap.add_argument("--model", action="append", help="held-out model(s); default: every one")
    ap.add_argument("--fraction", type=float, default=0.1, help="random review sample size")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument(
        "--least-sure",
        type=float,
        default=0.0,
        help="also review this share of the stories, least sure first, outside the sample",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    stories = ev.load_audit(args.data)
    models = args.model or sorted({s.model for s in stories})
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            folder = Path(tmp) / model
            folder.mkdir()
            built = build_run(stories, model, folder)
            results = [
                one_seed(built, seed, args.fraction, args.least_sure, folder)
                for seed in range(args.seeds)
            ]
            report[model] = summarise(built, results)
            if not args.json:
                print(format_summary(model, report[model]), flush=True)
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
