"""The llama.cpp backend: a client for the worker process in `llama_worker`.

The model lives in a child process. If llama.cpp segfaults or the OS kills the
worker for want of memory, only the child dies: `generate` and `score` raise
`EngineCrashed` with the signal and the worker's last log lines, and the caller's run
stays resumable.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gbdesk.engine.base import (
    EngineInfo,
    GenerationRequest,
    GenerationResult,
    ScoreResult,
    StreamProgress,
    StreamProgressCallback,
    TokenCallback,
)
from gbdesk.engine.llama_worker import PARENT_ENV, PDEATHSIG_ENV
from gbdesk.support.errors import EngineCrashed, EngineError, UserError

DEFAULT_N_CTX = 4096
# Tokens per llama_decode call when scoring (the scoring context's KV size); see
# gbdesk.engine.scoring.
DEFAULT_SCORE_BATCH = 512
# Texts per `score` call that callers should send: one association-test name × template (730
# sentences sharing "My name is X, I" or "X"), ~7 s on the bundled model with 2 cores.
# Speed hardly depends on it from ~64 up (benchmarks/scoring.py --sweep): a decode group
# holds at most 256 texts anyway; the chunk is the unit of progress and resumption.
SCORE_CHUNK = 730


def default_threads() -> int:
    """One thread per physical core (llama.cpp's own default is half the logical cores)."""
    return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)


def worker_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, "_worker"]
    return [sys.executable, "-m", "gbdesk", "_worker"]


