"""Test doubles: a backend that replays recorded texts instead of running a model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk.engine.base import EngineInfo, GenerationRequest, GenerationResult, ScoreResult
from gbdesk.support.errors import EngineCrashed

FIXTURE = Path(__file__).parent / "fixtures" / "recorded_inventories.jsonl"


def recorded_texts() -> list[str]:
    return [json.loads(line)["response"] for line in FIXTURE.read_text().splitlines()]


def recorded_laissez_faire() -> list[str]:
    """36 SmolLM2 stories for Laissez-Faire prompts (see fixtures/README.md)."""
    path = FIXTURE.parent / "recorded_laissez_faire.jsonl"
    return [json.loads(line)["response"] for line in path.read_text().splitlines()]


class FakeBackend:
    """Deterministic: the text depends only on (prompt, seed), like the real engine."""

    def __init__(
        self, texts: list[str] | None = None, crash_after: int | None = None, on_generate=None
    ):
        self.texts = texts or recorded_texts()
        self.crash_after = crash_after
        self.on_generate = on_generate
        self.calls: list[GenerationRequest] = []
        self.score_calls: list[list[str]] = []
        self.closed = False
        self.info = EngineInfo(
            backend="fake",
            model_name="fake model",
            prompt_mode="chat",
            versions={"llama_cpp_python": "test"},
        )

    def generate(self, request: GenerationRequest, on_token=None) -> GenerationResult:
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise EngineCrashed("the model worker stopped unexpectedly while generating: SIGSEGV")
        self.calls.append(request)
        if self.on_generate:
            self.on_generate(self, request)
        key = f"{request.messages[-1]['content']}|{request.seed}".encode()
        text = self.texts[int(hashlib.sha256(key).hexdigest(), 16) % len(self.texts)]
        if on_token:
            for word in text.split(" "):
                on_token(word + " ")
        return GenerationResult(
            text=text,
            tokens_in=20,
            tokens_out=len(text.split()),
            latency_s=0.001,
            finish_reason="stop",
            prompt_mode="chat",
        )

    def score(self, texts: list[str]) -> list[ScoreResult]:
        """Deterministic fake log-likelihoods: a stable hash of each text.

        n_tokens = words + 1; logprob_sum = -(1 + u) * n_tokens with u in [0, 4) from
        SHA-256 of the text, so PPL = exp(1 + u) varies between texts (e to e^5).
        """
        done = len(self.calls) + len(self.score_calls)  # crash_after counts both kinds
        if self.crash_after is not None and done >= self.crash_after:
            raise EngineCrashed("the model worker stopped unexpectedly while scoring: SIGSEGV")
        self.score_calls.append(list(texts))
        results = []
        for text in texts:
            n_tokens = len(text.split()) + 1
            digest = hashlib.sha256(text.encode("utf-8")).digest()
            u = int.from_bytes(digest[:8], "big") / 2**64 * 4.0
            results.append(ScoreResult(n_tokens=n_tokens, logprob_sum=-(1.0 + u) * n_tokens))
        return results

    def close(self) -> None:
        self.closed = True


def fake_model(store, tmp_path: Path) -> dict:
    """A model row whose file exists, so `verify_model_file` accepts it."""
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF fake weights")
    stat = path.stat()
    model_id = store.register_model(
        {
            "kind": "gguf",
            "name": "fake model",
            "path": str(path),
            "file_name": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "size_bytes": stat.st_size,
            "mtime": stat.st_mtime,
        }
    )
    return store.get_model(model_id)


@dataclass
class Reply:
    """A raw answer of `FakeOpenAIServer` (a misbehaving server): these bytes with this
    status and content type, after `delay_s` seconds (a server that never answers: long);
    `declared_length` larger than the body sends a Content-Length the body does not reach
    and closes the connection (closing midway); `close` drops the connection without an
    answer; `drip_s` sends the body one byte every so many seconds."""

    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    declared_length: int | None = None
    delay_s: float = 0.0
    close: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds between two bytes of the body (a server that drips its reply)
    drip_s: float = 0.0


#: a stand-in's misbehaviour: (request path, request body, the answer it would give) →
#: None (give it), another JSON value, or a raw `Reply`
Misbehaviour = Callable[[str, dict, dict], "Reply | dict | list | str | int | float | None"]


class FakeOpenAIServer:
    """An OpenAI-compatible endpoint on loopback whose answers depend only on (user
    message, seed): `answer(content, seed) -> str`. For CLI runs without a model:
    ``gbdesk run --endpoint server.url --endpoint-model fake``. Use as a context manager.

    Chat requests get ``answer``'s text; ``/completions`` with ``echo`` (scoring) get the
    prompt back with a logprob of -0.5 per word after the first. `misbehave` (see
    `Misbehaviour`) replaces any answer, the model list's included, for the tests of
    servers that misbehave. Connections are kept alive (HTTP/1.1), as real servers do
    (`keep_alive=False`: one connection per request).
    ``requests`` counts the requests answered or not; ``slow_sent`` the slow replies (a
    `Reply` with `delay_s` or `drip_s`) sent whole before the client gave up or the server
    closed — 0 shows a client's deadline or stop came first, whatever the machine's speed."""

    def __init__(
        self,
        answer,
        misbehave: Misbehaviour | None = None,
        model: str = "fake",
        keep_alive: bool = True,
    ):
        import http.server
        import sys
        import threading

        owner = self
        self.closing = threading.Event()
        self.requests = 0
        self.slow_sent = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def _send(self, payload: Any, path: str, request: dict) -> None:
                with owner.lock:
                    owner.requests += 1
                changed = owner.misbehave(path, request, payload) if owner.misbehave else None
                reply = changed if isinstance(changed, Reply) else None
                if reply is None:
                    data = payload if changed is None else changed
                    reply = Reply(json.dumps(data).encode())
                if reply.delay_s and owner.closing.wait(reply.delay_s):
                    return
                if reply.close:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                length = len(reply.body) if reply.declared_length is None else reply.declared_length
                self.send_header("Content-Length", str(length))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if reply.drip_s:
                    for i in range(len(reply.body)):
                        if owner.closing.wait(reply.drip_s):
                            return
                        try:
                            self.wfile.write(reply.body[i : i + 1])
                            self.wfile.flush()
                        except OSError:  # the client gave up
                            self.close_connection = True
                            return
                else:
                    self.wfile.write(reply.body)
                if reply.drip_s or reply.delay_s:
                    with owner.lock:
                        owner.slow_sent += 1
                if length != len(reply.body):
                    self.close_connection = True

            def do_GET(self):
                self._send({"data": [{"id": owner.model, "owned_by": "tests"}]}, self.path, {})

            def do_POST(self):
                try:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                except ValueError:  # the client went away while sending
                    self.close_connection = True
                    return
                if "messages" not in body and body.get("echo"):
                    self._send(owner.echoed(body), self.path, body)
                    return
                content = body["messages"][-1]["content"] if "messages" in body else ""
                text = owner.answer(content, body.get("seed", 0))
                self._send(
                    {
                        "model": owner.model,
                        "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                        "usage": {
                            "prompt_tokens": 5,
                            # as a server counts: never more than it was allowed
                            "completion_tokens": min(
                                len(text.split()), int(body.get("max_tokens") or 10**6)
                            ),
                        },
                    },
                    self.path,
                    body,
                )

            def log_message(self, *args):
                pass

        self.answer, self.misbehave, self.model = answer, misbehave, model
        self.lock = threading.Lock()

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 128  # 64 clients connecting at once are not refused

            def handle_error(self, request, client_address):  # a client that went away
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def echoed(self, body: dict) -> dict:
        """A scoring answer: the prompt and one generated word, -0.5 nats per word."""
        prompt = str(body.get("prompt") or "")
        words = prompt.split(" ")
        offsets, at = [], 0
        for word in words:
            offsets.append(at)
            at += len(word) + 1
        offsets.append(len(prompt))  # the generated word
        values = [None] + [-0.5] * len(words)
        return {
            "model": self.model,
            "choices": [
                {
                    "text": prompt + " x",
                    "logprobs": {"token_logprobs": values, "text_offset": offsets},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": len(words), "completion_tokens": 1},
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


class VirtualClock:
    """A clock the fakes advance: patch it in as a module's `time` (`monotonic()`)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


