"""The review queue (no Qt): attempts with their automatic and human labels.

Filters select attempts nobody reviewed yet, disagreements (human ≠ automatic), attempts
whose raters disagree and nobody adjudicated yet (the disagreement queue), adjudicated ones,
or the probe's own filters (`Review.filters`, e.g. undetected attempts and ties); an
optional item filter narrows to items whose metadata match (e.g. `{"source": "bsri"}` —
what a click on a plot asks for). Hard cases come first, as the probe ranks them
(`Review.category`, `Review.margin`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from gbdesk.analysis.results import ensure_auto_labels
from gbdesk.contract import Probe, get_probe
from gbdesk.contract.running import RunItems
from gbdesk.people.raters import raters_disagree
from gbdesk.store import Store

BASE_FILTERS = {
    "all": "All attempts",
    "unreviewed": "Not yet reviewed",
    "sample": "In the random review sample",
    "disagreements": "Disagreements (human ≠ detector)",
    "rater_disagreements": "Raters disagree (not adjudicated yet)",
    "adjudicated": "Adjudicated (consensus label)",
}


def filters_for(probe: Probe | None) -> dict[str, str]:
    """The review filters a probe's runs offer (the base ones and the probe's own)."""
    own = dict(probe.capabilities.review.filters) if probe is not None else {}
    return {"all": BASE_FILTERS["all"], "unreviewed": BASE_FILTERS["unreviewed"],
            "sample": BASE_FILTERS["sample"], **own,
            "disagreements": BASE_FILTERS["disagreements"],
            "rater_disagreements": BASE_FILTERS["rater_disagreements"],
            "adjudicated": BASE_FILTERS["adjudicated"]}  # fmt: skip


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
    #: the automatic label's data and evidence as stored (JSON text), parsed when first
    #: asked for (`auto_data`, `evidence`): a queue of 500,000 stories keeps them as text
    auto_data_json: str | None
    evidence_json: str | None
    human_label: str | None = None
    human_data: dict[str, Any] | None = None
    reviewer: str | None = None
    reviewed_at: str | None = None
    index: int = 0  # position of the item in the run
    extra: dict[str, Any] = field(default_factory=dict)
    probe: Probe | None = field(default=None, repr=False, compare=False)
    in_sample: bool = False  # part of the run's random review sample
    # several raters: each rater's latest label row, and the adjudicated one
    rater_labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    consensus: dict[str, Any] | None = None
    raters_disagree: bool = False  # raters' latest labels differ on some rated unit
    #: the probe's ranking of the automatic label, computed once when the queue is built
    #: (`rank_label`): (review category, margin, confidence, tie); None: computed on demand
    ranks: tuple[int, float, float | None, bool] | None = field(default=None, repr=False)

    @functools.cached_property
    def auto_data(self) -> dict[str, Any]:
        return json.loads(self.auto_data_json) if self.auto_data_json else {}

    @functools.cached_property
    def evidence(self) -> list[list[Any]]:
        return json.loads(self.evidence_json) if self.evidence_json else []

    def rank_label(self, data: dict[str, Any] | None = None) -> None:
        """Compute `ranks` from the automatic label (`data`: its parsed data, when the caller
        has it and `auto_data` should stay unparsed)."""
        probe, label = self.probe, self.auto_label
        data = self.auto_data if data is None else data
        if probe is None:
            self.ranks = (2, 0.0, None, False)
            return
        review = probe.capabilities.review
        self.ranks = (
            review.category(label, data),
            review.margin(label, data),
            review.confidence(label, data),
            bool(review.is_tie(label, data)),
        )

    def _ranks(self) -> tuple[int, float, float | None, bool]:
        if self.ranks is None:
            self.rank_label()
        assert self.ranks is not None
        return self.ranks

    @property
    def adjudicated(self) -> bool:
        return self.consensus is not None

    @property
    def consensus_by(self) -> str | None:
        return self.consensus["source"].removeprefix("consensus:") if self.consensus else None

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
        return self._ranks()[1]

    @property
    def is_tie(self) -> bool:
        return self._ranks()[3]

    @property
    def undecided(self) -> bool:
        """The labeller could not decide (e.g. no pronoun counted, a gender unsure)."""
        return bool(self.probe and self.probe.capabilities.review.undecided(self.effective_label))

    @property
    def confidence(self) -> float | None:
        """The automatic label's calibrated confidence, if the labeller gives one."""
        return self._ranks()[2]

    def least_sure_key(self) -> tuple:
        """Sort key: unreviewed first, then the lowest confidence (labels without one last)."""
        c = self.confidence
        return (self.reviewed, c is None, c if c is not None else 0.0, self.index, self.attempt)

    def difficulty_key(self) -> tuple:
        """Sort key: unreviewed first; then as the probe ranks its labels (hardest first),
        then narrow margins, then run order."""
        return (self.reviewed, self._ranks()[0], self.margin, self.index, self.attempt)


def review_items(store: Store, run_id: int) -> list[ReviewItem]:
    """Every attempt of the run as a `ReviewItem`, in run order. The automatic labels'
    data stay JSON text (parsed once here to rank them, then again only for the items a
    view shows), and attempts of one item share its prompt: a 500,000-story queue fits
    in about a third of the memory the parsed labels took."""
    ensure_auto_labels(store, run_id)
    probe = get_probe(store.get_run(run_id)["probe"])
    sample = set(store.review_sample(run_id))
    run_items = RunItems.of(store, run_id)
    items = {row["item"]: (row["idx"], row["metadata"]) for row in run_items.rows}
    auto = store.label_texts(run_id, "auto")
    human = store.labels(run_id, "human")
    extras = probe.capabilities.review.extras(store, run_id)
    by_rater: dict[int, dict[str, dict[str, Any]]] = {}
    for rater, rows in store.rater_labels(run_id).items():
        for attempt_id, row in rows.items():
            by_rater.setdefault(attempt_id, {})[rater] = row
    consensus = store.labels(run_id, "consensus")
    prompts: dict[str, str] = {}
    out = []
    for attempt_id, item_key, attempt, prompt, response in store.iter_attempt_texts(run_id):
        source, label, data_json, evidence_json = auto.pop(
            attempt_id, ("", "undetected", None, None)
        )
        review = human.get(attempt_id)
        idx, meta = items.get(item_key, (0, {}))
        if run_items.multi:  # the prompt this attempt answered: its metadata too
            meta = run_items.metadata(item_key, attempt)
        rated = by_rater.get(attempt_id, {})
        entry = ReviewItem(
            attempt_id=attempt_id,
            run_id=run_id,
            item=item_key,
            attempt=attempt,
            prompt=prompts.setdefault(prompt, prompt),
            response=response,
            metadata=meta,
            auto_label=label,
            auto_source=source,
            auto_data_json=data_json,
            evidence_json=evidence_json,
            human_label=review["label"] if review else None,
            human_data=review.get("data") if review else None,
            reviewer=review["source"].removeprefix("human:") if review else None,
            reviewed_at=review["created_at"] if review else None,
            index=idx,
            probe=probe,
            in_sample=attempt_id in sample,
            extra=extras.get(attempt_id, {}),
            rater_labels=rated,
            consensus=consensus.get(attempt_id),
            raters_disagree=raters_disagree(probe, rated, meta) if len(rated) > 1 else False,
        )
        entry.rank_label(json.loads(data_json) if data_json else {})
        out.append(entry)
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
    if filter_name == "rater_disagreements":
        return item.raters_disagree and not item.adjudicated
    if filter_name == "adjudicated":
        return item.adjudicated
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
