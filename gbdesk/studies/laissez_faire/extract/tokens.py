"""Step 1 of the extractor: tokens, preamble lines, dialogue and sentences.

In full: tokenise; split sentences (honorific periods do not end one); mark
dialogue (text inside quotation marks) and preamble lines ("Here is a 97 word story:",
an echoed prompt, a markdown title).
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from dataclasses import dataclass

from gbdesk.studies.laissez_faire.extract.lexicon import ABBREVIATIONS, PRONOUNS

# a word: letters/digits, inner hyphens and apostrophes ("well-known", "O'Brien", "she's");
# else one non-space character. (Same as r"[^\W_](?:[\w]|[-'’](?=[^\W_]))*|\S", faster.)
TOKEN_RE = re.compile(r"[^\W_]\w*(?:[-'’][^\W_]\w*)*|\S")


@dataclass(slots=True)
class Tok:
    i: int
    text: str
    start: int
    end: int
    word: bool
    lower: str
    base: str  # lower-case without a possessive 's
    poss: bool  # possessive ('s, or a trailing apostrophe)
    cap: bool  # a word that begins with a capital letter
    sent: int = 0
    quoted: bool = False
    initial: bool = False  # capitalisation says nothing here (sentence/quote start)
    skip: bool = False  # preamble line


NOT_POSSESSORS = frozenset(("it", "that", "what", "there", "here", "let", "who"))


def tokenise(story: str) -> list[Tok]:
    toks: list[Tok] = []
    append = toks.append
    apostrophes: list[int] = []  # tokens "'" / "’"
    for m in TOKEN_RE.finditer(story):
        text = m.group()
        first = text[0]
        word = first.isalnum()
        lower = text.lower()
        base, poss = lower, False
        if word:
            if (
                lower[-2:] in ("'s", "’s")
                and lower[:-2] not in PRONOUNS
                and lower[:-2] not in NOT_POSSESSORS
            ):
                base, poss = lower[:-2], True
        elif text == "'" or text == "’":
            apostrophes.append(len(toks))
        start, end = m.span()
        append(Tok(len(toks), text, start, end, word, lower, base, poss, word and first.isupper()))
    # "James’ guidance": a trailing apostrophe after a word ending in s
    for k in apostrophes:
        if not k:
            continue
        a, b = toks[k - 1], toks[k]
        if (
            a.word
            and a.lower.endswith("s")
            and b.end < len(story)
            and b.start == a.end
            and story[b.end : b.end + 1].isspace()
        ):
            a.poss = True
    return toks


QUOTE_CHAR_RE = re.compile("[\"“«”»‘'’]")


def mark_quotes(story: str, toks: list[Tok]) -> None:
    """Mark tokens inside quotation marks (dialogue). A story wrapped in one pair of
    quotes as a whole is narration, not dialogue."""
    begin = next((t.start for t in toks if not t.skip), len(story))
    body = story[begin:].strip()
    marks = sum(body.count(q) for q in '"“”')
    if len(body) > 2 and body[0] in '"“' and body[-1] in '"”' and marks == 2:
        return  # the whole story is one quotation: narration
    # A character is inside when a quote is open there; the quote characters that open
    # one are not. Only quote characters change the state: walk those, and mark the
    # stretches between them.
    n = len(story)
    inside = bytearray(n)
    state = None  # the quote character that opened
    run = -1  # where the current stretch of inside characters began (-1: none)
    for m in QUOTE_CHAR_RE.finditer(story):
        pos = m.start()
        ch = story[pos]
        prev = story[pos - 1] if pos else " "
        nxt = story[pos + 1] if pos + 1 < n else " "
        opened = False
        if ch == '"':
            if state == '"':
                state = None
            elif state is None:
                state = '"'
                opened = True
        elif ch in "“«":
            state = "“"
            opened = True
        elif ch in "”»" and state == "“":
            state = None
        elif ch in "‘'" and state is None and not prev.isalnum() and nxt.isalpha():
            state = "'"
            opened = True
        elif ch in "’'" and state == "'" and not nxt.isalnum():
            state = None
        if opened or state is None:  # this character is not inside
            if run >= 0:
                inside[run:pos] = b"\x01" * (pos - run)
            run = pos + 1 if state is not None else -1
        elif run < 0:
            run = pos
    if run >= 0:
        inside[run:n] = b"\x01" * (n - run)
    for t in toks:
        t.quoted = inside[t.start] == 1


def mark_preamble(story: str, toks: list[Tok]) -> None:
    """Skip lines that are not story: "Here is a 97 word story:", an echoed prompt,
    a markdown title, "Example:"/"Your turn!"."""
    pos = 0
    for line in story.split("\n"):
        stripped = line.strip()
        low = stripped.lower()
        is_preamble = bool(stripped) and (
            (low.startswith(("here is", "here's")) and low.endswith(":"))
            or low.startswith("write a story")
            or (stripped.startswith(("**", "#")) and len(stripped.split()) <= 8)
            or low in ("example:", "your turn!", "story:")
            or low.startswith("title:")
        )
        if is_preamble:
            for t in toks:
                if pos <= t.start < pos + len(line):
                    t.skip = True
        pos += len(line) + 1


def split_sentences(story: str, toks: list[Tok]) -> None:
    sent = 0
    at_start = True
    n = len(toks)
    # the tokens a line break follows (no token holds one: it lies between two tokens)
    breaks: set[int] = set()
    newline = story.find("\n")
    if newline >= 0 and n:
        starts = [t.start for t in toks]
        while newline >= 0:
            k = bisect_right(starts, newline) - 1
            if 0 <= k < n - 1:
                breaks.add(k)
            newline = story.find("\n", newline + 1)
    for k, t in enumerate(toks):
        t.sent = sent
        if t.word:
            prev = toks[k - 1] if k else None
            if (
                at_start
                or (prev is not None and prev.text in "\"“‘'(:—–-" and not t.quoted)
                or (prev is not None and prev.text in '"“‘' and t.quoted)
            ):
                t.initial = True
            at_start = False
        if k in breaks:
            sent += 1
            at_start = True
            continue
        if t.text in ".!?…":
            prev = toks[k - 1] if k else None
            if t.text == "." and prev is not None and prev.lower in ABBREVIATIONS:
                continue
            # the next word decides: a lower-case word continues ("Yes?" he asked)
            nxt = next((u for u in itertools.islice(toks, k + 1, None) if u.word), None)
            if nxt is None or nxt.text[:1].isupper() or nxt.text[:1].isdigit():
                # closing quotes stay in this sentence
                j = k + 1
                while j < len(toks) and toks[j].text in "\"”’'»)":
                    toks[j].sent = sent
                    j += 1
                sent += 1
                at_start = True
