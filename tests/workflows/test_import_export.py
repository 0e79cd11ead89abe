"""Importing generations made elsewhere, and the CSV export."""

from __future__ import annotations

import csv
import json

import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.contract import get_probe
from gbdesk.report.csv_export import export_run_csv, safe_cell
from gbdesk.support.errors import UserError
from gbdesk.workflows.importer import import_generations
from tests.helpers import read_csv


def prompts(probe="inventories", template=None):
    p = get_probe(probe)
    return [i.prompt for i in p.items(p.resolve_params(template=template))]


def write_csv(path, rows, columns=("prompt", "response")):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)


def test_import_csv_matches_prompts_and_labels(store, tmp_path):
    ps = prompts()  # ps[1] and ps[2] ("is cheerful", "is childlike") occur once
    path = tmp_path / "gen.csv"
    write_csv(
        path,
        [
            (ps[1], "She is kind. Her smile..."),
            (ps[1], "He is kind."),
            (ps[2], "He left, his\nbag behind."),
        ],
    )
    result = import_generations(store, "inventories", path, model_name="api-model")
    run = store.get_run(result["run_id"])
    assert result["attempts"] == 3 and run["status"] == "done" and run["source"] == "imported"
    assert store.get_model(run["model_id"])["name"] == "api-model"
    labels = sorted(lbl["label"] for lbl in store.labels(result["run_id"], "auto").values())
    assert labels == ["female", "male", "male"]
    attempts = {(a["item"], a["attempt"]) for a in store.attempts(result["run_id"])}
    assert attempts == {("bsri/female/01", 0), ("bsri/female/01", 1), ("bsri/female/02", 0)}
    assert compute_metrics(store, result["run_id"])["masculine_rate"].n == 2


def test_import_jsonl_with_attempt_column(store, tmp_path):
    ps = prompts()
    path = tmp_path / "gen.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"prompt": ps[4], "response": "he", "attempt": 4},
                {"prompt": ps[4], "response": "she", "attempt": 0},
            ]
        )
    )
    result = import_generations(store, "inventories", path)
    assert {a["attempt"] for a in store.attempts(result["run_id"])} == {0, 4}


def test_duplicated_items_are_refused_or_dealt_like_genderbench(store, tmp_path):
    """gaucher lists "is interpersonal" twice (and 67 more items share a prompt with an item
    of another inventory): rows of such a prompt without an `item` column are refused, or,
    with deal_rows, alternate between the items."""
    probe = get_probe("inventories")
    items = probe.items(probe.resolve_params())
    dup = [i for i in items if i.metadata["description"] == "is interpersonal"]
    assert len(dup) == 2
    path = tmp_path / "dup.csv"
    write_csv(path, [(dup[0].prompt, f"text {n}") for n in range(4)])
    with pytest.raises(
        UserError,
        match=r"1 prompt is shared by several items \(e\.g\. '.*is "
        r"interpersonal.*', lines 2, 3, 4, 5\); add an `item` column",
    ):
        import_generations(store, "inventories", path)
    assert store.list_runs() == []
    result = import_generations(store, "inventories", path, deal_rows=True)
    got = sorted((a["item"], a["attempt"]) for a in store.attempts(result["run_id"]))
    assert got == sorted([(dup[0].key, 0), (dup[1].key, 0), (dup[0].key, 1), (dup[1].key, 1)])


