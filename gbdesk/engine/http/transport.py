"""One server's connections for `gbdesk.engine.http.backend`: requests with separate connect
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

**The time-out of an answer is a deadline on the whole reply** (`deadline`), not on each
socket read: a server that drips its reply a byte a second never lets a per-read time-out
expire, so each request runs under a timer that shuts its connection when the reply is not
complete in time (headers and body, however they trickle in) — `Unanswered`
("read-timeout", "no whole answer within N s").

`Waits` follows the requests in flight and says, while the server is silent, for how long
and how many of the last requests it answered (the backend's `on_wait` line).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
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

from gbdesk.engine.http.replies import MAX_REPLY_BYTES, ReplyMismatch
from gbdesk.engine.secrets import Redactor

log = logging.getLogger(__name__)


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

    def __init__(
        self,
        base_url: str,
        size: int,
        headers: dict[str, str],
        connect_s: float,
        redactor: Redactor | None = None,
    ):
        self.connect_s = connect_s
        #: THE redaction point (`gbdesk.engine.secrets.Redactor`): every reply's bytes, its
        #: reason and redirect address, and every failure's words pass through it here,
        #: before anything reads, prints, stores or logs them
        self.redactor = redactor or Redactor([])
        self._headers = dict(headers)  # urllib3 sends a request's headers instead of these
        self._json_headers = {**headers, "Content-Type": "application/json"}
        self._open: weakref.WeakSet[HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()
        #: the connection each thread's request is on, and each thread's deadline
        self._users: dict[int, HTTPConnection] = {}
        self._deadlines: dict[int, _Deadline] = {}
        opened, lock, users = self._open, self._lock, self._users

        class Tracked:  # the connections under way, so that `abort` can shut them
            def connect(self) -> None:
                super().connect()  # type: ignore[misc]
                with lock:
                    opened.add(self)  # type: ignore[arg-type]

            def request(self, *args: Any, **kwargs: Any) -> Any:
                with lock:  # this thread's request is on this connection
                    users[threading.get_ident()] = self  # type: ignore[assignment]
                return super().request(*args, **kwargs)  # type: ignore[misc]

        secure = urlsplit(base_url).scheme == "https"
        base = HTTPSConnection if secure else HTTPConnection
        # HTTPS: certificates checked against certifi's authorities (as httpx did), not a
        # system store that some Pythons (macOS's python.org builds) leave empty
        tls = {"ca_certs": certifi.where()} if secure else {}
        self._pool = urllib3.connection_from_url(
            base_url, maxsize=size, block=True, retries=False, **tls
        )
        self._pool.ConnectionCls = type("TrackedConnection", (Tracked, base), {})

    def deadline(self, seconds: float) -> _Deadline:
        """``with transport.deadline(s): send … read``: the whole reply within `seconds`
        (see the module), else `Unanswered` ("read-timeout")."""
        return _Deadline(self, seconds)

    def _expired(self) -> _Deadline | None:
        with self._lock:
            found = self._deadlines.get(threading.get_ident())
        return found if found is not None and found.expired else None

    def _failed(self, exc: BaseException, read_s: float) -> Unanswered:
        """The `Unanswered` of a failed send or read: the deadline's, when it shut it."""
        late = self._expired()
        if late is not None:
            return Unanswered("read-timeout", f"no whole answer within {late.seconds:.0f} s",
                              late.seconds)  # fmt: skip
        failed = unanswered(exc, read_s)
        words = self.redactor.text(str(failed))
        return Unanswered(failed.kind, words, failed.read_s)

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
        except (HTTPError, OSError, ValueError) as exc:  # ValueError: a header refused
            raise self._failed(exc, read_s) from None
        if 300 <= response.status < 400:
            location = self.redactor.text(response.headers.get("location") or "")
            _discard(response)
            raise Redirected(response.status, location)
        return response

    def read(self, response: Any, read_s: float) -> Answered:
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
            raise self._failed(exc, read_s) from None
        with self._lock:  # complete: its deadline no longer shuts this connection
            self._users.pop(threading.get_ident(), None)
        response.release_conn()
        return Answered(
            response.status,
            response.headers,
            self.redactor.text(response.reason or ""),
            self.redactor.data(b"".join(parts)),
        )

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


class _Deadline:
    """A whole reply within `seconds` for the calling thread's request: a timer shuts the
    request's connection when it is not complete by then (`Transport.deadline`)."""

    def __init__(self, transport: Transport, seconds: float):
        self.transport, self.seconds = transport, seconds
        self.expired = False
        self.ident = threading.get_ident()
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True
        self.timer.name = "gbdesk-http-deadline"

    def __enter__(self) -> _Deadline:
        with self.transport._lock:
            self.transport._deadlines[self.ident] = self
            self.transport._users.pop(self.ident, None)
        self.timer.start()
        return self

    def _expire(self) -> None:
        with self.transport._lock:
            if self.transport._deadlines.get(self.ident) is not self:
                return  # over already
            self.expired = True
            connection = self.transport._users.pop(self.ident, None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):  # closed meanwhile
                sock.shutdown(socket.SHUT_RDWR)

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        with self.transport._lock:
            if self.transport._deadlines.get(self.ident) is self:
                del self.transport._deadlines[self.ident]
            self.transport._users.pop(self.ident, None)


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
        words = f"no whole answer within {read_s:.0f} s" if read_s else "no whole answer in time"
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


