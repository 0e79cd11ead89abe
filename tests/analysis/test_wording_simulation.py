"""The wording report on simulated models of known truth (issue 32): it finds the wording
effect that is there and none where there is none.

Each world is a stand-in model (`tests.wording_fakes`) whose probability of agreeing with a
stereotype under each wording of the direct probe is known; each family is five real runs
(plan, execute, store) of the same items under the five wordings, then `wording_report`.
The thresholds are set from the measured rates (in the comments) with margins, and so
that a broken analysis fails them: the stability rule turned round fails both the world
without an effect and the large one, the test's inequality turned round fails the effects,
and a bootstrap that drew the items independently per wording (not paired) fails the small
effect (it finds 5 or 6 of 12 there, against 10 of 12).
`benchmarks/wording_simulation.py` measures the same rates on hundreds of families."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.analysis.wordings import WordingSpread
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import fake_model
from tests.wording_fakes import (
    NO_EFFECT,
    SENTENCE_EFFECT,
    SMALL_EFFECT,
    WordingBackend,
    WordingWorld,
    run_family,
)

FAMILIES = 12
ITEMS = 80


def _simulate(folder: Path, world: WordingWorld) -> list[WordingSpread]:
    """`FAMILIES` families of `world`, their fail_rate across the wordings."""
    store = Store(folder / "families.sqlite")
    try:
        model = fake_model(store, folder)
        out = []
        for seed in range(FAMILIES):
            report = run_family(store, model, world, items=ITEMS, seed=seed)
            assert report.wordings == [0, 1, 2, 3, 4] and report.items == ITEMS
            out.append(report.spreads["fail_rate"])
        return out
    finally:
        store.close()


@pytest.fixture(scope="module")
def worlds(tmp_path_factory) -> dict[str, list[WordingSpread]]:
    return {
        name: _simulate(tmp_path_factory.mktemp(name), world)
        for name, world in (
            ("none", NO_EFFECT),
            ("large", SENTENCE_EFFECT),
            ("small", SMALL_EFFECT),
        )
    }


def _unstable(spreads: list[WordingSpread]) -> int:
    return sum(s.stable is False for s in spreads)


def _significant(spreads: list[WordingSpread]) -> int:
    return sum(s.p_value is not None and s.p_value < 0.05 for s in spreads)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_no_wording_effect_is_not_found(worlds):
    spreads = worlds["none"]
    assert all(s.stable is not None and s.p_value is not None for s in spreads)
    # measured: 0 of 12 unstable, 0 of 12 with p < 0.05, mean p 0.45, mean share 0.05
    assert _unstable(spreads) <= 2
    assert _significant(spreads) <= 2
    assert _mean([s.p_value for s in spreads]) > 0.25  # type: ignore[misc]
    assert _mean([s.share for s in spreads]) < 0.25  # type: ignore[misc]


def test_a_large_wording_effect_is_found(worlds):
    spreads = worlds["large"]
    # measured: 12 of 12 unstable and with p < 0.05, mean share 0.97, mean range 0.51
    assert _unstable(spreads) >= 11
    assert _significant(spreads) >= 11
    assert _mean([s.share for s in spreads]) > 0.8  # type: ignore[misc]
    for s in spreads:
        by = {v.wording: v for v in s.values}
        assert by[3].ci[0] > by[0].ci[1]  # type: ignore[index]
        assert s.range is not None and s.range > 0.3
        assert "depends on the wording" in s.sentence()


def test_a_small_wording_effect_is_seen_by_the_paired_test(worlds):
    spreads = worlds["small"]
    # measured: 10 of 12 with p < 0.05 (5 or 6 of 12 with unpaired resamples), 4 of 12 unstable
    # (the intervals are per wording, not paired), mean share 0.56
    assert _significant(spreads) >= 8
    assert _mean([s.share for s in spreads]) > 0.3  # type: ignore[misc]
    assert _unstable(spreads) <= _significant(spreads)


def test_wording_0_is_the_plain_run(worlds, tmp_path):
    """Wording 0's value in a family is what a run without wordings gives for the same
    answers (a fresh store: only that run)."""
    store = Store(tmp_path / "plain.sqlite")
    try:
        model = fake_model(store, tmp_path)
        run_id = plan_run(store, "direct", model, limit=ITEMS, seed=0)
        execute_run(store, run_id, backend_factory=lambda _m, _g: WordingBackend(NO_EFFECT))
        plain = compute_metrics(store, run_id, "auto")["fail_rate"]
    finally:
        store.close()
    first = next(v for v in worlds["none"][0].values if v.wording == 0)
    assert first.value == pytest.approx(float(plain.value), abs=0)
    assert first.ci is not None
