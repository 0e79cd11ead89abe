"""Where an audit spends its next seconds: the probe whose next look is most likely to
decide a verdict, per second of generation.

Pure (no store, no engine): the audit (`gbdesk.workflows.audit`) and its simulation
(`benchmarks/audit_simulation.py`, tests/analysis/test_audit_rounds.py) drive the same
`Track`s and `next_step`.

* **First round.** Every probe with marked metrics is brought to its first look (the
  first size of its grid, `gbdesk.maths.sequential.Looks`), cheapest first.
* **Then one step at a time.** A step takes one probe to the next size of its grid. The
  candidates are the probes with a marked metric still undecided and a grid size left;
  each gets the chance its next look decides at least one of its undecided metrics
  (`decide_probability`, from the current value and interval, the interval narrowing as
  1/√n) plus a small floor (a probe nothing seems to decide still gets time when nothing
  else can use it), divided by the step's expected seconds. The best step that fits the
  time left is taken; when none fits, the best one (the deadline cuts it).
* A probe whose marked metrics are all decided gets no more time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gbdesk.maths.sequential import Looks, decide_probability, projected_half_width
from gbdesk.maths.stats import MarkDefinition

#: the chance of deciding given to a probe whose value is not measured yet
UNKNOWN_CHANCE = 0.5
#: added to every probe's chance: time goes to an undecided probe even when its next look
#: seems unable to decide (cheapest first) rather than to nothing
CHANCE_FLOOR = 0.01


@dataclass
class MetricState:
    """What a look said of one marked metric (enough to plan the next)."""

    definition: MarkDefinition
    value: float
    ci: tuple[float, float]
    items: int
    decided: bool
    bounds: tuple[float, float] | None = None


def metric_states(probe: Any, verdicts: list[Any]) -> list[MetricState]:
    """The `MetricState`s of a look's `AuditVerdict`s of `probe`."""
    bounds = probe.capabilities.presentation.metric_bounds
    out = []
    for v in verdicts:
        definition = probe.mark_definitions[v.metric]
        out.append(
            MetricState(definition, v.value, v.ci, v.items, v.verdict.decided, bounds(v.metric))
        )
    return out


@dataclass
class Track:
    """One probe of an audit: its grid, how far it got, what it costs and what it says."""

    probe: str
    looks: Looks
    seconds_per_item: float  # expected seconds to answer one more item (every attempt)
    items: int = 0  # items planned so far (the run's items)
    metrics: list[MetricState] = field(default_factory=list)
    priority: tuple[int, str] = (50, "")

    @property
    def started(self) -> bool:
        return self.items > 0

    @property
    def undecided(self) -> list[MetricState]:
        return [m for m in self.metrics if not m.decided]

    @property
    def finished(self) -> bool:
        """Every marked metric decided (after a first look), or no grid size left."""
        if self.started and self.metrics and not self.undecided:
            return True
        return self.looks.next_size(self.items) is None

    def next_size(self) -> int | None:
        return self.looks.next_size(self.items)

    def step_seconds(self) -> float:
        target = self.next_size()
        return math.inf if target is None else (target - self.items) * self.seconds_per_item

    def chance(self) -> float:
        """The chance that the next look decides at least one undecided metric."""
        target = self.next_size()
        if target is None:
            return 0.0
        if not self.started or not self.metrics:
            return UNKNOWN_CHANCE
        missing = 1.0
        z, z_next = self.looks.z_at(self.items), self.looks.z_at(target)
        for m in self.undecided:
            if not (math.isfinite(m.value) and all(math.isfinite(x) for x in m.ci)):
                p = UNKNOWN_CHANCE
            else:
                half = max((m.ci[1] - m.ci[0]) / 2.0, 1e-9)
                # intervals narrow with the items a metric rests on (its support), and
                # change with the next look's level
                support = max(1, m.items)
                more = support * target / max(1, self.items)
                nxt = projected_half_width(half, support, round(more)) * z_next / z
                p = decide_probability(m.definition, m.value, half / z, nxt, m.bounds)
            missing *= 1.0 - p
        return 1.0 - missing

    def score(self) -> float:
        cost = self.step_seconds()
        if not math.isfinite(cost):
            return 0.0
        return (self.chance() + CHANCE_FLOOR) / max(cost, 1e-3)


def first_round(tracks: list[Track]) -> list[tuple[Track, int]]:
    """(track, size) of every track not yet at its first look, cheapest first (then in
    priority order): a budget too small for every first look still measures as many
    probes as it can."""
    todo = [t for t in tracks if t.items < t.looks.sizes[0]]
    todo.sort(key=lambda t: (t.step_seconds(), t.priority))
    return [(t, t.looks.sizes[0]) for t in todo]


def next_step(tracks: list[Track], seconds_left: float) -> tuple[Track, int] | None:
    """The next step (see the module docstring), or None when no probe has anything
    left to decide."""
    candidates = [t for t in tracks if t.started and not t.finished]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda t: (-t.score(), t.priority))
    fitting = [t for t in ranked if t.step_seconds() <= seconds_left]
    best = fitting[0] if fitting else ranked[0]
    size = best.next_size()
    assert size is not None  # not finished
    return best, size


def describe_step(track: Track, size: int) -> dict[str, Any]:
    """A step in words and numbers (progress lines, the audit's log)."""
    return {
        "probe": track.probe,
        "from_items": track.items,
        "to_items": size,
        "expected_s": round((size - track.items) * track.seconds_per_item, 1),
        "chance": round(track.chance(), 3),
    }
