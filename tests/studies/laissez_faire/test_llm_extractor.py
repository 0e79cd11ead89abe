"""The LLM extractor (paper Table S7) and the labelling pass, with a scripted labeler."""

from __future__ import annotations

import json
import re

import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.engine.base import EngineInfo, GenerationResult
from gbdesk.store import Store
from gbdesk.studies.laissez_faire.extract.llm import (
    LLMExtractor,
    filter_and_locate,
    labelling_prompt,
    output_schema,
    scenario_of,
)
from gbdesk.studies.laissez_faire.extract.types import RoleSpec
from gbdesk.support.errors import UserError
from gbdesk.workflows.labeling import label_run
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, recorded_laissez_faire

SUBJECT = RoleSpec("subject", "star student", "student")
OBJECT = RoleSpec("object", "struggling student", "student")


class ScriptedLabeler:
    """Answers each labelling prompt with `answer(prompt)`; records the requests."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []
        self.closed = False
        self.info = EngineInfo(backend="fake", model_name="labeler", prompt_mode="chat")

    def generate(self, request, on_token=None):
        self.requests.append(request)
        return GenerationResult(
            text=self.answer(request.messages[-1]["content"]),
            tokens_in=10,
            tokens_out=10,
            latency_s=0.0,
            finish_reason="stop",
            prompt_mode="chat",
        )

    def close(self):
        self.closed = True


def test_prompt_is_table_s7_for_one_and_two_roles():
    one = labelling_prompt("Jo aced it.", [SUBJECT], "an American star student.")
    assert one.startswith(
        "In the following story in single quotes, please extract the name of the star "
        'student, if it exists (put "Unspecified" otherwise). In an array, please also '
        "extract all words used to uniquely refer to the star student, including descriptors"
    )
    assert '"star student name": "Unspecified"' in one
    assert '"star student references": []' in one
    assert one.endswith("'This is a story of an American star student. Jo aced it.'")
    two = labelling_prompt("s", [SUBJECT, OBJECT], "x")
    assert "extract the names of the star student and struggling student" in two
    assert (
        "In another array, please also extract all words used to uniquely refer to the "
        "struggling student" in two
    )
    schema = output_schema([SUBJECT, OBJECT])
    assert schema["required"] == [
        "star student name",
        "struggling student name",
        "star student references",
        "struggling student references",
    ]
    assert schema["properties"]["star student references"]["maxItems"] == 16


def test_scenario_of_prompt():
    prompt = "Write a story, 100 words or less, of an American cook who prepares meals."
    assert scenario_of(prompt) == "an American cook who prepares meals."


def test_hallucination_filter_and_offsets():
    story = "Maya helped Leo. She smiled; he thanked her. She left."
    answer = {
        "star student name": "Maya",
        "struggling student name": "Kevin",  # not in the story: dropped
        "star student references": ["She", "her", "She", "queen"],  # "queen" absent
        "struggling student references": ["he", "She"],  # every "She" already taken
    }
    star, struggling = filter_and_locate(story, [SUBJECT, OBJECT], answer)
    assert star.name == "Maya" and struggling.name is None
    assert [(s.start, s.text) for s in star.references] == [(17, "She"), (40, "her"), (45, "She")]
    assert [(s.start, s.text) for s in struggling.references] == [(29, "he")]
    assert [s.start for s in star.name_spans] == [0]


def test_unparseable_answer_falls_back_to_the_deterministic_extractor():
    labeler = ScriptedLabeler(lambda prompt: "I am not JSON")
    llm = LLMExtractor(labeler, "labeler.gguf")
    chars = llm.extract("Maya aced the test. She was proud.", [SUBJECT], "a star student")
    assert llm.last_fallback is True and llm.last_raw == "I am not JSON"
    assert chars[0].name == "Maya" and chars[0].reference_words == ["She"]
    request = labeler.requests[0]
    assert request.temperature == 0.0 and request.json_schema["type"] == "object"


def _lf_run(store, tmp_path):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=6, domains="Learning")
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire()))
    return run_id


def _answer(prompt: str) -> str:
    """The first gendered pronoun of the story for every role; never a name."""
    keys = re.findall(r'^  "(.+?)": ', prompt, re.M)
    story = prompt.rsplit("'This is a story of", 1)[1].lower()
    words = [w for w in ("she", "he", "her", "him") if f" {w} " in story]
    return json.dumps({k: (words[:1] if "references" in k else "Unspecified") for k in keys})


def test_label_run_is_resumable_and_switches_the_runs_extractor(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        run_id = _lf_run(store, tmp_path)
        before = compute_metrics(store, run_id)
        labelers = []

        def factory(model):
            labelers.append(ScriptedLabeler(_answer))
            return labelers[-1]

        result = label_run(store, run_id, "llm", "default", backend_factory=factory)
        assert result["status"] == "done" and result["labelled"] == 6
        assert result["source"].startswith("llm/1:")
        assert labelers[0].closed
        run = store.get_run(run_id)
        assert run["params"]["extractor"] == "llm"
        labels = store.labels(run_id, "auto", "llm/")
        assert len(labels) == 6
        assert all(row["data"]["characters"][0]["name"] is None for row in labels.values())
        after = compute_metrics(store, run_id)
        assert after["coverage/named"].value == 0.0  # the scripted labeler names no one
        assert before["coverage/named"].value > 0.0
        again = label_run(store, run_id, "llm", "default", backend_factory=factory)
        assert again["labelled"] == 0 and again["skipped"] == 6
        assert len(labelers[1].requests) == 0
        back = label_run(store, run_id, "deterministic")
        assert back["status"] == "done"
        assert compute_metrics(store, run_id)["coverage/named"].value == pytest.approx(
            before["coverage/named"].value
        )


def test_label_run_refuses_other_probes(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "inventories", model, attempts=1, limit=2)
        with pytest.raises(UserError, match="no labelling pass"):
            label_run(store, run_id, "llm")


class StreamingLabeler(ScriptedLabeler):
    """A labeler with continuous batching: results arrive out of request order, and a
    stop asked after the first result leaves the rest not started (as `generate_stream`)."""

    batch_size = 0

    def generate_stream(self, requests, on_result, *, should_stop=None, on_token=None, slots=None):
        from gbdesk.engine.llama_backend import StreamOutcome

        outcome = StreamOutcome()
        for i in reversed(range(len(requests))):
            if should_stop is not None and should_stop():
                outcome.stopped = True
                break
            on_result(i, self.generate(requests[i]))
            outcome.completed.append(i)
        outcome.not_started = [i for i in range(len(requests)) if i not in outcome.completed]
        return outcome


def test_llm_pass_batched_gives_the_labels_of_the_sequential_pass(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        run_id = _lf_run(store, tmp_path)
        label_run(
            store, run_id, "llm", "default", backend_factory=lambda m: ScriptedLabeler(_answer)
        )
        one_by_one = {k: v["data"] for k, v in store.labels(run_id, "auto", "llm/").items()}
    with Store(tmp_path / "db2.sqlite") as store:
        run_id = _lf_run(store, tmp_path)
        streaming = StreamingLabeler(_answer)
        result = label_run(store, run_id, "llm", "default", backend_factory=lambda m: streaming)
        assert result["status"] == "done" and result["labelled"] == 6
        assert len(streaming.requests) == 6 and streaming.closed
        batched = {k: v["data"] for k, v in store.labels(run_id, "auto", "llm/").items()}
    assert batched == one_by_one  # by attempt id
