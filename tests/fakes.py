"""Test doubles: a backend that replays recorded texts instead of running a model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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


class FakeOpenAIServer:
    """An OpenAI-compatible chat endpoint on loopback whose answers depend only on (user
    message, seed): `answer(content, seed) -> str`. For CLI runs without a model:
    ``gbdesk run --endpoint server.url --endpoint-model fake``. Use as a context manager."""

    def __init__(self, answer):
        import http.server
        import threading

        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send({"data": [{"id": "fake", "owned_by": "tests"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][-1]["content"] if "messages" in body else ""
                text = owner.answer(content, body.get("seed", 0))
                self._send(
                    {
                        "model": "fake",
                        "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": len(text.split())},
                    }
                )

            def log_message(self, *args):
                pass

        self.answer = answer
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
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
