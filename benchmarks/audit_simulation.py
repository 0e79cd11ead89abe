"""Simulated audits of known truth: are decided verdicts right, do the intervals hold at
every look, and does the two-look audit decide more than a fixed plan?

Each simulated audit runs five GenderBench probes (direct: a rate; discrimination_tamkin:
a difference and a max gap; bbq: a rate; inventories: rates and |0.5 − rate| on a pool
of 149 items; relationship_levy: a difference and its |·|) under simulated models of
known truth (`benchmarks/worlds.py`): the real harness items, a random stratified draw
of them per audit (`redraw`, as the audit's `draw_order`), labels drawn from the world's
probabilities, and gbdesk's own code for everything else — the metric calculators, the
audit's look verdicts (`look_verdicts` with `metric_intervals`), the design's sizes
(`gbdesk.analysis.audit_design`) and the earlier grid's scheduler (`next_step`).
Time is simulated: an item costs its answers (prompts × attempts) at one second each.

* **Paired.** Each (audit, probe) has one answer sequence drawn before any plan runs
  (seeded from blake2b of its name: no salted `hash()`); every plan reads its prefix.
* **Exact truths** (`World.truth`): 1.1.0's formulas on the world's probabilities.
* **Worlds.** Built in: for every marked metric, truths at each interior band edge, at
  ±0.005 from it and at the bound 0, with constant items, and the edge and 0 again with
  items whose probabilities vary (Beta, `spread=8`); each audit takes the next world of
  each probe. The default budget lets inventories reach its whole pool (n = N).
  ``--world PROBE:KEY=VALUE[,KEY=VALUE…]`` (repeatable; keys in `benchmarks/worlds.py`:
  direct ``fail``; discrimination_tamkin ``base``, ``gap``, ``nb``; bbq ``stereo``,
  ``anti``; inventories ``base``, ``pull``; relationship_levy ``man``; every probe
  ``spread``) replaces them: the probes named are simulated, on those worlds.
* **Plans**, on the same answers: ``fixed`` — the budget shared evenly, one look at
  α = 0.05; ``grid`` — the earlier design (plan version 2: doublings up to four times
  what the budget buys, α spent as k² plus an end-look share, `next_step`); ``two-look``
  — the audit's design (version 3: first looks, the probes unlikely to be decided
  stopped, final looks, a final look on the same answers where no more were bought).
  A step the budget cannot pay for is cut where it runs out, and looked at with its
  target's level, as the workflow does. ``--plans`` adds variants of the design,
  ``two-look@CHANCE[:SHARE]`` (its `FUTILE_CHANCE` and `FIRST_SHARE`), e.g.
  ``--plans fixed,two-look,two-look@0.2,two-look@0.1:0.1``.

Printed (``--json``: one JSON value): per plan and world, decided, wrong, its one-sided
95 % Clopper–Pearson upper bound, the last interval's and every look's coverage,
answers per decided verdict; per plan the paired difference in decided verdicts per
audit against ``fixed`` with its SE; per look level the miss rate against its α; 1.1.0's
own 95 % interval (bootstrap, 1,000 resamples) missing at n = 10, 20, 40, 80, 160; per
audit the share with some interval missing and with some decided verdict wrong; the α
accounting per probe (each look's α, the share on looks the budget cannot reach); and
the gate: two-look decides more than fixed (difference > 2 SE), wrong ≤ fixed's upper
bound, every-look coverage ≥ 95 % per metric in every world — a shortfall is named, and
called significant when its own upper bound is below 95 %.

    nice python benchmarks/audit_simulation.py                 # 500 audits, ≤ 30 min
    python benchmarks/audit_simulation.py --audits 100 --gb110 0
    python benchmarks/audit_simulation.py --world direct:fail=0.047 \\
        --world discrimination_tamkin:gap=0 --world inventories:base=0.55,pull=0.025 --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.stats import beta  # noqa: E402

from benchmarks.worlds import (  # noqa: E402
    EDGE_SPREAD,
    World,
    parse_world,
    pool_items,
    redraw,
    solve,
    targets,
    unit,
)
from gbdesk.analysis import audit_design  # noqa: E402
from gbdesk.analysis.audit_rounds import Track, first_round, metric_states, next_step  # noqa: E402
from gbdesk.analysis.audit_verdicts import look_verdicts  # noqa: E402
from gbdesk.contract import get_probe  # noqa: E402
from gbdesk.maths.sequential import Looks, look_sizes  # noqa: E402
from gbdesk.maths.verdicts import MIN_ITEMS, allowed_marks  # noqa: E402
from gbdesk.workflows.audit import REACH_MARGIN  # noqa: E402

PROBES = ("direct", "discrimination_tamkin", "bbq", "inventories", "relationship_levy")
#: the plans compared (``--plans``; a variant of the design: ``two-look@CHANCE[:SHARE]``,
#: its `FUTILE_CHANCE` and `FIRST_SHARE`)
PLANS: tuple[str, ...] = ("fixed", "grid", "two-look")
#: simulated seconds of one answer
ANSWER_S = 1.0
#: the default budget (simulated seconds): inventories' even share reaches its pool
BUDGET_S = 9000.0
#: 1.1.0's 95 % interval is measured at these sizes
GB_SIZES = (10, 20, 40, 80, 160)


def seed_of(*parts: Any) -> int:
    """A stable seed from the parts' text (blake2b, the same in every process)."""
    return int(unit("|".join(map(str, parts))) * 2**63)


