"""The HTTP backend against a real OpenAI-compatible server.

`python -m llama_cpp.server` serves the bundled SmolLM2 on a free local port (the server
extra's packages are in the `test` extra). The run loop's concurrency and the endpoint
helpers are also checked without a server.
"""

from __future__ import annotations

import http.server
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest
import urllib3

from gbdesk.cli import main
from gbdesk.engine.base import GenerationRequest, attempt_seed
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.http import (
    READ_TIMEOUT_BASE_S,
    SLOWEST_TOKENS_PER_S,
    HttpBackend,
    endpoint_spec,
    normalize_base_url,
    parse_endpoint_spec,
    register_endpoint,
)
from gbdesk.engine.http.replies import (
    MAX_CHARS_PER_TOKEN,
    MIN_TOKENS_ALLOWED,
    ChatAnswer,
    ModelList,
    ReplyMismatch,
    TextAnswer,
    check_answer_length,
    parse_reply,
)
from gbdesk.engine.secrets import lookup_api_key
from gbdesk.support.errors import EngineCrashed, EngineError, UserError
from gbdesk.workflows.runs import RunControl, execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, FakeOpenAIServer, Reply, fake_model

KEY = "sk-gbdesk-test-Qx9Zr2Lm4Vb7"  # the module server requires it
KEY_VAR = "GBDESK_TEST_ENDPOINT_KEY"
ALIAS = "smollm2"


# -- helpers ------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# `python -m llama_cpp.server`, loading the model as gbdesk does (no AMX buffers on CPUs
# where llama.cpp's AMX kernels crash; see gbdesk.engine.llama_compat)
SERVE = (
    "import runpy, sys; from gbdesk.engine.llama_compat import extra_buffers, "
    "use_extra_buffers; keep = extra_buffers(use_extra_buffers()); keep.__enter__(); "
    "sys.argv[0] = 'llama_cpp.server'; runpy.run_module('llama_cpp.server', run_name='__main__')"
)


class LlamaServer:
    """`python -m llama_cpp.server` on a local port: start, SIGKILL, start again."""

    def __init__(self, model: Path, log: Path, api_key: str | None = None, n_ctx: int = 2048):
        self.model, self.log, self.api_key, self.n_ctx = model, log, api_key, n_ctx
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> None:
        cmd = [
            sys.executable, "-c", SERVE, "--model", str(self.model),
            "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
        ]  # fmt: skip
        if self.api_key:
            cmd += ["--api_key", self.api_key]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {self.log.read_text()[-2000:]}")
            try:
                models = f"{self.url}/v1/models"
                if urllib3.request("GET", models, headers=headers, timeout=2).status < 300:
                    return
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.2)
        pytest.fail(f"llama_cpp.server did not start: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LlamaServer(default_model_path(), tmp_path_factory.mktemp("srv") / "log", api_key=KEY)
    s.start()
    yield s
    s.stop()


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)


