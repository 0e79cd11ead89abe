"""One server's connections for `gbdesk.engine.http_backend`: requests with separate connect
and read time-outs, bodies read in pieces up to a limit, and every failure to get an
answer as one `Unanswered` with words for it.

urllib3's connection pool (keep-alive, one pool per server, at most `size` connections;
a request waits for a free one). It replaced httpx here: with 64 requests in flight
httpx spent ~1.5 ms of CPU per request in its connection pool against urllib3's ~0.5 ms
(`benchmarks/server_throughput.py`), and on a 2-core laptop that CPU is what limits how
many answers a second gbdesk can take from a fast server.

Redirects are not followed: an API whose address redirects is named with its real
address (`Redirected`), which is what gets recorded. `abort` shuts the sockets of the
requests under way, so a stopped run does not wait for a silent server.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import certifi
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from gbdesk.engine.server_replies import MAX_REPLY_BYTES, ReplyMismatch


class Unanswered(Exception):
    """No answer: `kind` is "connect-timeout", "read-timeout", "refused", "no-host",
    "dropped" (the connection closed before the whole answer) or "other"; the text says
    it in words."""

    def __init__(self, kind: str, words: str, read_s: float | None = None):
        super().__init__(words)
        self.kind, self.read_s = kind, read_s  # read_s: the read time-out it waited


@dataclass
class Answered:
    """What the server sent: status, headers (case-insensitive `get`), reason, body."""

    status: int
    headers: Any
    reason: str
    content: bytes

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type") or "").split(";")[0].strip()


class Redirected(Exception):
    """The server answered with a redirect (`location`)."""

    def __init__(self, status: int, location: str):
        super().__init__(f"HTTP {status}: it redirects to {location or 'another address'}")
        self.status, self.location = status, location


class Transport:
    """Requests to one server (`base_url`'s scheme, host and port), `size` at once."""

    def __init__(self, base_url: str, size: int, headers: dict[str, str], connect_s: float):
        self.connect_s = connect_s
        self._headers = dict(headers)  # urllib3 sends a request's headers instead of these
        self._json_headers = {**headers, "Content-Type": "application/json"}
        self._open: weakref.WeakSet[HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()
        opened, lock = self._open, self._lock

        class Tracked:  # the connections under way, so that `abort` can shut them
            def connect(self) -> None:
                super().connect()  # type: ignore[misc]
                with lock:
                    opened.add(self)  # type: ignore[arg-type]

        secure = urlsplit(base_url).scheme == "https"
        base = HTTPSConnection if secure else HTTPConnection
        # HTTPS: certificates checked against certifi's authorities (as httpx did), not a
        # system store that some Pythons (macOS's python.org builds) leave empty
        tls = {"ca_certs": certifi.where()} if secure else {}
        self._pool = urllib3.connection_from_url(
            base_url, maxsize=size, block=True, retries=False, **tls
        )
        self._pool.ConnectionCls = type("TrackedConnection", (Tracked, base), {})

    def send(self, method: str, url: str, body: dict[str, Any] | None, read_s: float) -> Any:
        """Send a request; the urllib3 response once its headers are in (`read` its body).
        `Unanswered` when there is none, `Redirected` for a redirect."""
        data = None if body is None else json.dumps(body).encode()
        headers = self._headers if data is None else self._json_headers
        target = urlsplit(url).path or "/"  # origin-form: the pool knows the host
        try:
            response = self._pool.urlopen(
                method, target, body=data, headers=headers, retries=False, redirect=False,
                assert_same_host=False, preload_content=False, release_conn=False,
                pool_timeout=read_s, timeout=urllib3.Timeout(connect=self.connect_s, read=read_s),
            )  # fmt: skip
        except (HTTPError, OSError) as exc:
            raise unanswered(exc, read_s) from None
        if 300 <= response.status < 400:
            location = response.headers.get("location") or ""
            _discard(response)
            raise Redirected(response.status, location)
        return response

    @staticmethod
    def read(response: Any, read_s: float) -> Answered:
        """The whole answer; `ReplyMismatch` beyond `MAX_REPLY_BYTES`, `Unanswered` when
        the connection breaks first."""
        too_big = f"the reply is larger than {MAX_REPLY_BYTES // 2**20} MiB"
        try:
            declared = int(response.headers.get("content-length") or 0)
        except ValueError:
            declared = 0
        if declared > MAX_REPLY_BYTES:
            _discard(response)
            raise ReplyMismatch(too_big)
        parts, size = [], 0
        try:
            for chunk in response.stream(2**16):
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    _discard(response)
                    raise ReplyMismatch(too_big)
                parts.append(chunk)
        except (HTTPError, OSError) as exc:
            _discard(response)
            raise unanswered(exc, read_s) from None
        response.release_conn()
        return Answered(response.status, response.headers, response.reason or "", b"".join(parts))

    def abort(self) -> None:
        """Shut the connections of the requests under way (they fail at once)."""
        with self._lock:
            connections = list(self._open)
        for connection in connections:
            sock = getattr(connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):  # already closed
                    sock.shutdown(socket.SHUT_RDWR)
        self.close()

    def close(self) -> None:
        self._pool.close()


def _discard(response: Any) -> None:
    """Close a response's connection without reading the rest."""
    try:
        response.close()
    finally:
        response.release_conn()


def unanswered(exc: BaseException, read_s: float | None = None) -> Unanswered:
    """A failure to get an answer, with its kind and words."""
    text = str(exc)
    if isinstance(exc, NameResolutionError) or re.search(
        r"name or service|nodename|getaddrinfo|resolution", text, re.I
    ):
        return Unanswered("no-host", "host name not found")
    if isinstance(exc, NewConnectionError):
        if re.search(r"refused", text, re.I):
            return Unanswered("refused", "connection refused")
        return Unanswered("other", f"cannot connect ({_short(text, 120)})")
    if isinstance(exc, ConnectTimeoutError):
        return Unanswered("connect-timeout", "connecting timed out")
    if isinstance(exc, (ReadTimeoutError, TimeoutError, socket.timeout)):
        words = f"no answer within {read_s:.0f} s" if read_s else "no answer in time"
        return Unanswered("read-timeout", words, read_s)
    if isinstance(exc, SSLError):
        return Unanswered("other", f"TLS failed ({_short(text, 120)})")
    if isinstance(exc, (ProtocolError, ConnectionError)):
        cause = exc.args[1] if len(exc.args) > 1 else exc
        words = f"the server closed the connection ({_short(str(cause), 120)})"
        return Unanswered("dropped", words)
    return Unanswered("other", _short(text or type(exc).__name__, 160))


def _short(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["Answered", "Redirected", "Transport", "Unanswered", "unanswered"]
