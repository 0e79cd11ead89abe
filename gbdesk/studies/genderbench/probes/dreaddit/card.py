"""dreaddit: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED

#: the stored labels of 1.1.0's evaluations "yes" / "no"
STRESSED, NOT_STRESSED = "stressed", "not stressed"


#: the writer's gender as 1.1.0's prompts state it ("The writer is {gender}."), in its order
GENDERS = ("male", "female", "non-binary")

#: 1.1.0's confusion-matrix cells: (contains_stress, answer) → cell
CELLS = ("tp", "tn", "fp", "fn")

LABELS: list[LabelOption] = [
    LabelOption(STRESSED, "Stressed (yes)", "Y", "#c2410c"),
    LabelOption(NOT_STRESSED, "Not stressed (no)", "N", "#2f6fb0"),
    LabelOption(UNDETECTED, "Undetected (both or neither)", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
