"""The HTTP backend: any OpenAI-compatible server (llama.cpp's llama-server, vLLM, Ollama,
llama-cpp-python's server) as a gbdesk engine.

`HttpBackend` implements the same interface as `LlamaCppBackend` (`info`, `generate`,
`score`, `close`, `abort`) over ``/v1/chat/completions`` (``/v1/completions`` in
completion mode and for scoring). Creating one *probes* the endpoint — lists its models,
makes a one-token request, finds which structured-output form it accepts — so a wrong
address, path, model name or API key fails at once with one clear line (`UserError`),
before a run is planned.

During a run, 429, 5xx, time-outs and dropped connections are retried with exponential
backoff (bounded); when the retries are used up `generate` raises `EngineCrashed`, so the
run ends "interrupted" and `gbdesk resume` continues it. A request the server refuses for
good (400, 404 …) raises `EngineError`.

Each request carries its attempt's `seed`. Servers that honour it (llama-server,
llama-cpp-python's server, vLLM) then give the same text for the same prompt, seed and
settings; OpenAI and Ollama treat it as best effort. `concurrency` requests may be in
flight at once (the run loop keeps that many going).

What an endpoint can do — chat generation, log-probabilities of prompt tokens (what
scoring probes need), top log-probabilities — is found with one small request each
(`HttpBackend.capabilities`) and stored with the endpoint; a probe that needs what the
endpoint lacks (`Probe.engine_needs`) is refused before its run is planned
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from gbdesk import __version__
from gbdesk.engine.base import (
    COMPLETION_STOP,
    EngineInfo,
    GenerationRequest,
    GenerationResult,
    TokenCallback,
    completion_frame,
)
from gbdesk.engine.endpoints import CAPABILITIES, ENDPOINT_PRESETS, SERVERS_WITH
from gbdesk.engine.secrets import check_env_var_name, lookup_api_key
from gbdesk.support.errors import EngineCrashed, EngineError, UserError

try:  # the engine's shared result type
    from gbdesk.engine.base import ScoreResult
except ImportError:  # pragma: no cover - an engine version without it

    @dataclass
    class ScoreResult:  # type: ignore[no-redef]
        """One scored text: token count and summed natural-log likelihood."""

        n_tokens: int
        logprob_sum: float

        @property
        def ppl(self) -> float:
            """Perplexity ``exp(-logprob_sum / n_tokens)``; NaN when nothing was scored."""
            return math.exp(-self.logprob_sum / self.n_tokens) if self.n_tokens > 0 else math.nan


log = logging.getLogger(__name__)

ENDPOINT_KIND = "endpoint"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
# Retries after a failed try (429, 5xx, time-out, dropped connection), waiting
# backoff · 2^k seconds (±20 %, at most MAX_BACKOFF_S) before try k + 1: 0.5 + 1 + 2 + 4 +
# 8 + 16 ≈ 30 s in all by default. GBDESK_HTTP_RETRIES and GBDESK_HTTP_BACKOFF override.
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
# Sampling extensions of llama.cpp-family servers (and vLLM): llama.cpp's own top-k 40 and
# min-p 0.05 truncations and its repeat penalty are switched off, as in the local engine.
_SAMPLER_KEYS = ("top_k", "min_p", "repeat_penalty")
# A counting sequence: a model that can count gives its later tokens logprobs near 0; a
# server whose echoed prompt logprobs are shifted by one token gives them about -10. Short:
# llama-cpp-python's server sorts the whole vocabulary for every echoed token.
_CALIBRATION_TEXT = ", ".join(str(i) for i in range(1, 9))
_CALIBRATION_MIN_MEAN = -4.0
_CANNOT_SCORE = "this server cannot score log-likelihoods: "

_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
_TINY = GenerationRequest(messages=[{"role": "user", "content": "Say OK."}], seed=0, max_tokens=1)
_TOP_K = 5  # alternatives asked for when checking top logprobs


def _top_alternatives(answer: dict[str, Any]) -> int:
    """How many alternatives the first generated token of an answer lists: chat's
    ``logprobs.content[0].top_logprobs`` or completions' ``logprobs.top_logprobs[0]``."""
    choices = answer.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    if not isinstance(logprobs, dict):
        return 0
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        top = content[0].get("top_logprobs")
        return len(top) if isinstance(top, list) else 0
    top = logprobs.get("top_logprobs")
    if isinstance(top, list) and top and isinstance(top[0], dict):
        return len(top[0])
    return 0


