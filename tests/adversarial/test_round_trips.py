"""Export → import round trips for every probe (gbdesk issues 12 and 27).

Each probe's run is made without a model (fake backends, synthetic answers), exported to
CSV and imported back: once with the rows shuffled (fixed seeds) and once as a random
subset of the rows. The imported run must hold the same texts on the same
(item, attempt) and give the same metrics — for a subset, the metrics of the original run
restricted to the imported rows, computed by the probe from the stored labels.

Issue 27: texts that the export escapes (formula starts, control characters, bidi
overrides, literal "\\x" sequences) come back exactly, plain and shuffled, for every
probe; hand labels go back with `import-labels` onto the imported run; and every file of
every probe's export given to `import` or `import-labels` is read or refused in one line
naming the file to use.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from gbdesk.analysis.results import compute_metrics, effective_labels
from gbdesk.cli import main
from gbdesk.contract import ItemResult, ScoringProbe, get_probe
from gbdesk.engine.base import EngineInfo, GenerationResult
from gbdesk.maths.stats import MetricValue
from gbdesk.report.csv_export import export_run_csv, probe_tables, write_csv
from gbdesk.support.errors import UserError
from gbdesk.workflows.importer import import_generations
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model, recorded_laissez_faire, recorded_texts

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# -- helpers ------------------------------------------------------------------------------------
def plain(texts: list[str]) -> list[str]:
    """Texts the CSV export writes unchanged (no spreadsheet-formula neutralisation)."""
    return [t for t in texts if not t.startswith(FORMULA_START)]


def rewrite(src: Path, dst: Path, seed: int, keep: float = 1.0, drop: tuple[str, ...] = ()):
    """Copy a CSV with its rows shuffled (seeded), optionally a random share of them and
    without some columns. Returns the rows written (dicts)."""
    with src.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        columns = [c for c in reader.fieldnames or [] if c not in drop]
        rows = list(reader)
    rng = random.Random(seed)
    rng.shuffle(rows)
    if keep < 1.0:
        rows = rows[: max(1, round(keep * len(rows)))]
    with dst.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return rows


def texts(store, run_id: int) -> dict[tuple[str, int], tuple[str, str]]:
    return {(a["item"], a["attempt"]): (a["prompt"], a["response"]) for a in store.attempts(run_id)}


def label_data(store, run_id: int) -> dict[tuple[str, int], Any]:
    labels = store.labels(run_id, "auto")
    return {
        (a["item"], a["attempt"]): (labels[a["id"]]["label"], labels[a["id"]]["data"])
        for a in store.attempts(run_id)
    }


def frozen(metrics: dict[str, MetricValue]) -> dict[str, tuple]:
    """Metrics as comparable tuples (NaN equal to NaN)."""

    def f(x):
        return "nan" if isinstance(x, float) and math.isnan(x) else x

    # a p-value the probe could not define is NaN when computed and None when read from
    # the metrics cache (SQLite keeps NaN as NULL): the same here
    return {
        name: (
            f(m.value),
            f(m.ci[0]),
            f(m.ci[1]),
            m.mark,
            m.n,
            f(m.p_value) if m.p_value is not None else "nan",
        )
        for name, m in metrics.items()
    }


def restricted(store, run_id: int, keep) -> dict[str, MetricValue]:
    """The original run's metrics over what `keep(item, attempt, label_data, scores)`
    leaves: it returns the label data and scores kept, or None to drop the attempt."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    labels = effective_labels(store, run_id, "auto")
    results = {
        row["item"]: ItemResult(row["item"], row["metadata"], []) for row in store.run_items(run_id)
    }
    scores: dict[str, list[dict]] = {}
    if isinstance(probe, ScoringProbe):
        for s in store.scores(run_id):
            scores.setdefault(s["item"], []).append(s)
    for a in store.attempts(run_id):
        label = labels[a["id"]]
        kept = keep(a["item"], a["attempt"], copy.deepcopy(label["data"]), scores.get(a["item"]))
        if kept is None:
            continue
        data, kept_scores = kept
        r = results[a["item"]]
        r.labels.append(label["label"])
        r.label_data.append(data or {})
        r.responses.append(a["response"])
        r.scores.extend(kept_scores or [])
    kept_results = [r for r in results.values() if r.labels]
    return probe.metrics(kept_results, params=run["params"])


def exported(store, run_id: int, tmp_path: Path, name: str = "attempts.csv") -> Path:
    out = tmp_path / f"export-{run_id}"
    export_run_csv(store, [run_id], out)
    return out / name


def generated(store, tmp_path: Path, probe: str, backend, **params) -> int:
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, probe, model, **params)
    outcome = execute_run(store, run_id, backend_factory=lambda m, g: backend)
    assert outcome.status == "done"
    return run_id


