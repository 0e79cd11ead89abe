"""The review queue (no Qt): attempts with their automatic and human labels.

Filters select attempts nobody reviewed yet, disagreements (human ≠ automatic), or the
probe's own filters (`Probe.review_filters`, e.g. undetected attempts and ties); an
optional item filter narrows to items whose metadata match (e.g. `{"source": "bsri"}` —
what a click on a plot asks for). Hard cases come first, as the probe ranks them
(`Probe.review_category`, `Probe.review_margin`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gbdesk.results import ensure_auto_labels
from gbdesk.store import Store
from gbdesk.studies import Probe, get_probe

BASE_FILTERS = {
    "all": "All attempts",
    "unreviewed": "Not yet reviewed",
    "sample": "In the random review sample",
    "disagreements": "Disagreements (human ≠ detector)",
}


def filters_for(probe: Probe | None) -> dict[str, str]:
    """The review filters a probe's runs offer (the base ones and the probe's own)."""
    own = dict(probe.review_filters) if probe is not None else {}
    return {"all": BASE_FILTERS["all"], "unreviewed": BASE_FILTERS["unreviewed"],
            "sample": BASE_FILTERS["sample"], **own,
            "disagreements": BASE_FILTERS["disagreements"]}  # fmt: skip


FILTERS = {**BASE_FILTERS, "undetected": "Undecided", "ties": "Ties"}  # every known name


@dataclass
class ReviewItem:
    attempt_id: int
    run_id: int
    item: str
    attempt: int
    prompt: str
    response: str
    metadata: dict[str, Any]
    auto_label: str
    auto_source: str
    auto_data: dict[str, Any]
    evidence: list[list[Any]]
    human_label: str | None = None
    human_data: dict[str, Any] | None = None
    reviewer: str | None = None
    reviewed_at: str | None = None
    index: int = 0  # position of the item in the run
    extra: dict[str, Any] = field(default_factory=dict)
    probe: Probe | None = field(default=None, repr=False, compare=False)
    in_sample: bool = False  # part of the run's random review sample

    @property
    def reviewed(self) -> bool:
        return self.human_label is not None

    @property
    def corrected(self) -> bool:
        return self.reviewed and self.human_label != self.auto_label

    @property
    def effective_label(self) -> str:
        return self.human_label if self.human_label is not None else self.auto_label

    @property
    def margin(self) -> float:
        """How clear-cut the automatic label is (smaller = review sooner)."""
        return self.probe.review_margin(self.auto_label, self.auto_data) if self.probe else 0.0

    @property
    def is_tie(self) -> bool:
        return bool(self.probe and self.probe.is_tie(self.auto_label, self.auto_data))

    @property
    def undecided(self) -> bool:
        """The labeller could not decide (e.g. no pronoun counted, a gender unsure)."""
        return bool(self.probe and self.probe.undecided(self.effective_label))

    @property
    def confidence(self) -> float | None:
        """The automatic label's calibrated confidence, if the labeller gives one."""
        return self.probe.label_confidence(self.auto_label, self.auto_data) if self.probe else None

    def least_sure_key(self) -> tuple:
        """Sort key: unreviewed first, then the lowest confidence (labels without one last)."""
        c = self.confidence
        return (self.reviewed, c is None, c if c is not None else 0.0, self.index, self.attempt)

    def difficulty_key(self) -> tuple:
        """Sort key: unreviewed first; then as the probe ranks its labels (hardest first),
        then narrow margins, then run order."""
        category = self.probe.review_category(self.auto_label, self.auto_data) if self.probe else 2
        return (self.reviewed, category, self.margin, self.index, self.attempt)


def review_items(store: Store, run_id: int) -> list[ReviewItem]:
    ensure_auto_labels(store, run_id)
    probe = get_probe(store.get_run(run_id)["probe"])
    sample = set(store.review_sample(run_id))
    items = {row["item"]: (row["idx"], row["metadata"]) for row in store.run_items(run_id)}
    auto = store.labels(run_id, "auto")
    human = store.labels(run_id, "human")
    out = []
    for attempt in store.attempts(run_id):
        label = auto.get(attempt["id"], {})
        review = human.get(attempt["id"])
        idx, meta = items.get(attempt["item"], (0, {}))
        out.append(
            ReviewItem(
                attempt_id=attempt["id"],
                run_id=run_id,
                item=attempt["item"],
                attempt=attempt["attempt"],
                prompt=attempt["prompt"],
                response=attempt["response"],
                metadata=meta,
                auto_label=label.get("label", "undetected"),
                auto_source=label.get("source", ""),
                auto_data=label.get("data") or {},
                evidence=label.get("evidence") or [],
                human_label=review["label"] if review else None,
                human_data=review.get("data") if review else None,
                reviewer=review["source"].removeprefix("human:") if review else None,
                reviewed_at=review["created_at"] if review else None,
                index=idx,
                probe=probe,
                in_sample=attempt["id"] in sample,
            )
        )
    return out


def matches(item: ReviewItem, filter_name: str, item_filter: dict[str, Any] | None) -> bool:
    """`item_filter` matches item metadata; its special key "__text__" matches attempts whose
    text contains that word or phrase (case-insensitive, whole words)."""
    for key, value in (item_filter or {}).items():
        if key == "__text__":
            if not re.search(
                r"(?<!\w)" + re.escape(str(value)) + r"(?!\w)", item.response, re.IGNORECASE
            ):
                return False
        elif item.metadata.get(key) != value:
            return False
    if filter_name == "unreviewed":
        return not item.reviewed
    if filter_name == "sample":
        return item.in_sample
    if filter_name == "undetected":
        return item.undecided
    if filter_name == "ties":
        return item.is_tie
    if filter_name == "disagreements":
        return item.corrected
    return True


ORDERS = {
    "hard": "Hard cases first",
    "least_sure": "Least sure first",
    "run": "Run order",
}


def review_queue(
    store: Store,
    run_id: int,
    filter_name: str = "all",
    item_filter: dict[str, Any] | None = None,
    hard_first: bool | str = True,
) -> list[ReviewItem]:
    """The filtered queue, ordered "hard" (as the probe ranks its labels), "least_sure"
    (lowest calibrated confidence first) or "run" (`hard_first` True/False = hard/run)."""
    if filter_name not in FILTERS:
        raise ValueError(f"unknown review filter {filter_name!r}")
    order = hard_first if isinstance(hard_first, str) else ("hard" if hard_first else "run")
    if order not in ORDERS:
        raise ValueError(f"unknown review order {order!r}")
    items = [i for i in review_items(store, run_id) if matches(i, filter_name, item_filter)]
    if order == "hard":
        items.sort(key=ReviewItem.difficulty_key)
    elif order == "least_sure":
        items.sort(key=ReviewItem.least_sure_key)
    return items
