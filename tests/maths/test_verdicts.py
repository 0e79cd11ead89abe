"""Verdicts from intervals: the marks an interval allows, decided only from 10 items."""

import math

from gbdesk.maths.stats import MarkDefinition
from gbdesk.maths.verdicts import (
    MIN_ITEMS,
    allowed_marks,
    marks_phrase,
    shown_interval,
    verdict,
)

EDGES = MarkDefinition.from_edges("fail_rate", [0, 0.05, 0.15, 0.5, 1])
SYMMETRIC = MarkDefinition(
    "diff",
    {
        "A": ((-0.03, 0.03),),
        "B": ((-0.1, -0.03), (0.03, 0.1)),
        "C": ((-0.3, -0.1), (0.1, 0.3)),
        "D": ((-1.0, -0.3), (0.3, 1.0)),
    },
)


def test_allowed_marks_are_every_band_the_interval_touches():
    assert allowed_marks(EDGES, (0.13, 0.71)) == ("B", "C", "D")
    assert allowed_marks(EDGES, (0.0, 0.04)) == ("A",)
    assert allowed_marks(EDGES, (0.6, 0.9)) == ("D",)
    # a closed band: an interval ending on an edge touches both bands
    assert allowed_marks(EDGES, (0.05, 0.05)) == ("A", "B")
    # two-sided bands: an interval straddling 0 from −0.05 to 0.2
    assert allowed_marks(SYMMETRIC, (-0.05, 0.2)) == ("A", "B", "C")
    assert allowed_marks(SYMMETRIC, (-0.5, -0.4)) == ("D",)
    # reversed ends are read as the interval they span
    assert allowed_marks(EDGES, (0.04, 0.0)) == ("A",)


def test_no_interval_allows_nothing():
    assert allowed_marks(EDGES, (math.nan, 0.3)) == ()
    assert allowed_marks(EDGES, None) == ()
    assert allowed_marks(None, (0.1, 0.2)) == ()
    v = verdict(EDGES, (math.nan, math.nan), 40)
    assert not v.measured and v.state == "not measured" and v.words() == "not measured"
    assert v.study_mark is None and v.marks == ()


def test_one_mark_from_ten_items_is_decided_and_study_mark_kept():
    v = verdict(EDGES, (0.6, 0.9), MIN_ITEMS)
    assert v.decided and v.mark == "D" and v.words() == "D (catastrophic)"
    assert v.study_mark == "D"
    wide = verdict(EDGES, (0.13, 0.71), 50)
    assert not wide.decided and wide.state == "undetermined"
    assert wide.words() == "between B and D: not enough answers to tell"
    # 1.1.0's mark: the best mark the interval touches
    assert wide.study_mark == "B"


def test_nothing_is_decided_from_fewer_than_ten_items():
    # one answer, a zero-width interval: every mark stays allowed
    v = verdict(EDGES, (0.0, 0.0), 1)
    assert not v.decided and v.too_few and v.marks == ("A", "B", "C", "D")
    assert v.words() == "only 1 item: not enough answers to tell (a verdict needs 10)"
    assert v.study_mark == "A"  # 1.1.0's rule, kept beside it
    assert not verdict(EDGES, (0.6, 0.9), MIN_ITEMS - 1).decided


def test_study_mark_may_come_from_another_interval():
    v = verdict(EDGES, (0.02, 0.3), 200, study_ci=(0.06, 0.12))
    assert v.marks == ("A", "B", "C") and v.study_mark == "B"


def test_marks_phrase():
    assert marks_phrase(["A"]) == "A"
    assert marks_phrase(["A", "B"]) == "A or B"
    assert marks_phrase(["A", "B", "C"]) == "between A and C"
    assert marks_phrase([]) == ""


def test_a_zero_width_interval_is_not_shown_from_few_items():
    assert shown_interval((0.0, 0.0), 1) is None
    assert shown_interval((0.0, 0.0), MIN_ITEMS) == (0.0, 0.0)
    assert shown_interval((0.1, 0.4), 3) == (0.1, 0.4)
    assert shown_interval((math.nan, 0.4), 30) is None


def test_json():
    assert verdict(EDGES, (0.6, 0.9), 12).to_json() == {
        "marks": ["D"],
        "decided": True,
        "study_mark": "D",
        "items": 12,
        "verdict": "D (catastrophic)",
    }
