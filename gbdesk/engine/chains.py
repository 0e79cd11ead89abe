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
    source: Iterator[Chain] = iter(chains)
    stream = backend.open_stream(slots=slots, on_token=None)
    limit = max(1, int(max_active or stream.slots))
    active: dict[int, _Active] = {}  # by request key
    running: list[_Active] = []
    outcome = ChainOutcome()
    started = 0
    exhausted = False
    stopping = False
    error: str | None = None

    def advance(entry: _Active, sent: list[GenerationResult] | None) -> None:
        try:
            requests = next(entry.chain) if sent is None else entry.chain.send(sent)
        except StopIteration as done:
            running.remove(entry)
            outcome.completed.append(entry.index)
            on_done(entry.index, done.value)
            return
        requests = list(requests)
        if not requests:
            raise EngineError(f"chain {entry.index} yielded no request")
        entry.keys = stream.submit(requests)
        entry.results = {}
        for key in entry.keys:
            active[key] = entry

    try:
        while True:
            if not stopping and should_stop is not None and should_stop():
                stopping = True
            while not stopping and error is None and not exhausted and len(running) < limit:
                chain = next(source, None)
                if chain is None:
                    exhausted = True
                    break
                entry = _Active(started, chain, [])
                started += 1
                running.append(entry)
                advance(entry, None)
            if not running:
                break
            for kind, key, payload in stream.poll(timeout=poll_s):
                if kind == "progress":
                    if on_progress is not None:
                        on_progress(payload)
                elif kind == "error":
                    error = error or f"request of chain {active[key].index}: {payload}"
                    entry = active.pop(key)
                    if entry in running:
                        running.remove(entry)
                        entry.chain.close()
                elif kind == "result":
                    entry = active.pop(key)
                    entry.results[key] = payload
                    if len(entry.results) == len(entry.keys) and entry in running:
                        advance(entry, [entry.results[k] for k in entry.keys])
        stream.close()
        while not stream.ended:
            stream.poll(timeout=None)
    except BaseException:
        stream.abort_quietly()
        raise
    outcome.stopped = stopping
    outcome.stats = stream.stats
    outcome.started = started
    done = set(outcome.completed)
    outcome.unfinished = [i for i in range(started) if i not in done]
    if error is not None:
        raise EngineError(f"llama.cpp refused a {error}")
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
