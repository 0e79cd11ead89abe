"""The import-speed rewrites of the Laissez-Faire extractor's helpers give what the plain
versions they replaced give (kept here as references), on tricky and on random texts."""

from __future__ import annotations

import random
import re

from gbdesk.studies.laissez_faire.extract import lexicon, tokens
from gbdesk.studies.laissez_faire.extract.gender_words import (
    WORD_LISTS,
    genders_hit,
    reference_words,
    word_sets,
)
from gbdesk.studies.laissez_faire.flat import _any_term, _may_hold_a_term
from gbdesk.studies.laissez_faire.probe import load_identity_terms, term_pattern

OLD_TOKEN_RE = re.compile(r"[^\W_](?:[\w]|[-'’](?=[^\W_]))*|\S")

TRICKY = [
    "",
    '"',
    '""',
    '"Hi," she said.',
    '“Hi,” he said, ‘quietly’ — "no" “nested “twice”',
    "'Tis James' book and the boys' bikes; O'Brien's 'quote' isn't",
    "«Bonjour» dit-il. ‘Yes’ ’no‘ '' ' a ' b'",
    '"The whole story is one quotation."',
    "Mr. Smith met Dr. Jones.\nShe left… He stayed! Did he? yes.",
    "snake_case and __init__ and well-known 2-year-olds, ’s",
    "Ünïcödé Ꮚ İstanbul ﬁne ß 1st ٣ words²",
]


def _old_mark_quotes(story: str, toks: list) -> list[bool]:
    """The per-character rule `_mark_quotes` had before: which tokens are quoted."""
    inside = [False] * len(story)
    state = None
    for pos, ch in enumerate(story):
        prev = story[pos - 1] if pos else " "
        nxt = story[pos + 1] if pos + 1 < len(story) else " "
        if ch == '"':
            if state == '"':
                state = None
            elif state is None:
                state = '"'
                continue
        elif ch in "“«":
            state = "“"
            continue
        elif ch in "”»" and state == "“":
            state = None
        elif ch in "‘'" and state is None and not prev.isalnum() and nxt.isalpha():
            state = "'"
            continue
        elif ch in "’'" and state == "'" and not nxt.isalnum():
            state = None
        if state is not None:
            inside[pos] = True
    begin = next((t.start for t in toks if not t.skip), len(story))
    body = story[begin:].strip()
    marks = sum(body.count(q) for q in '"“”')
    if len(body) > 2 and body[0] in '"“' and body[-1] in '"”' and marks == 2:
        return [False] * len(toks)
    return [inside[t.start] for t in toks]


def _old_stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ies", "s"):
        if w.endswith(suffix) and len(w) > len(suffix) + 2 and not w.endswith("ss"):
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces = [*"ab cD\n.,!?\"“”«»‘’'-_é1 ", "Mr", "she's", "James", "I", "’s", "\u2028"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def test_tokens_and_quotes_as_before():
    for story in TRICKY + _random_texts(1500, seed=1):
        assert [m.span() for m in tokens.TOKEN_RE.finditer(story)] == [
            m.span() for m in OLD_TOKEN_RE.finditer(story)
        ], story
        toks = tokens.tokenise(story)
        assert all(t.cap == (t.word and t.text[:1].isupper()) for t in toks)
        tokens.mark_preamble(story, toks)
        expected = _old_mark_quotes(story, toks)
        tokens.mark_quotes(story, toks)
        assert [t.quoted for t in toks] == expected, story


def test_stem_as_before():
    words = ["", "s", "ss", "ies", "lies", "flies", "stories", "fans", "bus", "boss", "as"]
    for w in words + [w.upper() for w in words] + ["İs", "abies", "xyzs"]:
        assert lexicon.stem(w) == _old_stem(w), w


def test_identity_term_prefilter_finds_every_story_with_a_term():
    groups = load_identity_terms()
    terms = [t for ts in groups.values() for t in ts]
    around = [(a, b) for a in ("", " ", "x", "-", "“") for b in ("", "s", ".", "’")]
    texts = TRICKY + [f"{a}{t}{b}" for t in terms for a, b in around]
    # characters beyond ASCII that equal an ASCII letter ignoring case: Kelvin sign, long
    # s, dotless i, dotted capital I
    odd = {"k": "\u212a", "s": "\u017f", "i": "\u0131", "I": "\u0130"}
    texts += ["".join(odd.get(c, c) for c in text) for text in texts]
    texts += [t.upper() for t in texts] + ["the Gay-Lussac law", "NAVAJO", "samoans", "gay’s"]
    for text in texts:
        any_term = any(term_pattern(t).search(text) for t in terms)
        assert bool(_any_term(groups).search(text)) == any_term, text
        if any_term:
            assert _may_hold_a_term(text, groups), text
    assert not _may_hold_a_term("A quiet story, “nothing” — at all.", groups)


def test_gender_hits_as_before():
    refs = ["he", "She", "Mr.", "mr", "his/her", "“Mrs.”", "their", "", "King's", "x"]
    for word_list in WORD_LISTS:
        sets = word_sets(word_list)
        for k in range(len(refs)):
            chosen = refs[k:] + refs[:k]
            expected = {
                g for r in chosen for w in reference_words(r) for g, ws in sets.items() if w in ws
            }
            assert genders_hit(chosen, word_list) == expected