def check_attempts_round_trip(store, tmp_path: Path, run_id: int, probe: str, seed: int):
    """attempts.csv shuffled → identical; a random 40 % → identical texts and the
    original's metrics over those attempts."""
    source = exported(store, run_id, tmp_path)
    shuffled = tmp_path / f"shuffled-{run_id}.csv"
    rewrite(source, shuffled, seed)
    again = import_generations(store, probe, shuffled)["run_id"]
    assert texts(store, again) == texts(store, run_id)
    assert label_data(store, again) == label_data(store, run_id)
    assert frozen(compute_metrics(store, again)) == frozen(compute_metrics(store, run_id))

    part = tmp_path / f"part-{run_id}.csv"
    rows = rewrite(source, part, seed + 1, keep=0.4)
    kept = {(r["item"], int(r["attempt"])) for r in rows}
    sub = import_generations(store, probe, part)["run_id"]
    original = texts(store, run_id)
    assert texts(store, sub) == {k: original[k] for k in kept}
    expected = restricted(
        store,
        run_id,
        lambda item, attempt, data, scores: (data, scores) if (item, attempt) in kept else None,
    )
    assert frozen(compute_metrics(store, sub)) == frozen(expected)
    return again, sub


# -- GenderBench ----------------------------------------------------------------------------------
def test_inventories_round_trip_keeps_items_of_shared_prompts(store, tmp_path):
    run_id = generated(
        store, tmp_path, "inventories", FakeBackend(plain(recorded_texts())), attempts=2
    )
    again, _ = check_attempts_round_trip(store, tmp_path, run_id, "inventories", seed=11)
    assert len(texts(store, again)) == 298
    # only the Gaucher rows (most of them share a prompt with a BSRI or EPAQ item)
    source = exported(store, run_id, tmp_path)
    rows = [r for r in rewrite(source, tmp_path / "all.csv", 5)]
    gaucher = tmp_path / "gaucher.csv"
    with gaucher.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if r["item"].startswith("gaucher/"))
    only = import_generations(store, "inventories", gaucher)["run_id"]
    got = texts(store, only)
    assert len(got) == 154 and all(item.startswith("gaucher/") for item, _ in got)
    original = texts(store, run_id)
    assert got == {k: original[k] for k in got}


def test_shared_prompts_without_item_are_refused_or_dealt(store, tmp_path):
    run_id = generated(
        store, tmp_path, "inventories", FakeBackend(plain(recorded_texts())), attempts=2
    )
    source = exported(store, run_id, tmp_path)
    bare = tmp_path / "bare.csv"
    rewrite(source, bare, 3, drop=("item", "item_index"))
    with pytest.raises(UserError) as refused:
        import_generations(store, "inventories", bare)
    message = str(refused.value)
    assert "33 prompts are shared by several items" in message
    assert "add an `item` column" in message and "--deal-rows" in message
    assert len(message.splitlines()) == 1
    assert len(store.list_runs()) == 1  # nothing imported
    dealt = import_generations(store, "inventories", bare, deal_rows=True)["run_id"]
    got, original = texts(store, dealt), texts(store, run_id)
    assert set(got) == set(original)  # every item gets its two attempts…
    assert sorted(got.values()) == sorted(original.values())  # …of the same texts
    # the CLI flag
    db = tmp_path / "cli.sqlite"
    args = ["import", "--probe", "inventories", "--file", str(bare), "--db", str(db), "--json"]
    assert main(args) != 0
    assert main([*args, "--deal-rows"]) == 0


def test_item_and_prompt_must_agree_and_items_must_exist(store, tmp_path):
    run_id = generated(
        store, tmp_path, "inventories", FakeBackend(plain(recorded_texts())), attempts=1
    )
    source = exported(store, run_id, tmp_path)
    rows = rewrite(source, tmp_path / "copy.csv", 0)
    columns = list(rows[0])

    def write(name, changed):
        path = tmp_path / name
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            writer.writerows(changed)
        return path

    swapped = [dict(r) for r in rows]
    swapped[0]["item"], swapped[1]["item"] = rows[1]["item"], rows[0]["item"]
    if rows[0]["prompt"] != rows[1]["prompt"]:
        with pytest.raises(UserError, match=r"lines 2, \d+ have a prompt that is not their item's"):
            import_generations(store, "inventories", write("swapped.csv", swapped))
    unknown = [dict(r) for r in rows]
    unknown[4]["item"] = "bsri/female/99"
    with pytest.raises(UserError, match=r"line \d+ name an item that is not one of inventories"):
        import_generations(store, "inventories", write("unknown.csv", unknown))
    # made with the other template: the message names it
    probe = get_probe("inventories")
    other = {i.key: i.prompt for i in probe.items(probe.resolve_params("genderbench-0.5"))}
    moved = [{**r, "prompt": other[r["item"]]} for r in rows]
    path = write("other.csv", moved)
    with pytest.raises(UserError, match=r"pass --template genderbench-0\.5"):
        import_generations(store, "inventories", path)
    assert import_generations(store, "inventories", path, template="genderbench-0.5")


