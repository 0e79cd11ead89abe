"""Chains of dependent generations (a role, then 16 answers about it) run concurrently.

A chain is written as a generator that yields a list of requests and receives their
results, in the same order, until it returns its value::

    def attempt(seed):
        (role,) = yield [role_request(seed)]
        answers = yield [answer_request(role.text, q, seed + q.id) for q in QUESTIONS]
        return summarise(role, answers)

`run_chains` drives many chains through one continuous-batching stream
(`LlamaCppBackend.open_stream`): every request a chain yields is submitted at once, so
the 16 answer prompts that share the role text are in the worker together and decode
that prefix once (a copy of the first one's KV cells, `gbdesk.engine.continuous`), and
several chains' roles and answers are decoded side by side. ``on_done(index, value)``
is called as each chain returns (the caller stores it: a crash loses only the chains in
flight). Every text is the text the same request gives alone in a stream (batch
independence), so the result of a chain does not depend on which chains ran with it.

`run_chains_sequentially` runs the same generators one request at a time through any
backend's `generate` (the fallback for backends without streams, and the baseline of
benchmarks/chain.py); its texts are `generate`'s, not the stream's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gbdesk.engine.base import GenerationRequest, GenerationResult
from gbdesk.support.errors import EngineError

log = logging.getLogger(__name__)

Chain = Generator[list[GenerationRequest], list[GenerationResult], Any]


@dataclass
class ChainOutcome:
    """Chains finished (indices, in completion order), how many were started (the
    rest were never begun: after a stop), those started but not finished (a failed
    request), whether a stop was asked, and the stream's counters."""

    completed: list[int] = field(default_factory=list)
    started: int = 0
    unfinished: list[int] = field(default_factory=list)
    stopped: bool = False
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Active:
    index: int
    chain: Chain
    keys: list[int]
    results: dict[int, GenerationResult] = field(default_factory=dict)


def run_chains(
    backend: Any,
    chains: Iterable[Chain],
    on_done: Callable[[int, Any], None],
    *,
    should_stop: Callable[[], bool] | None = None,
    on_token: Callable[[int, str], None] | None = None,
    slots: int | None = None,
    max_active: int | None = None,
    poll_s: float = 0.2,
    on_progress: Callable[[Any], None] | None = None,
) -> ChainOutcome:
    """Run `chains` (index = position in the iterable) through one stream of `backend`.

    At most `max_active` chains are in progress (default: `slots`, so that every slot
    has work while answers wait for their role). Once ``should_stop()`` is true no new
    chain starts; the chains in progress run to their end (their later steps are still
    submitted) and the call returns. A request that cannot be generated ends the stream
    after the chains in progress and raises `EngineError`; an exception raised by a
    chain's own code aborts the stream and propagates. ``on_progress``: the stream's
    progress events (`gbdesk.engine.base.StreamProgress`), about once a second.
    """
    stream = backend.open_stream(slots=slots, on_token=None)
    driver = _Driver(stream, iter(chains), on_done, max(1, int(max_active or stream.slots)))
    try:
        while True:
            if not driver.stopping and should_stop is not None and should_stop():
                driver.stopping = True
            driver.fill()
            if not driver.running:
                break
            for kind, key, payload in stream.poll(timeout=poll_s):
                if kind == "progress":
                    if on_progress is not None:
                        on_progress(payload)
                else:
                    driver.handle(kind, key, payload)
        stream.close()
        while not stream.ended:
            stream.poll(timeout=None)
    except BaseException:
        stream.abort_quietly()
        raise
    return driver.outcome_of(stream)


class _Driver:
    """The chains in progress on one stream: starts chains up to `limit`, hands each
    its results as a step's requests all return, and records how every chain ended."""

    def __init__(
        self,
        stream: Any,
        source: Iterator[Chain],
        on_done: Callable[[int, Any], None],
        limit: int,
    ):
        self.stream, self.source, self.on_done, self.limit = stream, source, on_done, limit
        self.active: dict[int, _Active] = {}  # by request key
        self.running: list[_Active] = []
        self.completed: list[int] = []
        self.started = 0
        self.exhausted = False
        self.stopping = False
        self.error: str | None = None

    def fill(self) -> None:
        """Start chains until `limit` run (none once stopping, exhausted or failed)."""
        while (
            not self.stopping
            and self.error is None
            and not self.exhausted
            and len(self.running) < self.limit
        ):
            chain = next(self.source, None)
            if chain is None:
                self.exhausted = True
                return
            entry = _Active(self.started, chain, [])
            self.started += 1
            self.running.append(entry)
            self.advance(entry, None)

    def advance(self, entry: _Active, sent: list[GenerationResult] | None) -> None:
        """The chain's next step submitted, or its value handed to `on_done`."""
        try:
            requests = next(entry.chain) if sent is None else entry.chain.send(sent)
        except StopIteration as done:
            self.running.remove(entry)
            self.completed.append(entry.index)
            self.on_done(entry.index, done.value)
            return
        requests = list(requests)
        if not requests:
            raise EngineError(f"chain {entry.index} yielded no request")
        entry.keys = self.stream.submit(requests)
        entry.results = {}
        for key in entry.keys:
            self.active[key] = entry

    def handle(self, kind: str, key: int, payload: Any) -> None:
        """A request's result (the chain advances once its step is complete) or error
        (the chain ends; no new chain starts)."""
        if kind == "error":
            self.error = self.error or f"request of chain {self.active[key].index}: {payload}"
            entry = self.active.pop(key)
            if entry in self.running:
                self.running.remove(entry)
                entry.chain.close()
        elif kind == "result":
            entry = self.active.pop(key)
            entry.results[key] = payload
            if len(entry.results) == len(entry.keys) and entry in self.running:
                self.advance(entry, [entry.results[k] for k in entry.keys])

    def outcome_of(self, stream: Any) -> ChainOutcome:
        """How the chains ended; a failed request raises `EngineError` now."""
        done = set(self.completed)
        outcome = ChainOutcome(
            completed=self.completed,
            started=self.started,
            unfinished=[i for i in range(self.started) if i not in done],
            stopped=self.stopping,
            stats=stream.stats,
        )
        if self.error is not None:
            raise EngineError(f"llama.cpp refused a {self.error}")
        return outcome


def run_chains_sequentially(
    backend: Any,
    chains: Iterable[Chain],
    on_done: Callable[[int, Any], None],
    *,
    should_stop: Callable[[], bool] | None = None,
) -> ChainOutcome:
    """The same chains, one request at a time through `backend.generate`."""
    outcome = ChainOutcome()
    for index, chain in enumerate(chains):
        if should_stop is not None and should_stop():
            outcome.stopped = True
            break
        outcome.started += 1
        sent: list[GenerationResult] | None = None
        while True:
            try:
                requests = next(chain) if sent is None else chain.send(sent)
            except StopIteration as done:
                outcome.completed.append(index)
                on_done(index, done.value)
                break
            sent = [backend.generate(r) for r in requests]
    return outcome