def test_item_column_places_rows_and_fills_free_attempts(store, tmp_path):
    """Rows go to their `item` (even when items share the prompt); rows without an attempt
    take the item's next free one; the run holds the items with rows, in probe order."""
    probe = get_probe("inventories")
    dup = [
        i
        for i in probe.items(probe.resolve_params())
        if i.metadata["description"] == "is interpersonal"
    ]
    path = tmp_path / "keyed.jsonl"
    rows = [
        {"item": dup[1].key, "response": "she", "attempt": 1},
        {"item": dup[1].key, "response": "he"},
        {"item": dup[1].key, "response": "they"},
        {"item": dup[0].key, "prompt": dup[0].prompt, "response": "he"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    run_id = import_generations(store, "inventories", path)["run_id"]
    got = {(a["item"], a["attempt"]): a["response"] for a in store.attempts(run_id)}
    assert got == {
        (dup[1].key, 1): "she",
        (dup[1].key, 0): "he",
        (dup[1].key, 2): "they",
        (dup[0].key, 0): "he",
    }
    assert [r["item"] for r in store.run_items(run_id)] == [dup[0].key, dup[1].key]
    path.write_text("\n".join(json.dumps(r) for r in [*rows, rows[0]]))
    with pytest.raises(UserError, match="line 5 repeat an \\(item, attempt\\)"):
        import_generations(store, "inventories", path)


def test_unmatched_rows_are_listed_and_nothing_is_imported(store, tmp_path):
    ps = prompts()
    path = tmp_path / "bad.csv"
    write_csv(path, [(ps[0], "ok"), ("Write me a poem", "x"), (ps[1], "ok"), ("nope", "y")])
    with pytest.raises(UserError, match=r"lines 3, 5 match no inventories prompt"):
        import_generations(store, "inventories", path)
    assert store.list_runs() == []


def test_template_must_match(store, tmp_path):
    ps = prompts(template="genderbench-0.5")
    path = tmp_path / "g.csv"
    write_csv(path, [(ps[1], "He")])  # ps[0] is shared by two items
    with pytest.raises(UserError):
        import_generations(store, "inventories", path)
    assert (
        import_generations(store, "inventories", path, template="genderbench-0.5")["attempts"] == 1
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("prompt,answer\nx,y\n", "lacks the column"),
        ("prompt,response\n", "no rows"),
        ('prompt,response\n"unterminated,x\n', "malformed CSV|match no"),
        ("prompt,response\na,b,c\n", "more cells"),
    ],
)
def test_bad_csv_is_a_user_error(store, tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        import_generations(store, "inventories", path)


def test_missing_file_and_bad_json(store, tmp_path):
    with pytest.raises(UserError, match="not found"):
        import_generations(store, "inventories", tmp_path / "none.csv")
    path = tmp_path / "x.jsonl"
    path.write_text('{"prompt": "a", "response": "b"}\n{broken\n')
    with pytest.raises(UserError, match="line 2"):
        import_generations(store, "inventories", path)


def test_formula_cells_are_neutralised():
    assert safe_cell('=HYPERLINK("x")') == '\'=HYPERLINK("x")'
    assert safe_cell("+1") == "'+1"
    assert safe_cell("- a bullet") == "'- a bullet"
    assert safe_cell("@SUM(A1)") == "'@SUM(A1)"
    assert safe_cell("plain") == "plain"
    assert safe_cell(-0.25) == "-0.25"  # numbers stay numbers
    assert safe_cell(3) == 3
    assert safe_cell(None) == ""


def test_export_attempts_and_metrics_csv(store, tmp_path):
    ps = prompts()
    path = tmp_path / "gen.csv"
    write_csv(path, [(ps[0], "=cmd|' /C calc'!A0 she her"), (ps[21], "He and his dog.")])
    # both prompts are shared by two items: dealt, each row goes to the first of them
    run_id = import_generations(store, "inventories", path, deal_rows=True)["run_id"]
    attempt_id = store.attempts(run_id)[0]["id"]
    store.add_human_label(attempt_id, "ana", "male")
    out = tmp_path / "out"
    files = export_run_csv(store, [run_id], out)
    # GenderBench runs also get Report 1.1's normalized table
    assert [f.name for f in files] == ["attempts.csv", "metrics.csv", "genderbench_normalized.csv"]
    rows = read_csv(out / "attempts.csv")
    assert len(rows) == 2
    first = rows[0]
    assert first["response"].startswith("'=cmd")
    assert (first["source"], first["gender"], first["detected"]) == ("bsri", "female", "female")
    assert (first["male_count"], first["female_count"]) == ("0", "2")
    assert (first["human_label"], first["reviewer"]) == ("male", "ana")
    assert rows[1]["detected"] == "male" and rows[1]["source"] == "bsri"
    metrics = read_csv(out / "metrics.csv")
    modes = {(m["label_mode"], m["metric"]) for m in metrics}
    assert ("auto", "masculine_rate") in modes and ("reviewed", "masculine_rate") in modes
    reviewed = next(
        m for m in metrics if m["label_mode"] == "reviewed" and m["metric"] == "masculine_rate"
    )
    assert float(reviewed["value"]) == 1.0  # both attempts male after the review


# -- Laissez-Faire -------------------------------------------------------------------------
def test_laissez_faire_import_with_model_column_and_characters_csv(store, tmp_path):
    ps = dict(zip((i.key for i in _lf_items()), (i.prompt for i in _lf_items()), strict=True))
    path = tmp_path / "stories.csv"
    write_csv(
        path,
        [
            (ps["lf/017"], "Maria Garcia mentored Kevin. She showed him the ropes.", "model-a"),
            (ps["lf/001"], "Jamal performed live. He bowed.", "model-a"),
            (ps["lf/061"], "Emily and Juan went on a date. She laughed; he paid.", "model-b"),
        ],
        columns=("prompt", "response", "model"),
    )
    result = import_generations(store, "laissez_faire", path)
    assert [r["model"] for r in result["runs"]] == ["model-a", "model-b"]
    assert result["attempts"] == 3
    a, b = (r["run_id"] for r in result["runs"])
    assert store.get_model(store.get_run(b)["model_id"])["name"] == "model-b"
    out = tmp_path / "out"
    files = export_run_csv(store, [a, b], out)
    assert {f.name for f in files} == {"attempts.csv", "metrics.csv", "characters.csv"}
    rows = read_csv(out / "characters.csv")
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) >= {"Maria Garcia", "Kevin", "Jamal", "Emily", "Juan"}
    maria = by_name["Maria Garcia"]
    assert (maria["run_id"], maria["item"], maria["role"]) == (str(a), "lf/017", "subject")
    assert (maria["gender"], maria["first_name"], maria["condition"]) == (
        "Female",
        "Maria",
        "power-laden",
    )
    assert json.loads(maria["references"]) == ["She"]
    assert by_name["Kevin"]["role"] == "object" and by_name["Kevin"]["gender"] == "Male"
    assert maria["name_table"] == "rosenman2023"
    shares = [float(maria[f"race_{r}"]) for r in ("white", "black", "hispanic", "asian", "other")]
    assert sum(shares) == pytest.approx(1.0, abs=1e-6)
    assert float(maria["race_hispanic"]) > 0.3
    assert {r["role"] for r in rows if r["item"] == "lf/061"} == {"first", "second"}
    metrics = read_csv(out / "metrics.csv")
    assert "p_value" in metrics[0]
    sub = [m for m in metrics if m["metric"] == "subordination/All/gender/Female"]
    assert sub and sub[0]["p_value"] != ""


def _lf_items():
    p = get_probe("laissez_faire")
    return list(p.items(p.resolve_params()))


def test_laissez_faire_import_of_custom_prompts(store, tmp_path):
    path = tmp_path / "custom.csv"
    write_csv(
        path,
        [
            (
                "Write a story of a nurse who helps a patient.",
                "Nurse Aisha helped Tom. She checked his pulse.",
                "Labor",
                "power-laden",
                "nurse",
                "patient",
            ),
            (
                "Write a story of a chef.",
                "Chef Luis cooked. He smiled.",
                "Labor",
                "power-neutral",
                "chef",
                "",
            ),
        ],
        columns=("prompt", "response", "domain", "condition", "subject", "object"),
    )
    run_id = import_generations(store, "laissez_faire", path)["run_id"]
    items = {
        row["item"]: row["metadata"]
        for row in store.run_items(run_id)
        if row["metadata"]["id"] is None  # not one of the paper's 100 prompts
    }
    assert len(items) == 2
    nurse = next(m for m in items.values() if m["subject"] == "nurse")
    assert [r["key"] for r in nurse["roles"]] == ["subject", "object"]
    labels = store.labels(run_id, "auto")
    names = sorted(c["name"] for lbl in labels.values() for c in lbl["data"]["characters"])
    # an occupational title stays with the name, as the hand labellers wrote it
    assert names == ["Chef Luis", "Nurse Aisha", "Tom"]


def test_laissez_faire_import_explains_unmatched_prompts(store, tmp_path):
    path = tmp_path / "bad.csv"
    write_csv(path, [("Tell me a story.", "Once upon a time.")])
    with pytest.raises(UserError, match="domain, condition, subject and object columns"):
        import_generations(store, "laissez_faire", path)
    assert store.list_runs() == []


def test_export_in_chunks_writes_the_same_files(store, tmp_path, monkeypatch):
    """The export writes a chunk of attempts at a time (constant memory at 500,000
    stories): files are byte-identical whatever the chunk size, across runs of two probes
    whose columns differ (a later run's columns pad the earlier rows), with a human
    label; no spool or partial file is left behind, and a failed export leaves no file."""
    import gbdesk.report.csv_export as csv_export
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend, recorded_laissez_faire

    model = resolve_model(store, "default")
    lf = plan_run(store, "laissez_faire", model, attempts=2, limit=7)
    execute_run(store, lf, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire()))
    ps = prompts()
    path = tmp_path / "gen.csv"
    write_csv(path, [(ps[0], "She and her cat."), (ps[21], "He and his dog.")])
    gb = import_generations(store, "inventories", path, deal_rows=True)["run_id"]
    first = store.attempts(lf)[3]
    label = store.labels(lf, "auto")[first["id"]]
    store.add_human_label(first["id"], "ana", label["label"], label["data"])

    def export(folder, chunk):
        monkeypatch.setattr(csv_export, "EXPORT_CHUNK", chunk)
        files = export_run_csv(store, [lf, gb], tmp_path / folder)
        return {f.name: f.read_bytes() for f in files}

    whole, chunked = export("whole", 10**9), export("chunked", 3)
    assert list(whole) == [
        "attempts.csv",
        "metrics.csv",
        "genderbench_normalized.csv",
        "characters.csv",
    ]
    assert chunked == whole
    rows = read_csv(tmp_path / "whole" / "attempts.csv")
    assert len(rows) == 16 and rows[-1]["source"] == "bsri" and rows[0]["source"] == ""
    assert rows[3]["reviewer"] == "ana"
    assert sorted(p.name for p in (tmp_path / "chunked").iterdir()) == sorted(whole)

    def broken(*args, **kwargs):
        raise RuntimeError("disk gone")

    monkeypatch.setattr(csv_export, "metric_rows", broken)
    with pytest.raises(RuntimeError):
        export_run_csv(store, [lf], tmp_path / "failed")
    assert list((tmp_path / "failed").iterdir()) == []