@pytest.mark.parametrize(
    ("probe", "params"),
    [
        ("jobs_lum", {"sample": 50, "attempts": 2}),
        ("gest_creative", {"sample": 80, "attempts": 2}),
    ],
)
def test_genderbench_sampled_runs_round_trip_in_their_order(store, tmp_path, probe, params):
    """A sampled run's items are in the sample's order, on which the bootstrap intervals
    depend: the export's item_index restores it."""
    run_id = generated(store, tmp_path, probe, FakeBackend(plain(recorded_texts())), **params)
    again, _ = check_attempts_round_trip(store, tmp_path, run_id, probe, seed=21)
    order = [r["item"] for r in store.run_items(run_id)]
    assert [r["item"] for r in store.run_items(again)] == order


# -- Laissez-Faire ------------------------------------------------------------------------------
def test_laissez_faire_round_trip(store, tmp_path):
    backend = FakeBackend(plain(recorded_laissez_faire()))
    run_id = generated(store, tmp_path, "laissez_faire", backend, sample=40, attempts=2)
    check_attempts_round_trip(store, tmp_path, run_id, "laissez_faire", seed=31)


def test_laissez_faire_custom_prompts_round_trip(store, tmp_path):
    path = tmp_path / "custom.csv"
    stories = plain(recorded_laissez_faire())
    scenarios = [
        (
            "Write a story of a nurse who helps a patient.",
            "Labor",
            "power-laden",
            "nurse",
            "patient",
        ),
        ("Write a story of a chef.", "Labor", "power-neutral", "chef", ""),
        (
            "Write a story about two partners on a date.",
            "Love",
            "power-neutral",
            "two partners",
            "",
        ),
    ]
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["prompt", "response", "domain", "condition", "subject", "object"])
        for n in range(12):
            writer.writerow([*scenarios[n % 3][:1], stories[n], *scenarios[n % 3][1:]])
    run_id = import_generations(store, "laissez_faire", path)["run_id"]
    assert all(r["item"].startswith("custom/") for r in store.run_items(run_id))
    check_attempts_round_trip(store, tmp_path, run_id, "laissez_faire", seed=41)


# -- GlobalBias ------------------------------------------------------------------------------------
def _apx_run(store, tmp_path) -> int:
    return generated(
        store,
        tmp_path,
        "globalbias_apx",
        FakeBackend(),
        templates="1,3",
        descriptor_sets="GhavamiPeplau,ability",
        names_per_group=2,
    )


def _associations(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return {
            (r["group"], r["descriptor"]): {k: v for k, v in r.items() if k != "run_id"}
            for r in csv.DictReader(f)
        }


def _close(a: dict, b: dict) -> bool:
    """Two associations.csv tables alike: flags identical, numbers within 1e-12."""
    if a.keys() != b.keys():
        return False
    for key, row in a.items():
        for col, value in row.items():
            other = b[key][col]
            try:
                x, y = float(value), float(other)
            except ValueError:
                if value != other:
                    return False
                continue
            if not (x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-12):
                return False
    return True


def test_globalbias_apx_scores_round_trip(store, tmp_path):
    run_id = _apx_run(store, tmp_path)
    source = exported(store, run_id, tmp_path, "scores.csv")
    shuffled = tmp_path / "scores-shuffled.csv"
    rewrite(source, shuffled, 51)
    again = import_generations(store, "globalbias_apx", shuffled)["run_id"]
    assert texts(store, again) == texts(store, run_id)
    strip = ("attempt_id",)
    scores = [{k: v for k, v in s.items() if k not in strip} for s in store.scores(run_id)]
    assert [{k: v for k, v in s.items() if k not in strip} for s in store.scores(again)] == scores
    metrics = frozen(compute_metrics(store, run_id))
    assert {"validation_accuracy_ppl", "mean_ppl/t3", "flagged_pairs"} <= metrics.keys()
    assert frozen(compute_metrics(store, again)) == metrics

    part = tmp_path / "scores-part.csv"
    rows = rewrite(source, part, 52, keep=0.5)
    kept = {(r["item"], r["descriptor"]) for r in rows}
    sub = import_generations(store, "globalbias_apx", part)["run_id"]
    assert sum(len(v) for v in [store.scores(sub)]) == len(kept)

    def keep(item, attempt, data, block):
        chosen = [s for s in block or [] if (item, s["descriptor"]) in kept]
        return (data, chosen) if chosen else None

    assert frozen(compute_metrics(store, sub)) == frozen(restricted(store, run_id, keep))


def test_globalbias_apx_associations_round_trip(store, tmp_path):
    """associations.csv (APX per template, wide) imports as an APX table: the same bias
    scores and flags, in any row order."""
    run_id = _apx_run(store, tmp_path)
    source = exported(store, run_id, tmp_path, "associations.csv")
    shuffled = tmp_path / "assoc-shuffled.csv"
    rewrite(source, shuffled, 61)
    again = import_generations(store, "globalbias_apx", shuffled)["run_id"]
    first, second = compute_metrics(store, run_id), compute_metrics(store, again)
    for name in ("flagged_pairs", "flagged_descriptors"):
        assert frozen({name: second[name]}) == frozen({name: first[name]})
    assert _close(
        _associations(exported(store, again, tmp_path, "associations.csv")), _associations(source)
    )
    # the imported table's own scores.csv (long APX rows) imports back identically
    long = exported(store, again, tmp_path, "scores.csv")
    rewrite(long, tmp_path / "long.csv", 62)
    third = import_generations(store, "globalbias_apx", tmp_path / "long.csv")["run_id"]
    assert texts(store, third) == texts(store, again)
    assert frozen(compute_metrics(store, third)) == frozen(second)
    # a subset of groups: the associations of those groups alone
    groups = sorted({g for g, _ in _associations(source)})[:12]
    rows = rewrite(source, tmp_path / "assoc-all.csv", 63)
    subset = tmp_path / "assoc-part.csv"
    with subset.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if r["group"] in groups)
    sub = import_generations(store, "globalbias_apx", subset)["run_id"]
    probe = get_probe("globalbias_apx")
    table = probe.apx(
        [
            r
            for r in [
                ItemResult(s["item"], {}, ["scored"], scores=[s]) for s in store.scores(run_id)
            ]
            if r.scores[0]["group"] in groups
        ]
    )
    from gbdesk.studies.globalbias.apx_stats import associations

    expected = associations(table).counts()
    got = compute_metrics(store, sub)
    assert (got["flagged_pairs"].value, got["flagged_descriptors"].value) == (
        expected["pairs"],
        expected["descriptors"],
    )


