"""`gbdesk selftest --determinism` (`gbdesk.workflows.determinism`): on a stand-in engine
whose texts are known, and once on the bundled model through the command."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from gbdesk.engine.base import GenerationResult
from gbdesk.workflows.determinism import check_determinism, determinism_requests


@dataclass
class FakeBackend:
    """Answers each prompt with token ids [seed, 1, 2, …]; in a batch of more than one,
    prompt `flip` gets token 7 in place of its third token."""

    flip: int | None = None
    info: SimpleNamespace = field(
        default_factory=lambda: SimpleNamespace(
            settings={"continuous": {"n_ubatch": 48}}, versions={"x": "1"}
        )
    )
    calls: list[int] = field(default_factory=list)

    def generate_stream(self, requests, on_result, *, slots=None):
        self.calls.append(slots)
        for i, r in enumerate(requests):
            ids = [r.seed, 1, 2, 3]
            if slots > 1 and i == self.flip:
                ids[2] = 7
            text = " ".join(f"t{t}" for t in ids)
            on_result(
                i, GenerationResult(text, 10, len(ids), 0.1, "length", "chat", {"token_ids": ids})
            )
        return SimpleNamespace(not_started=[])


def test_requests_mix_short_and_long_prompts():
    reqs = determinism_requests(8, 32, 5)
    lengths = [len(r.messages[0]["content"]) for r in reqs]
    assert len(reqs) == 8 and [r.seed for r in reqs] == list(range(5, 13))
    assert sum(n > 2000 for n in lengths) == 3 and min(lengths) < 100
    assert len({r.messages[0]["content"] for r in reqs}) == 8
    assert all(r.temperature == 1.0 and r.max_tokens == 32 for r in reqs)


def test_identical_texts_pass():
    backend = FakeBackend()
    result = check_determinism(backend, prompts=4, max_tokens=8)
    assert result.passed and result.identical == 4 and result.lines == []
    assert backend.calls == [1, 1, 1, 1, 4]  # each alone, then all at once
    assert result.summary().startswith("4 of 4 identical")
    assert result.to_json()["settings"] == {"n_ubatch": 48}


def test_a_difference_names_its_first_token():
    result = check_determinism(FakeBackend(flip=2), prompts=4, max_tokens=8, seed=100)
    assert not result.passed and result.identical == 3
    (diff,) = result.differences
    # prompt 3 (seed 102): "t102 t1 t2 t3" alone, "t102 t1 t7 t3" batched
    assert (diff.prompt, diff.token, diff.alone, diff.batched, diff.char) == (2, 2, 2, 7, 9)
    assert result.lines[0].startswith("prompt 3: answer token 3 differs (id 2 alone, 7 batched)")
    assert result.to_json()["differing"] == [2]


@pytest.mark.model
def test_the_command_stores_its_result(tmp_path, capsys):
    from gbdesk.cli import main
    from gbdesk.store import Store
    from gbdesk.store.selftests import DETERMINISM, latest_selftest

    db = tmp_path / "g.sqlite"
    code = main(["selftest", "--determinism", "--prompts", "3", "--max-tokens", "12",
                 "--db", str(db), "--json"])  # fmt: skip
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["passed"] is True and payload["identical"] == 3
    with Store(db) as store:
        (model,) = store.query("SELECT id FROM models")
        check = latest_selftest(store, model["id"], DETERMINISM)
    assert check["passed"] is True and check["summary"].startswith("3 of 3 identical")
    assert check["result"]["settings"]["kv_unified"] is False
