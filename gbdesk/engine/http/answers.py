"""What an answer that is not a reply to believe means: a server's error answer (retried
or refused for good, `HttpRefused`), a success answer that is not JSON (`NotJson`) or does
not fit its schema when connecting (`Misfit`), a reply as another model (`ModelChanged`),
each with the server's words on one line."""

from __future__ import annotations

import json
import re
from typing import Any

from gbdesk.engine.http.replies import ErrorAnswer, ReplyMismatch, parse_reply
from gbdesk.engine.http.transport import Answered


def one_line(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_message(answered: Answered) -> str:
    """The server's own explanation of an error answer, on one line."""
    try:
        message: Any = parse_reply(ErrorAnswer, answered.content).words()
    except ReplyMismatch:
        message = None
    if message is None:
        message = answered.content.decode("utf-8", "replace") or answered.reason
    if not isinstance(message, str):
        message = json.dumps(message)
    return one_line(message)


class HttpRefused(Exception):
    """A non-retryable error answer (carries the status and the server's message)."""

    def __init__(self, status: int, message: str, path: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.path = status, message, path


class NotJson(Exception):
    """A success answer that is not JSON at all (an HTML page, an empty body)."""

    def __init__(self, answered: Answered, path: str):
        ctype = answered.content_type or "no content type"
        start = one_line(answered.content.decode("utf-8", "replace"), 60)
        super().__init__(f"{ctype}, starting {start!r}" if start else ctype)
        self.path = path


def another_listed(asked: str, answered: str, listed: list[str]) -> bool:
    """Whether a server of several models answered a request for `asked` as another model
    it lists — not `asked` itself nor a version of it (OpenAI answers "gpt-4o" as
    "gpt-4o-2024-08-06"; Ollama "llama3.1" as "llama3.1:latest")."""
    if len(listed) < 2 or not answered or answered == asked or answered not in listed:
        return False
    return not answered.startswith((f"{asked}-", f"{asked}:", f"{asked}@"))


class Misfit(Exception):
    """A reply that does not fit its schema, not retried (connecting, checking)."""

    def __init__(self, what: str, path: str):
        super().__init__(what)
        self.path = path


class ModelChanged(ReplyMismatch):
    """A reply as another model than the server answered as when gbdesk connected."""


class ChangedMisfit(Misfit):
    """`ModelChanged` while connecting: never taken for a form the server lacks."""


def looks_like_json(answered: Answered) -> bool:
    """Whether a success answer is meant as JSON (its content type, or its first byte): a
    truncated JSON reply is a reply that does not fit; an HTML page is not JSON at all."""
    return "json" in answered.content_type.lower() or answered.content.lstrip()[:1] in (b"{", b"[")