def _profile_texts(n_names: int, count: int = 60) -> list[str]:
    """Well-formed answers with `n_names` varied profiles each (deterministic)."""
    rng = random.Random(7)
    words = ["brave", "kind", "shy", "loud", "calm", "witty", "proud", "gentle", "bold", "wise"]
    jobs = ["nurse", "engineer", "farmer", "chef", "pilot", "teacher", "lawyer", "artist"]
    out = []
    for _ in range(count):
        profiles = [
            {
                "name": "X",
                "age": rng.randint(18, 70),
                "personality_traits": rng.sample(words, 3),
                "negative_traits": rng.sample(words, 3),
                "hobbies": rng.sample(["chess", "running", "painting", "music", "hiking"], 3),
                "occupation": rng.choice(jobs),
                "physical_characteristics": {
                    "height": rng.choice([1.6, 1.7, 1.8]),
                    "hair_colour": rng.choice(["black", "brown", "blond"]),
                    "eye_colour": rng.choice(["brown", "blue", "green"]),
                    "skin_colour": rng.choice(["light", "medium", "dark"]),
                    "build": rng.choice(["slim", "athletic", "stocky"]),
                },
                "special_move": rng.choice(["dash", "shield", "spark"]),
                "socioeconomic_status": rng.choice(["middle class", "wealthy", "poor"]),
                "sexual_orientation": rng.choice(["heterosexual", "bisexual", "gay"]),
                "religion": rng.choice(["Christian", "Muslim", "atheist", "Buddhist"]),
            }
            for _ in range(n_names)
        ]
        out.append(json.dumps(profiles))
    return out


def test_globalbias_profiles_attempts_round_trip(store, tmp_path):
    run_id = generated(
        store,
        tmp_path,
        "globalbias_profiles",
        FakeBackend(_profile_texts(1)),
        names_per_group=3,
        attempts=2,
    )
    metrics = compute_metrics(store, run_id)
    assert metrics["profiles"].value > 200 and not math.isnan(metrics["svm_accuracy_group"].value)
    check_attempts_round_trip(store, tmp_path, run_id, "globalbias_profiles", seed=71)


def test_globalbias_profiles_with_several_names_per_prompt_round_trip(store, tmp_path):
    """Items asking for 2 names are not among the default items: they are rebuilt from the
    exported item and people columns."""
    run_id = generated(
        store,
        tmp_path,
        "globalbias_profiles",
        FakeBackend(_profile_texts(2)),
        names_per_group=2,
        names_per_prompt=2,
        attempts=2,
        sample=30,
    )
    check_attempts_round_trip(store, tmp_path, run_id, "globalbias_profiles", seed=81)


def _profile_rows(store, run_id) -> list[tuple]:
    """(profile record) per profile in the analysis order, every field as text."""
    probe = get_probe("globalbias_profiles")
    from gbdesk.analysis.results import item_results

    return [
        tuple(sorted((k, json.dumps(v, sort_keys=True, default=str)) for k, v in r.items()))
        for r in probe.profile_records(item_results(store, run_id))
    ]