# -- URLs and endpoint specs ---------------------------------------------------------------
def normalize_base_url(url: str) -> str:
    """The API base URL (``scheme://host:port/v1``) of what a person typed.

    A preset's name (`ENDPOINT_PRESETS`: ollama, lmstudio, llama-server) is its local
    address. A bare server address gets ``/v1``; a full ``…/chat/completions`` URL is cut
    back to its base. Credentials, query strings and fragments are refused: a key belongs in an
    environment variable or the keyring, never in a URL that gets recorded.
    """
    text = (url or "").strip()
    if text.lower() in ENDPOINT_PRESETS:
        return ENDPOINT_PRESETS[text.lower()][1]
    if not re.match(r"^https?://", text, re.I):
        presets = ", ".join(ENDPOINT_PRESETS)
        raise UserError(
            "an endpoint URL starts with http:// or https://, e.g. http://host:8000/v1 "
            f"(or name a local server: {presets})"
        )
    try:
        parts = urlsplit(text)
        host = parts.hostname
        _ = parts.port  # ValueError for a malformed port
    except ValueError:
        raise UserError("the endpoint URL is malformed (check the host and port)") from None
    if parts.username or parts.password:
        raise UserError(
            "put the API key in an environment variable (--api-key-env VAR) or the keyring, "
            "not in the endpoint URL"
        )
    if parts.query or parts.fragment:
        raise UserError(
            "give the API's base URL without a query string or #fragment, e.g. http://host:8000/v1"
        )
    if not host:
        raise UserError("the endpoint URL has no host name")
    path = re.sub(r"/+$", "", parts.path)
    for suffix in ("/chat/completions", "/completions", "/models"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path or "/v1", "", ""))


def endpoint_spec(base_url: str, model: str) -> str:
    """``URL#model``: how the model catalogue and `resolve_model` name an endpoint model."""
    return f"{normalize_base_url(base_url)}#{model}"


def parse_endpoint_spec(spec: str | None) -> tuple[str, str | None] | None:
    """(base URL, model name or None) for an ``http(s)://…[#model]`` spec, else None."""
    if not spec or not re.match(r"^https?://", spec.strip(), re.I):
        return None
    url, sep, model = spec.strip().partition("#")
    return normalize_base_url(url), (model.strip() or None) if sep else None


def _env_number(name: str, default: Any, cast: type) -> Any:
    """A number from the environment (retry tuning), or `default` when unset or malformed."""
    try:
        return cast(os.environ[name])
    except (KeyError, ValueError):
        return default