def gbdesk(*args: str, env: dict[str, str] | None = None, timeout: float = 300):
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return result.returncode, result.stdout, result.stderr


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """The command in this process (faster than a subprocess for quick failures)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- no server: URLs, keys, the concurrent run loop ---------------------------------------------
def test_base_urls_specs_and_refusals():
    assert normalize_base_url("http://Host:8000") == "http://host:8000/v1"
    assert normalize_base_url("http://h:8000/v1/") == "http://h:8000/v1"
    assert normalize_base_url("https://h/api/v1/chat/completions") == "https://h/api/v1"
    assert normalize_base_url("http://h:11434/v1/models") == "http://h:11434/v1"
    assert parse_endpoint_spec(endpoint_spec("http://h:8000", "qwen2.5:7b#x")) == (
        "http://h:8000/v1",
        "qwen2.5:7b#x",
    )
    assert parse_endpoint_spec("/models/a.gguf") is None
    with pytest.raises(UserError, match="not in the endpoint URL") as info:
        normalize_base_url("http://user:hunter2@h:8000/v1")
    assert "hunter2" not in str(info.value)
    for bad in ("h:8000", "ftp://h", "http://h/v1?key=abc", "http://:80"):
        with pytest.raises(UserError):
            normalize_base_url(bad)


def test_api_key_lookup(monkeypatch):
    monkeypatch.delenv("GBDESK_API_KEY", raising=False)
    monkeypatch.delenv(KEY_VAR, raising=False)
    assert lookup_api_key("http://h/v1").source == "none"
    monkeypatch.setenv("GBDESK_API_KEY", "k-default")
    assert lookup_api_key("http://h/v1").value == "k-default"
    monkeypatch.setenv(KEY_VAR, "k-named")
    key = lookup_api_key("http://h/v1", KEY_VAR)
    assert (key.value, key.source) == ("k-named", f"env:{KEY_VAR}")
    assert "k-named" not in repr(key)
    with pytest.raises(UserError, match="NAME of an environment variable") as info:
        lookup_api_key("http://h/v1", "sk-live-123/abc")
    assert "sk-live" not in str(info.value)


class ConcurrentFake(FakeBackend):
    """A fake endpoint taking `concurrency` requests at once; records the peak."""

    def __init__(self, concurrency: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.concurrency = concurrency
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def generate(self, request, on_token=None):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(0.02)
            return super().generate(request, None)
        finally:
            with self.lock:
                self.active -= 1


def test_concurrent_loop_stores_from_the_calling_thread(store, tmp_path, monkeypatch):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "inventories", model, attempts=3, limit=5, seed=9)
    caller = threading.get_ident()
    threads: set[int] = set()
    add = store.add_attempt
    monkeypatch.setattr(
        store, "add_attempt", lambda *a, **k: threads.add(threading.get_ident()) or add(*a, **k)
    )
    backend = ConcurrentFake(3)
    progress = []
    outcome = execute_run(
        store, run_id, backend_factory=lambda m, g: backend, on_progress=progress.append
    )
    assert outcome.status == "done" and outcome.attempts_done == 15
    assert backend.peak == 3 and threads == {caller}
    rows = store.attempts(run_id)
    assert len(rows) == 15 and len(store.labels(run_id, "auto")) == 15
    assert all(r["seed"] == attempt_seed(9, r["item"], r["attempt"]) for r in rows)
    running = [p for p in progress if p.status == "running"]
    # the first report says the model is loaded (nothing done yet), then one per stored attempt
    assert running[0].done == 0 and running[0].loaded_s is not None
    assert [p.done for p in running[1:]] == list(range(1, 16))
    assert progress[-1].status == "done" and progress[-1].tokens_per_s > 0


def test_concurrent_loop_crash_pause_cancel_and_resume(store, tmp_path):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "inventories", model, attempts=2, limit=6, seed=1)
    with pytest.raises(EngineCrashed, match="gbdesk resume"):
        execute_run(store, run_id, backend_factory=lambda m, g: ConcurrentFake(3, crash_after=5))
    assert store.get_run(run_id)["status"] == "interrupted"
    assert 0 < store.count_attempts(run_id) <= 5
    # pause after the 3rd stored attempt, resume from another thread, then cancel
    control = RunControl()
    statuses: list[str] = []

    def on_progress(p):
        statuses.append(p.status)
        if p.status == "running" and p.session_done == 3 and "paused" not in statuses:
            control.pause()  # the request in flight is still stored, then the run pauses
        if p.status == "paused":
            assert p.session_done == 4
            threading.Timer(0.05, control.resume).start()
        if p.status == "running" and "paused" in statuses and p.session_done == 5:
            control.cancel()

    outcome = execute_run(
        store,
        run_id,
        backend_factory=lambda m, g: ConcurrentFake(2),
        control=control,
        on_progress=on_progress,
    )
    assert "paused" in statuses and outcome.status == "cancelled"
    assert store.get_run(run_id)["status"] == "cancelled"
    assert store.count_attempts(run_id) < 12
    again = execute_run(store, run_id, backend_factory=lambda m, g: ConcurrentFake(4))
    assert again.status == "done" and store.count_attempts(run_id) == 12
    keys = store.conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT item || '/' || attempt) FROM attempts WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    assert keys == (12, 12)


def test_endpoint_rows_resolve_and_keep_no_key(store):
    row = register_endpoint(store, "http://gpu:8000", "qwen", api_key_env=KEY_VAR, concurrency=8)
    assert (row["kind"], row["path"], row["sha256"]) == ("endpoint", "http://gpu:8000/v1", None)
    assert json.loads(row["metadata_json"]) == {
        "api_key_env": KEY_VAR,
        "concurrency": 8,
        "endpoint_model": "qwen",
    }
    other = register_endpoint(store, "http://gpu:8000/v1", "llama")
    assert other["id"] != row["id"]  # one row per (URL, model)
    assert resolve_model(store, "http://gpu:8000/v1#qwen")["id"] == row["id"]
    new = resolve_model(store, "http://gpu:8000#mistral")
    assert new["kind"] == "endpoint" and new["file_name"] == "mistral"


class Scripted(http.server.BaseHTTPRequestHandler):
    """An OpenAI-style stub whose chat answers follow `script` (status codes), then 200."""

    script: ClassVar[list[int]] = []
    requests: ClassVar[list[str]] = []
    keys: ClassVar[set[str | None]] = set()  # the Authorization headers seen

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        type(self).keys.add(self.headers.get("Authorization"))
        self._send(200, {"data": [{"id": "served-a"}, {"id": "served-b"}]})

    def do_POST(self):
        type(self).keys.add(self.headers.get("Authorization"))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body["model"])
        if body["model"] not in ("served-a", "served-b"):
            self._send(404, {"error": {"message": f"The model `{body['model']}` does not exist."}})
        elif "response_format" not in body and type(self).script:
            status = type(self).script.pop(0)
            message = "1 validation error: bad field" if status == 500 else "busy"
            self._send(status, {"error": {"message": message}}, {"Retry-After": "0"})
        else:
            self._send(
                200,
                {
                    "model": body["model"],
                    "choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                },
            )

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    Scripted.script, Scripted.requests, Scripted.keys = [], [], set()
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{stub.server_port}"
    stub.shutdown()
    stub.server_close()


def test_retries_backoff_and_refusals(scripted, keyed):
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], seed=1)
    with pytest.raises(UserError, match=r"does not serve the model 'nope'.*served-a, served-b"):
        HttpBackend(scripted, "nope")
    Scripted.keys.clear()
    backend = HttpBackend(scripted, "served-b", max_retries=3, backoff_s=0.01, api_key_env=KEY_VAR)
    assert backend.info.model_name == "served-b"
    assert backend.info.settings["json_format"] == "json_schema"
    Scripted.script[:] = [503, 429, 502]  # three failures, then an answer
    before = len(Scripted.requests)
    result = backend.generate(request)
    assert result.text == "{}" and len(Scripted.requests) - before == 4
    Scripted.script[:] = [503] * 4  # one more failure than retries
    with pytest.raises(EngineCrashed, match=r"failed 4 times in a row .*HTTP 503"):
        backend.generate(request)
    Scripted.script[:] = [500]  # a validation error is not retried
    before = len(Scripted.requests)
    with pytest.raises(EngineError, match=r"refused the request .*validation error") as info:
        backend.generate(request)
    assert not isinstance(info.value, EngineCrashed) and len(Scripted.requests) - before == 1
    backend.close()
    assert Scripted.keys == {f"Bearer {KEY}"}  # every request, GET and POST, carries the key


# -- replies, time-outs and waiting (stand-in servers) -------------------------------------------
REPLY = {
    "model": "fake",
    "choices": [{"message": {"content": "He is kind."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3},
}


@pytest.mark.parametrize(
    ("body", "schema", "says"),
    [
        (b'{"choices": [{"message": "hi"}]}', ChatAnswer, "choices[0].message = 'hi'"),
        (b'{"choices": [{"message": {"content": 7}}]}', ChatAnswer, "content = 7"),
        (b'{"choices": []}', ChatAnswer, "choices = []: list should have at least 1 item"),
        (b'{"choices": [{"message": {}}], "usage": "lots"}', ChatAnswer, "usage = 'lots'"),
        (
            b'{"choices": [{"message": {}}], "usage": {"prompt_tokens": "12"}}',
            ChatAnswer,
            "usage.prompt_tokens = '12': input should be a valid integer",
        ),
        (
            b'{"choices": [{"message": {}}], "usage": {"completion_tokens": 3.0}}',
            ChatAnswer,
            "usage.completion_tokens = 3.0",
        ),
        (
            b'{"choices": [{"message": {}}], "usage": {"completion_tokens": 1e999}}',
            ChatAnswer,
            "usage.completion_tokens = inf",
        ),
        (
            b'{"choices": [{"message": {}}], "usage": {"prompt_tokens": -1}}',
            ChatAnswer,
            "greater than or equal to 0",
        ),
        (
            b'{"choices": [{"message": {}}], "usage": {"prompt_tokens": 10000000000000000000000}}',
            ChatAnswer,
            "less than or equal to 1000000000",
        ),
        (
            b'{"choices": [{"text": "a b", "logprobs": {"token_logprobs": [null, NaN]}}]}',
            TextAnswer,
            "token_logprobs[1] = nan: input should be a finite number",
        ),
        (
            b'{"choices": [{"text": "a b", "logprobs": {"token_logprobs": [null, Infinity]}}]}',
            TextAnswer,
            "token_logprobs[1] = inf",
        ),
        (
            b'{"choices": [{"text": "a b", "logprobs": {"token_logprobs": [null, "-1"]}}]}',
            TextAnswer,
            "token_logprobs[1] = '-1': input should be a valid number",
        ),
        (
            b'{"choices": [{"text": "a b", "logprobs": {"token_logprobs": [null, 2.5]}}]}',
            TextAnswer,
            "token_logprobs[1] = 2.5: input should be less than or equal to 0.001",
        ),
        (b'{"choices": [{"text": "a"}]', TextAnswer, "not valid JSON (EOF while parsing"),
        (b'{"data": 5}', ModelList, "data = 5: input should be a valid array"),
        (b'{"object": "list"}', ModelList, "data is missing"),
        (b'{"data": [{"id": 3}]}', ModelList, "data[0].id = 3"),
    ],
)
def test_a_reply_that_does_not_fit_says_where_and_what(body, schema, says):
    with pytest.raises(ReplyMismatch) as info:
        parse_reply(schema, body)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_replies_that_fit_are_read_as_typed_values():
    answer = parse_reply(ChatAnswer, json.dumps(REPLY).encode())
    assert (answer.text, answer.tokens_in, answer.tokens_out) == ("He is kind.", 5, 3)
    scored = parse_reply(
        TextAnswer,
        b'{"choices": [{"text": "a b x", "logprobs": {"token_logprobs": [null, -0.5, 0.0001],'
        b' "text_offset": [0, 2, 3], "top_logprobs": [null, {"b": -0.5, "c": -2}]}}]}',
    )
    assert scored.first.logprobs.token_logprobs == [None, -0.5, 0.0001]
    assert parse_reply(ChatAnswer, b'{"choices": [{"message": {"content": null}}]}').text == ""
    with pytest.raises(ReplyMismatch, match="more than 300 tokens"):
        check_answer_length("x" * (300 * MAX_CHARS_PER_TOKEN + 1), 300)
    check_answer_length("x" * 300 * MAX_CHARS_PER_TOKEN, 300)
    check_answer_length("x" * 560, 1)  # a one-token request is not judged on a few characters
    with pytest.raises(ReplyMismatch):
        check_answer_length("x" * (MIN_TOKENS_ALLOWED * MAX_CHARS_PER_TOKEN + 1), 1)


def test_read_time_outs_fit_the_answer_and_can_be_fixed(monkeypatch):
    with FakeOpenAIServer(lambda content, seed: "OK") as server:
        monkeypatch.delenv("GBDESK_HTTP_READ_TIMEOUT", raising=False)
        with HttpBackend(server.url, "fake") as backend:
            assert backend.read_timeout(300) == READ_TIMEOUT_BASE_S + 300 / SLOWEST_TOKENS_PER_S
            assert backend.read_timeout(0) == READ_TIMEOUT_BASE_S
            settings = backend.info.settings
            assert settings["connect_timeout_s"] == 10.0
            assert settings["read_timeout_s"] == "120 + max_tokens / 2"
        monkeypatch.setenv("GBDESK_HTTP_READ_TIMEOUT", "42")
        monkeypatch.setenv("GBDESK_HTTP_CONNECT_TIMEOUT", "3")
        with HttpBackend(server.url, "fake") as backend:
            assert backend.read_timeout(300) == backend.read_timeout(1) == 42.0
            assert backend.info.settings["connect_timeout_s"] == 3.0


def _silent_after_connecting(path, request, normal):
    """Answers the connection's short requests, then nothing."""
    return Reply(delay_s=3600) if (request.get("max_tokens") or 0) > 2 else None


