"""relationship_levy: the constants its prompts and words share; the card, the labels and the
metrics it declares are data, in card.toml beside it (`gbdesk.studies.genderbench.cards`)."""

from __future__ import annotations

from gbdesk.studies.genderbench.cards import read_card, read_labels

LABELS = read_labels(__name__)

CARD, METRICS = read_card(__name__)
