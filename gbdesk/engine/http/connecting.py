"""Connecting to an endpoint: creating an `HttpBackend` *probes* it — lists its models,
makes a one-token request (right path, model name and key; whether the server takes
llama.cpp's sampling extensions), finds which structured-output form it accepts and
applies — so that a wrong address, path, model name or API key fails at once with one
clear line (`UserError`), before a run is planned. `Connecting` is a part of
`HttpBackend`."""

from __future__ import annotations

import re
import time
from typing import Any

import urllib3

from gbdesk.engine.base import EngineInfo, GenerationRequest
from gbdesk.engine.http.answers import ChangedMisfit, HttpRefused, Misfit, NotJson, another_listed
from gbdesk.engine.http.replies import Answer, ModelList, ReplyMismatch, parse_reply
from gbdesk.engine.http.scoring import TINY_REQUEST
from gbdesk.engine.http.transport import READ_TIMEOUT_BASE_S, SLOWEST_TOKENS_PER_S, Unanswered
from gbdesk.support.errors import EngineCrashed, UserError

# Sampling extensions of llama.cpp-family servers (and vLLM): llama.cpp's own top-k 40 and
# min-p 0.05 truncations and its repeat penalty are switched off, as in the local engine.
_SAMPLER_KEYS = ("top_k", "min_p", "repeat_penalty")
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


