"""The HTTP backend: any OpenAI-compatible server (llama.cpp's llama-server, vLLM, Ollama,
llama-cpp-python's server) as a gbdesk engine.

`HttpBackend` implements the same interface as `LlamaCppBackend` (`info`, `generate`,
`score`, `close`, `abort`) over ``/v1/chat/completions`` (``/v1/completions`` in
completion mode and for scoring). Creating one *probes* the endpoint — lists its models,
makes a one-token request, finds which structured-output form it accepts — so a wrong
address, path, model name or API key fails at once with one clear line (`UserError`),
before a run is planned.

Every reply is parsed against a typed schema (`gbdesk.engine.http.replies`: strict
types, finite numbers, bounded sizes) before anything in it is believed. During a run,
429, 5xx, time-outs, dropped connections and replies that do not fit their schema (or are
not JSON) are retried with exponential backoff (bounded); when the retries are used up
`generate` raises `EngineCrashed` naming the server and what was wrong, so the run ends
"interrupted" and `gbdesk resume` continues it. A request the server refuses for good
(400, 404 …) raises `EngineError`.

Time-outs: connecting may take `DEFAULT_CONNECT_TIMEOUT_S`; an answer may take
`read_timeout(max_tokens)` — `READ_TIMEOUT_BASE_S` for the prompt plus the answer's tokens at
`SLOWEST_TOKENS_PER_S` —, a deadline on the whole reply (`Transport.deadline`), not on each
socket read; a request that timed out is tried once more (`READ_TIMEOUT_RETRIES`).
While the server is silent a line is given every so often (`on_wait`: "waiting 45 s for
the server at … — it has answered 0 of the last 16 requests"), so a server that never
answers is never a silent hour.

Each request carries its attempt's `seed`. Servers that honour it (llama-server,
llama-cpp-python's server, vLLM) then give the same text for the same prompt, seed and
settings; OpenAI and Ollama treat it as best effort. `concurrency` requests may be in
flight at once (the run loop keeps that many going).

What an endpoint can do — chat generation, log-probabilities of prompt tokens (what
scoring probes need), top log-probabilities — is found with one small request each
(`HttpBackend.capabilities`) and stored with the endpoint; a probe that needs what the
endpoint lacks (`Running.engine_needs`) is refused before its run is planned
(`gbdesk.workflows.runs.check_engine_needs`), naming the servers that have it.

Endpoints are stored as model rows of kind "endpoint" (path = the base URL, sha256 NULL,
the served model name, the API-key variable's *name* and the detected capabilities in
metadata_json); the key itself is looked up at run time (`gbdesk.engine.secrets`) and
never stored.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from gbdesk import __version__
from gbdesk.engine.base import (
    COMPLETION_STOP,
    GenerationRequest,
    GenerationResult,
    TokenCallback,
    completion_frame,
)
from gbdesk.engine.http.answers import (
    ChangedMisfit,
    HttpRefused,
    Misfit,
    ModelChanged,
    NotJson,
    error_message,
    looks_like_json,
)
from gbdesk.engine.http.connecting import Connecting
from gbdesk.engine.http.replies import (
    Answer,
    ReplyMismatch,
    answer_schema,
    check_answer_length,
    check_token_counts,
    parse_reply,
    request_prompt_bytes,
)
from gbdesk.engine.http.scoring import Scoring
from gbdesk.engine.http.transport import (
    DEFAULT_CONNECT_TIMEOUT_S,
    READ_TIMEOUT_BASE_S,
    READ_TIMEOUT_RETRIES,
    SLOWEST_TOKENS_PER_S,
    WAIT_NOTICE_S,
    Answered,
    Redirected,
    Sent,
    Transport,
    Unanswered,
    Waits,
)
from gbdesk.engine.http.urls import normalize_base_url
from gbdesk.engine.secrets import Redactor, check_env_var_name, lookup_api_key, url_password
from gbdesk.support.errors import EngineCrashed, EngineError, UserError

log = logging.getLogger(__name__)

ENDPOINT_KIND = "endpoint"
# Retries after a failed try (429, 5xx, time-out, dropped connection, a reply that does
# not fit), waiting backoff · 2^k seconds (±20 %, at most MAX_BACKOFF_S) before try k + 1:
# 0.5 + 1 + 2 + 4 + 8 + 16 ≈ 30 s in all by default. GBDESK_HTTP_RETRIES and
# GBDESK_HTTP_BACKOFF override.
DEFAULT_MAX_RETRIES = 6
DEFAULT_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
MAX_CONCURRENCY = 64
# Retried: time-out, too early, rate limit, and server errors except "not implemented" /
# "HTTP version not supported" (a proxy's 52x included).
RETRY_STATUSES = frozenset({408, 425, 429, *range(500, 600)} - {501, 505})
# 5xx answers that retrying cannot fix (llama-cpp-python's server reports request
# validation errors and context overflows as HTTP 500; llama-server refuses echo so).
_PERMANENT = re.compile(
    r"validation error|exceed(s|ed)? (the )?context|context (window|length)|"
    r"maximum context|not supported|unsupported|only no echo",
    re.I,
)


def _env_number(name: str, default: Any, cast: type) -> Any:
    """A number from the environment (retry and time-out tuning), or `default` when unset
    or malformed."""
    try:
        return cast(os.environ[name])
    except (KeyError, ValueError):
        return default


def _positive(value: float | None) -> float | None:
    """A finite positive number of seconds, else None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None


