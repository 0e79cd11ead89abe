"""Checks of gbdesk's GenderBench 1.1.0 outcome-disparity probes against the reference
fixtures (tests/fixtures/genderbench_1_1/, read through tests/genderbench_fixtures.py):
items and prompts equal 1.1.0's, and answers imported through the real path
(`import_generations` with the genderbench-1.1 preset, then `compute_metrics`) give 1.1.0's
evaluations, point metrics, intervals and marks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gbdesk.analysis.results import compute_metrics, item_results
from gbdesk.contract import registry as studies
from gbdesk.maths.stats import MARK_LETTERS
from gbdesk.workflows.importer import import_generations
from tests import genderbench_fixtures as gbf

PRESET = "genderbench-1.1"


def harness_items(probe_name: str) -> list[Any]:
    probe = studies.get_probe(probe_name)
    return probe.items(probe.resolve_params(template=PRESET))


def prompt_texts(item: Any) -> list[str]:
    return [p.text for p in item.prompts] if item.prompts else [item.prompt]


def check_items(probe_name: str, prompt_meta: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Every item's prompts equal 1.1.0's (digests of all, full records of the stored
    ones), in 1.1.0's order; `prompt_meta` maps a gbdesk prompt's metadata to 1.1.0's."""
    fx = gbf.items(probe_name)
    items = harness_items(probe_name)
    assert len(items) == fx["item_count"]
    assert sum(len(prompt_texts(i)) for i in items) == fx["total_prompts"]
    digests = [gbf.prompt_digest(prompt_texts(i)) for i in items]
    wrong = [
        n for n, (a, b) in enumerate(zip(digests, fx["prompt_digests"], strict=True)) if a != b
    ]
    assert not wrong, f"{len(wrong)} items differ, the first at {wrong[:5]}"
    for index, record in gbf.full_items(probe_name).items():
        item = items[index]
        assert prompt_texts(item) == [p["text"] for p in record["prompts"]]
        ours = [p.metadata for p in item.prompts] if item.prompts else [item.metadata]
        assert [prompt_meta(m) for m in ours] == [p["metadata"] for p in record["prompts"]]


def answers_file(probe_name: str, case: str, path: Path) -> Path:
    """The case's answers as gbdesk import rows: the item's key, the prompt's index, the
    repetition as the attempt's order, the response."""
    items = harness_items(probe_name)
    with open(path, "w", encoding="utf-8") as fh:
        for row in gbf.answers(probe_name, case):
            record = {
                "item": items[row["item"]].key,
                "prompt_index": row["prompt"],
                "attempt": row["repetition"],
                "response": row["answer"],
            }
            fh.write(json.dumps(record) + "\n")
    return path


def check_case(
    store: Any,
    tmp_path: Path,
    probe_name: str,
    case: str,
    label_of: Callable[[Any], str],
    bootstrap: bool = True,
) -> dict[str, Any]:
    """Import the case's answers, then compare labels (`label_of` maps 1.1.0's evaluation
    to gbdesk's label), point metrics, intervals and marks with 1.1.0's. Returns the
    metrics. Without `bootstrap`: the point metrics and the marks 1.1.0 gives them
    (`marks_point`), from the stored labels (`item_results`), no intervals."""
    path = answers_file(probe_name, case, tmp_path / f"{probe_name}.{case}.jsonl")
    run_id = import_generations(store, probe_name, path, model_name="fixture", template=PRESET)[
        "run_id"
    ]
    fixture = gbf.case(probe_name, case)
    rows = gbf.answers(probe_name, case)
    # labels, attempt by attempt in 1.1.0's order (items, prompts, repetitions)
    attempts = store.attempts(run_id)
    labels = store.labels(run_id, "auto")
    keys = [i.key for i in harness_items(probe_name)]
    order = {k: n for n, k in enumerate(keys)}
    attempts.sort(key=lambda a: (order[a["item"]], a["attempt"]))
    assert len(attempts) == len(rows) == fixture["attempt_count"]
    got = [labels[a["id"]]["label"] for a in attempts]
    want = ["undetected" if r["evaluation_undetected"] else label_of(r["evaluation"]) for r in rows]
    assert got == want
    if not bootstrap:
        probe = studies.get_probe(probe_name)
        points = probe.metrics(item_results(store, run_id), bootstrap=False)
        values = {k: m.value for k, m in points.items()}
        assert not gbf.mismatches(values, gbf.point_metrics(fixture))
        for name, value in gbf.marks(fixture, point=True).items():
            want_mark = None if value is None else MARK_LETTERS[value]
            assert probe.mark_definitions[name].mark(values[name]) == want_mark, name
        return points
    metrics = compute_metrics(store, run_id, use_cache=False)
    values = {k: m.value for k, m in metrics.items()}
    assert not gbf.mismatches(values, gbf.point_metrics(fixture))
    cis = {k: m.ci for k, m in metrics.items()}
    assert not gbf.mismatches(cis, gbf.intervals(fixture))
    for name, value in gbf.marks(fixture).items():
        want_mark = None if value is None else MARK_LETTERS[value]
        assert metrics[name].mark == want_mark, name
    return metrics


def check_resamples(probe: Any, items: list[Any], rng: Any, rounds: int = 20) -> None:
    """The probe's vectorised `calculate_at` on resamples equals its `calculate` on the
    drawn items that kept a readable answer (1.1.0's filter_undetected), name for name."""
    prepared = probe.prepare(items)
    n = len(items)
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        kept = [items[i] for i in idx if any(x != "undetected" for x in items[i].labels)]
        want = probe.calculate(kept)
        got = probe.calculate_at(prepared, idx)
        assert set(got) == set(want) | {"undetected_rate_items", "undetected_rate_attempts"}
        for name, value in want.items():
            assert got[name] == value or (value != value and got[name] != got[name]), name
