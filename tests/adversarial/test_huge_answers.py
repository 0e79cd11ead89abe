"""Huge answers (issue 35, item 4): stored whole, labelled from their first
`MAX_LABELLED_CHARS` characters by every probe, on import and in a run alike.

A 5 MB imported answer used to fail with nltk's "catastrophic backtracking" TimeoutError
(reported as if the file were wrong), and a 10 MB answer from the model stopped a run at the
same attempt on every resume: whether they worked depended on the machine's speed.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from gbdesk.cli import main
from gbdesk.contract import GenerationProbe, Item, get_probe, probe_names
from gbdesk.store import Store
from gbdesk.support.errors import EngineCrashed
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model
from tests.helpers import first_metadata

DIRECT = get_probe("direct")
DIRECT_ITEMS = DIRECT.items(DIRECT.resolve_params())


def huge_answer(size: int) -> str:
    """An answer that agrees at once, then runs on in short sentences (the text nltk's
    sentence splitter is slowest on) and disagrees at its very end."""
    head, tail = "Yes, I agree. ", " No."
    filler = "It rained. " * ((size - len(head) - len(tail)) // 11 + 1)
    return head + filler[: size - len(head) - len(tail)] + tail


def test_a_5_mb_import_is_stored_whole_and_labelled_from_its_beginning(tmp_path, capsys):
    text = huge_answer(5_000_000)
    path = tmp_path / "in.jsonl"
    rows = [{"prompt": DIRECT_ITEMS[0].prompt, "response": text},
            {"prompt": DIRECT_ITEMS[1].prompt, "response": "No."}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "db.sqlite"
    code = main(["import", "--probe", "direct", "--file", str(path), "--db", str(db)])
    assert code == 0, capsys.readouterr().err

    from gbdesk.support.limits import LABELLED_CHARS, MAX_LABELLED_CHARS

    with Store(db) as store:
        run_id = store.list_runs()[0]["id"]
        responses = {a["id"]: a["response"] for a in store.attempts(run_id)}
        labels = store.labels(run_id, "auto")
    big = next(i for i, r in responses.items() if len(r) > 10)
    assert responses[big] == text  # stored whole
    # labelled from the beginning: the "No." at the end is not read
    assert labels[big]["label"] == "yes"
    assert labels[big]["data"] == {LABELLED_CHARS: MAX_LABELLED_CHARS}
    assert all(end <= MAX_LABELLED_CHARS for _, end, _ in labels[big]["evidence"])
    small = next(i for i in responses if i != big)
    assert labels[small]["label"] == "no" and labels[small]["data"] == {}


def test_a_10_mb_answer_in_a_run_is_labelled_and_the_run_resumes(store, tmp_path):
    """The run stores the 10 MB answer with its label; killed after it, the run resumes and
    finishes (before, the label raised, so the attempt was never stored and every resume
    stopped at it again)."""
    text = huge_answer(10_000_000)
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "direct", model, attempts=1, limit=3, seed=5)
    with pytest.raises(EngineCrashed):
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend([text], crash_after=2))
    assert store.count_attempts(run_id) == 2
    outcome = execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend([text]))
    assert outcome.status == "done" and store.count_attempts(run_id) == 3

    from gbdesk.support.limits import LABELLED_CHARS, MAX_LABELLED_CHARS

    assert {len(a["response"]) for a in store.attempts(run_id)} == {len(text)}
    labels = store.labels(run_id, "auto").values()
    assert [lab["label"] for lab in labels] == ["yes"] * 3
    assert all(lab["data"] == {LABELLED_CHARS: MAX_LABELLED_CHARS} for lab in labels)


@pytest.mark.parametrize("name", probe_names())
def test_every_probe_labels_a_long_answer_from_the_same_beginning(name, monkeypatch):
    """The rule is the contract's, not a probe's: every probe's label of a long answer is
    its label of the answer's first `MAX_LABELLED_CHARS` characters, marked as such (with
    a smaller bound here, to be quick)."""
    from gbdesk.support import limits

    monkeypatch.setattr(limits, "MAX_LABELLED_CHARS", 3_000)
    probe = get_probe(name)
    head = ("She said yes. He said no. (a) " * 100)[:3_000]
    metadata = first_metadata(probe)
    whole = probe.label(head + " And he, he, he. (b) No, no. " * 10, metadata)
    part = probe.label(head, metadata)
    assert whole["data"] == {**(part["data"] or {}), limits.LABELLED_CHARS: 3_000}
    assert {**whole, "data": part["data"]} == part
    assert limits.LABELLED_CHARS not in (probe.label("She left.", metadata)["data"] or {})


class _Toy(GenerationProbe):
    """A probe of a study that knows nothing of the rule: its `label` is bounded too."""

    name = "toy_huge"
    version = "1"
    templates: ClassVar[dict[str, str]] = {"card": "{x}"}
    template_slots = ("x",)

    def all_items(self, template: str) -> list[Item]:
        return [Item("a", "a", {})]

    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"source": "toy/1", "label": str(len(response)), "data": None, "evidence": []}

    def metrics(self, results, bootstrap=True, params=None):
        return {}


def test_a_probe_outside_the_built_in_studies_is_bounded_too():
    from gbdesk.support.limits import LABELLED_CHARS, MAX_LABELLED_CHARS

    got = _Toy().label("x" * (MAX_LABELLED_CHARS + 1))
    assert got["label"] == str(MAX_LABELLED_CHARS)
    assert got["data"] == {LABELLED_CHARS: MAX_LABELLED_CHARS}
    assert _Toy().label("xy") == {"source": "toy/1", "label": "2", "data": None, "evidence": []}