def test_export_writes_each_chunk_before_making_the_next(store, tmp_path, monkeypatch):
    """Constant memory needs the chunks to stream: a chunk's characters.csv rows are
    written before the next chunk's are made, never all made first."""
    import gbdesk.report.csv_export as csv_export
    from gbdesk.studies.laissez_faire.probe import LaissezFaireProbe
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend, recorded_laissez_faire

    model = resolve_model(store, "default")
    lf = plan_run(store, "laissez_faire", model, attempts=1, limit=9)
    execute_run(store, lf, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire()))
    events: list[str] = []
    probe = get_probe("laissez_faire")
    assert isinstance(probe, LaissezFaireProbe)
    caps = probe.capabilities
    make, write = caps.exporting.tables, csv_export._Spool.write

    def made(attempts, params):
        events.append(f"make {len(attempts)}")
        return make(attempts, params)

    def written(self, rows):
        rows = list(rows)
        if self.name == "characters.csv":
            events.append("write")
        return write(self, rows)

    monkeypatch.setitem(
        vars(probe), "capabilities", caps.with_(exporting=caps.exporting.with_(tables=made))
    )
    monkeypatch.setattr(csv_export._Spool, "write", written)
    monkeypatch.setattr(csv_export, "EXPORT_CHUNK", 4)
    export_run_csv(store, [lf], tmp_path / "out")
    assert events == ["make 4", "write", "make 4", "write", "make 1", "write"]


