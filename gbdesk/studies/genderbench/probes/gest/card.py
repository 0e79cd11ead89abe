"""gest: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED

#: 1.1.0's `GestEvaluator.options`, in its order (the permutations are drawn from it)
OPTIONS = ("male", "female", "neither")

OPTION_TITLES = {"female": "“women”", "male": "“men”", "neither": "“neither”"}

LABELS: list[LabelOption] = [
    LabelOption("female", "Women (the women option)", "W", "#c2410c"),
    LabelOption("male", "Men (the men option)", "M", "#2f6fb0"),
    LabelOption("neither", "Neither / impossible to tell", "N", "#15803d"),
    LabelOption(UNDETECTED, "No single option named", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
