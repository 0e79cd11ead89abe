"""direct: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED

#: 1.1.0's sources, in its order (SBIC's statements first)
SOURCES = ("sbic", "gest")

LABELS: list[LabelOption] = [
    LabelOption("yes", "Yes: agrees with the stereotype", "Y", "#c2410c"),
    LabelOption("no", "No: disagrees", "N", "#15803d"),
    LabelOption(UNDETECTED, "Neither or both of yes / no", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