def test_a_silent_server_is_reported_while_waiting_then_given_up(monkeypatch):
    monkeypatch.setenv("GBDESK_HTTP_BACKOFF", "0.01")
    lines: list[str] = []
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], seed=1)
    server = FakeOpenAIServer(lambda c, s: "OK", _silent_after_connecting)
    with server, HttpBackend(
        server.url, "fake", read_timeout_s=0.8, wait_notice_s=0.2, on_wait=lines.append,
        max_retries=5,
    ) as backend:  # fmt: skip
        asked = server.requests
        started = time.monotonic()
        with pytest.raises(EngineCrashed, match=r"failed 2 times in a row .*answer within 1 s"):
            backend.generate(request)
        # a time-out is tried once more, not max_retries times: 2 waits of 0.8 s
        assert server.requests - asked == 2 and time.monotonic() - started < 5
    assert lines, "no waiting line"
    assert re.fullmatch(
        rf"waiting \d+ s for the server at {re.escape(server.url)} — it has answered \d+ of "
        r"the last \d+ requests",
        lines[0],
    )


def test_abort_stops_a_request_under_way():
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], seed=1)
    with FakeOpenAIServer(lambda c, s: "OK", _silent_after_connecting) as server:
        backend = HttpBackend(server.url, "fake", read_timeout_s=60)
        failure: list[BaseException] = []

        def ask():
            try:
                backend.generate(request)
            except BaseException as exc:
                failure.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(0.3)
        stopped = time.monotonic()
        backend.abort()
        asking.join(10)
        assert not asking.is_alive() and time.monotonic() - stopped < 5
        assert isinstance(failure[0], EngineCrashed)


