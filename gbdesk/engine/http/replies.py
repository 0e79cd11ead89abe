"""What an OpenAI-compatible server's replies must look like before gbdesk believes them.

Every reply of a server (`gbdesk.engine.http.backend`) is parsed against one of the typed
schemas below (pydantic) — the model list, a chat answer, a completion answer, an error
answer — never read with chains of ``.get``. The rules, in one place:

* **Types are strict.** A text is a string, an object an object, a list a list; a token
  count is a JSON integer (not ``"12"``, ``12.0`` or ``1e999``) from 0 to
  `MAX_TOKEN_COUNT`; a log-probability is a finite JSON number (not ``NaN``,
  ``Infinity``, ``-Infinity`` or ``"-1.5"``) of at most `LOGPROB_ROUNDING` (a logarithm of
  a probability is ≤ 0; servers round). Fields gbdesk does not use are ignored.
* **An answer is no longer than its tokens allow**: at most `MAX_CHARS_PER_TOKEN`
  characters per requested token, counting at least `MIN_TOKENS_ALLOWED`
  (`check_answer_length`) — a server that sends megabytes for a 300-token answer ignored
  ``max_tokens``.
* **A reply is at most `MAX_REPLY_BYTES`** (read in pieces, so a runaway server cannot
  fill the memory).
* **Token counts fit what was asked** (`check_token_counts`): no more completion tokens
  than ``max_tokens`` (+1: a server may count the end token), at least the answer's
  characters over `MAX_CHARS_PER_TOKEN`, and no more prompt tokens than the prompt has
  bytes plus `TEMPLATE_TOKENS` of chat template — a reply claiming 10⁹ tokens for a
  32-token request is not believed (it would make a speed of billions of tokens a second
  and be stored for later plans).

A reply that does not fit raises `ReplyMismatch`, whose text says on one line where and
what was wrong ("usage.prompt_tokens = 'many': input should be a valid integer"); the
backend treats it like any other server fault (retried, then the run stops resumable).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictStr, ValidationError

#: the largest token count a server may report (no request has a billion tokens; bigger
#: integers would not even fit SQLite's 64-bit columns)
MAX_TOKEN_COUNT = 10**9
#: how far above 0 a log-probability may be (servers round in float32)
LOGPROB_ROUNDING = 1e-3
#: characters an answer may hold per token it was allowed (the longest tokens of common
#: vocabularies are runs of spaces or punctuation well under this), counting at least
#: MIN_TOKENS_ALLOWED tokens (a one-token test request is not judged on its few characters)
MAX_CHARS_PER_TOKEN = 256
MIN_TOKENS_ALLOWED = 64
#: the largest reply read (a scoring reply with every prompt token's logprobs is far less)
MAX_REPLY_BYTES = 64 * 2**20
#: prompt tokens a chat template may add to a prompt's own (a long default system prompt)
TEMPLATE_TOKENS = 4096

TokenCount = Annotated[int, Strict(), Field(ge=0, le=MAX_TOKEN_COUNT)]
Logprob = Annotated[float, Strict(), Field(allow_inf_nan=False, le=LOGPROB_ROUNDING)]
Offset = Annotated[int, Strict(), Field(ge=0)]


class ReplyMismatch(Exception):
    """A server's reply that does not fit its schema; the text says where and what."""


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# -- the model list --------------------------------------------------------------------------
class ModelEntry(_Reply):
    id: StrictStr
    owned_by: StrictStr | None = None


class ModelList(_Reply):
    """``GET /models``."""

    data: list[ModelEntry]


# -- answers ---------------------------------------------------------------------------------
class Usage(_Reply):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None


class TopLogprob(_Reply):
    token: StrictStr
    logprob: Logprob


class TokenLogprob(_Reply):
    token: StrictStr
    logprob: Logprob
    top_logprobs: list[TopLogprob] | None = None


class ChatLogprobs(_Reply):
    content: list[TokenLogprob] | None = None


class ChatMessage(_Reply):
    content: StrictStr | None = None


class ChatChoice(_Reply):
    message: ChatMessage
    finish_reason: StrictStr | None = None
    logprobs: ChatLogprobs | None = None


class TextLogprobs(_Reply):
    """A completion's logprobs: one per token (the first prompt token's is null when the
    prompt is echoed), their offsets in the text, the alternatives of each."""

    tokens: list[StrictStr] | None = None
    token_logprobs: list[Logprob | None] | None = None
    text_offset: list[Offset] | None = None
    top_logprobs: list[dict[str, Logprob] | None] | None = None


class TextChoice(_Reply):
    text: StrictStr
    finish_reason: StrictStr | None = None
    logprobs: TextLogprobs | None = None


class _Answer(_Reply):
    model: StrictStr | None = None
    usage: Usage | None = None

    @property
    def first(self) -> Any:
        return self.choices[0]  # type: ignore[attr-defined]

    @property
    def tokens_in(self) -> int:
        return (self.usage.prompt_tokens if self.usage else None) or 0

    @property
    def tokens_out(self) -> int:
        return (self.usage.completion_tokens if self.usage else None) or 0