class Connecting:
    """Probing the endpoint when an `HttpBackend` is made, and the one-line errors of a
    refused connection (a part of `HttpBackend`, over its `_call` and `_ask`)."""

    backend_name: str
    base_url: str
    model: str
    mode: str
    concurrency: int
    api_key_env: str | None
    api_key_source: str
    max_retries: int
    connect_timeout_s: float
    read_timeout_s: float | None
    _path: str
    _answered_as: str | None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, **call: Any) -> Any:
        raise NotImplementedError

    def _ask(self, path: str, body: dict[str, Any], **call: Any) -> tuple[Answer, float]:
        raise NotImplementedError

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _url(self, path: str) -> str:
        raise NotImplementedError

    def read_timeout(self, max_tokens: int) -> float:
        raise NotImplementedError

    def _connect(self) -> None:
        """Probe the endpoint; one clear `UserError` line for whatever is wrong with it."""
        started = time.perf_counter()
        try:
            self._probe()
        except Unanswered as exc:
            if exc.kind == "read-timeout":
                raise UserError(
                    f"the server at {self.base_url} took the request but sent no answer "
                    f"within {exc.read_s or self.read_timeout(0):.0f} s — is it stuck or "
                    "overloaded? (GBDESK_HTTP_READ_TIMEOUT sets how long to wait)"
                ) from None
            raise UserError(
                f"cannot reach the endpoint {self.base_url}: {exc} — "
                "is the server running, and the address and port right?"
            ) from None
        except NotJson as exc:
            raise UserError(
                f"{self._url(exc.path)} did not answer with JSON ({exc}) — is this an "
                "OpenAI-compatible API? Its base URL usually ends in /v1"
            ) from None
        except Misfit as exc:
            raise UserError(
                f"the server at {self.base_url} answered /{exc.path} with a reply that does "
                f"not fit the OpenAI format: {exc}"
            ) from None
        except EngineCrashed as exc:
            raise UserError(f"the endpoint is not ready: {exc}") from None
        self.connect_time_s = time.perf_counter() - started
        self.info = EngineInfo(
            backend=self.backend_name,
            model_name=self.server_model,
            prompt_mode="completion" if self.mode == "completion" else "chat",
            versions={"urllib3": urllib3.__version__},
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
                "connect_timeout_s": self.connect_timeout_s,
                # seconds, or how they follow from each request's max_tokens
                "read_timeout_s": self.read_timeout_s
                or f"{READ_TIMEOUT_BASE_S:g} + max_tokens / {SLOWEST_TOKENS_PER_S:g}",
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
                "GET", "models", reply=lambda b: parse_reply(ModelList, b),
                retry_transport=False, retry_status=quick, read_s=min(30.0, self.read_timeout(0)),
            )  # fmt: skip
            self.server_models = [entry.id for entry in listing.data if entry.id]
            self.owned_by = next((e.owned_by for e in listing.data if e.owned_by), None)
            listing_ok = True
        except HttpRefused as exc:
            self.models_latency_s = None
            if exc.status in (401, 403):
                raise self._auth_error(exc) from None
        except ReplyMismatch as exc:
            raise Misfit(str(exc), "models") from None
        # 2. a one-token request: right path, model name and key; sampling extensions
        self.sampler_extras = True
        self.json_format = "none"
        tiny = TINY_REQUEST
        try:
            answer = self._try_tiny(tiny, quick)
        except HttpRefused as exc:
            if exc.status in (400, 422) and any(k in exc.message for k in _SAMPLER_KEYS):
                self.sampler_extras = False
                try:
                    answer = self._try_tiny(tiny, quick)
                except HttpRefused as again:
                    raise self._refused_error(again, listing_ok) from None
            else:
                raise self._refused_error(exc, listing_ok) from None
        reported = answer.model or ""
        if another_listed(self.model, reported, self.server_models):
            raise UserError(
                f"the endpoint {self.base_url} does not serve the model {self.model!r}: it "
                f"answered as {reported!r}, another model it lists; it serves: "
                f"{', '.join(self.server_models[:10])}"
            )
        if self.model in self.server_models:
            self.server_model = self.model
        elif len(self.server_models) == 1:  # a one-model server that ignores the name
            self.server_model = self.server_models[0]
        else:
            self.server_model = reported or self.model
        self._answered_as = reported or None
        # 3. which structured-output form the server takes *and applies*: constrained, the
        # answer to "Say OK." starts with "{"; a server that ignores the field says "OK".
        # Each answer is also a second look at the model it answers as: a server naming
        # another model on every request is refused here (`ChangedMisfit`), not after a run
        # was planned.
        confirmed = False
        for form in ("json_schema", "json_object"):
            self.json_format = form
            probe = GenerationRequest(
                messages=tiny.messages, seed=0, max_tokens=2, json_schema=_PROBE_SCHEMA
            )
            try:
                answer, _ = self._ask(
                    self._path, self._body(probe), retry_transport=False, retry_status=quick,
                    read_s=self.read_timeout(probe.max_tokens),
                )  # fmt: skip
            except ChangedMisfit:
                raise
            except (HttpRefused, NotJson, Misfit):
                continue
            confirmed = True
            if answer.text.lstrip().startswith("{"):
                break
        else:
            self.json_format = "none"
        if not confirmed:  # no second answer yet: one more one-token request
            self._try_tiny(tiny, quick)

    def _try_tiny(self, request: GenerationRequest, retry_status: frozenset[int]) -> Answer:
        answer, self.tiny_latency_s = self._ask(
            self._path, self._body(request), retry_transport=False, retry_status=retry_status,
            read_s=self.read_timeout(request.max_tokens),
        )  # fmt: skip
        return answer

    def _auth_error(self, exc: HttpRefused) -> UserError:
        where = f"${self.api_key_env}" if self.api_key_env else "$GBDESK_API_KEY"
        got = {"none": "no API key was found"}.get(
            self.api_key_source, f"the key from {self.api_key_source} was refused"
        )
        return UserError(
            f"the endpoint {self.base_url} refused access (HTTP {exc.status}: {exc.message}); "
            f"{got} — put it in {where} (or the keyring) and try again"
        )

    def _refused_error(self, exc: HttpRefused, listing_ok: bool) -> UserError:
        if exc.status in (401, 403):
            return self._auth_error(exc)
        if 300 <= exc.status < 400:
            return UserError(
                f"{self._url(exc.path)} answered HTTP {exc.status}: {exc.message} — give "
                "that address as the endpoint (redirects are not followed)"
            )
        served = ", ".join(self.server_models[:10]) or "none listed"
        if exc.status == 404 and not listing_ok:
            return UserError(
                f"{self._url(exc.path)} was not found (HTTP 404) — check the endpoint URL; "
                "an OpenAI-compatible base URL usually ends in /v1"
            )
        if exc.status in (400, 404) and re.search(r"model", exc.message, re.I):
            return UserError(
                f"the endpoint {self.base_url} does not serve the model {self.model!r} "
                f"({exc.message}); it serves: {served}"
            )
        return UserError(
            f"the endpoint {self.base_url} refused a test request "
            f"(HTTP {exc.status}: {exc.message})"
        )
