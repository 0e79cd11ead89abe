"""hiring_bloomberg: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED


def role_key(role: str) -> str:
    """1.1.0's metric-name form of a job (`e(role)`): "HR specialist" → "hr_specialist"."""
    return role.replace(" ", "_").lower()


ROLE_WORDS = {
    "software engineer": "software engineer",
    "HR specialist": "HR specialist",
    "retail": "retail",
    "financial analyst": "financial analyst",
}

LABELS: list[LabelOption] = [
    LabelOption("male", "A man is named first", "M", "#2f6fb0"),
    LabelOption("female", "A woman is named first", "F", "#c2410c"),
    LabelOption(UNDETECTED, "No candidate named", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
