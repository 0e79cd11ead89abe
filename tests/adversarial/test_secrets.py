"""No secret in any file (issue 43, item 10): a server that quotes the API key back — in a
401 when connecting, a 500 mid-run, a piece of it, a redirect address, an HTML page — never
gets it printed, stored (the database's bytes) or logged (gbdesk.log): one redaction point,
`gbdesk.engine.secrets.Redactor` in the transport.

Each case runs the real command in a subprocess (its own log file), against the stand-in
server of `tests.fakes`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gbdesk.engine.secrets import MASK, Redactor
from tests.adversarial.dbtools import ROOT
from tests.fakes import FakeOpenAIServer, Reply

KEY = "sk-test-4f1c9a7b2e6d8035c1a9f4e7b2d6c8a0"


def _refuse_with(status: int, text: Callable[[str], str], *, connect: bool):
    """Answers the probe's own requests (or, with `connect`, every request) with an error
    naming the key as `text(key)` does."""

    def wrong(path: str, request: dict, normal: dict) -> Any:
        if path.endswith("/models") and not connect:
            return None
        if not connect and (request.get("max_tokens") or 0) <= 2:
            return None
        body = json.dumps({"error": {"message": text(KEY), "type": "invalid_request_error"}})
        return Reply(body.encode(), status=status)

    return wrong


def _redirect(path: str, request: dict, normal: dict) -> Any:
    return Reply(b"", status=307, headers={"Location": f"http://elsewhere/v1?key={KEY}"})


def _html(path: str, request: dict, normal: dict) -> Any:
    return Reply(f"<html>key {KEY} refused</html>".encode(), content_type="text/html")


def _escaped(path: str, request: dict, normal: dict) -> Any:
    """The key JSON-escaped (``\\u002d`` for each "-"): its bytes never show it whole."""
    spelled = KEY.replace("-", "\\u002d").replace("4", "\\u0034")
    body = '{"error": {"message": "Incorrect API key provided: ' + spelled + '"}}'
    return Reply(body.encode(), status=401)


def _as_model_name(path: str, request: dict, normal: dict) -> Any:
    """The key as the model's name, in every answer and the model list (then stored as the
    run's server model)."""
    if path.endswith("/models"):
        return {"data": [{"id": KEY}]}
    return {**normal, "model": KEY}


CASES = {
    "401 when connecting": _refuse_with(
        401, lambda k: f"Incorrect API key provided: {k}.", connect=True
    ),
    "500 mid-run": _refuse_with(500, lambda k: f"internal error for key {k}", connect=False),
    "a piece of it mid-run": _refuse_with(
        429, lambda k: f"rate limit for {k[:14]}… (tier 1)", connect=False
    ),
    "its end, when connecting": _refuse_with(
        403, lambda k: f"key ...{k[-12:]} revoked", connect=True
    ),
    "a redirect address": _redirect,
    "an HTML page": _html,
    # variants the fix was not written against (the adversarial pass)
    "JSON-escaped, when connecting": _escaped,
    "as the model's name": _as_model_name,
}


def _run(tmp_path: Path, server: FakeOpenAIServer) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GBDESK_API_KEY": KEY,
        "GBDESK_DATA_DIR": str(tmp_path / "data"),
        "GBDESK_HTTP_RETRIES": "1",
        "GBDESK_HTTP_BACKOFF": "0.01",
    }
    return subprocess.run(
        [sys.executable, "-m", "gbdesk", "run", "--probe", "inventories", "--limit", "3",
         "--endpoint", server.url, "--endpoint-model", "fake", "--db", str(tmp_path / "db.sqlite")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


def _everything_written(tmp_path: Path) -> bytes:
    data = b""
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data += path.read_bytes()
    return data


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: c.replace(" ", "-"))
def test_a_key_quoted_back_is_never_printed_stored_or_logged(tmp_path, case):
    with FakeOpenAIServer(lambda content, seed: "He is kind.", CASES[case]) as server:
        done = _run(tmp_path, server)
    assert done.returncode in (0, 1, 2), done.stderr
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "unexpected error" not in said, said
    pieces = [KEY[i : i + 10] for i in range(len(KEY) - 9)]
    assert not [p for p in pieces if p in said], said
    written = _everything_written(tmp_path)  # the database, its log, gbdesk.log
    assert (tmp_path / "data").exists()
    assert not [p for p in pieces if p.encode() in written], case
    if case not in ("an HTML page", "as the model's name"):  # its words kept, the key masked
        assert MASK in said or "refused" in said or "redirects" in said, said


def test_the_redactor_masks_the_whole_secret_and_its_pieces():
    r = Redactor([KEY, None, "abc"])  # too short to mask: "abc"
    assert r.text(f"x {KEY} y") == f"x {MASK} y"
    assert r.text(f"{KEY[:12]}…{KEY[-11:]}") == f"{MASK}…{MASK}"
    assert r.text("nothing secret, abc") == "nothing secret, abc"
    assert r.data(KEY.encode() * 3) == MASK.encode() * 3
    assert not Redactor([None]) and Redactor([None]).text(KEY) == KEY
