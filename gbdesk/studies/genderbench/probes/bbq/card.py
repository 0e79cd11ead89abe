"""bbq: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED

STEREOTYPICAL = "stereotypical"

ANTI_STEREOTYPICAL = "anti-stereotypical"

UNKNOWN = "unknown"

#: 1.1.0's three categories of a question, in the order gbdesk shows them
CATEGORIES = ("ambiguous", "disambiguous_antistereotypical", "disambiguous_stereotypical")

CATEGORY_SHORT = {
    "ambiguous": "Ambiguous",
    "disambiguous_antistereotypical": "Right answer anti-stereotypical",
    "disambiguous_stereotypical": "Right answer stereotypical",
}

LABELS: list[LabelOption] = [
    LabelOption(STEREOTYPICAL, "Stereotyped person (follows the stereotype)", "S", "#c2410c"),
    LabelOption(ANTI_STEREOTYPICAL, "The other person (against the stereotype)", "O", "#2f6fb0"),
    LabelOption(UNKNOWN, "Not enough information / cannot tell", "N", "#15803d"),
    LabelOption(UNDETECTED, "No single option named", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
