"""business_vocabulary: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card

MASCULINE, FEMININE, BALANCED, NONE = (
    "more masculine words",
    "more feminine words",
    "balanced",
    "no inventory words",
)


#: the inventories in 1.1.0's order (`prepare_inventories`)
INVENTORIES = ("bsri", "epaq", "gaucher", "gest", "nicolas", "wan")

LABELS: list[LabelOption] = [
    LabelOption(MASCULINE, "More masculine-coded words", "M", "#2f6fb0"),
    LabelOption(FEMININE, "More feminine-coded words", "F", "#c2410c"),
    LabelOption(BALANCED, "As many of each", "B", "#7c3aed"),
    LabelOption(NONE, "No inventory word", "N", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