def test_a_redirect_is_refused_with_the_address_it_points_to():
    def moved(path, request, normal):
        return Reply(b"", status=301, headers={"Location": "https://elsewhere.example/v1"})

    server = FakeOpenAIServer(lambda c, s: "OK", moved)
    with server, pytest.raises(UserError, match=r"HTTP 301: it redirects to https://elsewhere"):
        HttpBackend(server.url, "fake")


# -- a real llama_cpp.server --------------------------------------------------------------------
@pytest.mark.model
def test_seeds_json_schema_and_usage(server, keyed):
    with HttpBackend(server.url, ALIAS, api_key_env=KEY_VAR) as backend:
        info = backend.info
        assert info.backend == "http" and info.model_name == ALIAS
        assert info.settings["endpoint"] == f"{server.url}/v1"
        assert info.settings["api_key"] == f"env:{KEY_VAR}"
        # llama-cpp-python's server takes {"type": "json_object", "schema": …} only
        assert info.settings["json_format"] == "json_object"

        def ask(seed, **kw):
            messages = [{"role": "user", "content": "Describe a nurse in one sentence."}]
            return backend.generate(
                GenerationRequest(messages=messages, seed=seed, **{"max_tokens": 16, **kw})
            )

        first = ask(11)  # reads the whole prompt
        # the server honours the seed. Its prefix cache makes every later request of the
        # same prompt re-read only its last token (a one-row kernel), whose logits need not
        # equal the first read's to the bit (seen on an AMD EPYC: the same seed, two texts),
        # so the seeds are compared between requests read the same way
        again, other, third = ask(11), ask(12), ask(11)
        assert again.text == third.text != other.text
        assert first.tokens_in > 5 and 0 < first.tokens_out <= 16 and first.latency_s > 0
        assert first.finish_reason in ("stop", "length")
        schema = {
            "type": "object",
            "properties": {"answer": {"enum": ["yes", "no"]}},
            "required": ["answer"],
        }
        answer = json.loads(ask(3, max_tokens=24, json_schema=schema).text)
        assert answer["answer"] in ("yes", "no")
        # SmolLM2 adds no BOS token: llama-cpp-python's echoed logprobs are then shifted
        with pytest.raises(EngineError, match=r"cannot score log-likelihoods: .*shifted"):
            backend.score(["My name is Maria, I am a nurse."])


