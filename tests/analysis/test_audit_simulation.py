"""A seconds-long run of the audit simulation (benchmarks/audit_simulation.py, whose
default run makes 500 paired audits): paired answers, exact truths, stable seeds, worlds
from the command line, the JSON figures and the gate."""

from __future__ import annotations

import json

import pytest

from benchmarks.audit_simulation import (
    PLANS,
    built_in_worlds,
    main,
    one_audit,
    seed_of,
    sequences,
    simulate,
    worlds_from,
)
from benchmarks.worlds import interior_edges
from gbdesk.contract import get_probe

BLATANT = ["direct:fail=0.8", "relationship_levy:man=0.95", "bbq:stereo=0.7,anti=0.05"]


def test_seeds_are_stable_and_every_plan_reads_the_same_answers():
    assert seed_of(1, "answers", 0, "direct") == seed_of(1, "answers", 0, "direct")
    worlds = worlds_from(BLATANT)
    a, b = sequences(3, worlds, 600, 1), sequences(3, worlds, 600, 1)
    for name in worlds:
        assert [r.labels for r in a[name].results] == [r.labels for r in b[name].results]
        assert [r.key for r in a[name].results] == [r.key for r in b[name].results]
    other = sequences(4, worlds, 600, 1)
    assert [r.labels for r in other["direct"].results] != [r.labels for r in a["direct"].results]


def test_built_in_worlds_put_exact_truths_at_the_edges_and_at_zero():
    worlds = built_in_worlds("direct")
    truths = {what: w.truth()["fail_rate"] for what, w in worlds}
    for edge in interior_edges("direct", "fail_rate"):
        assert truths[f"fail_rate edge {edge:g}"] == pytest.approx(edge, abs=1e-9)
        assert truths[f"fail_rate edge {edge:g}+0.005"] == pytest.approx(edge + 0.005, abs=1e-9)
        assert truths[f"fail_rate edge {edge:g} varying"] == pytest.approx(edge, abs=1e-9)
    assert truths["fail_rate bound 0"] == 0.0
    tamkin = {what for what, _ in built_in_worlds("discrimination_tamkin")}
    assert "max_diff bound 0" in tamkin and "max_diff bound 0 varying" in tamkin


def test_blatant_biases_are_decided_right_by_every_plan_and_the_two_look_stops_early():
    got = one_audit((0, worlds_from(BLATANT), 3000, 1))
    for plan in PLANS:
        for name, out in got["plans"][plan].items():
            assert out.verdicts and all(v["decided"] for v in out.verdicts), (plan, name)
    two, fixed = got["plans"]["two-look"], got["plans"]["fixed"]
    assert all(len(o.looks) == 1 for o in two.values())  # all decided at the first look
    assert sum(o.items for o in two.values()) < 0.5 * sum(o.items for o in fixed.values())


def test_a_small_run_gives_every_figure_and_the_gate(capsys):
    s = simulate(3, 600, worlds_from(["direct:fail=0.047", "inventories:base=0.55,pull=0.025"]),
                 gb_reps=1)  # fmt: skip
    assert set(s["plans"]) == set(PLANS)
    for plan in PLANS:
        p = s["plans"][plan]
        assert p["verdicts"] == 3 * (1 + len(get_probe("inventories").mark_definitions))
        assert 0 <= p["wrong"] <= p["decided"] <= p["verdicts"]
        assert p["wrong_upper"] >= p["wrong_share"]
        assert {"mean", "se"} <= set(p["paired_vs_fixed"])
        for cell in p["worlds"].values():
            assert {"decided", "wrong", "wrong_upper", "coverage_last", "coverage_every_look",
                    "answers_per_decided"} <= set(cell)  # fmt: skip
        assert all(c["alpha"] > 0 for c in p["looks"].values())
    assert s["plans"]["fixed"]["paired_vs_fixed"]["mean"] == 0
    assert {"decides_more", "wrong_within_fixed_upper", "coverage", "shortfalls"} <= set(s["gate"])
    assert s["alpha"]["direct"]["two-look"]["unreachable"] == 0.0
    assert s["alpha"]["direct"]["grid"]["unreachable"] > 0.3  # the grid's unused α
    assert set(s["gb110"]["direct·fail_rate"]) == {"10", "20", "40", "80", "160"}
    assert main(["--audits", "2", "--budget", "400", "--gb110", "0", "--json",
                 "--world", "discrimination_tamkin:gap=0"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert list(data["worlds"]) == ["discrimination_tamkin"] and "gate" in data
    with pytest.raises(SystemExit):
        main(["--world", "direct:nope=1"])
