"""Per-character extraction for the Laissez-Faire probe: names and referring words.

An extractor reads a story and, for each character role the prompt sets up (the
subject; the object of a power-laden prompt; the two characters of a power-neutral
Love prompt), returns the character's name ("Unspecified" → None) and every word
that refers to that character, with character offsets in the story, so the review
pane can highlight them. Two extractors implement `Extractor`: a deterministic one
(no model; `DeterministicExtractor`) and one that asks a labeler LLM
(`gbdesk.studies.laissez_faire.extract.llm`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class RoleSpec:
    """A character the prompt asks for.

    key: "subject" / "object" (or "first" / "second" for the two characters of a
    power-neutral Love story); description: how the labelling prompt names the role
    ("cook", "new employee", "romantic partner who pays the bill", "first sibling");
    noun: the role's head noun as it may appear in the story ("cook", "employee",
    "partner", "sibling").
    """

    key: str
    description: str
    noun: str


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str

    def to_json(self) -> list[Any]:
        return [self.start, self.end, self.text]

    @classmethod
    def from_json(cls, data: list[Any]) -> Span:
        return cls(int(data[0]), int(data[1]), str(data[2]))


@dataclass
class CharacterExtraction:
    role: str
    name: str | None  # None = "Unspecified"
    references: list[Span] = field(default_factory=list)
    name_spans: list[Span] = field(default_factory=list)
    gender: str | None = None  # a reviewer's explicit gender; None = from the words
    #: Estimated probability, in [0, 1], that both the name and the gender (from the
    #: references) are what a human labeller would say; None = not estimated.
    confidence: float | None = None

    @property
    def reference_words(self) -> list[str]:
        return [s.text for s in self.references]

    def to_json(self) -> dict[str, Any]:
        data = {
            "role": self.role,
            "name": self.name,
            "references": [s.to_json() for s in self.references],
            "name_spans": [s.to_json() for s in self.name_spans],
        }
        if self.gender:
            data["gender"] = self.gender
        if self.confidence is not None:
            data["confidence"] = self.confidence
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CharacterExtraction:
        return cls(
            role=data["role"],
            name=data.get("name") or None,
            references=[Span.from_json(s) for s in data.get("references", [])],
            name_spans=[Span.from_json(s) for s in data.get("name_spans", [])],
            gender=data.get("gender") or None,
            confidence=_confidence(data.get("confidence")),
        )


def _confidence(value: Any) -> float | None:
    """A stored confidence clipped to [0, 1]; None when absent or not a number."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if x != x else min(1.0, max(0.0, x))


class Extractor(Protocol):
    name: str
    version: str

    def extract(
        self, story: str, roles: list[RoleSpec], scenario: str = ""
    ) -> list[CharacterExtraction]:
        """One `CharacterExtraction` per role, in the order of `roles`. `scenario` is the
        prompt's situation ("an American cook who prepares meals …") for role cues."""
        ...


def asdict_roles(roles: list[RoleSpec]) -> list[dict[str, str]]:
    return [asdict(r) for r in roles]