class FakeStreamBackend:
    """Continuous batching as `LlamaCppBackend.generate_stream` does it, without a model,
    on a `VirtualClock`: up to `slots` answers decode together, one token each per step
    of `step_s` virtual seconds; a finished answer is delivered at once and replaced by
    the next request; about every virtual second `on_progress(StreamProgress)` reports
    the answers in flight, as the worker's progress events do. An answer's length
    depends only on its request (seed): `lengths(request) -> tokens`. Admitting a request
    costs `prefill_s` more (its prompt), in the step it is admitted."""

    def __init__(
        self, clock: VirtualClock, lengths, *, slots: int = 8, step_s: float = 0.06,
        prefill_s: float = 0.0,
    ):  # fmt: skip
        self.clock = clock
        self.lengths = lengths
        self.slots = slots
        self.step_s = step_s
        self.prefill_s = prefill_s
        self.batch_size = 0  # automatic: the run loop asks `stream_slots`
        self.closed = False
        self.info = EngineInfo(
            backend="fake-stream", model_name="fake model", prompt_mode="chat", load_time_s=0.5
        )

    def stream_slots(self, requests=None, *, max_tokens=None, prefer=None):
        return self.slots, f"{self.slots} sequences at once (fake)"

    def generate(self, request, on_token=None):
        raise AssertionError("the run should use generate_stream")

    def generate_stream(
        self, requests, on_result, *, should_stop=None, on_token=None, slots=None,
        on_progress=None,
    ):  # fmt: skip
        from gbdesk.engine.base import StreamProgress
        from gbdesk.engine.llama_backend import StreamOutcome

        outcome = StreamOutcome()
        queue = list(range(len(requests)))
        live: list[list[int]] = []  # [index, length, produced]
        made = 0
        last_report = self.clock.t
        stopping = False
        while queue or live:
            if not stopping and should_stop is not None and should_stop():
                stopping = True
                outcome.not_started = list(queue)
                queue = []
            while queue and len(live) < (slots or self.slots):
                i = queue.pop(0)
                live.append([i, max(1, int(self.lengths(requests[i]))), 0])
                self.clock.t += self.prefill_s
            if not live:
                break
            self.clock.t += self.step_s
            for entry in live:
                entry[2] += 1
                made += 1
            for entry in [e for e in live if e[2] >= e[1]]:
                live.remove(entry)
                i, length, _ = entry
                outcome.completed.append(i)
                text = f"He was kind. {requests[i].seed}"
                cost = length * self.step_s
                on_result(i, GenerationResult(text, 20, length, cost, "stop", "chat"))
            if on_progress is not None and live and self.clock.t - last_report >= 1.0:
                last_report = self.clock.t
                held = sum(e[2] for e in live)
                on_progress(StreamProgress(len(live), held, made, len(queue)))
        outcome.stopped = stopping
        return outcome

    def close(self) -> None:
        self.closed = True