def test_globalbias_profiles_csv_round_trip(store, tmp_path):
    """profiles.csv (the released layout) imports back as one item per person: the same
    profiles in the same analysis order, so the same SVM accuracies."""
    run_id = generated(
        store,
        tmp_path,
        "globalbias_profiles",
        FakeBackend(_profile_texts(1)),
        names_per_group=3,
        attempts=2,
        sample=100,
    )
    source = exported(store, run_id, tmp_path, "profiles.csv")
    rewrite(source, tmp_path / "profiles-shuffled.csv", 91)
    again = import_generations(store, "globalbias_profiles", tmp_path / "profiles-shuffled.csv")[
        "run_id"
    ]
    assert [r["item"] for r in store.run_items(again)] == [
        r["item"] for r in store.run_items(run_id)
    ]
    assert _profile_rows(store, again) == _profile_rows(store, run_id)
    first, second = frozen(compute_metrics(store, run_id)), frozen(compute_metrics(store, again))
    assert second == first  # no parse failures in this run, so even parse_failures agree

    part = tmp_path / "profiles-part.csv"
    rows = rewrite(source, part, 92, keep=0.5)
    kept = {(r["item"], int(r["run_id"])) for r in rows}
    sub = import_generations(store, "globalbias_profiles", part)["run_id"]
    expected = restricted(
        store,
        run_id,
        lambda item, attempt, data, scores: (data, scores) if (item, attempt) in kept else None,
    )
    assert frozen(compute_metrics(store, sub)) == frozen(expected)


def test_released_profiles_export_round_trip(store, tmp_path):
    """The released Llama 3 70B file → run → profiles.csv → shuffled → the same Table 6."""
    from gbdesk.analysis.results import item_results
    from gbdesk.support.paths import resource

    run_id = import_generations(
        store, "globalbias_profiles", resource("globalbias/10a_llama3_full.csv")
    )["run_id"]
    source = tmp_path / "released-profiles.csv"  # the table alone: no bootstrap metrics
    write_csv(source, *probe_tables(store, run_id)["profiles.csv"])
    rewrite(source, tmp_path / "released-shuffled.csv", 95)
    again = import_generations(store, "globalbias_profiles", tmp_path / "released-shuffled.csv")[
        "run_id"
    ]
    assert texts(store, again) == texts(store, run_id)
    probe = get_probe("globalbias_profiles")
    first = probe.metrics(item_results(store, run_id), bootstrap=False)
    second = probe.metrics(item_results(store, again), bootstrap=False)
    assert frozen(second) == frozen(first)
    assert round(100 * second["svm_accuracy_group"].value, 1) == 18.3


# -- Intersectional ------------------------------------------------------------------------------
class RoleBackend:
    """Roles whose text depends only on the group (several roles of a group read alike);
    answers an option chosen by a hash of (role prompt, question, seed)."""

    def __init__(self) -> None:
        self.info = EngineInfo(backend="fake", model_name="fake", prompt_mode="chat")

    def generate(self, request, on_token=None):
        content = request.messages[0]["content"]
        if request.json_schema is None:
            text = f"Role for: {content[:70]}"
        else:
            options = request.json_schema["enum"]
            digest = hashlib.sha256(f"{content}|{request.seed}".encode()).digest()
            text = json.dumps(options[digest[0] % len(options)])
        return GenerationResult(text, 10, 3, 0.01, "stop", "chat")

    def close(self) -> None:
        pass


def test_intersectional_answers_round_trip(store, tmp_path):
    run_id = generated(store, tmp_path, "intersectional_sdeg", RoleBackend(), attempts=4, sample=10)
    source = exported(store, run_id, tmp_path, "answers.csv")
    shuffled = tmp_path / "answers-shuffled.csv"
    rewrite(source, shuffled, 101)
    again = import_generations(store, "intersectional_sdeg", shuffled)["run_id"]
    assert [r["item"] for r in store.run_items(again)] == [
        r["item"] for r in store.run_items(run_id)
    ]
    assert texts(store, again) == texts(store, run_id)
    assert label_data(store, again) == label_data(store, run_id)
    assert frozen(compute_metrics(store, again)) == frozen(compute_metrics(store, run_id))

    part = tmp_path / "answers-part.csv"
    rows = rewrite(source, part, 102, keep=0.4)
    categories = {c["category"]: str(c["id"]) for c in _categories()}
    kept = {(r["item"], int(r["role_index"]), categories[r["category"]]) for r in rows}
    sub = import_generations(store, "intersectional_sdeg", part)["run_id"]

    def keep(item, attempt, data, scores):
        answers = {c: a for c, a in data["answers"].items() if (item, attempt, c) in kept}
        return ({"answers": answers}, scores) if answers else None

    assert frozen(compute_metrics(store, sub)) == frozen(restricted(store, run_id, keep))
    # without role_index, roles with the same text would be one role: refused as repeats
    bare = tmp_path / "answers-bare.csv"
    rewrite(source, bare, 103, drop=("role_index",))
    with pytest.raises(UserError, match="repeat a category of their role"):
        import_generations(store, "intersectional_sdeg", bare)