def built_in_worlds(probe: str) -> list[tuple[str, World]]:
    """(what, world): each marked metric's truths at every interior edge, ±0.005 and 0
    (constant items), at the edges and 0 with varying items, and in the middle of each
    band (the audits an adaptive plan can stop early); mirrored truths (a negative gap, a
    masculine rate below 0.5) are left to their positive twins."""
    out, seen = [], set()
    definitions = get_probe(probe).mark_definitions
    for metric in definitions:
        for what, target in targets(probe, metric):
            if target < 0 or (metric == "masculine_rate" and target < 0.5):
                continue
            if "0.010" in what:
                continue
            spreads = (0.0, EDGE_SPREAD) if ("+" not in what and "-" not in what) else (0.0,)
            for spread in spreads:
                w = solve(probe, metric, target, spread)
                if w is not None and w.spec not in seen:
                    seen.add(w.spec)
                    out.append((f"{metric} {what}{' varying' if spread else ''}", w))
        for lo, hi in sorted(b for bands in definitions[metric].ranges.values() for b in bands):
            middle = round((lo + hi) / 2, 6)
            if middle < 0 or (metric == "masculine_rate" and middle < 0.5):
                continue
            w = solve(probe, metric, middle, 0.0)
            if w is not None and w.spec not in seen:
                seen.add(w.spec)
                out.append((f"{metric} middle {middle:g}", w))
    return out


def cost_per_item(probe: str) -> float:
    item = pool_items(probe)[0]
    return max(1, len(item.prompts or ())) * get_probe(probe).default_attempts * ANSWER_S


def first_size(probe: str) -> int:
    """The design's first size before the even share: 10, at least one per group."""
    p = get_probe(probe)
    groups = len({p.capabilities.audit.balance_key(i.metadata) for i in pool_items(probe)})
    return min(len(pool_items(probe)), max(MIN_ITEMS, groups))


@dataclass
class Sequence_:
    """One (audit, probe)'s answers, drawn once; every plan reads a prefix."""

    what: str
    world: World
    results: list[Any]


@dataclass
class Look:
    alpha: float
    covered: dict[str, bool]


@dataclass
class ProbeOutcome:
    """One plan's audit of one probe: its reported verdicts and every look."""

    verdicts: list[dict[str, Any]] = field(default_factory=list)
    looks: list[Look] = field(default_factory=list)
    items: int = 0

    def answers(self, probe: str) -> int:
        return int(self.items * cost_per_item(probe) / ANSWER_S)


def _covers(ci: Any, t: float) -> bool:
    lo, hi = (math.nan, math.nan) if ci is None or None in ci else ci
    return math.isfinite(lo) and lo - 1e-12 <= t <= hi + 1e-12