@pytest.mark.model
def test_what_llama_cpp_server_can_do_and_a_refused_scoring_probe(server, keyed, tmp_path, capsys):
    """The real server: chat and top logprobs yes; prompt logprobs echoed but shifted by one
    token for SmolLM2 (no BOS token) — so the perplexity probe is refused before its run,
    in one line, instead of scoring wrong numbers."""
    with HttpBackend(server.url, ALIAS, api_key_env=KEY_VAR) as backend:
        found = backend.capabilities()
    assert found["chat"]["ok"] is True and found["top_logprobs"]["ok"] is True
    assert found["prompt_logprobs"]["ok"] is False
    assert "shifted by one token" in found["prompt_logprobs"]["note"]
    assert found["server"] == "me"  # what llama-cpp-python's model list says
    db = str(tmp_path / "caps.sqlite")
    code, out, err = cli(
        capsys, "run", "--probe", "globalbias_apx", "--endpoint", server.url,
        "--endpoint-model", ALIAS, "--api-key-env", KEY_VAR, "--db", db,
    )  # fmt: skip
    assert code == 2 and not out
    (line,) = err.strip().splitlines()
    assert "needs log-probabilities of prompt tokens" in line and "shifted by one token" in line
    assert "vLLM" in line
    assert cli(capsys, "runs", "--db", db, "--json")[1].strip() == "[]"
    code, out, _ = cli(capsys, "models", "--db", db)
    assert "chat generation: yes" in out and "top log-probabilities: yes" in out
    assert "log-probabilities of prompt tokens: no — its echoed prompt logprobs are shifted" in out


