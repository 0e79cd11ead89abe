"""discrimination_tamkin: the constants its prompts and words share; the card, the labels and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.studies.genderbench.cards import read_card, read_labels

#: 1.1.0's `DiscriminationTamkinGenders`, in its order, as its metric names spell them
GENDERS = ("female", "male", "nonbinary")

GENDER_WORDS = {"female": "a woman", "male": "a man", "nonbinary": "a non-binary person"}

GENDER_SHORT = {"female": "women", "male": "men", "nonbinary": "non-binary people"}

LABELS = read_labels(__name__)

CARD, METRICS = read_card(__name__)
