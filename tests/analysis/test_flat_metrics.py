"""Metrics from the flat table of label facts equal the metrics from every label's JSON
(the reference path), for automatic and reviewed labels, after an import (rows written
with the labels) and after a back-fill (labels written without rows), and an existing
database gets the table."""

from __future__ import annotations

import json
import math
import random
import sqlite3

import pytest

from gbdesk.analysis.label_accuracy import review_stats
from gbdesk.analysis.results import compute_metrics, extra_results
from gbdesk.store import Store
from gbdesk.store.migrations import MIGRATIONS
from gbdesk.workflows.importer import import_generations
from tests import synthetic


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _assert_same_metrics(store: Store, run_id: int, mode: str) -> dict:
    old = compute_metrics(store, run_id, mode, use_cache=False, flat=False)
    new = compute_metrics(store, run_id, mode, use_cache=False, flat=True)
    assert list(old) == list(new)
    for name in old:
        assert _same(old[name].to_json(), new[name].to_json()), (name, old[name], new[name])
    return new


def _review_some(store: Store, run_id: int, share: float = 0.2, seed: int = 3) -> int:
    """Human labels on a share of the stories: genders forced, names changed, characters
    dropped — every way a reviewer overrides the extractor."""
    rng = random.Random(seed)
    auto = store.labels(run_id, "auto")
    names = ["Maria", "Juan", "Aisha", "Wei", "Emily", "Jamal", None]
    n = 0
    for attempt_id, row in sorted(auto.items()):
        if rng.random() > share:
            continue
        chars = [dict(c) for c in (row["data"] or {}).get("characters", [])]
        for c in chars:
            what = rng.random()
            if what < 0.3:
                c["gender"] = rng.choice(["Female", "Male", "Non-binary", "Unspecified"])
            elif what < 0.6:
                c["name"] = rng.choice(names)
        if chars and rng.random() < 0.2:
            chars = chars[1:]
        store.add_human_label(attempt_id, "tester", "reviewed", {"characters": chars})
        n += 1
    return n


def _lf_run_with_couples(store: Store, n: int, seed: int) -> int:
    """Recorded stories with varied names; those of power-neutral Love prompts are also
    filed under the romantic ones (the recorded stories have no couple), so every metric
    family, romantic pairs included, is computed."""
    from gbdesk.contract import get_probe

    probe = get_probe("laissez_faire")
    items = {i.key: i for i in probe.items(probe.resolve_params())}
    romantic = [
        k
        for k, i in items.items()
        if i.metadata["domain"] == "Love"
        and i.metadata["condition"] == "power-neutral"
        and i.metadata.get("relationship") == "romantic"
    ]
    rng = random.Random(seed)
    rows, counts = [], {}
    for story in synthetic.story_variants(n, seed):
        meta = items[story["item"]].metadata
        key = story["item"]
        if meta["domain"] == "Love" and meta["condition"] == "power-neutral" and rng.random() < 0.7:
            key = rng.choice(romantic)
        attempt = counts.get(key, 0)
        counts[key] = attempt + 1
        rows.append(
            {
                **story,
                "item": key,
                "attempt": attempt,
                "auto_label": probe.label(story["response"], items[key].metadata),
            }
        )
    used = [items[k] for k in items if k in counts]
    run_id = synthetic._create(store, "laissez_faire", used, 1)
    return synthetic._write(store, run_id, rows)


@pytest.fixture(scope="module")
def lf_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("flat") / "lf.sqlite"
    store = Store(path)
    _lf_run_with_couples(store, n=720, seed=5)
    yield store
    store.close()


def test_backfilled_laissez_faire_metrics_equal_the_reference(lf_store):
    store = lf_store
    # written without flat rows (as generation and older databases do): back-filled
    assert store.conn.execute("SELECT COUNT(*) FROM labels WHERE flat IS NULL").fetchone()[0]
    metrics = _assert_same_metrics(store, 1, "auto")
    assert store.conn.execute("SELECT COUNT(*) FROM labels WHERE flat IS NULL").fetchone()[0] == 0
    assert any(k.startswith("racialized_subordination/") for k in metrics)
    assert any(k.startswith("representation/Love/pair/") for k in metrics)
    assert any(k.startswith("subordination/") and "race_gender" in k for k in metrics)
    assert sum(m.value for k, m in metrics.items() if k.startswith("identity/")) >= 0
    assert _same(extra_results(store, 1, "auto", flat=False), extra_results(store, 1, "auto"))
    assert _same(review_stats(store, 1, flat=False).to_json(), review_stats(store, 1).to_json())


def test_reviewed_labels_override_automatic_ones_the_same_way(lf_store):
    store = lf_store
    assert _review_some(store, 1) > 50
    auto = _assert_same_metrics(store, 1, "auto")
    reviewed = _assert_same_metrics(store, 1, "reviewed")
    assert any(
        not math.isclose(auto[k].value, reviewed[k].value)
        for k in auto
        if k in reviewed and not math.isnan(auto[k].value)
    )
    assert _same(
        extra_results(store, 1, "reviewed", flat=False), extra_results(store, 1, "reviewed")
    )
    assert _same(review_stats(store, 1, flat=False).to_json(), review_stats(store, 1).to_json())
    # a second review of the same story replaces the first
    attempt_id = next(iter(store.labels(1, "human")))
    store.add_human_label(attempt_id, "tester", "again", {"characters": []})
    _assert_same_metrics(store, 1, "reviewed")