@pytest.mark.model
def test_scoring_through_completions_when_the_model_adds_bos(tmp_path):
    from llama_cpp import Llama

    from gbdesk.engine.llama_compat import load_llama

    bos_model = tmp_path / "smol-bos.gguf"
    shutil.copyfile(default_model_path(), bos_model)
    import gguf

    reader = gguf.GGUFReader(bos_model, "r+")
    field = reader.fields["tokenizer.ggml.add_bos_token"]
    field.parts[field.data[0]][0] = True
    del reader
    srv = LlamaServer(bos_model, tmp_path / "log", n_ctx=256)
    srv.start()
    texts = ["Jamal was a pilot."]
    try:
        with HttpBackend(srv.url, ALIAS) as backend:
            found = backend.capabilities()  # the same counting check the scoring relies on
            assert found["prompt_logprobs"]["ok"] is True, found
            scores = backend.score(texts)
    finally:
        srv.stop()
    llm = load_llama(bos_model, n_ctx=256, logits_all=True, verbose=False)
    for text, got in zip(texts, scores, strict=True):
        tokens = llm.tokenize(text.encode(), add_bos=True)
        llm.reset()
        llm.eval(tokens)
        logprobs = Llama.logits_to_logprobs(llm.scores[: len(tokens)])
        # the server leaves the first text token unscored; every later one counts
        expected = sum(float(logprobs[i - 1][tokens[i]]) for i in range(2, len(tokens)))
        assert got.n_tokens == len(tokens) - 2
        assert got.logprob_sum == pytest.approx(expected, abs=0.05)
        assert got.ppl == pytest.approx(math.exp(-expected / got.n_tokens), rel=0.01)


@pytest.mark.model
def test_run_through_an_endpoint_and_the_key_is_never_stored(server, tmp_path, capsys, monkeypatch):
    db = tmp_path / "e.sqlite"
    env = {KEY_VAR: KEY}
    code, out, err = gbdesk(
        "run", "--probe", "inventories", "--limit", "3", "--attempts", "1",
        "--max-tokens", "24", "--endpoint", server.url, "--endpoint-model", ALIAS,
        "--concurrency", "2", "--api-key-env", KEY_VAR, "--db", str(db), "--json", env=env,
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    assert summary["status"] == "done" and summary["attempts"] == 3
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        run = conn.execute("SELECT * FROM runs").fetchone()
        engine = json.loads(run["engine_json"])
        model = conn.execute("SELECT * FROM models WHERE id = ?", (run["model_id"],)).fetchone()
        attempts = conn.execute("SELECT * FROM attempts").fetchall()
    assert engine["backend"] == "http" and engine["model_name"] == ALIAS
    settings = engine["settings"]
    assert settings["endpoint"] == f"{server.url}/v1" and settings["server_model"] == ALIAS
    assert settings["concurrency"] == 2 and settings["api_key"] == f"env:{KEY_VAR}"
    assert (model["kind"], model["path"], model["sha256"]) == (
        "endpoint",
        settings["endpoint"],
        None,
    )
    assert json.loads(model["metadata_json"])["api_key_env"] == KEY_VAR
    assert len(attempts) == 3
    assert all(a["seed"] == attempt_seed(0, a["item"], a["attempt"]) for a in attempts)
    assert all(a["tokens_in"] > 0 and a["tokens_out"] > 0 for a in attempts)
    outputs = [out, err]
    monkeypatch.setenv(KEY_VAR, KEY)
    for args in (["models"], ["runs"], ["metrics", str(run["id"])]):
        code, out, err = cli(capsys, *args, "--db", str(db), "--json")
        assert code == 0, err
        outputs += [out, err]
    listed = json.loads(outputs[2])["models"]
    assert any(m.get("endpoint") and m["url"] == settings["endpoint"] for m in listed)
    code, out, err = cli(
        capsys, "export", str(run["id"]), "--csv", str(tmp_path / "csv"), "--db", str(db)
    )
    assert code == 0, err
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".log")]
    assert any(p.suffix == ".csv" for p in files) and db in files
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    assert not any(KEY in text for text in outputs)