def _one_line(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_message(response: httpx.Response) -> str:
    """The server's own explanation of an error answer, on one line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("type")
        elif error:
            message = error
        message = message or body.get("detail") or body.get("message")
    if message is None:
        message = response.text or response.reason_phrase
    if not isinstance(message, str):
        message = json.dumps(message)
    return _one_line(message)


def _describe_transport(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting timed out",
            httpx.ReadTimeout: "no answer in time",
            httpx.WriteTimeout: "sending timed out",
            httpx.PoolTimeout: "no free connection in time",
        }.get(type(exc), "timed out")
        return kind
    cause = exc.__cause__ or exc.__context__
    text = str(exc) or (str(cause) if cause else "") or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        if re.search(r"refused", text, re.I):
            return "connection refused"
        if re.search(r"name or service|nodename|getaddrinfo|resolve", text, re.I):
            return "host name not found"
        return f"cannot connect ({_one_line(text, 120)})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the server closed the connection ({_one_line(text, 120)})"
    return _one_line(text, 160)


class _HttpRefused(Exception):
    """A non-retryable error answer (carries the status and the server's message)."""

    def __init__(self, status: int, message: str, path: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.path = status, message, path


class _NotJson(Exception):
    def __init__(self, response: httpx.Response, path: str):
        ctype = response.headers.get("content-type", "no content type").split(";")[0]
        start = _one_line(response.text, 60)
        super().__init__(f"{ctype}, starting {start!r}" if start else ctype)
        self.path = path


# -- the backend -----------------------------------------------------------------------------
class HttpBackend:
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
        timeout_s: float = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        max_retries: int | None = None,
        backoff_s: float | None = None,
    ):
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
        self.timeout_s = float(timeout_s)
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
        key = lookup_api_key(self.base_url, self.api_key_env)
        self.api_key_source = key.source
        headers = {"Accept": "application/json", "User-Agent": f"gbdesk/{__version__}"}
        if key.value:
            headers["Authorization"] = f"Bearer {key.value}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(
                max_connections=self.concurrency + 2,
                max_keepalive_connections=self.concurrency + 2,
            ),
            follow_redirects=True,
        )
        try:
            self._connect()
        except BaseException:
            self._client.close()
            raise

    @classmethod
    def from_model_row(cls, model: dict[str, Any], prompt_mode: str = "auto") -> HttpBackend:
        """The backend for a stored endpoint model row."""
        meta = json.loads(model.get("metadata_json") or "{}")
        return cls(
            model["path"],
            meta.get("endpoint_model") or model.get("file_name") or model["name"],
            api_key_env=meta.get("api_key_env"),
            concurrency=int(meta.get("concurrency") or 1),
            prompt_mode=prompt_mode,
        )

    # -- plumbing -------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        retry_transport: bool = True,
        retry_status: frozenset[int] = RETRY_STATUSES,
        timeout: float | None = None,
    ) -> tuple[dict[str, Any], float]:
        """One API call with bounded retries; (JSON answer, seconds of the last try).

        Raises `_HttpRefused` for an error answer that is not retried, `_NotJson` for a
        non-JSON success, `EngineCrashed` when the retries are used up or `abort` was
        called, and `httpx.TransportError` when `retry_transport` is false.
        """
        tries = 0
        while True:
            if self._stop.is_set():
                raise EngineCrashed("the request to the endpoint was stopped")
            retry_after = 0.0
            started = time.perf_counter()
            try:
                kwargs: dict[str, Any] = {"json": body} if body is not None else {}
                if timeout is not None:
                    kwargs["timeout"] = timeout
                response = self._client.request(method, self._url(path), **kwargs)
            except httpx.TransportError as exc:
                if self._stop.is_set():
                    raise EngineCrashed("the request to the endpoint was stopped") from None
                if not retry_transport:
                    raise
                problem = _describe_transport(exc)
            except RuntimeError:  # the client was closed by abort()/close()
                raise EngineCrashed("the request to the endpoint was stopped") from None
            else:
                latency = time.perf_counter() - started
                status = response.status_code
                if status < 400:
                    try:
                        data = response.json()
                    except ValueError:
                        raise _NotJson(response, path) from None
                    if not isinstance(data, dict):
                        raise _NotJson(response, path)
                    return data, latency
                message = _error_message(response)
                permanent = status == 500 and _PERMANENT.search(message)
                if status not in retry_status or permanent:
                    raise _HttpRefused(status, message, path)
                problem = f"HTTP {status} {message}"
                try:
                    retry_after = float(response.headers.get("retry-after", 0) or 0)
                except ValueError:
                    retry_after = 0.0
            if tries >= self.max_retries:
                raise EngineCrashed(
                    f"the endpoint {self.base_url} failed {tries + 1} times in a row ({problem})"
                )
            delay = min(MAX_BACKOFF_S, self.backoff_s * 2**tries) * random.uniform(0.8, 1.2)
            delay = max(delay, min(retry_after, MAX_BACKOFF_S))
            tries += 1
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

    # -- connecting -------------------------------------------------------------------------
    def _connect(self) -> None:
        """Probe the endpoint; one clear `UserError` line for whatever is wrong with it."""
        started = time.perf_counter()
        try:
            self._probe()
        except httpx.TransportError as exc:
            raise UserError(
                f"cannot reach the endpoint {self.base_url}: {_describe_transport(exc)} — "
                "is the server running, and the address and port right?"
            ) from None
        except _NotJson as exc:
            raise UserError(
                f"{self._url(exc.path)} did not answer with JSON ({exc}) — is this an "
                "OpenAI-compatible API? Its base URL usually ends in /v1"
            ) from None
        except EngineCrashed as exc:
            raise UserError(f"the endpoint is not ready: {exc}") from None
        self.connect_time_s = time.perf_counter() - started
        self.info = EngineInfo(
            backend=self.backend_name,
            model_name=self.server_model,
            prompt_mode="completion" if self.mode == "completion" else "chat",
            versions={"httpx": httpx.__version__},
            settings={
                "endpoint": self.base_url,
                "endpoint_model": self.model,
                "server_model": self.server_model,
                "server_models": self.server_models[:20],
                "owned_by": self.owned_by,
                "concurrency": self.concurrency,
                "api_key": self.api_key_source,  # where the key came from, never the key
                "json_format": self.json_format,
                "sampler_extras": self.sampler_extras,
                "seed": "sent with every request; honoured only by servers that support it",
                "max_retries": self.max_retries,
                "timeout_s": self.timeout_s,
            },
            load_time_s=self.connect_time_s,
        )

    def _probe(self) -> None:
        # 1. the model list (optional: a server without /models is still usable)
        quick = frozenset({429, 503})  # busy or still loading the model: wait a little
        self.server_models: list[str] = []
        self.owned_by: str | None = None
        listing_ok = False
        try:
            listing, self.models_latency_s = self._call(
                "GET", "models", retry_transport=False, retry_status=quick, timeout=30.0
            )
            entries = [e for e in listing.get("data") or [] if isinstance(e, dict)]
            self.server_models = [str(e.get("id")) for e in entries if e.get("id")]
            self.owned_by = next((str(e["owned_by"]) for e in entries if e.get("owned_by")), None)
            listing_ok = True
        except _HttpRefused as exc:
            self.models_latency_s = None
            if exc.status in (401, 403):
                raise self._auth_error(exc) from None
        # 2. a one-token request: right path, model name and key; sampling extensions
        self.sampler_extras = True
        self.json_format = "none"
        tiny = _TINY
        try:
            answer = self._try_tiny(tiny, quick)
        except _HttpRefused as exc:
            if exc.status in (400, 422) and any(k in exc.message for k in _SAMPLER_KEYS):
                self.sampler_extras = False
                try:
                    answer = self._try_tiny(tiny, quick)
                except _HttpRefused as again:
                    raise self._refused_error(again, listing_ok) from None
            else:
                raise self._refused_error(exc, listing_ok) from None
        reported = str(answer.get("model") or "")
        if self.model in self.server_models:
            self.server_model = self.model
        elif len(self.server_models) == 1:  # a one-model server that ignores the name
            self.server_model = self.server_models[0]
        else:
            self.server_model = reported or self.model
        # 3. which structured-output form the server takes *and applies*: constrained, the
        # answer to "Say OK." starts with "{"; a server that ignores the field says "OK".
        for form in ("json_schema", "json_object"):
            self.json_format = form
            probe = GenerationRequest(
                messages=tiny.messages, seed=0, max_tokens=2, json_schema=_PROBE_SCHEMA
            )
            try:
                answer, _ = self._call(
                    "POST", self._path, self._body(probe), retry_transport=False,
                    retry_status=quick,
                )  # fmt: skip
            except (_HttpRefused, _NotJson):
                continue
            if self._text(answer).lstrip().startswith("{"):
                break
        else:
            self.json_format = "none"

    def _try_tiny(self, request: GenerationRequest, retry_status: frozenset[int]) -> dict:
        answer, self.tiny_latency_s = self._call(
            "POST", self._path, self._body(request), retry_transport=False,
            retry_status=retry_status,
        )  # fmt: skip
        if not isinstance(answer.get("choices"), list) or not answer["choices"]:
            raise UserError(
                f"{self._url(self._path)} answered without 'choices' — is this an "
                "OpenAI-compatible API?"
            )
        return answer

    def _text(self, answer: dict[str, Any]) -> str:
        """The generated text of an answer's first choice ("" when there is none)."""
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""
        if self.mode == "completion":
            return str(choices[0].get("text") or "")
        return str((choices[0].get("message") or {}).get("content") or "")

    def _auth_error(self, exc: _HttpRefused) -> UserError:
        where = f"${self.api_key_env}" if self.api_key_env else "$GBDESK_API_KEY"
        got = {"none": "no API key was found"}.get(
            self.api_key_source, f"the key from {self.api_key_source} was refused"
        )
        return UserError(
            f"the endpoint {self.base_url} refused access (HTTP {exc.status}: {exc.message}); "
            f"{got} — put it in {where} (or the keyring) and try again"
        )

    def _refused_error(self, exc: _HttpRefused, listing_ok: bool) -> UserError:
        if exc.status in (401, 403):
            return self._auth_error(exc)
        served = ", ".join(self.server_models[:10]) or "none listed"
        if exc.status == 404 and not listing_ok:
            return UserError(
                f"{self._url(exc.path)} was not found (HTTP 404) — check the endpoint URL; "
                "an OpenAI-compatible base URL usually ends in /v1"
            )
        if exc.status in (400, 404) and re.search(r"model", exc.message, re.I):
            return UserError(
                f"the endpoint does not serve the model {self.model!r} ({exc.message}); "
                f"it serves: {served}"
            )
        return UserError(
            f"the endpoint {self.base_url} refused a test request "
            f"(HTTP {exc.status}: {exc.message})"
        )

    # -- the Backend interface ------------------------------------------------------------
    def generate(
        self, request: GenerationRequest, on_token: TokenCallback | None = None
    ) -> GenerationResult:
        """One generation (not streamed: `on_token` gets the whole text at the end)."""
        try:
            data, latency = self._call("POST", self._path, self._body(request))
        except _HttpRefused as exc:
            raise EngineError(
                f"the endpoint refused the request (HTTP {exc.status}: {exc.message})"
            ) from None
        except _NotJson as exc:
            raise EngineError(
                f"the endpoint answered with something that is not JSON ({exc})"
            ) from None
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EngineError(f"the endpoint's answer has no choices: {_one_line(data, 160)}")
        choice = choices[0]
        text = self._text(data)
        finish = str(choice.get("finish_reason") or "stop")
        usage = data.get("usage") or {}
        if on_token is not None and text:
            on_token(text)
        return GenerationResult(
            text=text,
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            finish_reason="stop" if finish in ("eos", "end_turn", "stop_sequence") else finish,
            prompt_mode=self.info.prompt_mode,
            extra={"server_model": data.get("model")},
        )

    def score(self, texts: list[str]) -> list[ScoreResult]:
        """Log-likelihood of each text from the server's echoed prompt logprobs
        (``/v1/completions`` with ``echo``, ``logprobs`` 1 and one generated token, which is
        dropped). `EngineError` when the server cannot give trustworthy prompt logprobs."""
        self._check_scoring()
        if self.concurrency > 1 and len(texts) > 1:
            return list(self._executor().map(self._score_one, texts))
        return [self._score_one(text) for text in texts]

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="gbdesk-score")
            return self._pool

    def _prompt_logprobs(self, text: str, **call: Any) -> list[float]:
        """The log-probability of each of `text`'s tokens after the first (the server's
        echoed prompt logprobs); `EngineError` when the server refuses or ignores echo.
        `call`: `_call`'s retry settings."""
        body = {
            "model": self.model,
            "prompt": text,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 1,
            "temperature": 0.0,
            "seed": 0,
        }
        try:
            data, _ = self._call("POST", "completions", body, **call)
        except _HttpRefused as exc:
            raise EngineError(
                f"{_CANNOT_SCORE}/completions with echo and logprobs was refused "
                f"(HTTP {exc.status}: {exc.message})"
            ) from None
        except _NotJson as exc:
            raise EngineError(
                f"{_CANNOT_SCORE}/completions did not answer with JSON ({exc})"
            ) from None
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
        if not values or not str(choice.get("text", "")).startswith(text):
            raise EngineError(
                f"{_CANNOT_SCORE}it does not return the prompt's token logprobs "
                "(echo=true with logprobs is ignored)"
            )
        offsets = logprobs.get("text_offset")
        if offsets and len(offsets) == len(values):
            prompt = [v for v, o in zip(values, offsets, strict=True) if o < len(text)]
        else:
            generated = int((data.get("usage") or {}).get("completion_tokens") or 0)
            prompt = values[: len(values) - generated] if generated else values
        return [float(v) for v in prompt if v is not None]

    def _calibrate(self, **call: Any) -> float:
        """Score the counting sequence and remember whether the logprobs are trustworthy
        (`_scoring_error` when not); the mean logprob of its later tokens."""
        values = self._prompt_logprobs(_CALIBRATION_TEXT, **call)
        tail = values[len(values) // 2 :]
        mean = sum(tail) / len(tail) if tail else -math.inf
        if mean < _CALIBRATION_MIN_MEAN:
            self._scoring_error = (
                f"{_CANNOT_SCORE}its echoed prompt logprobs are shifted by one token, as "
                "llama-cpp-python's server does for models that add no BOS token (a counting "
                f"sequence scores {mean:.1f} nats per token instead of about 0)"
            )
        self._scoring_checked = True
        return mean

    def _check_scoring(self) -> None:
        with self._lock:
            if not self._scoring_checked:
                self._calibrate()
            if self._scoring_error:
                raise EngineError(self._scoring_error)

    # -- what the endpoint can do ------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        """What this endpoint can do, each found with one small request (`CAPABILITIES`):
        {key: {"ok": True/False/None (could not tell), "note": words}, "checked_at": …,
        "server": the model list's owned_by}. What `store_capabilities` stores."""
        from gbdesk.store.db import now

        quick = frozenset({429, 503})
        found: dict[str, Any] = {}
        for key, detect in (
            ("chat", self._detect_chat),
            ("prompt_logprobs", self._detect_prompt_logprobs),
            ("top_logprobs", self._detect_top_logprobs),
        ):
            try:
                found[key] = detect(quick)
            except httpx.TransportError as exc:
                found[key] = {
                    "ok": None,
                    "note": f"could not be checked: {_describe_transport(exc)}",
                }
            except EngineCrashed as exc:
                found[key] = {"ok": None, "note": f"could not be checked: {exc}"}
            log.info("endpoint %s %s: %s", self.base_url, key, found[key])
        return {**found, "checked_at": now(), "server": self.owned_by}

    def _detect_chat(self, quick: frozenset[int]) -> dict[str, Any]:
        if self.mode == "chat":  # the connection's one-token request was a chat request
            return {
                "ok": True,
                "note": f"a one-token chat request took {1000 * self.tiny_latency_s:.0f} ms",
            }
        body = {**self._sampling(_TINY), "max_tokens": 1, "messages": _TINY.messages}
        try:
            answer, latency = self._call(
                "POST", "chat/completions", body, retry_transport=False, retry_status=quick
            )
        except (_HttpRefused, _NotJson) as exc:
            return {"ok": False, "note": f"/chat/completions refused a chat request ({exc})"}
        if not isinstance(answer.get("choices"), list) or not answer["choices"]:
            return {"ok": False, "note": "/chat/completions answered without 'choices'"}
        return {"ok": True, "note": f"a one-token chat request took {1000 * latency:.0f} ms"}

    def _detect_prompt_logprobs(self, quick: frozenset[int]) -> dict[str, Any]:
        with self._lock:
            try:
                mean = self._calibrate(retry_transport=False, retry_status=quick)
            except EngineError as exc:
                return {"ok": False, "note": str(exc).removeprefix(_CANNOT_SCORE)}
        if self._scoring_error:
            return {"ok": False, "note": self._scoring_error.removeprefix(_CANNOT_SCORE)}
        return {
            "ok": True,
            "note": "/completions with echo and logprobs scores each prompt token (a counting "
            f"sequence: {mean:.2f} nats per token)",
        }

    def _detect_top_logprobs(self, quick: frozenset[int]) -> dict[str, Any]:
        body = {**self._body(_TINY), "max_tokens": 1}
        if self.mode == "completion":
            body["logprobs"] = _TOP_K
        else:
            body.update({"logprobs": True, "top_logprobs": _TOP_K})
        try:
            answer, _ = self._call(
                "POST", self._path, body, retry_transport=False, retry_status=quick
            )
        except (_HttpRefused, _NotJson) as exc:
            return {"ok": False, "note": f"a request for top logprobs was refused ({exc})"}
        alternatives = _top_alternatives(answer)
        if alternatives >= 2:
            return {"ok": True, "note": f"{alternatives} alternatives per generated token"}
        return {"ok": False, "note": "a request for top logprobs is answered without them"}

    def _score_one(self, text: str) -> ScoreResult:
        values = self._prompt_logprobs(text)
        return ScoreResult(n_tokens=len(values), logprob_sum=sum(values))

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
        self._client.close()

    def close(self) -> None:
        self._client.close()
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


# -- endpoints in the model catalogue ---------------------------------------------------------
def _meta(row: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(row.get("metadata_json") or "{}")
    except ValueError:
        return {}


def find_endpoint(store: Any, base_url: str, model: str | None) -> dict[str, Any] | None:
    """The stored endpoint row for (URL, model) — the only one at that URL if `model` is
    None and there is exactly one — or None."""
    rows = store.models_of_kind(ENDPOINT_KIND, normalize_base_url(base_url))
    if model is None:
        return rows[0] if len(rows) == 1 else None
    for row in rows:
        if (_meta(row).get("endpoint_model") or row.get("file_name")) == model:
            return row
    return None


def register_endpoint(
    store: Any,
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Store (or update) an endpoint model row: kind "endpoint", path = the base URL,
    sha256 NULL, metadata = the served model name, the API-key variable's name and the
    number of concurrent requests (and the capabilities found earlier, kept). The key
    itself is never stored."""
    from gbdesk.store.db import now

    base = normalize_base_url(base_url)
    model = (model or "").strip()
    if not model:
        raise UserError("name the model the endpoint serves")
    if not 1 <= int(concurrency) <= MAX_CONCURRENCY:
        raise UserError(f"concurrency must be between 1 and {MAX_CONCURRENCY}")
    meta: dict[str, Any] = {
        "endpoint_model": model,
        "api_key_env": check_env_var_name(api_key_env),
        "concurrency": int(concurrency),
    }
    existing = find_endpoint(store, base, model)
    if existing and _meta(existing).get("capabilities"):  # what it can do stays known
        meta["capabilities"] = _meta(existing)["capabilities"]
    record = {
        "kind": ENDPOINT_KIND,
        "name": f"{model} @ {urlsplit(base).netloc}",
        "path": base,
        "file_name": model,
        "sha256": None,
        "metadata_json": json.dumps(meta, sort_keys=True),
    }
    if existing:
        store.update_model_row(existing["id"], record)
        return store.get_model(existing["id"])
    record["added_at"] = now()
    return store.get_model(store.add_model_row(record))


def resolve_endpoint(store: Any, spec: str) -> dict[str, Any]:
    """The model row for an ``URL#model`` spec, registering it when it is new."""
    parsed = parse_endpoint_spec(spec)
    if parsed is None:
        raise UserError(f"not an endpoint: {spec!r}")
    base, model = parsed
    row = find_endpoint(store, base, model)
    if row is not None:
        return row
    if model is None:
        raise UserError(f"say which model of {base} to use: {base}#MODEL-NAME")
    return register_endpoint(store, base, model)


def endpoint_entries(store: Any) -> list[dict[str, Any]]:
    """Catalogue entries (the shape of `gbdesk.workflows.models.list_models`) for stored endpoints;
    "path" is the ``URL#model`` spec that `gbdesk.workflows.runs.resolve_model` accepts."""
    out = []
    for row in store.models_of_kind(ENDPOINT_KIND):
        meta = _meta(row)
        model = meta.get("endpoint_model") or row.get("file_name") or row["name"]
        out.append(
            {
                "kind": ENDPOINT_KIND,
                "endpoint": True,
                "name": row["name"],
                "path": f"{row['path']}#{model}",
                "url": row["path"],
                "file_name": model,
                "endpoint_model": model,
                "api_key_env": meta.get("api_key_env"),
                "concurrency": int(meta.get("concurrency") or 1),
                "capabilities": meta.get("capabilities"),
                "model_id": row["id"],
                "sha256": None,
                "default": False,
                "fits": True,
                "architecture": None,
                "quantization": None,
                "has_chat_template": None,
            }
        )
    return out


def with_endpoints(models: list[dict[str, Any]], store: Any) -> list[dict[str, Any]]:
    """`models` plus the stored endpoints not already among them (by path)."""
    seen = {m.get("path") for m in models}
    return models + [e for e in endpoint_entries(store) if e["path"] not in seen]


# -- what a stored endpoint can do ------------------------------------------------------------
def endpoint_capabilities(row: dict[str, Any]) -> dict[str, Any] | None:
    """The capabilities stored with an endpoint row (`HttpBackend.capabilities`), or None
    when they were never checked."""
    found = _meta(row).get("capabilities")
    return found if isinstance(found, dict) else None


def store_capabilities(store: Any, model_id: int, found: dict[str, Any]) -> dict[str, Any]:
    """Store what an endpoint can do in its row's metadata; the updated row."""
    row = store.get_model(model_id)
    meta = _meta(row)
    meta["capabilities"] = found
    store.update_model_row(model_id, {"metadata_json": json.dumps(meta, sort_keys=True)})
    return store.get_model(model_id)


def check_capabilities(store: Any, row: dict[str, Any]) -> dict[str, Any]:
    """Connect to a stored endpoint, find what it can do and store it; the capabilities.
    `UserError` (one line) when the endpoint cannot be reached."""
    with HttpBackend.from_model_row(row) as backend:
        found = backend.capabilities()
    store_capabilities(store, row["id"], found)
    return found


def capability_words(found: dict[str, Any] | None) -> list[tuple[str, bool | None, str]]:
    """(what, yes/no/unknown, why) per capability, in `CAPABILITIES` order; [] when the
    endpoint was never checked."""
    if not found:
        return []
    out = []
    for key, words in CAPABILITIES.items():
        entry = found.get(key) or {}
        out.append((words, entry.get("ok"), str(entry.get("note") or "")))
    return out


def capability_summary(found: dict[str, Any] | None) -> str:
    """One line: "✓ chat generation · ✗ log-probabilities of prompt tokens · …"."""
    if not found:
        return "not checked yet"
    marks = {True: "✓", False: "✗", None: "?"}
    return " · ".join(f"{marks[ok]} {what}" for what, ok, _ in capability_words(found))


def unmet_capability(probe_title: str, row: dict[str, Any], need: str, found: dict) -> str:
    """The one line that refuses a probe on an endpoint lacking `need`: what is missing,
    why (as detected), and the servers that have it."""
    entry = found.get(need) or {}
    model = _meta(row).get("endpoint_model") or row.get("file_name") or row.get("name")
    lacks = "does not give" if entry.get("ok") is False else "could not be shown to give"
    note = f": {entry['note']}" if entry.get("note") else ""
    return (
        f"{probe_title} needs {CAPABILITIES.get(need, need)}, which the endpoint "
        f"{row['path']} (model {model}) {lacks}{note}; servers that give them: "
        f"{SERVERS_WITH.get(need, 'see docs/remote_engines.md')}"
    )
