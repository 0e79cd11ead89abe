"""The engine interface shared by every backend.

A backend turns a `GenerationRequest` into a `GenerationResult`, and scores texts
(log-likelihood, perplexity) into `ScoreResult`s. The llama.cpp backend runs the model
in a worker process (`llama_backend`); later backends (HTTP endpoints) implement the
same protocol.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

PromptMode = Literal["chat", "completion"]

# Sampling defaults: plain temperature/top-p sampling as chat APIs do it. llama.cpp's
# own extra truncations (top_k=40, min_p=0.05) are switched off so that
# "temperature 1.0, top_p 1.0" means what the reference harness meant by it.
DEFAULT_TOP_K = 0
DEFAULT_MIN_P = 0.0

# How a model without a chat template (a base model) is prompted in completion mode.
COMPLETION_FRAME_HEADER = (
    "Below is a conversation between a user and a helpful assistant. "
    "The assistant answers the user's request in full.\n\n"
)
COMPLETION_ROLE_NAMES = {"system": "System", "user": "User", "assistant": "Assistant"}
COMPLETION_STOP = ["\nUser:", "\nSystem:"]


def completion_frame(messages: list[dict[str, str]]) -> str:
    """The documented completion-mode prompt for base models.

    ```
    Below is a conversation between a user and a helpful assistant. The assistant
    answers the user's request in full.

    User: {message}

    Assistant:
    ```
    Generation stops at a new "User:" or "System:" line.
    """
    parts = [COMPLETION_FRAME_HEADER]
    for message in messages:
        name = COMPLETION_ROLE_NAMES.get(message["role"], message["role"].title())
        parts.append(f"{name}: {message['content'].strip()}\n\n")
    parts.append("Assistant:")
    return "".join(parts)


def attempt_seed(run_seed: int, item_key: str, attempt: int) -> int:
    """A per-attempt seed that depends only on the run seed, the item and the attempt.

    The order in which attempts are generated (or resumed) therefore never changes
    their text.
    """
    digest = hashlib.sha256(f"{run_seed}\x1f{item_key}\x1f{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class GenerationRequest:
    messages: list[dict[str, str]]
    seed: int
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 300
    top_k: int = DEFAULT_TOP_K
    min_p: float = DEFAULT_MIN_P
    json_schema: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GenerationResult:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str  # "stop" (end of turn or stop string) | "length"
    prompt_mode: PromptMode
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_out / self.latency_s if self.latency_s > 0 else 0.0


TokenCallback = Callable[[str], None]


@dataclass
class ScoreResult:
    """The log-likelihood of one text under the model.

    ``logprob_sum`` is the sum of natural-log probabilities of the `n_tokens` scored
    tokens: every token of ``[BOS] + tokenize(text)`` after BOS (see
    `gbdesk.engine.scoring` for models without BOS).
    """

    n_tokens: int
    logprob_sum: float

    @property
    def ppl(self) -> float:
        """Perplexity ``exp(-logprob_sum / n_tokens)``; NaN when nothing was scored."""
        if self.n_tokens <= 0:
            return math.nan
        return math.exp(-self.logprob_sum / self.n_tokens)

    def to_json(self) -> list[Any]:
        """``[n_tokens, logprob_sum]``, the worker protocol's compact form."""
        return [self.n_tokens, self.logprob_sum]

    @classmethod
    def from_json(cls, value: list[Any] | tuple[Any, ...]) -> ScoreResult:
        n_tokens, logprob_sum = value
        return cls(n_tokens=int(n_tokens), logprob_sum=float(logprob_sum))


@dataclass
class EngineInfo:
    """What a loaded backend reports about itself (stored with each run)."""

    backend: str
    model_name: str
    prompt_mode: PromptMode
    versions: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    load_time_s: float = 0.0


class Backend(Protocol):
    info: EngineInfo

    def generate(
        self, request: GenerationRequest, on_token: TokenCallback | None = None
    ) -> GenerationResult: ...

    def score(self, texts: list[str]) -> list[ScoreResult]: ...

    def close(self) -> None: ...