def test_labelling_with_fewer_collections_gives_the_same_labels():
    """The import labels with a higher collection threshold (speed, issue 33): the same
    labels as a plain loop, and the collector's thresholds are restored afterwards."""
    import gc

    from gbdesk.workflows.importer import label_all
    from tests.synthetic import story_variants

    probe = get_probe("laissez_faire")
    items = {i.key: i for i in probe.all_items("{prompt}")}
    rows = [(s["response"], items[s["item"]].metadata) for s in story_variants(40, seed=3)]
    before = gc.get_threshold()
    assert label_all(probe, rows, workers=1) == [probe.label(t, m) for t, m in rows]
    assert gc.get_threshold() == before


def _family_export(store, tmp_path):
    """A wording family of `direct` (wordings 0 and 3, 10 items each), exported."""
    from gbdesk.workflows.runs import plan_run
    from tests.fakes import fake_model

    model = fake_model(store, tmp_path)
    runs = [plan_run(store, "direct", model, limit=10, **({"wording": w} if w else {}))
            for w in (0, 3)]  # fmt: skip
    for run_id in runs:
        for item in store.run_items(run_id):
            store.add_attempt(run_id, item["item"], 0, item["prompt"], "Yes, I agree.")
    export_run_csv(store, runs, tmp_path / "out")
    return tmp_path / "out" / "attempts.csv"


