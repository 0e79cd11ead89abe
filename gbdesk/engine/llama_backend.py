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
from pathlib import Path
from typing import Any

import psutil

from gbdesk.engine.base import (
    EngineInfo,
    GenerationRequest,
    GenerationResult,
    ScoreResult,
    TokenCallback,
)
from gbdesk.errors import EngineCrashed, EngineError, UserError

DEFAULT_N_CTX = 4096
# Tokens per llama_decode call when scoring (the scoring context's KV size); see
# gbdesk.engine.scoring.
DEFAULT_SCORE_BATCH = 512
# Texts per `score` call that callers should send: one GlobalBias name × template (730
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
        # attempts a run loop sends per `generate_batch` call (1: one `generate` at a time)
        self.batch_size = max(1, int(batch_size))
        self._aborted = False
        self._next_id = 0
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 (closed in close())
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
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
                r = message["result"]
                return GenerationResult(
                    text=r["text"],
                    tokens_in=r["tokens_in"],
                    tokens_out=r["tokens_out"],
                    latency_s=r["latency_s"],
                    finish_reason=r["finish_reason"],
                    prompt_mode=r["prompt_mode"],
                )
            elif event == "error":
                raise EngineError(f"llama.cpp refused the request: {message.get('message')}")

    def generate_batch(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Generate several requests together (one llama.cpp sequence each); results in order.

        A request's text depends only on the request and its seed, not on what else is in
        the batch, but is not the text `generate` gives for it: the batched context
        computes with other settings (gbdesk.engine.batch_generation). Requests with a
        json_schema are generated one after another, as by `generate`. No streaming.
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
                return [
                    GenerationResult(
                        text=r["text"],
                        tokens_in=r["tokens_in"],
                        tokens_out=r["tokens_out"],
                        latency_s=r["latency_s"],
                        finish_reason=r["finish_reason"],
                        prompt_mode=r["prompt_mode"],
                    )
                    for r in rows
                ]
            elif event == "error":
                raise EngineError(f"llama.cpp refused the request: {message.get('message')}")

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