def _categories():
    from gbdesk.studies.intersectional.data import load_categories

    return load_categories()


# -- issue 27: escaped texts, hand labels, every export file ------------------------------------
#: texts the export escapes or that look like its escapes: formula starts, control
#: characters, bidi overrides, line separators, literal "\\x" sequences and apostrophes
NASTY = [
    "=cmd|' /C calc'!A0",
    "+1+1 he said",
    "-2 she said",
    "@SUM(A1) he",
    ' =HYPERLINK("http://evil", "x") she',
    "\t=1 he",
    "'=already quoted she",
    "''=twice he",
    "'quoted' she",
    "\x1b[31mred\x1b[0m he",
    "nul\x00byte she",
    "cr\r\nlf he",
    "lone\rcr she",
    "sep\u2028par\u2029 he",
    "nel\x85 she",
    "rtl\u202eevil\u2066 he",
    "a literal \\x1b escape she",
    "\\x{202e} literal he",
    "C:\\path\\x41 she",
    "\\x5c he",
    'comma, "quote"\nnewline she',
    "emoji \U0001f600 Ünïcode he",
]


def test_nasty_texts_are_escaped_in_the_file():
    """The export really escapes them (else the round trips below would prove little)."""
    from gbdesk.support.guards import escape_text

    assert sum(escape_text(t) != t for t in NASTY) >= 18


def _plain_round_trip(store, tmp_path: Path, run_id: int, probe: str, name: str) -> int:
    """The export's file imported as it is (no shuffle): the same texts, labels, metrics."""
    again = import_generations(store, probe, exported(store, run_id, tmp_path, name))["run_id"]
    assert texts(store, again) == texts(store, run_id)
    assert label_data(store, again) == label_data(store, run_id)
    assert frozen(compute_metrics(store, again)) == frozen(compute_metrics(store, run_id))
    return again


@pytest.mark.parametrize(
    ("probe", "params"),
    [
        ("inventories", {"limit": 11, "attempts": 2}),
        ("gest_creative", {"sample": 11, "attempts": 2}),  # jobs_lum: the same reading
        ("laissez_faire", {"sample": 11, "attempts": 2}),
        ("globalbias_profiles", {"names_per_group": 1, "sample": 11, "attempts": 2}),
        ("intersectional_elicit", {"limit": 11, "attempts": 2}),
    ],
)
def test_escaped_texts_round_trip_plain_and_shuffled(store, tmp_path, probe, params):
    run_id = generated(store, tmp_path, probe, FakeBackend(NASTY), **params)
    assert set(t for _, t in texts(store, run_id).values()) & set(NASTY)
    _plain_round_trip(store, tmp_path, run_id, probe, "attempts.csv")
    check_attempts_round_trip(store, tmp_path, run_id, probe, seed=201)


class NastyRoles(RoleBackend):
    """Roles whose texts are the nasty ones (answers as `RoleBackend`)."""

    def generate(self, request, on_token=None):
        result = super().generate(request, on_token)
        if request.json_schema is None:
            digest = hashlib.sha256(request.messages[0]["content"].encode()).digest()
            text = NASTY[digest[0] % len(NASTY)] + f" {request.seed}"
            return GenerationResult(text, 10, 3, 0.01, "stop", "chat")
        return result


def test_intersectional_escaped_roles_round_trip(store, tmp_path):
    run_id = generated(store, tmp_path, "intersectional_sdeg", NastyRoles(), attempts=3, sample=6)
    for seed in (None, 211):
        source = exported(store, run_id, tmp_path, "answers.csv")
        if seed is not None:
            rewrite(source, tmp_path / "answers-shuffled.csv", seed)
            source = tmp_path / "answers-shuffled.csv"
        again = import_generations(store, "intersectional_sdeg", source)["run_id"]
        assert texts(store, again) == texts(store, run_id)
        assert label_data(store, again) == label_data(store, run_id)
        assert frozen(compute_metrics(store, again)) == frozen(compute_metrics(store, run_id))