# -- how long to wait ------------------------------------------------------------------
#: seconds to open a connection: a server that does not accept one in this long is down or
#: unreachable (GBDESK_HTTP_CONNECT_TIMEOUT overrides)
DEFAULT_CONNECT_TIMEOUT_S = 10.0
#: An answer is not streamed, so the server says nothing until it is complete: the read
#: time-out must fit the longest answer on the slowest server gbdesk is meant for. It is
#: READ_TIMEOUT_BASE_S (reading a long prompt, or loading the model on first use as Ollama
#: does) plus the answer's max_tokens at SLOWEST_TOKENS_PER_S (a 70B model on a CPU-only
#: server): 120 + 300 / 2 = 270 s for 300-token answers (the longest most probes ask). A
#: fixed number of seconds instead: GBDESK_HTTP_READ_TIMEOUT (or `read_timeout_s`).
READ_TIMEOUT_BASE_S = 120.0
SLOWEST_TOKENS_PER_S = 2.0
#: a request that timed out is tried this many more times (another full wait each), unless
#: the server answered other requests meanwhile (then it is busy, not gone)
READ_TIMEOUT_RETRIES = 1


# -- waiting for a server ------------------------------------------------------------------
#: seconds of silence before the first "waiting … for the server" line, which then repeats
#: every 1.5 times as long (GBDESK_HTTP_WAIT_NOTICE overrides)
WAIT_NOTICE_S = 20.0
#: requests the waiting line counts answers over
WAIT_RECENT = 16


@dataclass(eq=False)
class Sent:
    """One request to the server: when it was sent, whether it got an answer."""

    at: float
    answered: bool = False
    over: bool = False


@dataclass
class Waits:
    """The requests in flight and the last `WAIT_RECENT` ones, and a thread that says when
    the server has been silent `notice_s` seconds (then every 1.5 × as long): no answer to
    any request since the oldest one in flight was sent. `notify(text)` gets the line."""

    base_url: str
    notice_s: float
    notify: Callable[[str], None]
    recent: deque[Sent] = field(default_factory=lambda: deque(maxlen=WAIT_RECENT))
    flight: set[Sent] = field(default_factory=set)
    last_answer: float = 0.0
    noticed_at: float | None = None  # the silence (seconds) of the last line
    closed: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: threading.Thread | None = None

    def begin(self) -> Sent:
        sent = Sent(time.monotonic())
        with self.lock:
            self.recent.append(sent)
            self.flight.add(sent)
            if self.thread is None and not self.closed.is_set():
                self.thread = threading.Thread(
                    target=self._watch, name="gbdesk-http-waits", daemon=True
                )
                self.thread.start()
        return sent

    def end(self, sent: Sent, answered: bool) -> None:
        with self.lock:
            sent.answered, sent.over = answered, True
            self.flight.discard(sent)
            if answered:
                self.last_answer = time.monotonic()

    def answered_since(self, moment: float) -> bool:
        """Did the server answer any request after `moment` (monotonic seconds)?"""
        with self.lock:
            return self.last_answer > moment

    def silence(self) -> float | None:
        """Seconds the server has been silent with requests in flight, or None."""
        with self.lock:
            if not self.flight:
                return None
            since = max(self.last_answer, min(s.at for s in self.flight))
        return time.monotonic() - since

    def line(self, seconds: float) -> str:
        with self.lock:
            answered = sum(1 for s in self.recent if s.answered)
            count, flying = len(self.recent), len(self.flight)
        under_way = f"; {flying} requests under way" if flying > 1 else ""
        return (
            f"waiting {seconds:.0f} s for the server at {self.base_url} — it has answered "
            f"{answered} of the last {count} request{'s' if count != 1 else ''}{under_way}"
        )

    def _watch(self) -> None:
        tick = max(0.05, min(1.0, self.notice_s / 4))
        while not self.closed.wait(tick):
            seconds = self.silence()
            if seconds is None or seconds < self.notice_s:
                self.noticed_at = None
                continue
            if self.noticed_at is not None and seconds < self.noticed_at + 1.5 * self.notice_s:
                continue
            self.noticed_at = seconds
            text = self.line(seconds)
            log.info("%s", text)
            try:
                self.notify(text)
            except Exception:  # a listener's bug must not stop the watch
                log.exception("the waiting line's listener failed")

    def close(self) -> None:
        self.closed.set()
