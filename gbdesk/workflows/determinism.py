"""The determinism check (`gbdesk selftest --determinism`): the same prompts decoded
alone and in a full batch, through the engine a run uses, their texts byte-identical or
the first differing answer token named; stored with the model (`gbdesk.store.selftests`)
so the report's test log says what was checked.

The prompts are short chat questions and long ones (a text of about 600 and 1,100
tokens with another question after it: the long prompts share their prefix, so the
batch reads it once and copies its cells), sampled at temperature 1.0 with their own
seeds, so a one-ulp difference in any logit would change the text. "Alone" is each
prompt in a stream of its own (one sequence); "batched" is every prompt in one stream
with one sequence per prompt. A server model is not checked: its batching is not gbdesk's
to control (`SERVER_BATCHING`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from gbdesk.engine.base import GenerationRequest, GenerationResult

log = logging.getLogger(__name__)

SHORT_QUESTIONS = (
    "Describe a nurse in two sentences.",
    "Who is more likely to say 'I fixed the car': a man or a woman? Explain.",
    "Write a short story about an engineer.",
    "Name three jobs and say who usually does them.",
    "What makes a good manager?",
    "Describe a kindergarten teacher.",
)
_STORY = (
    "The town by the estuary had a lighthouse, a school, a small hospital and a boatyard. "
    "Every morning the ferry crossed to the island with workers, pupils and patients, and "
    "every evening it brought them back while the keeper lit the lamp. "
)
LONG_QUESTIONS = (
    "Who in this town do you think is the doctor, and why?",
    "Write the next paragraph of this text.",
)
#: repetitions of `_STORY` in the long prompts (~600 and ~1,100 tokens on SmolLM2)
LONG_REPEATS = (12, 22)


@dataclass
class Difference:
    """Where a prompt's batched text first differs from its text alone."""

    prompt: int
    token: int  # index of the first differing answer token
    alone: int | None  # its id alone / batched (None: that answer had ended)
    batched: int | None
    char: int  # first differing character of the texts

    def line(self, alone: str, batched: str) -> str:
        def near(text: str) -> str:
            return repr(text[max(0, self.char - 20) : self.char + 20])

        return (
            f"prompt {self.prompt + 1}: answer token {self.token + 1} differs (id "
            f"{self.alone} alone, {self.batched} batched), at character {self.char}: "
            f"{near(alone)} alone, {near(batched)} batched"
        )


@dataclass
class DeterminismResult:
    prompts: int
    identical: int
    batch: int
    max_tokens: int
    seed: int
    seconds: float
    differences: list[Difference] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.identical == self.prompts

    def summary(self) -> str:
        return (
            f"{self.identical} of {self.prompts} identical decoded alone and in a batch of "
            f"{self.batch} (short and long prompts, {self.max_tokens} tokens each)"
        )

    def to_json(self) -> dict[str, Any]:
        """The stored `result` (keys of `gbdesk.store.selftests.DETERMINISM`)."""
        return {
            "prompts": self.prompts,
            "identical": self.identical,
            "batch": self.batch,
            "differing": [d.prompt for d in self.differences],
            "first_differences": self.lines,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "settings": self.settings,
            "versions": self.versions,
            "seconds": round(self.seconds, 1),
        }


def determinism_requests(n: int, max_tokens: int, seed: int) -> list[GenerationRequest]:
    """`n` prompts, short and long alternating (at least one long one when n ≥ 2)."""
    texts: list[str] = []
    short = iter(SHORT_QUESTIONS * (n // len(SHORT_QUESTIONS) + 1))
    for i in range(n):
        if i % 3 == 1:
            k = (i // 3) % len(LONG_REPEATS)
            question = LONG_QUESTIONS[(i // 3 // len(LONG_REPEATS)) % len(LONG_QUESTIONS)]
            texts.append(_STORY * LONG_REPEATS[k] + "\n\n" + question)
        else:
            texts.append(next(short))
    return [
        GenerationRequest(
            messages=[{"role": "user", "content": text}],
            seed=seed + i,
            max_tokens=max_tokens,
            temperature=1.0,
        )
        for i, text in enumerate(texts)
    ]


def _decode(backend: Any, requests: list[GenerationRequest], slots: int) -> list[GenerationResult]:
    results: dict[int, GenerationResult] = {}

    def on_result(index: int, result: GenerationResult) -> None:
        results[index] = result

    outcome = backend.generate_stream(requests, on_result, slots=slots)
    missing = [i for i in range(len(requests)) if i not in results]
    if missing or outcome.not_started:
        raise RuntimeError(f"the engine did not answer prompts {missing}")
    return [results[i] for i in range(len(requests))]


def first_difference(index: int, alone: GenerationResult, batched: GenerationResult) -> Difference:
    """The first answer token where two results differ (by token ids when the engine
    sent them, else by text)."""
    a = list(alone.extra.get("token_ids") or [])
    b = list(batched.extra.get("token_ids") or [])
    token = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    char = next(
        (i for i, (x, y) in enumerate(zip(alone.text, batched.text, strict=False)) if x != y),
        min(len(alone.text), len(batched.text)),
    )
    return Difference(
        index,
        token,
        a[token] if token < len(a) else None,
        b[token] if token < len(b) else None,
        char,
    )


def check_determinism(
    backend: Any, *, prompts: int = 8, max_tokens: int = 64, seed: int = 0
) -> DeterminismResult:
    """Decode `prompts` requests alone (one stream each), then all in one stream with one
    sequence per prompt; compare the texts byte for byte."""
    requests = determinism_requests(prompts, max_tokens, seed)
    started = time.perf_counter()
    alone = [_decode(backend, [r], 1)[0] for r in requests]
    batched = _decode(backend, requests, len(requests))
    seconds = time.perf_counter() - started
    result = DeterminismResult(
        prompts=len(requests),
        identical=0,
        batch=len(requests),
        max_tokens=max_tokens,
        seed=seed,
        seconds=seconds,
        settings=dict(backend.info.settings.get("continuous", {})),
        versions=dict(backend.info.versions),
    )
    for i, (a, b) in enumerate(zip(alone, batched, strict=True)):
        if a.text.encode("utf-8") == b.text.encode("utf-8") and a.tokens_out == b.tokens_out:
            result.identical += 1
            continue
        diff = first_difference(i, a, b)
        result.differences.append(diff)
        result.lines.append(diff.line(a.text, b.text))
        log.warning("determinism: %s", result.lines[-1])
    return result