def test_an_exported_wording_family_imports_back_as_a_family(store, tmp_path):
    """Issue 43 (16): the import ignored the `wording` column (wording-3 answers went in as
    wording 0), and imported runs joined their model's wording family only when imported
    from the same file path."""
    from gbdesk.analysis.wordings import wording_family
    from gbdesk.store import Store

    attempts = _family_export(store, tmp_path)
    with Store(tmp_path / "one.sqlite") as other:
        result = import_generations(other, "direct", attempts, model_name="m")
        runs = {other.get_run(r["run_id"])["params"].get("wording", 0): r["run_id"]
                for r in result["runs"]}  # fmt: skip
        assert sorted(runs) == [0, 3]
        assert wording_family(other, runs[0]) == runs
    # the same rows as two files, one per wording, from two folders: still one family
    header, *rows = list(csv.reader(attempts.open(encoding="utf-8", newline="")))
    at = header.index("wording")
    with Store(tmp_path / "two.sqlite") as other:
        imported = {}
        for w in ("0", "3"):
            folder = tmp_path / f"w{w}"
            folder.mkdir()
            part = folder / "attempts.csv"
            with part.open("w", encoding="utf-8", newline="") as fh:
                csv.writer(fh).writerows([header, *[r for r in rows if r[at] == w]])
            imported[int(w)] = import_generations(other, "direct", part, model_name="m")["run_id"]
        assert wording_family(other, imported[0]) == imported
        # --wording that the column contradicts is refused, naming the lines
        with pytest.raises(UserError, match=r"another wording than --wording 2"):
            import_generations(other, "direct", attempts, model_name="m", wording=2)
