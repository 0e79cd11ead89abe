"""Evidence spans index the answer as stored (issue 35, item 5).

GenderBench's evaluators read the answer lower-cased, and "İ" (U+0130) lower-cases to two
characters ("i" and a combining dot above): spans found in the lower-cased text pointed
past the original after each one. Every evaluator's highlights are checked after "İ", "ẞ"
(whose lower case is one character, "ß"), a ligature ("ﬁ", unchanged by lower-casing;
case folding would make it two) and combining marks; the labels stay GenderBench's.
"""

from __future__ import annotations

import pytest

from gbdesk.contract import get_probe
from tests.helpers import first_metadata

#: text before the words a label reads: each of the characters of the module docstring
PREFIXES = {
    "dotted capital I": "İİ İstanbul, İzmir. ",
    "capital sharp s": "STRAẞE ẞ. ",
    "ligature": "ﬁne ﬂat ﬃ. ",
    "combining marks": "Cafe\u0301 n\u0303 I\u0307. ",
    "all of them": "İ ẞ ﬁ e\u0301 İİ. ",
}

# probe → (answer after the prefix, what its evidence spans cover, lower-cased, in order)
CASES = {
    "bbq": ("My answer is (a).", ["(a)"]),
    "gest": ("I choose (C).", ["(c)"]),
    "diversity_med_qa": ("The answer is (e).", ["(e)"]),
    "relationship_levy": ("I would pick (b).", ["(b)"]),
    "direct": ("Yes.", ["yes"]),
    "discrimination_tamkin": ("Yes.", ["yes"]),
    "dreaddit": ("Yes, that is stress.", ["yes"]),
    "isear": ("They would feel ANGER.", ["anger"]),
    "business_vocabulary": ("He is ambitious and aggressive.", ["ambitious", "aggressive"]),
    "hiring_an": ("We regret to inform you that…", ["regret to inform you"]),
    "inventories": ("She met him.", ["she", "him"]),
}


def covered(answer: str, evidence: list[list]) -> list[str]:
    return [answer[span[0] : span[1]].lower() for span in evidence]


@pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))
@pytest.mark.parametrize("name", list(CASES))
def test_spans_cover_the_words_the_label_read(name, prefix):
    probe = get_probe(name)
    text, words = CASES[name]
    answer = prefix + text
    metadata = first_metadata(probe)
    got = probe.label(answer, metadata)
    assert covered(answer, got["evidence"]) == words
    # the label is the one of the answer without the prefix: nothing else changed
    assert got["label"] == probe.label(text, metadata)["label"]


@pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))
def test_the_name_hiring_bloomberg_read_is_highlighted(prefix):
    probe = get_probe("hiring_bloomberg")
    metadata = first_metadata(probe)
    name = metadata["female_names"][0]
    answer = f"{prefix}The best candidate is {name}."
    got = probe.label(answer, metadata)
    assert got["label"] == "female"
    assert [answer[s:e] for s, e, _ in got["evidence"]] == [name]


def test_a_word_written_with_a_dotted_capital_i_is_found_where_it_stands():
    """ "İS" lower-cases to "i̇s" (three characters): a span inside such a word covers the
    whole original characters it came from."""
    from gbdesk.support.lowered import Lowered

    text = "THİS İS (A)"
    low = Lowered(text)
    assert low.lower == "thi̇s i̇s (a)"
    start = low.lower.index("(a)")
    assert low.span(start, start + 3) == (8, 11) and text[8:11] == "(A)"
    i = low.lower.index("i̇s")
    s, e = low.span(i, i + 3)
    assert text[s:e] == "İS"
    s, e = low.span(i + 1, i + 2)  # the dot above: inside the lower case of one character
    assert text[s:e] == "İ"
    assert low.find_all("(a)") == [[8, 11]]
    assert Lowered("plain (a)").find_all("(a)") == [[6, 9]]


def test_every_character_maps_back():
    """Every code point whose lower case is longer than one character, between others: the
    lower case of each original character's span is exactly what it became."""
    from gbdesk.support.lowered import Lowered

    longer = [chr(c) for c in range(0x110000) if len(chr(c).lower()) > 1]
    assert "İ" in longer
    text = "A".join(longer) + "ẞﬁe\u0301"
    low = Lowered(text)
    start = 0
    for i, c in enumerate(text):
        piece = c.lower()
        assert low.lower[start : start + len(piece)] == piece
        assert low.span(start, start + len(piece)) == (i, i + 1)
        start += len(piece)
    assert start == len(low.lower)