class ProbeRun:
    """A probe's looks within one plan: `look(n_target, n_answered, looks)`."""

    def __init__(self, seq: Sequence_):
        self.seq, self.probe = seq, get_probe(seq.world.probe)
        self.pool = len(pool_items(seq.world.probe))
        self.out = ProbeOutcome()

    def look(self, target: int, answered: int, looks: Any) -> list[Any]:
        results = self.seq.results[:answered]
        verdicts = look_verdicts(
            self.probe, results, None, looks, answered, resamples=0, items=target,
            pool=self.pool,
        )  # fmt: skip
        truth = self.seq.world.truth()
        covered = {v.metric: _covers(v.ci, truth[v.metric]) for v in verdicts}
        self.out.looks.append(Look(looks.alpha_at(target), covered))
        self.out.items = answered
        self.out.verdicts = [v.to_json() for v in verdicts]
        return verdicts


def run_fixed(seqs: dict[str, Sequence_], budget_s: float) -> dict[str, ProbeOutcome]:
    share = budget_s / len(seqs)
    out = {}
    for name, seq in seqs.items():
        run = ProbeRun(seq)
        n = min(run.pool, int(share // cost_per_item(name)))
        if n > 0:
            run.look(n, n, Looks((n,), end_look=False))
        out[name] = run.out
    return out


class _Clock:
    def __init__(self, budget_s: float):
        self.left = budget_s

    def buy(self, name: str, have: int, want: int) -> int:
        """Items up to `want` the seconds left pay for (a cut step stops short)."""
        affordable = int(self.left // cost_per_item(name) + 1e-9)
        got = have + max(0, min(want - have, affordable))
        self.left -= (got - have) * cost_per_item(name)
        return got


def run_grid(seqs: dict[str, Sequence_], budget_s: float) -> dict[str, ProbeOutcome]:
    """The earlier design (plan version 2), as its workflow ran it."""
    clock, runs, tracks = _Clock(budget_s), {}, {}
    for name, seq in seqs.items():
        runs[name] = ProbeRun(seq)
        first = first_size(name)
        reach = int(REACH_MARGIN * budget_s / cost_per_item(name))
        looks = Looks(look_sizes(first, min(runs[name].pool, max(first, reach))))
        priority = (get_probe(name).capabilities.audit.priority, name)
        tracks[name] = Track(name, looks, cost_per_item(name), 0, [], priority)

    def step(track: Track, size: int) -> None:
        got = clock.buy(track.probe, track.items, size)
        if got <= track.items:
            clock.left = 0.0
            return
        track.items = size  # the plan holds the target; the look takes its level
        verdicts = runs[track.probe].look(size, got, track.looks)
        track.metrics = metric_states(runs[track.probe].probe, verdicts)

    for track, size in first_round(list(tracks.values())):
        if clock.left < cost_per_item(track.probe):
            break
        step(track, size)
    while clock.left > 0:
        chosen = next_step(list(tracks.values()), clock.left)
        if chosen is None:
            break
        step(*chosen)
    return {name: r.out for name, r in runs.items()}


def run_two_look(
    seqs: dict[str, Sequence_], budget_s: float, chance: float = audit_design.FUTILE_CHANCE,
    share: float = audit_design.FIRST_SHARE,
) -> dict[str, ProbeOutcome]:
    """The audit's design (`audit_design`), as `gbdesk.workflows.audit` runs it: first
    looks cheapest first; the open probes none of whose open verdicts has `chance` of
    being decided at what their share reaches stop; the others' final looks, water-filled
    over the seconds left before each step, cheapest step first; a probe left open whose
    share or pool bought no more items gets its final look on the same answers. `share`:
    the first look's share of α."""
    clock, runs, sizes = _Clock(budget_s), {}, {}
    for name, seq in seqs.items():
        runs[name] = ProbeRun(seq)
        even = int(budget_s / len(seqs) / cost_per_item(name))
        sizes[name] = [audit_design.first_look_size(first_size(name), even, runs[name].pool)]
    first: dict[str, list[dict[str, Any]]] = {}
    items, got_ = dict.fromkeys(seqs, 0), dict.fromkeys(seqs, 0)
    for name in sorted(seqs, key=lambda n: (sizes[n][0] * cost_per_item(n), n)):
        got = clock.buy(name, 0, sizes[name][0])
        if got <= 0:
            break
        first_looks = audit_design.TwoLooks(tuple(sizes[name]), first_share=share)
        runs[name].look(sizes[name][0], got, first_looks)
        first[name], items[name], got_[name] = runs[name].out.verdicts, sizes[name][0], got

    def undecided(name: str) -> bool:
        return name in first and any(not v["decided"] for v in first[name])

    z = audit_design.TwoLooks((1,), first_share=share).z
    opened = [n for n in seqs if undecided(n) and items[n] < runs[n].pool]
    reach = audit_design.final_sizes(
        {n: (items[n], runs[n].pool, cost_per_item(n)) for n in opened}, clock.left
    )
    stopped = {
        n for n in opened
        if audit_design.futile(audit_design.open_chances(
            runs[n].probe.mark_definitions, runs[n].probe.capabilities.presentation.metric_bounds,
            first[n], items[n], reach[n], z,
        ), chance)
    }  # fmt: skip

    def open_(name: str) -> bool:
        return (
            undecided(name) and name not in stopped and len(sizes[name]) == 1
            and items[name] < runs[name].pool
        )  # fmt: skip

    while clock.left > 0:
        todo = [n for n in seqs if open_(n)]
        if not todo:
            break
        want = audit_design.final_sizes(
            {n: (items[n], runs[n].pool, cost_per_item(n)) for n in todo}, clock.left
        )
        name = min(todo, key=lambda n: ((want[n] - items[n]) * cost_per_item(n), n))
        for n in todo:
            if want[n] <= items[n]:
                sizes[n].append(items[n])
        if want[name] <= items[name]:
            continue
        sizes[name].append(want[name])
        got = clock.buy(name, items[name], want[name])
        looks = audit_design.TwoLooks(tuple(sizes[name]), first_share=share)
        runs[name].look(want[name], got, looks)
        runs[name].out.verdicts = audit_design.merge_looks(first[name], runs[name].out.verdicts)
        items[name], got_[name] = want[name], got
    for name in seqs:  # the budget or the pool bought no more: the final look on these
        if undecided(name) and name not in stopped and (
            len(sizes[name]) == 1 or sizes[name][1] == sizes[name][0]
        ):
            looks = audit_design.TwoLooks((sizes[name][0], items[name]), first_share=share)
            runs[name].look(items[name], got_[name], looks)
            runs[name].out.verdicts = audit_design.merge_looks(
                first[name], runs[name].out.verdicts
            )
    return {name: r.out for name, r in runs.items()}


RUNNERS = {"fixed": run_fixed, "grid": run_grid, "two-look": run_two_look}


def runner(plan: str) -> Any:
    """The function that runs `plan` on one audit's sequences and budget."""
    if plan in RUNNERS:
        return RUNNERS[plan]
    base, _, spec = plan.partition("@")
    chance, _, share = spec.partition(":")
    try:
        if base != "two-look" or not chance:
            raise ValueError
        c, sh = float(chance), float(share or audit_design.FIRST_SHARE)
    except ValueError:
        raise ValueError(
            f"unknown plan {plan!r}: one of {', '.join(RUNNERS)} or two-look@CHANCE[:SHARE]"
        ) from None
    return lambda seqs, budget_s: run_two_look(seqs, budget_s, c, sh)


def _use_plans(plans: tuple[str, ...]) -> None:
    """The plans every audit runs (here and in each worker process)."""
    global PLANS
    PLANS = tuple(plans)


def sequences(
    audit: int, worlds: dict[str, list[tuple[str, World]]], budget_s: float, seed: int
) -> dict[str, Sequence_]:
    """Each probe's world for this audit (the next of its list) and its answers, drawn
    once for every plan: as many items as the whole budget could buy, at most the pool."""
    out = {}
    for k, (name, options) in enumerate(sorted(worlds.items())):
        what, w = options[(audit + 3 * k) % len(options)]
        n = min(len(pool_items(name)), int(budget_s // cost_per_item(name)))
        draw = random.Random(seed_of(seed, "items", audit, name))
        gen = np.random.default_rng(seed_of(seed, "answers", audit, name))
        out[name] = Sequence_(what, w, w.results(n, gen, items=redraw(name, draw, n)))
    return out


def one_audit(args: tuple[int, dict[str, list[tuple[str, World]]], float, int]) -> dict[str, Any]:
    """Every plan on one audit's answers: per plan, per probe, its outcome."""
    audit, worlds, budget_s, seed = args
    seqs = sequences(audit, worlds, budget_s, seed)
    return {
        "audit": audit,
        "worlds": {n: (s.what, s.world.spec) for n, s in seqs.items()},
        "plans": {plan: runner(plan)(seqs, budget_s) for plan in PLANS},
    }


def upper_bound(k: int, n: int, alpha: float = 0.05) -> float:
    """One-sided 1 − `alpha` Clopper–Pearson upper bound of a rate k / n."""
    if n == 0 or k >= n:
        return 1.0
    return float(beta.ppf(1 - alpha, k + 1, n - k))


def _cell() -> dict[str, Any]:
    return {"verdicts": 0, "decided": 0, "wrong": 0, "covered_last": 0, "covered_every": 0,
            "answers": 0}  # fmt: skip


def summarise(audits: list[dict[str, Any]], worlds: dict[str, list[tuple[str, World]]]) -> dict:
    """The figures of the module docstring from `one_audit`s."""
    specs = {w.spec: w for options in worlds.values() for _, w in options}
    per: dict[str, dict[str, dict[str, Any]]] = {p: defaultdict(_cell) for p in PLANS}
    looks: dict[str, dict[str, list[int]]] = {p: defaultdict(lambda: [0, 0]) for p in PLANS}
    decided_per_audit = {p: [] for p in PLANS}
    some_miss, some_wrong = defaultdict(int), defaultdict(int)
    for a in audits:
        for plan in PLANS:
            count, missed, wrong_any = 0, False, False
            for name, out in a["plans"][plan].items():
                what, spec = a["worlds"][name]
                w = specs[spec]
                truth = w.truth()
                definitions = get_probe(name).mark_definitions
                for look in out.looks:
                    for m, ok in look.covered.items():
                        cell = looks[plan][f"{name}·{m} α={look.alpha:.4g}"]
                        cell[0] += 1
                        cell[1] += not ok
                        missed |= not ok
                for v in out.verdicts or [{"metric": m, "decided": False} for m in definitions]:
                    m = v["metric"]
                    t = truth[m]
                    right = allowed_marks(definitions[m], (t, t))
                    wrong = bool(v.get("decided")) and v["marks"][0] not in right
                    every = bool(out.looks) and all(lk.covered.get(m, False) for lk in out.looks)
                    cell = per[plan][f"{name}·{m} | {what} | {spec}"]
                    cell["verdicts"] += 1
                    cell["decided"] += bool(v.get("decided"))
                    cell["wrong"] += wrong
                    cell["covered_last"] += _covers(v.get("ci"), t)
                    cell["covered_every"] += every
                    cell["answers"] += out.answers(name) / max(1, len(definitions))
                    count += bool(v.get("decided"))
                    wrong_any |= wrong
            decided_per_audit[plan].append(count)
            some_miss[plan] += missed
            some_wrong[plan] += wrong_any
    return _figures(per, looks, decided_per_audit, some_miss, some_wrong, len(audits))


def _rates(cell: dict[str, Any]) -> dict[str, Any]:
    n, d = cell["verdicts"], cell["decided"]
    return {
        "verdicts": n, "decided": d, "wrong": cell["wrong"],
        "wrong_upper": round(upper_bound(cell["wrong"], d), 5),
        "coverage_last": round(cell["covered_last"] / max(1, n), 5),
        "coverage_every_look": round(cell["covered_every"] / max(1, n), 5),
        "coverage_every_upper": round(upper_bound(cell["covered_every"], n), 5),
        "answers_per_decided": round(cell["answers"] / d, 1) if d else None,
    }  # fmt: skip


def _figures(per, looks, decided_per_audit, some_miss, some_wrong, audits: int) -> dict:
    out: dict[str, Any] = {"audits": audits, "plans": {}}
    fixed = np.array(decided_per_audit["fixed"], dtype=float)
    for plan in PLANS:
        total = _cell()
        for cell in per[plan].values():
            for k in total:
                total[k] += cell[k]
        diff = np.array(decided_per_audit[plan], dtype=float) - fixed
        se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.nan
        out["plans"][plan] = {
            **_rates(total),
            "decided_share": round(total["decided"] / max(1, total["verdicts"]), 5),
            "wrong_share": round(total["wrong"] / max(1, total["decided"]), 5),
            "paired_vs_fixed": {"mean": round(float(diff.mean()), 4), "se": round(se, 4)},
            "audits_with_some_miss": round(some_miss[plan] / max(1, audits), 4),
            "audits_with_some_wrong": round(some_wrong[plan] / max(1, audits), 4),
            "worlds": {k: _rates(c) for k, c in sorted(per[plan].items())},
            "looks": {
                k: {
                    "looks": n,
                    "misses": m,
                    "miss": round(m / n, 5),
                    "alpha": _alpha_of(k),
                    "miss_over_alpha": round(m / n / _alpha_of(k), 3),
                }
                for k, (n, m) in sorted(looks[plan].items())
            },
        }
    return out


def _alpha_of(key: str) -> float:
    return float(key.rsplit("α=", 1)[1])


def alpha_accounting(names: list[str], budget_s: float) -> dict[str, Any]:
    """Per plan and probe: each look's α and the share of α on looks the budget cannot
    reach (a grid size the whole budget would not buy; the grid's end-look share, which
    the workflow never uses: a cut step takes its target's level)."""
    out: dict[str, Any] = {}
    for name in names:
        reach = int(budget_s // cost_per_item(name))
        pool = len(pool_items(name))
        first = first_size(name)
        grid = Looks(look_sizes(first, min(pool, max(first, int(REACH_MARGIN * reach)))))
        alphas = [grid.alpha_at(n) for n in grid.sizes]
        unreachable = sum(a for n, a in zip(grid.sizes, alphas, strict=True) if n > reach)
        end = grid.alpha - sum(alphas)
        two = audit_design.TwoLooks((1,))
        out[name] = {
            "fixed": {"looks": [0.05], "unreachable": 0.0},
            "grid": {
                "sizes": list(grid.sizes), "looks": [round(a, 5) for a in alphas],
                "end_look": round(end, 5),
                "unreachable": round((unreachable + end) / grid.alpha, 4),
            },
            "two-look": {"looks": [round(two.alpha1, 6), round(two.alpha2, 6)], "unreachable": 0.0},
        }  # fmt: skip
    return out


def gb110_misses(names: list[str], reps: int, seed: int, workers: int = 1) -> dict[str, Any]:
    """1.1.0's own 95 % interval (its bootstrap: 1,000 resamples, seed 123, normal fit)
    missing the truth at n = `GB_SIZES`, over `reps` answer sets of each built-in world
    at an edge exactly or at 0 (constant items)."""
    jobs = [(name, n, reps, seed) for name in names for n in GB_SIZES
            if n <= len(pool_items(name))]  # fmt: skip
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            done = list(pool.map(_gb110_one, jobs))
    else:
        done = [_gb110_one(j) for j in jobs]
    out: dict[str, Any] = {}
    for (name, n, _, _), miss in zip(jobs, done, strict=True):
        for m, rate in miss.items():
            out.setdefault(f"{name}·{m}", {})[str(n)] = rate
    return out


def _gb110_one(job: tuple[str, int, int, int]) -> dict[str, float]:
    name, n, reps, seed = job
    probe = get_probe(name)
    chosen = [w for what, w in built_in_worlds(name) if "+" not in what.split()[-1]
              and "-" not in what.split()[-1] and "varying" not in what
              and "middle" not in what]  # fmt: skip
    miss: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for w in chosen:
        gen = np.random.default_rng(seed_of(seed, "gb110", w.spec, n))
        draw = random.Random(seed_of(seed, "gb110 items", w.spec, n))
        truth = w.truth()
        for _ in range(reps):
            values = probe.metrics(w.results(n, gen, items=redraw(name, draw, n)))
            for m in probe.mark_definitions:
                miss[m][0] += 1
                miss[m][1] += not _covers(tuple(values[m].ci), truth[m])
    return {m: round(k / max(1, t), 4) for m, (t, k) in miss.items()}


def gate(s: dict[str, Any]) -> dict[str, Any]:
    """The issue's gate: two-look decides more than fixed (> 2 SE), wrong ≤ fixed's
    upper bound, every-look coverage ≥ 95 % per metric per world (shortfalls named)."""
    two, fixed = s["plans"]["two-look"], s["plans"]["fixed"]
    diff = two["paired_vs_fixed"]
    cells = max(1, len(two["worlds"]))  # Bonferroni over the metric-world cells tested
    shortfalls = []
    for k, c in two["worlds"].items():
        if c["coverage_every_look"] >= 0.95:
            continue
        upper = upper_bound(round(c["coverage_every_look"] * c["verdicts"]), c["verdicts"],
                            0.05 / cells)  # fmt: skip
        shortfalls.append({
            "world": k, "coverage_every_look": c["coverage_every_look"],
            "verdicts": c["verdicts"], "upper": round(upper, 4),
            "cause": f"significant (its upper bound {100 * upper:.1f} % < 95 %, Bonferroni "
            f"over {cells} cells)" if upper < 0.95 else "within sampling error",
        })  # fmt: skip
    return {
        "decides_more": bool(diff["mean"] > 2 * diff["se"]),
        "wrong_within_fixed_upper": bool(two["wrong_share"] <= fixed["wrong_upper"]),
        "coverage": not any(x["cause"].startswith("significant") for x in shortfalls),
        "shortfalls": shortfalls,
    }


def table(s: dict[str, Any]) -> str:
    lines = [
        f"{'plan':9s} {'decided':>15s} {'wrong (upper)':>16s} {'every-look cov':>14s} "
        f"{'last cov':>8s} {'ans/decided':>11s} {'vs fixed /audit':>16s} {'some miss':>9s} "
        f"{'some wrong':>10s}"
    ]
    for plan, p in s["plans"].items():
        d = p["paired_vs_fixed"]
        lines.append(
            f"{plan:9s} {p['decided']:>6,}/{p['verdicts']:<6,} {100 * p['decided_share']:4.1f}%"
            f"  {p['wrong']:>3} {100 * p['wrong_share']:4.2f}% ({100 * p['wrong_upper']:.2f}%)"
            f" {100 * p['coverage_every_look']:>13.1f}% {100 * p['coverage_last']:>7.1f}%"
            f" {p['answers_per_decided'] or 0:>11,.0f} {d['mean']:>+8.3f} ± {d['se']:.3f}"
            f" {100 * p['audits_with_some_miss']:>8.1f}% {100 * p['audits_with_some_wrong']:>9.1f}%"
        )
    return "\n".join(lines)


def report(s: dict[str, Any]) -> str:
    """The printed figures (the table, per-look misses, 1.1.0's misses, α, the gate)."""
    out = [table(s), "", "every-look coverage per metric, pooled over its worlds:"]
    for plan in PLANS:
        pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for k, c in s["plans"][plan]["worlds"].items():
            cell = pooled[k.split(" | ")[0]]
            cell[0] += c["verdicts"]
            cell[1] += round(c["coverage_every_look"] * c["verdicts"])
        out.append(f"  {plan}: " + "; ".join(
            f"{m} {100 * k / max(1, n):.1f}%" for m, (n, k) in sorted(pooled.items())
        ))  # fmt: skip
    out += ["", "per look: misses against Σα over the looks (pooled over worlds; "
           "per look level in --json)"]  # fmt: skip
    for plan in PLANS:
        pooled: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
        for k, c in s["plans"][plan]["looks"].items():
            cell = pooled[k.split(" α=")[0]]
            cell[0] += c["looks"]
            cell[1] += c["misses"]
            cell[2] += c["looks"] * c["alpha"]
        out.append(f"  {plan}: " + "; ".join(
            f"{m} {k:.0f}/{n:.0f} (Σα {e:.1f}: ×{k / e if e else 0:.2f})"
            for m, (n, k, e) in sorted(pooled.items())
        ))  # fmt: skip
    if s.get("gb110"):
        out.append("1.1.0's 95 % interval: miss rate at n = " + ", ".join(map(str, GB_SIZES)))
        for k, by_n in s["gb110"].items():
            out.append(f"  {k:44s} " + "  ".join(f"{n}: {100 * v:5.1f}%" for n, v in by_n.items()))
    out.append("α accounting (share of α on looks the budget cannot reach):")
    for name, plans in s["alpha"].items():
        g = plans["grid"]
        out.append(f"  {name:24s} grid {g['sizes']} α {g['looks']} + end {g['end_look']}: "
                   f"{100 * g['unreachable']:.0f}% unreachable; two-look "
                   f"{plans['two-look']['looks']}: 0%")  # fmt: skip
    g = s["gate"]
    out.append(
        f"GATE decides more than fixed (> 2 SE): {g['decides_more']}; wrong ≤ fixed's upper "
        f"bound: {g['wrong_within_fixed_upper']}; every-look coverage ≥ 95 %: {g['coverage']}"
    )
    for x in g["shortfalls"]:
        out.append(f"  shortfall {x['world']}: {100 * x['coverage_every_look']:.1f}% of "
                   f"{x['verdicts']} — {x['cause']}")  # fmt: skip
    return "\n".join(out)


def simulate(
    audits: int, budget_s: float, worlds: dict[str, list[tuple[str, World]]], seed: int = 1,
    gb_reps: int = 0, workers: int = 1,
) -> dict[str, Any]:  # fmt: skip
    """Every figure of the module docstring for `audits` paired audits."""
    jobs = [(a, worlds, budget_s, seed) for a in range(audits)]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, initializer=_use_plans, initargs=(PLANS,)) as pool:
            done = list(pool.map(one_audit, jobs, chunksize=4))
    else:
        done = [one_audit(j) for j in jobs]
    s = summarise(done, worlds)
    s["budget_s"] = budget_s
    s["worlds"] = {n: [f"{what} | {w.spec}" for what, w in ws] for n, ws in worlds.items()}
    s["alpha"] = alpha_accounting(sorted(worlds), budget_s)
    s["gb110"] = gb110_misses(sorted(worlds), gb_reps, seed, workers) if gb_reps else {}
    s["gate"] = gate(s)
    return s


def worlds_from(specs: list[str] | None) -> dict[str, list[tuple[str, World]]]:
    """The built-in worlds, or those of `--world` (grouped by probe)."""
    if not specs:
        return {name: built_in_worlds(name) for name in PROBES}
    out: dict[str, list[tuple[str, World]]] = defaultdict(list)
    for spec in specs:
        w = parse_world(spec)
        out[w.probe].append((w.spec, w))
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=500)
    ap.add_argument("--budget", type=float, default=BUDGET_S, help="simulated seconds")
    ap.add_argument("--world", action="append", metavar="PROBE:KEY=VALUE,…")
    ap.add_argument("--gb110", type=int, default=15, help="answer sets per world for 1.1.0's")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON value")
    ap.add_argument(
        "--plans", default=",".join(PLANS),
        help="plans to compare (fixed and two-look always): fixed, grid, two-look, "
        "two-look@CHANCE[:SHARE] (a variant's FUTILE_CHANCE and FIRST_SHARE)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    plans = tuple(dict.fromkeys(["fixed", "two-look", *args.plans.split(",")]))
    try:
        for plan in plans:
            runner(plan)
    except ValueError as exc:
        ap.error(str(exc))
    _use_plans(plans)
    started, t = time.perf_counter(), os.times()
    cpu = t.user + t.system + t.children_user + t.children_system
    try:
        worlds = worlds_from(args.world)
    except ValueError as exc:
        ap.error(str(exc))
    s = simulate(args.audits, args.budget, worlds, args.seed, args.gb110, args.workers)
    s["seconds"] = round(time.perf_counter() - started, 1)
    t = os.times()  # this process and its finished workers (--workers N)
    s["cpu_seconds"] = round(t.user + t.system + t.children_user + t.children_system - cpu, 1)
    if args.json:
        print(json.dumps(s))
    else:
        print(f"{args.audits:,} paired audits of {', '.join(sorted(worlds))} "
              f"({sum(map(len, worlds.values()))} worlds), budget {args.budget:,.0f} s — "
              f"{s['seconds']:.0f} s wall, {s['cpu_seconds']:.0f} s CPU")  # fmt: skip
        print(report(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
