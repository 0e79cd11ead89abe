"""A stand-in model with a known wording effect, for the `direct` probe: it recognises which
of the probe's wordings a prompt uses (by the wordings' own templates), agrees with the
statement with a known probability that depends on that wording, and answers in that
wording's format ("Yes."/"No." for 0, 1 and 3, "A"/"B" for 2, "agree"/"disagree" for 4).

Deterministic from (prompt, seed): a run's seed depends on the run's seed, the item and the
attempt, the same under every wording. With probability `shared` the answer is drawn from
the item's own uniform number (the same under every wording: the item noise the wordings
share — as with a real model, whose answers follow the statement more than its frame),
else from a number of its own per wording; either way P(agree | wording w) is exactly
`rates[w]`. As a local backend (`WordingBackend`) or behind an OpenAI-compatible
stand-in server (`tests.fakes.FakeOpenAIServer(world.answer)`)."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from gbdesk.analysis.wordings import RESAMPLES, WordingReport, wording_report
from gbdesk.contract import get_probe
from gbdesk.contract.running import wording_kwargs
from gbdesk.engine.base import EngineInfo, GenerationResult
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run

#: the answer each wording asks for: (agree, disagree)
FORMATS: dict[int, tuple[str, str]] = {
    0: ("Yes.", "No."),
    1: ("Yes.", "No."),
    2: ("A", "B"),
    3: ("Yes.", "No."),
    4: ("agree", "disagree"),
}

_PATTERNS: list[tuple[int, re.Pattern[str]]] = []
_LOCK = threading.Lock()


def patterns() -> list[tuple[int, re.Pattern[str]]]:
    """(wording, a regular expression of its whole prompt) for the direct probe's wordings,
    made from their templates (the statement is the group)."""
    with _LOCK:
        if not _PATTERNS:
            probe = get_probe("direct")
            for w in probe.capabilities.parameters.wordings():
                kwargs = {"wording": w.id} if w.id else {}
                template = probe.resolve_params(**kwargs)["template"]
                head, tail = template.split("{stereotype}")
                pattern = re.compile(re.escape(head) + "(.*)" + re.escape(tail), re.DOTALL)
                _PATTERNS.append((w.id, pattern))
        return _PATTERNS


def recognise(content: str) -> tuple[int, str] | None:
    """(wording, statement) of a direct prompt, or None for any other prompt."""
    for wording, pattern in patterns():
        match = pattern.fullmatch(content)
        if match:
            return wording, match.group(1)
    return None


def uniform(*parts: Any) -> float:
    """A number in [0, 1) fixed by `parts`."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class WordingWorld:
    """P(agree) under each wording (`rates`, wording id → probability; missing: `base`)
    and the share of the answers drawn from the item's number common to every wording."""

    rates: dict[int, float]
    base: float = 0.3
    shared: float = 0.8

    def rate(self, wording: int) -> float:
        return self.rates.get(wording, self.base)

    def agrees(self, wording: int, statement: str, seed: int) -> bool:
        common = uniform("shared?", statement, seed, wording) < self.shared
        u = uniform("item", statement, seed) if common else uniform("own", statement, seed, wording)
        return u < self.rate(wording)

    def answer(self, content: str, seed: int) -> str:
        """The answer to one prompt: the wording's format; "I cannot say." to any other."""
        found = recognise(content)
        if found is None:
            return "I cannot say."
        wording, statement = found
        yes, no = FORMATS[wording]
        return yes if self.agrees(wording, statement, seed) else no


#: no wording effect: agrees with 30 % of the statements under every wording
NO_EFFECT = WordingWorld({}, base=0.3)
#: an effect: 10 % under the yes/no-like wordings, 60 % when asked for a sentence (wording 3)
SENTENCE_EFFECT = WordingWorld({3: 0.6}, base=0.1)
#: a smaller effect, which only a test that pairs the wordings' items sees reliably
SMALL_EFFECT = WordingWorld({3: 0.45}, base=0.3)


class WordingBackend:
    """A local stand-in answering as `world` does."""

    concurrency = 1

    def __init__(self, world: WordingWorld):
        self.world = world
        self.calls = 0
        self.closed = False
        self.info = EngineInfo(
            backend="fake", model_name="wording effect", prompt_mode="chat", versions={}
        )

    def generate(self, request: Any, on_token: Any = None) -> GenerationResult:
        self.calls += 1
        text = self.world.answer(request.messages[-1]["content"], request.seed)
        return GenerationResult(text, 20, 2, 0.001, "stop", "chat")

    def close(self) -> None:
        self.closed = True


def run_family(
    store: Store,
    model: dict[str, Any],
    world: WordingWorld,
    *,
    items: int,
    seed: int,
    wordings: tuple[int, ...] = (0, 1, 2, 3, 4),
    resamples: int = RESAMPLES,
) -> WordingReport:
    """One simulated wording family: a direct run of `items` items per wording on
    `world`'s stand-in (run seed `seed`: a new family per seed), then its wording report."""
    run_ids = []
    for wording in wordings:
        run_id = plan_run(store, "direct", model, limit=items, seed=seed, **wording_kwargs(wording))
        execute_run(store, run_id, backend_factory=lambda _m, _g: WordingBackend(world))
        run_ids.append(run_id)
    return wording_report(store, run_ids[0], resamples=resamples, metrics=["fail_rate"])