def test_apx_table_with_escaped_group_labels_round_trips(store, tmp_path):
    """Group labels of an imported APX table are kept exactly as given: through
    associations.csv and scores.csv they come back exactly."""
    from gbdesk.studies.globalbias.data import load_descriptors

    known = [d["descriptor"] for d in load_descriptors() if d["axis"] != "age"][:3]
    path = tmp_path / "apx.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["group", "descriptor", "template", "apx"])
        for g, group in enumerate(NASTY[:8]):
            for d, descriptor in enumerate(known):
                for t in (1, 2, 3):
                    writer.writerow([group, descriptor, t, 10 + g + d / 10 + t / 100])
    run_id = import_generations(store, "globalbias_apx", path)["run_id"]
    groups = {s["group"] for s in store.scores(run_id)}
    assert groups == set(NASTY[:8])
    for name in ("associations.csv", "scores.csv"):
        source = exported(store, run_id, tmp_path, name)
        rewrite(source, tmp_path / f"shuffled-{name}", 221)
        for file in (source, tmp_path / f"shuffled-{name}"):
            again = import_generations(store, "globalbias_apx", file)["run_id"]
            assert {s["group"] for s in store.scores(again)} == groups
            assert frozen(compute_metrics(store, again)) == frozen(compute_metrics(store, run_id))


def test_finding_7_formula_texts_round_trip(store, tmp_path):
    """Was xfail: the import kept the export's apostrophe and escapes."""
    run_id = generated(
        store, tmp_path, "inventories", FakeBackend(["- a bullet: he went home."]), limit=3
    )
    source = exported(store, run_id, tmp_path)
    assert "'- a bullet" in source.read_text(encoding="utf-8")
    again = import_generations(store, "inventories", source)["run_id"]
    assert texts(store, again) == texts(store, run_id)


# -- hand labels back with import-labels --------------------------------------------------------
def _human(store, run_id: int) -> dict[tuple[str, int], tuple[str, Any]]:
    labels = store.labels(run_id, "human")
    return {
        (a["item"], a["attempt"]): (labels[a["id"]]["label"], labels[a["id"]]["data"])
        for a in store.attempts(run_id)
        if a["id"] in labels
    }


def _label_round_trip(store, tmp_path, run_id, probe, text_file, label_file, rater="ana"):
    """Export the run, import its texts (a new run), put the export's hand labels on it:
    the same reviewed labels and metrics."""
    from gbdesk.people.label_import import import_labels

    copy = import_generations(store, probe, exported(store, run_id, tmp_path, text_file))
    copy = copy["run_id"]
    labels = exported(store, run_id, tmp_path, label_file)
    shuffled = tmp_path / f"labels-shuffled-{label_file}"
    rewrite(labels, shuffled, 231)
    assert import_labels(store, copy, shuffled, rater)["labelled"] > 0
    reviewed = frozen(compute_metrics(store, run_id, "reviewed"))
    assert frozen(compute_metrics(store, copy, "reviewed")) == reviewed
    return copy


def test_genderbench_hand_labels_round_trip(store, tmp_path):
    run_id = generated(store, tmp_path, "inventories", FakeBackend(NASTY), limit=12, attempts=2)
    for n, a in enumerate(store.attempts(run_id)[:9]):
        store.add_human_label(a["id"], "ana", ("male", "female", "undetected")[n % 3])
    copy = _label_round_trip(store, tmp_path, run_id, "inventories", "attempts.csv",
                             "attempts.csv")  # fmt: skip
    assert {k: v[0] for k, v in _human(store, copy).items()} == {
        k: v[0] for k, v in _human(store, run_id).items()
    }


def test_laissez_faire_hand_labels_round_trip(store, tmp_path):
    probe = get_probe("laissez_faire")
    backend = FakeBackend(plain(recorded_laissez_faire()))
    run_id = generated(store, tmp_path, "laissez_faire", backend, sample=12, attempts=2)
    items = {r["item"]: r["metadata"] for r in store.run_items(run_id)}
    auto = store.labels(run_id, "auto")
    reviewed = 0
    for a in store.attempts(run_id):
        characters = (auto[a["id"]]["data"] or {}).get("characters") or []
        if not characters or reviewed == 6:
            continue
        first = characters[0]  # the reviewer keeps the first character, as a woman
        value = json.dumps([{"role": first["role"], "name": first.get("name"),
                             "references": [], "gender": "Female"}])  # fmt: skip
        label = probe.capabilities.labelling.human_label(
            a["response"], items[a["item"]], value, "ana"
        )
        store.add_human_label(a["id"], "ana", label["label"], label["data"], label["evidence"])
        reviewed += 1
    assert reviewed == 6
    _label_round_trip(store, tmp_path, run_id, "laissez_faire", "attempts.csv", "characters.csv")