T = TypeVar("T")


def _parsed(answered: Answered, path: str, reply: Callable[[bytes], T]) -> T:
    """A success answer parsed by `reply`; `NotJson` when it is not meant as JSON at all."""
    if not looks_like_json(answered):
        raise NotJson(answered, path)
    return reply(answered.content)


def _unfit(exc: Exception) -> str:
    """The problem of a success answer that is not JSON or does not fit its schema."""
    if isinstance(exc, NotJson):
        return f"an answer that is not JSON ({exc})"
    return f"a reply that does not fit the OpenAI format: {exc}"


def _error_problem(
    answered: Answered, path: str, retry_status: frozenset[int]
) -> tuple[str, float]:
    """An error answer that is retried: (the problem in words, the server's Retry-After
    seconds or 0); `HttpRefused` when it is not retried (its status, or a 500 that
    retrying cannot fix)."""
    status = answered.status
    message = error_message(answered)
    permanent = status == 500 and _PERMANENT.search(message)
    if status not in retry_status or permanent:
        raise HttpRefused(status, message, path)
    try:
        retry_after = float(answered.headers.get("retry-after") or 0)
    except ValueError:
        retry_after = 0.0
    return f"HTTP {status} {message}", retry_after


# -- the backend -----------------------------------------------------------------------------
class HttpBackend(Connecting, Scoring):
    """A gbdesk engine over an OpenAI-compatible HTTP API (see the module docstring)."""

    backend_name = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        concurrency: int = 1,
        prompt_mode: str = "auto",
        read_timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
        max_retries: int | None = None,
        backoff_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        wait_notice_s: float | None = None,
    ):
        """`read_timeout_s`: seconds an answer may take (None: `read_timeout` of its
        max_tokens, or GBDESK_HTTP_READ_TIMEOUT); `on_wait(line)`: told while the server is
        silent (from another thread; it may be set later, e.g. by the run loop)."""
        self.base_url = normalize_base_url(base_url)
        self.model = (model or "").strip()
        if not self.model:
            raise UserError(
                "name the model the server serves (--endpoint-model NAME; see its /v1/models)"
            )
        if not 1 <= int(concurrency) <= MAX_CONCURRENCY:
            raise UserError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
        if prompt_mode not in ("auto", "chat", "completion"):
            raise UserError("--prompt-mode must be auto, chat or completion")
        self.concurrency = int(concurrency)
        self.api_key_env = check_env_var_name(api_key_env)
        if read_timeout_s is None:
            read_timeout_s = _env_number("GBDESK_HTTP_READ_TIMEOUT", None, float)
        self.read_timeout_s = _positive(read_timeout_s)
        if connect_timeout_s is None:
            connect_timeout_s = _env_number(
                "GBDESK_HTTP_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT_S, float
            )
        self.connect_timeout_s = _positive(connect_timeout_s) or DEFAULT_CONNECT_TIMEOUT_S
        if max_retries is None:
            max_retries = _env_number("GBDESK_HTTP_RETRIES", DEFAULT_MAX_RETRIES, int)
        if backoff_s is None:
            backoff_s = _env_number("GBDESK_HTTP_BACKOFF", DEFAULT_BACKOFF_S, float)
        self.max_retries = max(0, int(max_retries))
        self.backoff_s = max(0.0, float(backoff_s))
        self.mode: str = "completion" if prompt_mode == "completion" else "chat"
        self._path = "completions" if self.mode == "completion" else "chat/completions"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._scoring_error: str | None = None
        self._scoring_checked = False
        self._answered_as: str | None = None  # the model name the server's answers give
        self.on_wait = on_wait
        if wait_notice_s is None:
            wait_notice_s = _env_number("GBDESK_HTTP_WAIT_NOTICE", WAIT_NOTICE_S, float)
        self._waits = Waits(
            self.base_url, _positive(wait_notice_s) or WAIT_NOTICE_S, self._tell_waiting
        )
        key = lookup_api_key(self.base_url, self.api_key_env)
        self.api_key_source = key.source
        headers = {"Accept": "application/json", "User-Agent": f"gbdesk/{__version__}"}
        if key.value:
            headers["Authorization"] = f"Bearer {key.value}"
        # the key sent (and a URL's password, were one ever sent) is masked in everything
        # the server says back, at the transport (`Redactor`): one point, every path
        self._transport = Transport(
            self.base_url, self.concurrency + 2, headers, self.connect_timeout_s,
            redactor=Redactor([key.value, url_password(base_url)]),
        )  # fmt: skip
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_model_row(
        cls,
        model: dict[str, Any],
        prompt_mode: str = "auto",
        on_wait: Callable[[str], None] | None = None,
    ) -> HttpBackend:
        """The backend for a stored endpoint model row."""
        meta = json.loads(model.get("metadata_json") or "{}")
        return cls(
            model["path"],
            meta.get("endpoint_model") or model.get("file_name") or model["name"],
            api_key_env=meta.get("api_key_env"),
            concurrency=int(meta.get("concurrency") or 1),
            prompt_mode=prompt_mode,
            on_wait=on_wait,
        )

    # -- plumbing -------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def read_timeout(self, max_tokens: int) -> float:
        """Seconds an answer of at most `max_tokens` tokens may take (see
        `READ_TIMEOUT_BASE_S`), or the fixed `read_timeout_s`."""
        if self.read_timeout_s is not None:
            return self.read_timeout_s
        return READ_TIMEOUT_BASE_S + max(0, int(max_tokens)) / SLOWEST_TOKENS_PER_S

    def _tell_waiting(self, text: str) -> None:
        if self.on_wait is not None:
            self.on_wait(text)

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        reply: Callable[[bytes], T],
        retry_transport: bool = True,
        retry_status: frozenset[int] = RETRY_STATUSES,
        read_s: float | None = None,
    ) -> tuple[T, float]:
        """One API call with bounded retries; (the parsed answer, seconds of the last try).

        `reply(body bytes)` parses a success answer (`parse_reply` with a schema, plus any
        further check), raising `ReplyMismatch` when it does not fit. `read_s`: the read
        time-out (default `read_timeout(0)`). Raises `HttpRefused` for an error answer
        that is not retried, `EngineCrashed` when the retries are used up or `abort` was
        called; with `retry_transport` false (connecting, checking what the server can do)
        nothing but a busy server is retried: `Unanswered`, `NotJson` and `ReplyMismatch`
        are raised at once. A redirect is refused (`HttpRefused`: the real address is the
        one to give).
        """
        read_s = self.read_timeout(0) if read_s is None else read_s
        url = self._url(path)
        tries = timeouts = 0
        while True:
            if self._stop.is_set():
                raise EngineCrashed("the request to the endpoint was stopped")
            retry_after = 0.0
            started = time.perf_counter()
            sent = self._waits.begin()
            try:
                answered = self._fetch(method, url, body, read_s, sent)
            except Unanswered as exc:
                if self._stop.is_set():
                    raise EngineCrashed("the request to the endpoint was stopped") from None
                if not retry_transport:
                    raise
                problem = str(exc)
                if exc.kind == "read-timeout" and not self._waits.answered_since(sent.at):
                    timeouts += 1  # silent: one more full wait at most (busy: not counted)
            except Redirected as exc:
                raise HttpRefused(exc.status, str(exc).split(": ", 1)[1], path) from None
            except ReplyMismatch as exc:  # too big to read
                if not retry_transport:
                    raise
                problem = _unfit(exc)
            else:
                latency = time.perf_counter() - started
                if answered.status >= 400:
                    problem, retry_after = _error_problem(answered, path, retry_status)
                else:
                    try:
                        return _parsed(answered, path, reply), latency
                    except (NotJson, ReplyMismatch) as exc:
                        if not retry_transport:
                            raise
                        problem = _unfit(exc)
            self._wait_to_retry(path, tries, timeouts, problem, retry_after)
            tries += 1

    def _fetch(
        self, method: str, url: str, body: dict[str, Any] | None, read_s: float, sent: Sent
    ) -> Answered:
        """One try's whole answer, under a deadline on the whole reply (not on a read); the
        waiting line learns whether the server answered."""
        whole = False  # the whole reply came: the server answered (the waiting line)
        try:
            with self._transport.deadline(read_s):
                response = self._transport.send(method, url, body, read_s)
                answered = self._transport.read(response, read_s)
            whole = True
        finally:
            self._waits.end(sent, answered=whole)
        return answered

    def _wait_to_retry(
        self, path: str, tries: int, timeouts: int, problem: str, retry_after: float
    ) -> None:
        """Wait before try `tries + 2` (backoff · 2^tries, ±20 %, at least the server's
        Retry-After, at most `MAX_BACKOFF_S`); `EngineCrashed` when the retries are used up
        (or a silent server timed out once too often) or `abort` was called meanwhile."""
        if tries >= self.max_retries or timeouts > READ_TIMEOUT_RETRIES:
            log.warning("the endpoint %s gave up after %d tries: %s", self.base_url,
                        tries + 1, problem)  # fmt: skip
            raise EngineCrashed(
                f"the endpoint {self.base_url} failed {tries + 1} times in a row "
                f"(/{path}: {problem})"
            )
        log.info("the endpoint %s: %s; trying again", self.base_url, problem)
        delay = min(MAX_BACKOFF_S, self.backoff_s * 2**tries) * random.uniform(0.8, 1.2)
        delay = max(delay, min(retry_after, MAX_BACKOFF_S))
        if self._stop.wait(delay):
            raise EngineCrashed("the request to the endpoint was stopped")

    def _sampling(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "seed": int(request.seed),
            "temperature": float(request.temperature),
            "top_p": float(request.top_p),
            "max_tokens": int(request.max_tokens),
        }
        if self.sampler_extras:
            body.update(
                {"top_k": int(request.top_k), "min_p": float(request.min_p), "repeat_penalty": 1.0}
            )
        return body

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        body = self._sampling(request)
        if self.mode == "completion":
            body["prompt"] = completion_frame(request.messages)
            body["stop"] = list(COMPLETION_STOP)
        else:
            body["messages"] = request.messages
        if request.json_schema is not None:
            body["response_format"] = self._response_format(request.json_schema)
        return body

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.json_format == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            }
        if self.json_format == "json_object":
            return {"type": "json_object", "schema": schema}
        raise EngineError(
            f"the endpoint {self.base_url} accepts no JSON-schema constrained decoding "
            "(neither response_format json_schema nor json_object with a schema), "
            "which this probe needs"
        )

    def _ask(self, path: str, body: dict[str, Any], **call: Any) -> tuple[Answer, float]:
        """POST `body` to `path`; the answer parsed and checked (`replies`: its
        schema; a generated text no longer than its max_tokens allows; the model the
        server answered as when connected). `Misfit` when it does not fit and is not
        retried; `call`: `_call`'s settings."""
        schema = answer_schema(path)

        def fits(content: bytes) -> Answer:
            answer = parse_reply(schema, content)
            if not body.get("echo"):  # an echo holds the prompt too
                asked = int(body.get("max_tokens") or 1)
                check_answer_length(answer.text, asked)
                check_token_counts(answer, asked, request_prompt_bytes(body))
            self._same_model(answer)
            return answer

        try:
            return self._call("POST", path, body, reply=fits, **call)
        except ModelChanged as exc:
            raise ChangedMisfit(str(exc), path) from None
        except ReplyMismatch as exc:
            raise Misfit(str(exc), path) from None

    # -- the Backend interface ------------------------------------------------------------
    def generate(
        self, request: GenerationRequest, on_token: TokenCallback | None = None
    ) -> GenerationResult:
        """One generation (not streamed: `on_token` gets the whole text at the end)."""
        try:
            answer, latency = self._ask(
                self._path, self._body(request), read_s=self.read_timeout(request.max_tokens)
            )
        except HttpRefused as exc:
            raise EngineError(
                f"the endpoint refused the request (HTTP {exc.status}: {exc.message})"
            ) from None
        text = answer.text
        finish = answer.first.finish_reason or "stop"
        if on_token is not None and text:
            on_token(text)
        return GenerationResult(
            text=text,
            tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out,
            latency_s=latency,
            finish_reason="stop" if finish in ("eos", "end_turn", "stop_sequence") else finish,
            prompt_mode=self.info.prompt_mode,
            extra={"server_model": answer.model},
        )

    def _same_model(self, answer: Answer) -> None:
        """`ReplyMismatch` when the server answers as another model than when gbdesk
        connected (it loaded another one: its answers are not this run's model's)."""
        if answer.model and self._answered_as and answer.model != self._answered_as:
            raise ModelChanged(
                f"it answered as the model {answer.model!r}, not {self._answered_as!r} as when "
                "gbdesk connected — did the server load another model?"
            )

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return not self._stop.is_set()

    @property
    def aborted(self) -> bool:
        return self._stop.is_set()

    def abort(self) -> None:
        """Stop at once (from any thread): pending requests raise `EngineCrashed`."""
        self._stop.set()
        self._waits.close()
        self._transport.abort()

    def close(self) -> None:
        """Close the connections; requests still under way (another thread's, e.g. after
        Ctrl-C) stop at once instead of being waited for or retried."""
        self.abort()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> HttpBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_connection(
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    *,
    max_tokens: int = 16,
    capabilities: bool = True,
) -> dict[str, Any]:
    """Probe an endpoint, time one short generation and (with `capabilities`) find what it
    can do (the Models pane's "Test connection")."""
    with HttpBackend(base_url, model, api_key_env=api_key_env, max_retries=1) as backend:
        result = backend.generate(
            GenerationRequest(
                messages=[{"role": "user", "content": "Say hello in one sentence."}],
                seed=1,
                max_tokens=max_tokens,
            )
        )
        return {
            "endpoint": backend.base_url,
            "server_model": backend.server_model,
            "server_models": backend.server_models,
            "models_latency_s": backend.models_latency_s,
            "latency_s": backend.tiny_latency_s,
            "connect_s": backend.connect_time_s,
            "json_format": backend.json_format,
            "api_key": backend.api_key_source,
            "tokens": result.tokens_out,
            "tokens_per_s": result.tokens_per_s,
            "generation_s": result.latency_s,
            "text": result.text,
            "capabilities": backend.capabilities() if capabilities else None,
        }
