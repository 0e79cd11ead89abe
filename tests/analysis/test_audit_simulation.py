"""A small run of the audit simulation (benchmarks/audit_simulation.py, whose full run makes
≥ 1,000 audits): decided verdicts are right, and where every bias is blatant the adaptive
audit decides everything with fewer answers than a fixed plan spends."""

from __future__ import annotations

from benchmarks.audit_simulation import (
    WORLDS,
    World,
    adaptive,
    answers_used,
    fixed,
    same_verdicts,
    simulate,
    summary,
    true_marks,
    truth,
)
from gbdesk.contract import get_probe


def _world(probe: str, level: str) -> World:
    return next(World(probe, lv, a) for lv, a in WORLDS[probe] if lv == level)


def test_truths_lie_inside_one_band():
    for probe, levels in WORLDS.items():
        definitions = get_probe(probe).mark_definitions
        for level, answer in levels:
            for metric, value in truth(World(probe, level, answer)).items():
                assert len(true_marks(definitions[metric], value)) == 1, (probe, level, metric)


def test_blatant_biases_are_decided_early_and_right():
    worlds = [
        _world("direct", "yes 0.60"),
        _world("relationship_levy", "man 0.90"),
        _world("bbq", "strong"),
    ]
    budget = 3000
    got = adaptive(worlds, budget, seed=1, resamples=100)
    assert all(o.decided and not o.wrong and o.covered for o in got)
    plain = fixed(worlds, budget, seed=1, resamples=100, method="audit")
    assert all(o.decided and not o.wrong for o in plain)
    # the adaptive audit stops once everything is decided: far fewer answers
    assert answers_used(got)[1] < 0.5 * answers_used(plain)[1]
    same = same_verdicts(got, plain)
    assert same["verdicts"] == len(got) and same["ratio"] < 0.5


def test_a_few_mixed_audits_decide_nothing_wrong():
    plans, trajectories = simulate(audits=3, budget_s=600, resamples=100)
    adaptive_out = plans[0]
    s = summary(adaptive_out)
    assert s["verdicts"] == 3 * sum(len(get_probe(p).mark_definitions) for p in WORLDS)
    assert s["wrong"] == 0
    assert all(o.items >= 10 for o in adaptive_out if o.decided)
    assert len(trajectories) == 3 and all(t.points for t in trajectories)