def test_imported_runs_write_flat_rows_with_their_labels(tmp_path):
    jsonl = synthetic.write_stories_jsonl(tmp_path / "stories.jsonl", 300, seed=2)
    with Store(tmp_path / "db.sqlite") as store:
        run_id = import_generations(store, "laissez_faire", jsonl)["run_id"]
        unflat = store.conn.execute("SELECT COUNT(*) FROM labels WHERE flat IS NULL").fetchone()[0]
        rows = store.conn.execute("SELECT COUNT(*) FROM label_facts").fetchone()[0]
        assert unflat == 0 and rows > 300
        _assert_same_metrics(store, run_id, "auto")


def test_an_unlabelled_story_falls_back_to_the_reference_path(tmp_path):
    """Identity-term counts read every story; a story without a label of the run's
    extractor (e.g. an LLM pass not finished) keeps the reference path."""
    with Store(tmp_path / "db.sqlite") as store:
        run_id = synthetic.laissez_faire_run(store, n=80, seed=1)
        store.update_run_params(run_id, {**store.get_run(run_id)["params"], "extractor": "llm"})
        _assert_same_metrics(store, run_id, "auto")
        first = store.attempts(run_id)[0]["id"]
        store.set_auto_label(first, source="llm/test", label="x", data={"characters": []})
        _assert_same_metrics(store, run_id, "auto")


def test_an_older_database_gets_the_table(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for version, step in enumerate(MIGRATIONS[:4], start=1):
        step(conn)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    with Store(path) as store:
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert {"label_facts", "labels_unflat"} <= names
        run_id = synthetic.laissez_faire_run(store, n=40)
        _assert_same_metrics(store, run_id, "auto")


def test_intersectional_fast_bootstrap_equals_the_reference():
    """Same random stream, same resamples, same intervals (uneven and empty groups,
    unparsed answers, a category no role answered)."""
    from gbdesk.studies.intersectional.stats import bootstrap, fast_bootstrap

    rng = random.Random(1)
    n_options = {str(c): rng.randint(2, 6) for c in range(6)}
    roles = {
        f"g{i}": [
            {
                c: None if rng.random() < 0.1 else f"o{rng.randrange(n)}"
                for c, n in n_options.items()
            }
            for _ in range(rng.choice([1, 3, 17, 17, 40, 300]))
        ]
        for i in range(14)
    }
    roles["empty"] = []
    roles["unparsed"] = [{c: None for c in n_options} for _ in range(5)]
    for group in list(roles)[:3]:
        for r in roles[group]:
            r["5"] = None
    want = bootstrap(roles, n_options, resamples=200, seed=7)
    got = fast_bootstrap(roles, n_options, resamples=200, seed=7)
    assert list(want) == list(got) or set(want) == set(got)
    assert json.dumps(want, sort_keys=True) == json.dumps(got, sort_keys=True)


def test_intersectional_metrics_are_unchanged(tmp_path):
    from gbdesk.contract import get_probe
    from gbdesk.studies.intersectional import stats

    with Store(tmp_path / "db.sqlite") as store:
        run_id = synthetic.intersectional_run(store, roles_per_group=6, groups=20)
        fast = compute_metrics(store, run_id, "auto", use_cache=False)
        probe = get_probe("intersectional_sdeg")
        from gbdesk.analysis.results import item_results

        roles = probe.roles(item_results(store, run_id))
        reference = stats.bootstrap(roles, probe.n_options())
        assert fast["sdeg_overall"].ci == reference["overall"]
        for group in roles:
            assert fast[f"sdeg_group/{group}"].ci == reference[f"group/{group}"]


def test_scoring_metrics_from_the_score_frame_equal_the_reference(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        run_id = synthetic.apx_run(store, items=60, seed=4)
        _assert_same_metrics(store, run_id, "auto")
        assert _same(
            extra_results(store, run_id, "auto", flat=False), extra_results(store, run_id, "auto")
        )


def test_labels_fingerprint_sees_writes_of_another_connection(tmp_path):
    """The fingerprint is kept while the database is unchanged, never longer."""
    path = tmp_path / "db.sqlite"
    with Store(path) as one, Store(path) as two:
        run_id = synthetic.laissez_faire_run(one, n=20)
        before = one.labels_fingerprint(run_id)
        assert one.labels_fingerprint(run_id) == before
        assert one.unlabelled_attempts(run_id, "deterministic/") == []
        attempt_id = two.attempts(run_id)[0]["id"]
        two.add_human_label(attempt_id, "tester", "x", {"characters": []})
        assert one.labels_fingerprint(run_id) != before
        before = one.labels_fingerprint(run_id)
        one.add_human_label(attempt_id, "tester", "y", {"characters": []})
        assert one.labels_fingerprint(run_id) != before


def test_import_labels_in_worker_processes_as_in_one(monkeypatch):
    from gbdesk.contract import get_probe
    from gbdesk.workflows import importer

    probe = get_probe("laissez_faire")
    items = {i.key: i for i in probe.all_items("{prompt}")}
    rows = [(s["response"], items[s["item"]].metadata) for s in synthetic.story_variants(60)]
    monkeypatch.setattr(importer, "PARALLEL_LABELS", 10)
    assert importer.label_all(probe, rows, workers=2) == importer.label_all(probe, rows, 1)