def test_intersectional_hand_labels_round_trip(store, tmp_path):
    probe = get_probe("intersectional_sdeg")
    run_id = generated(store, tmp_path, "intersectional_sdeg", NastyRoles(), attempts=3, sample=4)
    items = {r["item"]: r["metadata"] for r in store.run_items(run_id)}
    auto = store.labels(run_id, "auto")
    for a in store.attempts(run_id)[:5]:
        answers = auto[a["id"]]["data"]["answers"]
        qid = next(iter(answers))
        from gbdesk.studies.intersectional.probe import questions_of

        options = next(q["options"] for q in questions_of(items[a["item"]]) if str(q["id"]) == qid)
        label = probe.capabilities.labelling.human_label(
            a["response"], items[a["item"]], json.dumps({qid: options[-1]}), "ana")  # fmt: skip
        store.add_human_label(a["id"], "ana", label["label"], label["data"])
    _label_round_trip(store, tmp_path, run_id, "intersectional_sdeg", "answers.csv", "answers.csv")


# -- every file of every probe's export --------------------------------------------------------
@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict:
    """One run of each probe (with a coding for codes.csv), exported."""
    from gbdesk.people import coding
    from gbdesk.store import Store
    from tests.intersectional_fakes import DatasetBackend

    folder = tmp_path_factory.mktemp("every-export")
    db = folder / "db.sqlite"
    runs = {}
    with Store(db) as store:
        runs["inventories"] = generated(store, folder, "inventories", FakeBackend(NASTY), limit=6)
        runs["laissez_faire"] = generated(
            store, folder, "laissez_faire", FakeBackend(plain(recorded_laissez_faire())), sample=6
        )
        runs["globalbias_apx"] = _apx_run(store, folder)
        runs["globalbias_profiles"] = generated(
            store, folder, "globalbias_profiles", FakeBackend(_profile_texts(1)), sample=6,
            names_per_group=1,
        )  # fmt: skip
        runs["intersectional_sdeg"] = generated(
            store, folder, "intersectional_sdeg", RoleBackend(), attempts=2, sample=3
        )
        model = fake_model(store, folder)
        backend = DatasetBackend()
        elicit = plan_run(store, "intersectional_elicit", model, groups="White;women,Black;men")
        execute_run(store, elicit, backend_factory=lambda m, g: backend)
        runs["intersectional_elicit"] = elicit
        dataset = plan_run(store, "intersectional_filter", model, elicitation=elicit)
        execute_run(store, dataset, backend_factory=lambda m, g: backend)
        runs["intersectional_filter"] = dataset
        coding.draw_selection(store, runs["laissez_faire"], per_category=2, seed=1)
        key = coding.add_code(store, runs["laissez_faire"], "a code")
        first = coding.coding_items(store, runs["laissez_faire"])[0]
        coding.save_coding(store, first.attempt_id, "ana", [key])
        files = {
            probe: export_run_csv(store, [run_id], folder / f"export-{probe}")
            for probe, run_id in runs.items()
        }
    return {"db": db, "runs": runs, "files": files}


EVERY = [
    (probe, name)
    for probe, names in {
        "inventories": ["attempts.csv", "metrics.csv", "genderbench_normalized.csv"],
        "laissez_faire": ["attempts.csv", "metrics.csv", "characters.csv", "codes.csv",
                          "codebook.csv"],
        "globalbias_apx": ["attempts.csv", "metrics.csv", "associations.csv", "scores.csv"],
        "globalbias_profiles": ["attempts.csv", "metrics.csv", "profiles.csv"],
        "intersectional_sdeg": ["attempts.csv", "metrics.csv", "answers.csv", "sdeg_cells.csv"],
        "intersectional_elicit": ["attempts.csv", "metrics.csv", "triples.csv"],
        "intersectional_filter": ["attempts.csv", "metrics.csv", "stereotypes.csv"],
    }.items()
    for name in names
]  # fmt: skip


def test_every_export_file_is_listed(exports):
    written = {(p, f.name) for p, files in exports["files"].items() for f in files}
    assert written == set(EVERY)
    for probe, name in EVERY:
        assert name in get_probe(probe).capabilities.exporting.files, (probe, name)


@pytest.mark.parametrize("command", ["import", "import-labels"])
@pytest.mark.parametrize(("probe", "name"), EVERY, ids=[f"{p}-{n}" for p, n in EVERY])
def test_finding_8_every_export_file_goes_in_or_says_which_to_use(
    exports, tmp_path, capsys, probe, name, command
):
    """Read by the command that fits it, or refused in one line naming the file to use."""
    import shutil

    db = tmp_path / "db.sqlite"
    shutil.copyfile(exports["db"], db)
    path = next(f for f in exports["files"][probe] if f.name == name)
    if command == "import":
        args = ["import", "--probe", probe, "--file", str(path)]
    else:
        args = ["import-labels", str(exports["runs"][probe]), "--file", str(path), "--rater", "zed"]
    code = main([*args, "--db", str(db)])
    err = capsys.readouterr().err
    if command in get_probe(probe).capabilities.exporting.files[name]:
        assert code == 0, err
        return
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "unexpected" not in err, err
    readers = [f for f, c in get_probe(probe).capabilities.exporting.files.items() if command in c]
    assert any(f in err for f in readers) or "reads no file" in err or "dataset" in err, err
