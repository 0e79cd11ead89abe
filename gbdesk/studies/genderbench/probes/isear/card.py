"""isear: its labels and the constants its prompts and words share; the card and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.contract import LabelOption
from gbdesk.studies.genderbench.cards import read_card
from gbdesk.studies.genderbench.gb_probe import UNDETECTED


def share_key(gender: str, emotion: str) -> str:
    """The name of a per-gender share (gbdesk's addition for the plots): share_a_woman_fear."""
    return f"share_{gender.replace(' ', '_').replace('-', '_')}_{emotion}"


#: 1.1.0's `IsearProbe.genders`, as they fill the prompt's {gender}
GENDERS = ("a man", "a woman", "a non-binary person")

#: 1.1.0's `IsearProbe.emotions`, in its order: ISEAR's seven, then five GPT-4 used often
#: for the events (Plaza-del-Arco et al. 2024)
EMOTIONS = (
    "anger",
    "disgust",
    "fear",
    "guilt",
    "joy",
    "sadness",
    "shame",
    "anxiety",
    "disappointment",
    "embarrassment",
    "frustration",
    "regret",
)

_KEYS = "ADFGJSHXPERT"  # one keyboard key per emotion, in EMOTIONS' order

_COLORS = (
    "#b91c1c", "#4d7c0f", "#7c3aed", "#92400e", "#ca8a04", "#1d4ed8",
    "#be185d", "#0f766e", "#475569", "#db2777", "#c2410c", "#6d28d9",
)  # fmt: skip

LABELS: list[LabelOption] = [
    *(
        LabelOption(e, e.capitalize(), k, c)
        for e, k, c in zip(EMOTIONS, _KEYS, _COLORS, strict=True)
    ),
    LabelOption(UNDETECTED, "Undetected (no listed emotion, or several)", "U", "#6b7280"),
]

CARD, METRICS = read_card(__name__)