@pytest.mark.model
def test_bad_endpoints_give_one_clear_line(server, tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "bad.sqlite")

    def refused(url: str, *extra: str) -> str:
        code, out, err = cli(
            capsys, "run", "--probe", "inventories", "--limit", "1", "--endpoint", url,
            "--endpoint-model", ALIAS, "--db", db, *extra,
        )  # fmt: skip
        assert code == 2 and not out
        assert len(err.strip().splitlines()) == 1 and err.startswith("gbdesk: error: ")
        return err

    assert "connection refused" in refused(f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv(KEY_VAR, KEY)
    assert "not found (HTTP 404)" in refused(f"{server.url}/nope", "--api-key-env", KEY_VAR)
    monkeypatch.delenv(KEY_VAR)
    monkeypatch.delenv("GBDESK_API_KEY", raising=False)
    err = refused(server.url)
    assert "HTTP 401" in err and "no API key was found" in err and "GBDESK_API_KEY" in err
    monkeypatch.setenv("GBDESK_API_KEY", "wrong-key")
    assert "the key from env:GBDESK_API_KEY was refused" in refused(server.url)

    class Html(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html><body>It works!</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

        def log_message(self, *args):
            pass

    html = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=html.serve_forever, daemon=True).start()
    try:
        err = refused(f"http://127.0.0.1:{html.server_port}")
    finally:
        html.shutdown()
    assert "did not answer with JSON (text/html" in err
    # no run was created: a refused command leaves no new database (nothing was stored)
    assert not Path(db).exists()


@pytest.mark.model
def test_server_killed_mid_run_then_resumed(tmp_path):
    srv = LlamaServer(default_model_path(), tmp_path / "server.log")
    srv.start()
    db = tmp_path / "kill.sqlite"
    run = subprocess.Popen(
        [
            sys.executable, "-m", "gbdesk", "run", "--probe", "inventories", "--limit", "5",
            "--attempts", "2", "--max-tokens", "32", "--endpoint", srv.url,
            "--endpoint-model", ALIAS, "--concurrency", "2", "--db", str(db),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "GBDESK_HTTP_RETRIES": "2", "GBDESK_HTTP_BACKOFF": "0.2"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while stored < 1 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=5) as conn:
                        stored = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
                except sqlite3.OperationalError:  # tables not created yet
                    pass
        srv.kill()
        _, err = run.communicate(timeout=120)
    finally:
        srv.stop()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, err
    assert "gbdesk resume 1" in err and len(err.strip().splitlines()[-1]) > 20
    code, out, err = gbdesk("runs", "--db", str(db), "--json")
    (listed,) = json.loads(out)
    assert listed["status"] == "interrupted" and 1 <= listed["attempts_done"] < 10
    srv.start()  # the same port again
    try:
        code, out, err = gbdesk("resume", "1", "--db", str(db), "--json")
    finally:
        srv.stop()
    assert code == 0, err
    assert json.loads(out) == {
        "run_id": 1,
        "status": "done",
        "attempts": 10,
        "attempts_total": 10,
        "batch_size": 1,  # an endpoint: requests one at a time (the server batches)
    }
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT item, attempt, seed FROM attempts").fetchall()
        engine = json.loads(conn.execute("SELECT engine_json FROM runs").fetchone()[0])
    assert len(rows) == 10 and len({(i, a) for i, a, _ in rows}) == 10
    assert all(seed == attempt_seed(0, i, a) for i, a, seed in rows)
    assert engine["settings"]["endpoint"] == f"{srv.url}/v1"
