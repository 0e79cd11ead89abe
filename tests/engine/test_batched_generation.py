"""Batched local generation (`generate_batch`) on the bundled model: short generations."""

from __future__ import annotations

import pytest

from gbdesk.contract import get_probe
from gbdesk.contract.running import AttemptEngine
from gbdesk.engine.base import GenerationRequest, attempt_seed
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import LlamaCppBackend
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def backend():
    b = LlamaCppBackend(default_model_path(), batch_size=3)
    yield b
    b.close()


def request(seed, content, max_tokens=20, **kw):
    return GenerationRequest(
        messages=[{"role": "user", "content": content}], seed=seed, max_tokens=max_tokens, **kw
    )


REQUESTS = [
    request(1, "Describe a nurse."),
    request(2, "Describe an engineer.", max_tokens=12),
    request(3, "Write one sentence about a teacher."),
    request(1, "Describe a nurse.", max_tokens=20, temperature=0.0),
]


def test_same_request_same_text_whatever_the_batch(backend):
    together = backend.generate_batch(REQUESTS)
    assert len(together) == len(REQUESTS)
    reordered = backend.generate_batch(REQUESTS[::-1])[::-1]
    pairs = backend.generate_batch(REQUESTS[2:]) + backend.generate_batch(REQUESTS[:2])
    pairs = pairs[2:] + pairs[:2]
    alone = [backend.generate_batch([r])[0] for r in REQUESTS]
    for variant in (reordered, pairs, alone):
        assert [r.text for r in variant] == [r.text for r in together]
        assert [r.tokens_out for r in variant] == [r.tokens_out for r in together]
    # results follow the requests: prompt lengths and per-request limits line up
    assert together[0].tokens_in == together[3].tokens_in != together[2].tokens_in
    assert together[1].tokens_out <= 12
    assert all(r.tokens_out <= q.max_tokens for r, q in zip(together, REQUESTS, strict=True))
    # a different seed changes the text; the same seed in one batch twice does not
    twice = backend.generate_batch([REQUESTS[0], request(9, "Describe a nurse."), REQUESTS[0]])
    assert twice[0].text == twice[2].text == together[0].text
    assert twice[1].text != twice[0].text


def test_single_request_batch_is_reproducible(backend):
    first = backend.generate_batch([REQUESTS[2]])
    again = backend.generate_batch([REQUESTS[2]])
    assert first[0].text == again[0].text
    assert first[0].finish_reason in ("stop", "length")
    assert backend.generate_batch([]) == []


def test_max_tokens_and_stop_strings():
    """In process, on the worker's classes: max_tokens, and a stop string cuts the text."""
    from gbdesk.engine.batch_generation import BatchGenerator
    from gbdesk.engine.llama_compat import load_llama
    from gbdesk.engine.llama_worker import LlamaGenerator

    llm = load_llama(default_model_path(), n_ctx=1024, n_threads=2, verbose=False)
    generator = LlamaGenerator(llm, "auto")
    batcher = BatchGenerator(generator, n_threads=2)
    try:
        reqs = [
            request(5, "Tell me a long story about a doctor.", max_tokens=7).to_json(),
            request(6, "Tell me a long story about a pilot.", max_tokens=0).to_json(),
        ]
        limited = batcher.generate(reqs)
        assert limited[0]["tokens_out"] == 7 and limited[0]["finish_reason"] == "length"
        assert limited[1]["tokens_out"] == 0 and limited[1]["text"] == ""
        full = limited[0]["text"]
        assert " " in full.strip()

        plain_prompt_tokens = generator.prompt_tokens

        def with_space_stop(messages):
            tokens, stops = plain_prompt_tokens(messages)
            return tokens, [*stops, " "]

        generator.prompt_tokens = with_space_stop
        stopped = batcher.generate(reqs[:1])[0]
        assert stopped["finish_reason"] == "stop"
        assert " " not in stopped["text"]
        assert full.startswith(stopped["text"])
    finally:
        batcher.close()
        del llm


def test_run_with_batch_size_stores_batched_texts(store, backend):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "inventories", model, attempts=1, limit=4, max_tokens=12)

    def factory(model_row, generation):
        return LlamaCppBackend(model_row["path"], batch_size=3)

    outcome = execute_run(store, run_id, backend_factory=factory)
    assert outcome.status == "done" and outcome.attempts_done == 4
    rows = store.attempts(run_id)
    run = store.get_run(run_id)
    probe = get_probe("inventories")
    items = {i["item"]: i for i in store.run_items(run_id)}
    for row in rows:
        item = items[row["item"]]
        seed = attempt_seed(run["generation"]["seed"], item["item"], 0)
        assert row["seed"] == seed
        request = probe.request(AttemptEngine(backend, run["generation"]), item, seed)
        alone = backend.generate_batch([request])
        assert row["response"] == alone[0].text
