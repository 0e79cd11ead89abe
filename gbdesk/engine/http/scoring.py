"""What an endpoint can score and do: the log-likelihood of texts from the server's
echoed prompt logprobs (checked first against a counting sequence, so a server whose
logprobs are shifted by one token is refused), and the small requests that find which of
`CAPABILITIES` an endpoint has. `Scoring` is a part of `HttpBackend`."""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gbdesk.engine.base import GenerationRequest, ScoreResult
from gbdesk.engine.http.answers import HttpRefused, Misfit, NotJson
from gbdesk.engine.http.replies import Answer
from gbdesk.engine.http.transport import Unanswered
from gbdesk.support.errors import EngineCrashed, EngineError

log = logging.getLogger(__name__)

# A counting sequence: a model that can count gives its later tokens logprobs near 0; a
# server whose echoed prompt logprobs are shifted by one token gives them about -10. Short:
# llama-cpp-python's server sorts the whole vocabulary for every echoed token.
_CALIBRATION_TEXT = ", ".join(str(i) for i in range(1, 9))
_CALIBRATION_MIN_MEAN = -4.0
_CANNOT_SCORE = "this server cannot score log-likelihoods: "
#: the one-token request that connecting and checking send
TINY_REQUEST = GenerationRequest(
    messages=[{"role": "user", "content": "Say OK."}], seed=0, max_tokens=1
)
_TOP_K = 5  # alternatives asked for when checking top logprobs


class Scoring:
    """Scoring and capability detection of `HttpBackend`, over its `_ask`."""

    base_url: str
    model: str
    mode: str
    concurrency: int
    owned_by: str | None
    tiny_latency_s: float
    _path: str
    _lock: threading.Lock
    _pool: ThreadPoolExecutor | None
    _scoring_error: str | None
    _scoring_checked: bool

    def _ask(self, path: str, body: dict[str, Any], **call: Any) -> tuple[Answer, float]:
        raise NotImplementedError

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _sampling(self, request: GenerationRequest) -> dict[str, Any]:
        raise NotImplementedError

    def read_timeout(self, max_tokens: int) -> float:
        raise NotImplementedError

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
        echoed prompt logprobs, each a finite number ≤ 0: `replies`); `EngineError`
        when the server refuses or ignores echo. `call`: `_call`'s retry settings."""
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
            answer, _ = self._ask("completions", body, read_s=self.read_timeout(1), **call)
        except HttpRefused as exc:
            raise EngineError(
                f"{_CANNOT_SCORE}/completions with echo and logprobs was refused "
                f"(HTTP {exc.status}: {exc.message})"
            ) from None
        except NotJson as exc:
            raise EngineError(
                f"{_CANNOT_SCORE}/completions did not answer with JSON ({exc})"
            ) from None
        choice = answer.first
        logprobs = choice.logprobs
        values = logprobs.token_logprobs if logprobs else None
        if not values or not choice.text.startswith(text):
            raise EngineError(
                f"{_CANNOT_SCORE}it does not return the prompt's token logprobs "
                "(echo=true with logprobs is ignored)"
            )
        offsets = logprobs.text_offset if logprobs else None
        if offsets and len(offsets) == len(values):
            prompt = [v for v, o in zip(values, offsets, strict=True) if o < len(text)]
        else:
            generated = answer.tokens_out
            prompt = values[: len(values) - generated] if generated else values
        return [v for v in prompt if v is not None]

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
            except Unanswered as exc:
                found[key] = {"ok": None, "note": f"could not be checked: {exc}"}
            except EngineCrashed as exc:
                found[key] = {"ok": None, "note": f"could not be checked: {exc}"}
            except Misfit as exc:  # NaN logprobs, strings for numbers …: not believed
                found[key] = {
                    "ok": False,
                    "note": f"its reply to /{exc.path} does not fit the OpenAI format: {exc}",
                }
            log.info("endpoint %s %s: %s", self.base_url, key, found[key])
        return {**found, "checked_at": now(), "server": self.owned_by}

    def _detect_chat(self, quick: frozenset[int]) -> dict[str, Any]:
        if self.mode == "chat":  # the connection's one-token request was a chat request
            return {
                "ok": True,
                "note": f"a one-token chat request took {1000 * self.tiny_latency_s:.0f} ms",
            }
        body = {**self._sampling(TINY_REQUEST), "max_tokens": 1, "messages": TINY_REQUEST.messages}
        try:
            _, latency = self._ask(
                "chat/completions", body, retry_transport=False, retry_status=quick,
                read_s=self.read_timeout(1),
            )  # fmt: skip
        except (HttpRefused, NotJson) as exc:
            return {"ok": False, "note": f"/chat/completions refused a chat request ({exc})"}
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
        body = {**self._body(TINY_REQUEST), "max_tokens": 1}
        if self.mode == "completion":
            body["logprobs"] = _TOP_K
        else:
            body.update({"logprobs": True, "top_logprobs": _TOP_K})
        try:
            answer, _ = self._ask(
                self._path, body, retry_transport=False, retry_status=quick,
                read_s=self.read_timeout(1),
            )  # fmt: skip
        except (HttpRefused, NotJson) as exc:
            return {"ok": False, "note": f"a request for top logprobs was refused ({exc})"}
        alternatives = answer.alternatives
        if alternatives >= 2:
            return {"ok": True, "note": f"{alternatives} alternatives per generated token"}
        return {"ok": False, "note": "a request for top logprobs is answered without them"}

    def _score_one(self, text: str) -> ScoreResult:
        values = self._prompt_logprobs(text)
        return ScoreResult(n_tokens=len(values), logprob_sum=sum(values))