class ChatAnswer(_Answer):
    """``POST /chat/completions``."""

    choices: Annotated[list[ChatChoice], Field(min_length=1)]

    @property
    def text(self) -> str:
        return self.first.message.content or ""

    @property
    def alternatives(self) -> int:
        """How many alternatives the first generated token lists (top logprobs)."""
        content = self.first.logprobs.content if self.first.logprobs else None
        return len(content[0].top_logprobs or []) if content else 0


class TextAnswer(_Answer):
    """``POST /completions``."""

    choices: Annotated[list[TextChoice], Field(min_length=1)]

    @property
    def text(self) -> str:
        return self.first.text

    @property
    def alternatives(self) -> int:
        logprobs = self.first.logprobs
        top = logprobs.top_logprobs if logprobs else None
        return len(top[0] or {}) if top else 0


Answer = ChatAnswer | TextAnswer


def answer_schema(path: str) -> type[ChatAnswer] | type[TextAnswer]:
    """The schema of an answer to a POST to `path`."""
    return ChatAnswer if path.rstrip("/").endswith("chat/completions") else TextAnswer


# -- error answers ---------------------------------------------------------------------------
class _ErrorDetail(_Reply):
    message: Any = None
    type: Any = None


class ErrorAnswer(_Reply):
    """An error answer's explanation, wherever the server puts it (OpenAI's ``error``
    object, FastAPI's ``detail``, a bare ``message``)."""

    error: _ErrorDetail | StrictStr | None = None
    detail: Any = None
    message: Any = None

    def words(self) -> Any:
        if isinstance(self.error, _ErrorDetail):
            found = self.error.message or self.error.type
        else:
            found = self.error
        return found or self.detail or self.message


# -- parsing ---------------------------------------------------------------------------------
T = TypeVar("T", bound=BaseModel)


def parse_reply(schema: type[T], body: bytes) -> T:
    """`body` (JSON bytes) as `schema`; `ReplyMismatch` saying where and what when it does
    not fit (including JSON that is not valid: a truncated reply)."""
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        raise ReplyMismatch(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """The first problem of a validation error on one line: "choices[0].message = 'hi':
    input should be an object" (and how many more there were)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "json_invalid":
        detail = str(first.get("ctx", {}).get("error") or first["msg"])
        return f"not valid JSON ({_short(detail, 80)}){more}"
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    where = where.lstrip(".") or "the reply"
    message = str(first["msg"])
    message = message[:1].lower() + message[1:]
    if first["type"] == "missing":
        return f"{where} is missing{more}"
    shown = _short(repr(first.get("input")), 60)
    return f"{where} = {shown}: {message}{more}"


def check_answer_length(text: str, max_tokens: int) -> None:
    """`ReplyMismatch` when `text` is longer than `max_tokens` tokens can be
    (`MAX_CHARS_PER_TOKEN` each, at least `MIN_TOKENS_ALLOWED` tokens)."""
    most = max(MIN_TOKENS_ALLOWED, int(max_tokens)) * MAX_CHARS_PER_TOKEN
    if len(text) > most:
        raise ReplyMismatch(
            f"the answer has {len(text):,} characters, more than {max_tokens:,} tokens "
            f"(max_tokens) can hold — the server ignored max_tokens"
        )


def check_token_counts(answer: Any, max_tokens: int, prompt_bytes: int | None) -> None:
    """`ReplyMismatch` when the reply's token counts cannot be this request's: more
    completion tokens than `max_tokens` allows (+1), fewer than its text needs, or more
    prompt tokens than the prompt's `prompt_bytes` (UTF-8) and a chat template can make.
    Counts a server does not give (no `usage`) are not judged."""
    usage = getattr(answer, "usage", None)
    made = usage.completion_tokens if usage is not None else None
    if made is not None:
        if made > max(1, int(max_tokens)) + 1:
            raise ReplyMismatch(
                f"usage.completion_tokens = {made:,}: more than the {max_tokens:,} tokens "
                "asked for (max_tokens)"
            )
        text = getattr(answer, "text", "") or ""
        if made * MAX_CHARS_PER_TOKEN < len(text):
            raise ReplyMismatch(
                f"usage.completion_tokens = {made:,}: too few for an answer of "
                f"{len(text):,} characters"
            )
    read = usage.prompt_tokens if usage is not None else None
    if read is not None and prompt_bytes is not None and read > prompt_bytes + TEMPLATE_TOKENS:
        raise ReplyMismatch(
            f"usage.prompt_tokens = {read:,}: more than a prompt of {prompt_bytes:,} bytes can make"
        )


def _short(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "MAX_REPLY_BYTES",
    "MAX_TOKEN_COUNT",
    "Answer",
    "ChatAnswer",
    "ErrorAnswer",
    "ModelList",
    "ReplyMismatch",
    "TextAnswer",
    "answer_schema",
    "check_answer_length",
    "check_token_counts",
    "describe",
    "parse_reply",
]


def request_prompt_bytes(body: dict[str, Any]) -> int | None:
    """The UTF-8 bytes of a request's prompt (its messages' texts, or the completion
    prompt), which bound its prompt tokens; None when unknown."""
    if isinstance(body.get("prompt"), str):
        return len(body["prompt"].encode())
    messages = body.get("messages")
    if isinstance(messages, list):
        return sum(len(str(m.get("content") or "").encode()) for m in messages)
    return None
