"""What an OpenAI-compatible endpoint can do, found with one small request each, stored
with it, shown in `gbdesk models` and the Models pane; a probe that needs what the endpoint
lacks is refused before its run is planned.

The stand-in below answers like the servers people already run: chat generation works,
and `/v1/completions` with `echo` is refused with an error (as llama.cpp's llama-server
does: HTTP 500 "Only no echo is supported") or ignored — the completion comes back
without the prompt and without logprobs (as Ollama and LM Studio do). The real
`llama_cpp.server` is checked in test_http_backend.py.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import ClassVar

import pytest

from gbdesk.cli import main
from gbdesk.engine.http import (
    HttpBackend,
    endpoint_capabilities,
    normalize_base_url,
    register_endpoint,
)
from gbdesk.store import Store
from gbdesk.support.errors import EngineCrashed, EngineError, UserError
from gbdesk.workflows.audit import Speed, plan_audit
from gbdesk.workflows.runs import plan_run
from tests.fakes import FakeOpenAIServer

MODEL = "stub-llama"


class NoEcho(http.server.BaseHTTPRequestHandler):
    """Chat like a server; `/completions` with echo refused (``mode = "refuse"``) or
    ignored (``"ignore"``); logprobs never given. Records every request body."""

    mode: ClassVar[str] = "refuse"
    bodies: ClassVar[list[tuple[str, dict]]] = []

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": MODEL, "owned_by": "stub"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append((self.path, body))
        usage = {"prompt_tokens": 4, "completion_tokens": 1}
        if self.path.endswith("/chat/completions"):
            self._send(
                200,
                {
                    "model": MODEL,
                    "choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}],
                    "usage": usage,
                },
            )
        elif body.get("echo") and type(self).mode == "refuse":
            # llama-server: its parser throws, the handler answers with a server error
            self._send(500, {"error": {"message": "Only no echo is supported", "type": "server"}})
        else:
            self._send(
                200,
                {
                    "model": MODEL,
                    "choices": [{"text": " OK", "logprobs": None, "finish_reason": "length"}],
                    "usage": usage,
                },
            )

    def log_message(self, *args):
        pass


@pytest.fixture(params=["refuse", "ignore"])
def no_echo(request):
    NoEcho.mode, NoEcho.bodies = request.param, []
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoEcho)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{stub.server_port}"
    stub.shutdown()
    stub.server_close()


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def echo_requests() -> int:
    return sum(1 for path, body in NoEcho.bodies if body.get("echo"))


def test_presets_name_the_servers_people_already_run(capsys):
    assert normalize_base_url("ollama") == "http://localhost:11434/v1"
    assert normalize_base_url("LMStudio") == "http://localhost:1234/v1"
    assert normalize_base_url("llama-server") == "http://localhost:8080/v1"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for preset in (
        "ollama = http://localhost:11434/v1",
        "lmstudio = http://localhost:1234/v1",
        "llama-server = http://localhost:8080/v1",
    ):
        assert preset in help_text


def test_capabilities_are_found_with_one_small_request_each(no_echo):
    with HttpBackend(no_echo, MODEL, backoff_s=5.0) as backend:
        before = len(NoEcho.bodies)
        found = backend.capabilities()
        # scoring anyway fails at once, in one line — never empty scores, never 30 s of
        # retries (llama-server's refusal is an HTTP 500)
        with pytest.raises(EngineError, match="cannot score log-likelihoods") as info:
            backend.score(["Jamal was a pilot."])
        assert not isinstance(info.value, EngineCrashed) and echo_requests() == 2
    assert found["chat"]["ok"] is True  # the connection's one-token chat request
    assert found["prompt_logprobs"]["ok"] is False
    assert found["top_logprobs"]["ok"] is False
    note = found["prompt_logprobs"]["note"]
    if NoEcho.mode == "refuse":
        assert "HTTP 500: Only no echo is supported" in note
    else:
        assert "echo=true with logprobs is ignored" in note
    # one request for prompt logprobs, one for top logprobs (chat was already answered),
    # then the scoring attempt's one
    asked = NoEcho.bodies[before:]
    assert len(asked) == 3 and asked[0][1]["echo"] and asked[2][1]["echo"]
    assert asked[1][1]["logprobs"] is True and asked[1][1]["top_logprobs"] == 5


def test_a_scoring_probe_is_refused_before_its_run_in_one_line(no_echo, tmp_path, capsys):
    db = str(tmp_path / "e.sqlite")
    code, out, err = cli(
        capsys, "run", "--probe", "globalbias_apx", "--endpoint", no_echo,
        "--endpoint-model", MODEL, "--db", db,
    )  # fmt: skip
    assert code == 2 and not out
    (line,) = err.strip().splitlines()
    assert line.startswith("gbdesk: error: GlobalBias: perplexity associations")
    assert "needs log-probabilities of prompt tokens" in line
    assert f"{no_echo}/v1 (model {MODEL}) does not give" in line
    assert "vLLM" in line and "python -m llama_cpp.server" in line
    assert echo_requests() == 1  # asked once; never a scoring request
    assert cli(capsys, "runs", "--db", db, "--json")[1].strip() == "[]"  # no run row
    # what it can do is stored with the endpoint and listed
    code, out, _ = cli(capsys, "models", "--db", db, "--json")
    (entry,) = [m for m in json.loads(out)["models"] if m.get("endpoint")]
    found = entry["capabilities"]
    assert (found["chat"]["ok"], found["prompt_logprobs"]["ok"]) == (True, False)
    code, out, _ = cli(capsys, "models", "--db", db)
    assert "chat generation: yes" in out and "log-probabilities of prompt tokens: no" in out
    # planning in the app (or an audit) refuses it the same way, from what is stored
    with Store(db) as store:
        (row,) = [m for m in store.list_models() if m["kind"] == "endpoint"]
        asked = echo_requests()
        with pytest.raises(UserError, match=r"needs log-probabilities of prompt tokens"):
            plan_run(store, "globalbias_apx", row, limit=1)
        assert echo_requests() == asked  # a fresh check is not repeated
        assert store.list_runs() == []
        # a generation probe on the same endpoint is planned as before
        run_id = plan_run(store, "inventories", row, limit=2, attempts=1)
        assert store.get_run(run_id)["probe"] == "inventories"


def test_an_endpoint_never_checked_is_checked_before_planning(no_echo, store):
    row = register_endpoint(store, no_echo, MODEL)
    assert endpoint_capabilities(row) is None
    with pytest.raises(UserError, match=r"does not give.*servers that give them: vLLM"):
        plan_run(store, "globalbias_apx", row, limit=1)
    assert echo_requests() == 1 and store.list_runs() == []
    found = endpoint_capabilities(store.get_model(row["id"]))
    assert found["prompt_logprobs"]["ok"] is False and found["checked_at"]
    # registering it again (new concurrency) keeps what was found
    again = register_endpoint(store, no_echo, MODEL, concurrency=4)
    assert endpoint_capabilities(again) == found


def test_an_audit_leaves_out_what_the_endpoint_cannot_run(no_echo, store):
    row = register_endpoint(store, no_echo, MODEL)
    speed = Speed(tokens_per_s=50.0, width=1, load_s=1.0, basis="test")
    plan = plan_audit(store, row, 8 * 3600, speed, probes=["globalbias_apx", "inventories"])
    assert [p.probe for p in plan.probes] == ["inventories"]
    (left,) = plan.left_out
    assert "needs log-probabilities of prompt tokens" in left and "vLLM" in left


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (float("nan"), "token_logprobs[1] = nan: input should be a finite number"),
        (float("-inf"), "token_logprobs[1] = -inf: input should be a finite number"),
        ("-0.5", "token_logprobs[1] = '-0.5': input should be a valid number"),
        (3.0, "token_logprobs[1] = 3.0: input should be less than or equal to 0.001"),
    ],
)
def test_logprobs_that_are_not_log_probabilities_are_not_believed(bad, says, tmp_path, capsys):
    """A server whose prompt log-probabilities are NaN, infinite, strings or above 0: the
    check says it does not give them and why; the perplexity probe is refused in one line
    and no run is made (before: "yes — nan nats per token", then a run ending done with
    "mean perplexity nan")."""

    def wrong(path, request, normal):
        if request.get("echo"):
            values = normal["choices"][0]["logprobs"]["token_logprobs"]
            normal["choices"][0]["logprobs"]["token_logprobs"] = [None] + [bad] * (len(values) - 1)
            return normal
        return None

    db = str(tmp_path / "bad.sqlite")
    with FakeOpenAIServer(lambda content, seed: "OK", wrong) as server:
        with HttpBackend(server.url, "fake", max_retries=1, backoff_s=0.01) as backend:
            found = backend.capabilities()
            # scoring anyway (a stored "yes" gone stale): retried, then the run stops
            with pytest.raises(EngineCrashed, match="does not fit the OpenAI format"):
                backend.score(["Jamal was a pilot."])
        assert found["prompt_logprobs"]["ok"] is False
        assert says in found["prompt_logprobs"]["note"]
        code, out, _ = cli(capsys, "models", "--add", f"{server.url}#fake", "--db", db)
        assert code == 0
        assert "log-probabilities of prompt tokens: no — its reply to /completions" in out
        code, out, err = cli(
            capsys, "run", "--probe", "globalbias_apx", "--endpoint", server.url,
            "--endpoint-model", "fake", "--db", db,
        )  # fmt: skip
    assert code == 2 and not out
    (line,) = err.strip().splitlines()
    assert "needs log-probabilities of prompt tokens" in line and says in line
    assert cli(capsys, "runs", "--db", db, "--json")[1].strip() == "[]"


def test_models_add_checks_an_endpoint(no_echo, tmp_path, capsys):
    db = str(tmp_path / "m.sqlite")
    code, out, err = cli(capsys, "models", "--add", f"{no_echo}#{MODEL}", "--db", db)
    assert code == 0, err
    assert "log-probabilities of prompt tokens: no" in out and "top log-probabilities: no" in out
    assert echo_requests() == 1


@pytest.mark.gui
def test_models_pane_shows_what_an_endpoint_can_do(no_echo, qtbot, tmp_path):
    """Add endpoint… with a preset, Test connection → the pane lists each capability; the
    Runs pane then refuses the perplexity probe on it in one line, writing no run."""
    from PySide6.QtCore import QSettings, Qt

    from tests.gui_helpers import make_window, wait_for

    if NoEcho.mode != "refuse":
        pytest.skip("one server kind is enough for the app")
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    db = str(tmp_path / "gui.sqlite")
    window = make_window(qtbot, db, settings)
    pane = window.models
    pane._choose_endpoint()
    dialog = pane.endpoint_dialog
    presets = [dialog.preset.itemText(i) for i in range(dialog.preset.count())]
    assert any("Ollama" in t and "localhost:11434/v1" in t for t in presets)
    assert any("LM Studio" in t and "localhost:1234/v1" in t for t in presets)
    assert any("llama-server" in t and "localhost:8080/v1" in t for t in presets)
    dialog.preset.setCurrentIndex(dialog.preset.findData("ollama"))
    assert dialog.url.text() == "http://localhost:11434/v1"
    assert "no perplexity probes" in dialog.preset_note.text()
    dialog.url.setText(no_echo)
    dialog.model.setText(MODEL)
    dialog.accept()
    wait_for(qtbot, lambda: "Connected to" in pane.test_result.text())
    # the list is read again in a task of its own, which may end after the test
    wait_for(qtbot, lambda: any(m.get("endpoint") for m in pane.models))
    entry = next(m for m in pane.models if m.get("endpoint"))
    pane.table.selectRow(pane.models.index(entry))
    wait_for(qtbot, lambda: "What it can do</b> (checked" in pane.details.text())
    details = pane.details.text()
    assert "✓</span> chat generation" in details
    assert "✗</span> log-probabilities of prompt tokens" in details
    assert "Cannot run here: GlobalBias: perplexity associations" in details
    with Store(db) as store:
        (row,) = [m for m in store.list_models() if m["kind"] == "endpoint"]
        assert endpoint_capabilities(row)["prompt_logprobs"]["ok"] is False
    # the Runs pane: the perplexity probe on this endpoint is refused before any run row
    runs = window.runs
    wait_for(qtbot, lambda: runs.model_combo.findData(entry["path"]) >= 0)
    runs.model_combo.setCurrentIndex(runs.model_combo.findData(entry["path"]))
    (item,) = [
        runs.probe_list.item(i)
        for i in range(runs.probe_list.count())
        if runs.probe_list.item(i).data(Qt.ItemDataRole.UserRole) == "globalbias_apx"
    ]
    runs.probe_list.setCurrentItem(item)
    runs.start()
    wait_for(qtbot, lambda: "needs log-probabilities of prompt tokens" in runs.banner.text())
    assert not window.ctx.running
    with Store(db) as store:
        assert store.list_runs() == []