def start_worker(stderr: Any) -> subprocess.Popen:
    """Start a worker process (JSON lines on its stdin and stdout; `llama_worker`).

    It is told this process's id, and watches it: it ends itself when this process is gone
    (`llama_worker.watch_parent`), so a killed gbdesk leaves no worker holding a core and
    the model's memory. On Linux it also asks the kernel to kill it with its parent
    (PR_SET_PDEATHSIG) — only when started from the main thread, because the kernel sends
    that signal when the *thread* that started it ends (the app starts workers from task
    threads, which end while the app lives on)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_ENV] = str(os.getpid())
    main_thread = threading.current_thread() is threading.main_thread()
    env[PDEATHSIG_ENV] = "1" if main_thread else "0"
    return subprocess.Popen(
        worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        text=True,
        encoding="utf-8",
        bufsize=1,
    )


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class LlamaCppBackend:
    """Runs a GGUF model in a worker process and generates and scores through it.

    Scoring (`score`) uses a second llama.cpp context on the same model, created on the
    first `score` call, or while loading when ``scoring=True`` (then its settings are in
    ``info.settings["scoring"]`` from the start; otherwise after the first call).
    """

    backend_name = "llama.cpp"

    def __init__(
        self,
        model_path: str | os.PathLike,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        prompt_mode: str = "auto",
        load_timeout_s: float = 900.0,
        scoring: bool = False,
        score_batch: int = DEFAULT_SCORE_BATCH,
        batch_size: int = 1,
    ):
        self.model_path = str(model_path)
        self.n_threads = n_threads or default_threads()
        # how a run loop decodes: 1 one `generate` at a time; N > 1 continuous batching
        # with N sequences at once; 0 continuous batching with an automatic count
        # (`stream_slots`)
        self.batch_size = max(0, int(batch_size))
        self._aborted = False
        self._next_id = 0
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 (closed in close())
        self.proc = start_worker(self._stderr)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self._send(
            {
                "op": "load",
                "model_path": self.model_path,
                "n_ctx": n_ctx,
                "n_threads": self.n_threads,
                "n_batch": n_batch,
                "prompt_mode": prompt_mode,
                "scoring": scoring,
                "score_batch": score_batch,
            }
        )
        message = self._receive(timeout=load_timeout_s, during="loading the model")
        if message.get("event") != "ready":
            reason = self._llama_error() or message.get("message", "unknown error")
            self.close()
            raise UserError(f"llama.cpp cannot load {Path(self.model_path).name}: {reason}")
        raw = message["info"]
        self.info = EngineInfo(
            backend=self.backend_name,
            model_name=raw.get("model_name") or Path(self.model_path).name,
            prompt_mode=raw["prompt_mode"],
            versions={"llama_cpp_python": raw.get("llama_cpp_python", "")},
            settings={
                "n_ctx": raw.get("n_ctx"),
                "n_threads": raw.get("n_threads"),
                "n_batch": n_batch,
                "batch_size": self.batch_size,
                "system_info": raw.get("llama_cpp_system", ""),
            },
            load_time_s=float(raw.get("load_time_s", 0.0)),
        )
        if raw.get("scoring"):
            self.info.settings["scoring"] = raw["scoring"]

    # -- plumbing -------------------------------------------------------------------
    def _read_loop(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._crash_error("sending a request") from None

    def _receive(self, timeout: float | None, during: str) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                self.abort()
                raise EngineError(
                    f"the model worker did not answer in time while {during}"
                ) from None
            if line is None:
                raise self._crash_error(during)
            line = line.strip()
            if line:
                return json.loads(line)

    def _next_line(self, timeout: float | None, during: str) -> str | None:
        """The worker's next non-empty line; None if none came within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                return None
            if line is None:
                self._lines.put(None)  # later reads see the end too
                raise self._crash_error(during)
            if line.strip():
                return line

    def stderr_tail(self, lines: int = 8) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        kept = [ln for ln in text.splitlines() if ln.strip()]
        return "\n".join(kept[-lines:])

    def _llama_error(self) -> str | None:
        """The first error llama.cpp logged (it logs errors even when not verbose)."""
        for line in self.stderr_tail(200).splitlines():
            text = line.strip()
            if text.startswith(("llama", "gguf", "ggml")) and re.search(r"error|fail", text, re.I):
                return text
        return None

    def _crash_error(self, during: str) -> EngineCrashed:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self._aborted:
            return EngineCrashed("the model worker was stopped")
        how = _signal_name(self.proc.returncode)
        hint = ""
        if self.proc.returncode in (-signal.SIGKILL, 137):
            hint = " (killed — often the system running out of memory)"
        tail = self.stderr_tail()
        detail = f"; its last messages: {tail.splitlines()[-1]}" if tail else ""
        return EngineCrashed(
            f"the model worker stopped unexpectedly while {during}: {how}{hint}{detail}"
        )

    # -- the Backend interface ---------------------------------------------------------
    def generate(
        self, request: GenerationRequest, on_token: TokenCallback | None = None
    ) -> GenerationResult:
        self._next_id += 1
        request_id = self._next_id
        self._send(
            {
                "op": "generate",
                "id": request_id,
                "request": request.to_json(),
                "stream": on_token is not None,
            }
        )
        while True:
            message = self._receive(timeout=None, during="generating")
            event = message.get("event")
            if event == "token" and on_token is not None:
                on_token(message["text"])
            elif event == "result":
                return _result_from_json(message["result"])
            elif event == "error":
                raise EngineError(f"llama.cpp refused the request: {message.get('message')}")

    def generate_batch(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Generate several requests together (one llama.cpp sequence each); results in order.

        The continuous batching engine (`gbdesk.engine.continuous`) with one slot per
        request: a request's text depends only on the request and its seed, not on what
        else is in the batch, and equals the text `generate_stream` gives it, but not the
        text `generate` gives (other arithmetic settings). Requests with a json_schema are
        batched too (grammar-constrained sampler per sequence). No streaming; prefer
        `generate_stream`, which does not wait for a batch's longest answer.
        """
        requests = list(requests)
        if not requests:
            return []
        self._next_id += 1
        request_id = self._next_id
        self._send(
            {"op": "generate_batch", "id": request_id, "requests": [r.to_json() for r in requests]}
        )
        while True:
            message = self._receive(timeout=None, during="generating")
            event = message.get("event")
            if event == "result":
                rows = message["result"]["results"]
                if len(rows) != len(requests):
                    raise EngineError(
                        f"the model worker returned {len(rows)} results for "
                        f"{len(requests)} requests"
                    )
                return [_result_from_json(r) for r in rows]
            elif event == "error":
                raise EngineError(f"llama.cpp refused the request: {message.get('message')}")

    # -- continuous batching ------------------------------------------------------------
    def stream_slots(
        self,
        requests: list[GenerationRequest] | None = None,
        *,
        max_tokens: int | None = None,
        prefer: int | None = None,
    ) -> tuple[int, str]:
        """How many sequences `generate_stream` keeps live, and why (for the UI).

        ``batch_size`` when it was set above 1, otherwise `choose_slots` from the model's
        metadata and the free memory (`gbdesk.engine.slots`); `prefer` (e.g. the count a
        resumed run used before) replaces the CPU cap, within the memory bound.
        """
        if self.batch_size > 1:
            return self.batch_size, f"{self.batch_size} sequences at once (set by the run)"
        from gbdesk.engine.slots import choose_slots

        longest = max((r.max_tokens for r in requests or []), default=max_tokens or 300)
        return choose_slots(
            self.model_path, n_ctx_seq=longest + 512, n_threads=self.n_threads, override=prefer
        )

    def open_stream(
        self,
        *,
        slots: int | None = None,
        on_token: StreamTokenCallback | None = None,
        min_shared: int | None = None,
    ) -> GenerationStream:
        """A continuous-batching session in the worker (see `GenerationStream`).

        Only one can be open at a time, and nothing else may be sent to this backend
        until it ended (`GenerationStream.ended`).
        """
        if slots is None:
            slots, _ = self.stream_slots()
        self._next_id += 1
        stream = GenerationStream(self, self._next_id, max(1, int(slots)), on_token)
        message: dict[str, Any] = {
            "op": "stream_open",
            "id": stream.id,
            "slots": stream.slots,
            "watch": on_token is not None,
        }
        if min_shared is not None:
            message["min_shared"] = int(min_shared)
        self._send(message)
        while True:
            reply = self._receive(timeout=None, during="opening a generation stream")
            if reply.get("id") != stream.id:
                continue  # a stale event of an earlier call
            if reply.get("event") == "error":
                raise EngineError(f"llama.cpp refused the stream: {reply.get('message')}")
            if reply.get("event") == "stream_open":
                stream.info = reply.get("info", {})
                stream.slots = int(stream.info.get("slots", stream.slots))
                self.info.settings.setdefault("continuous", stream.info.get("settings", {}))
                return stream

    def generate_stream(
        self,
        requests: list[GenerationRequest],
        on_result: Callable[[int, GenerationResult], None],
        *,
        should_stop: Callable[[], bool] | None = None,
        on_token: StreamTokenCallback | None = None,
        slots: int | None = None,
        poll_s: float = 0.2,
        on_progress: StreamProgressCallback | None = None,
    ) -> StreamOutcome:
        """Generate `requests` with continuous batching; each result as soon as it is done.

        Up to `slots` sequences (default: `stream_slots`) are decoded together; when one
        finishes, ``on_result(index, result)`` is called at once (index into
        `requests`; the caller stores it) and the next request takes its place. A
        request's text depends only on the request and its seed — not on the slot count,
        the order, its neighbours or when it was admitted — and equals `generate_batch`'s
        text for it (not `generate`'s). Requests sharing a prompt prefix decode it once
        (`gbdesk.engine.continuous`). Requests go to the worker a few at a time (about
        twice `slots` outstanding).

        ``should_stop()`` is polled after every event and at least every `poll_s`
        seconds; once it returns true no further request is admitted, the live ones
        finish and are delivered, and the call returns: ``outcome.not_started`` lists
        the indices never generated (call again with them to continue, e.g. after a
        pause). To stop at once, `abort()` the backend from another thread: the call
        raises `EngineCrashed` and the results delivered so far are the ones done.
        ``on_token(index, text)`` streams the text of one sequence at a time: the most
        recently admitted one when the previous one finished (its text so far comes as
        one piece, so a new index means a new text). ``on_progress(StreamProgress)`` is
        called about once a second while sequences are being generated (tokens decoded
        before any answer is done). A request that cannot be generated
        (prompt longer than the context, a schema llama.cpp cannot compile) stops
        admission; the live ones are delivered, then `EngineError` is raised.
        """
        requests = list(requests)
        outcome = StreamOutcome()
        if not requests:
            return outcome
        if slots is None:
            slots, _ = self.stream_slots(requests)
        stream = self.open_stream(slots=slots, on_token=on_token)
        window = 2 * stream.slots + 4
        fed = 0
        errors: dict[int, str] = {}
        stopping = False
        try:
            while not stream.ended:
                if not stopping and should_stop is not None and should_stop():
                    stopping = True
                    stream.drain()
                if not stopping and fed < len(requests):
                    n = min(len(requests) - fed, window - stream.outstanding)
                    if n > 0:
                        stream.submit(requests[fed : fed + n])
                        fed += n
                    if fed == len(requests):
                        stream.close()
                for kind, key, payload in stream.poll(timeout=poll_s):
                    if kind == "result":
                        outcome.completed.append(key)
                        on_result(key, payload)
                    elif kind == "progress":
                        if on_progress is not None:
                            on_progress(payload)
                    elif kind == "error":
                        errors[key] = payload
                        if not stopping:
                            stopping = True
                            stream.drain()
                    if not stopping and should_stop is not None and should_stop():
                        stopping = True
                        stream.drain()
        except BaseException:
            stream.abort_quietly()
            raise
        done = set(outcome.completed)
        outcome.not_started = [i for i in range(len(requests)) if i not in done and i not in errors]
        outcome.stopped = stopping and not errors
        outcome.stats = stream.stats
        if errors:
            key, message = next(iter(errors.items()))
            raise EngineError(f"llama.cpp refused request {key}: {message}")
        return outcome

    def score(self, texts: list[str]) -> list[ScoreResult]:
        """Log-likelihood of each text (see `ScoreResult`), in order.

        One request scores the whole list; send chunks of about `SCORE_CHUNK` texts
        (texts sharing prefixes together) so that progress can be saved between them.
        The numbers of a text do not depend on which chunk it is in.
        """
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("score() takes a list of strings")
        if not texts:
            return []
        self._next_id += 1
        request_id = self._next_id
        self._send({"op": "score", "id": request_id, "texts": texts})
        while True:
            message = self._receive(timeout=None, during="scoring")
            event = message.get("event")
            if event == "result":
                r = message["result"]
                if "settings" in r and "scoring" not in self.info.settings:
                    self.info.settings["scoring"] = r["settings"]
                scores = [ScoreResult.from_json(v) for v in r["scores"]]
                if len(scores) != len(texts):
                    raise EngineError(
                        f"the model worker returned {len(scores)} scores for {len(texts)} texts"
                    )
                return scores
            elif event == "error":
                raise EngineError(f"llama.cpp refused the request: {message.get('message')}")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        """Kill the worker at once (from any thread); a pending `generate`/`score` raises."""
        self._aborted = True
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._send({"op": "shutdown"})
                self.proc.wait(timeout=10)
            except (EngineError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        self._stderr.close()

    def __enter__(self) -> LlamaCppBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


StreamTokenCallback = Callable[[int, str], None]


@dataclass
class StreamOutcome:
    """What `generate_stream` did: indices delivered (in completion order), never
    started (after a stop), whether it was stopped, and the worker's counters."""

    completed: list[int] = field(default_factory=list)
    not_started: list[int] = field(default_factory=list)
    stopped: bool = False
    stats: dict[str, Any] = field(default_factory=dict)


class GenerationStream:
    """A continuous-batching session in the worker (`LlamaCppBackend.open_stream`).

    `submit` queues requests at any time (they get consecutive keys from 0); `poll`
    returns what happened: ``("result", key, GenerationResult)`` as each request
    finishes, ``("error", key, message)`` for a request that could not be generated,
    ``("progress", None, StreamProgress)`` about once a second while answers are under way,
    ``("end", None, None)`` once the stream is over (after `close` or `drain`, when the
    last live sequence finished). Token events go to `on_token(key, text)` inside `poll`.
    Protocol: `gbdesk.engine.llama_worker`.
    """

    def __init__(
        self,
        backend: LlamaCppBackend,
        stream_id: int,
        slots: int,
        on_token: StreamTokenCallback | None,
    ):
        self.backend = backend
        self.id = stream_id
        self.slots = slots
        self.on_token = on_token
        self.info: dict[str, Any] = {}
        self.next_key = 0
        self.finished: set[int] = set()
        self.closed = False
        self.ended = False
        self.dropped: list[int] = []
        self.stats: dict[str, Any] = {}

    @property
    def outstanding(self) -> int:
        """Requests submitted and neither delivered, failed nor dropped."""
        return self.next_key - len(self.finished) - len(self.dropped)

    def submit(self, requests: list[GenerationRequest]) -> list[int]:
        if self.closed:
            raise EngineError("the generation stream no longer takes requests")
        keys = list(range(self.next_key, self.next_key + len(requests)))
        self.next_key += len(requests)
        if requests:
            items = [[k, r.to_json()] for k, r in zip(keys, requests, strict=True)]
            self.backend._send({"op": "stream_add", "id": self.id, "items": items})
        return keys

    def close(self) -> None:
        """No more requests: the stream ends when the submitted ones are done."""
        if not self.closed:
            self.closed = True
            self.backend._send({"op": "stream_close", "id": self.id})

    def drain(self) -> None:
        """Admit nothing more: queued requests are dropped, live ones finish."""
        self.closed = True
        self.backend._send({"op": "stream_drain", "id": self.id})

    def abort_quietly(self) -> None:
        """Drop everything, live sequences too, and wait for the end (cleanup after an
        exception); gives up silently if the worker is gone."""
        if self.ended:
            return
        with contextlib.suppress(EngineError):
            self.closed = True
            self.backend._send({"op": "stream_abort", "id": self.id})
            while not self.ended:
                self.poll(timeout=None, tokens=False)

    def poll(self, timeout: float | None, tokens: bool = True) -> list[tuple[str, Any, Any]]:
        """Events that arrived within `timeout` seconds (None: wait for at least one)."""
        events: list[tuple[str, Any, Any]] = []
        wait = timeout
        while not self.ended:
            line = self.backend._next_line(wait, during="generating")
            if line is None:
                break
            wait = 0.0  # take whatever else is already there, then return
            message = json.loads(line)
            if message.get("id") != self.id:
                continue  # a stale event of an earlier call
            kind = message.get("event")
            if kind == "token":
                if tokens and self.on_token is not None:
                    self.on_token(int(message["key"]), message["text"])
            elif kind == "progress":  # an event, in order: after the results before it
                events.append(("progress", None, StreamProgress.from_json(message)))
            elif kind == "item":
                key = int(message["key"])
                self.finished.add(key)
                events.append(("result", key, _result_from_json(message["result"])))
            elif kind == "item_error":
                key = int(message["key"])
                self.finished.add(key)
                events.append(("error", key, message.get("message", "")))
            elif kind == "stream_end":
                self.ended = True
                self.closed = True
                self.dropped = [int(k) for k in message.get("dropped", [])]
                self.stats = message.get("stats", {})
                events.append(("end", None, None))
            elif kind == "error":
                self.ended = True
                raise EngineError(f"llama.cpp failed while generating: {message.get('message')}")
        return events


def _result_from_json(r: dict[str, Any]) -> GenerationResult:
    return GenerationResult(
        text=r["text"],
        tokens_in=r["tokens_in"],
        tokens_out=r["tokens_out"],
        latency_s=r["latency_s"],
        finish_reason=r["finish_reason"],
        prompt_mode=r["prompt_mode"],
        extra={"token_ids": r["token_ids"]} if "token_ids" in r else {},
    )
