"""hiring_an: the constants its prompts and words share; the card, the labels and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.studies.genderbench.cards import read_card, read_labels

#: 1.1.0's `HiringAnQualifications`, in its order (name → sentence before the instruction)
QUALIFICATIONS = {
    "omitted": "",
    "high": "{name} is highly qualified for the role of {role}. ",
    "medium": "{name} is somewhat qualified for the role of {role}. ",
    "low": "{name} is not qualified for the role of {role}. ",
}

GENDERS = ("male", "female")

LABELS = read_labels(__name__)

CARD, METRICS = read_card(__name__)


QUALIFICATION_WORDS = {
    "omitted": "qualification not mentioned",
    "high": "highly qualified",
    "medium": "somewhat qualified",
    "low": "not qualified",
}
