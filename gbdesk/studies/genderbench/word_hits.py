"""Where the words an nltk-token evaluator counted stand in the answer (review highlights).

GenderBench 1.1.0's evaluators decide on `nltk.word_tokenize` tokens, which carry no
offsets. The review pane highlights spans, so `token_hits` finds each counted token in the
answer by walking the tokens in order through the (lower-cased) text: a token is looked
up from where the previous one ended, and its span mapped back to the answer as stored
(`gbdesk.support.lowered`). Tokens nltk rewrites (quotes become `` and '') are not found
and skipped; the walk then goes on from where it was. The spans are for showing only — the
label itself comes from the tokens, exactly as 1.1.0 counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gbdesk.support.lowered import Lowered

#: most spans one label keeps (a 300-token answer has far fewer counted words)
MAX_HITS = 500


def token_hits(
    text: str, tokens: Iterable[str], kind_of: Callable[[str], str | None]
) -> list[list]:
    """[start, end, kind] in `text` of every token whose `kind_of(token)` is not None,
    found in the lower-cased `text` in token order; `tokens` are the lower-cased tokens of
    `text`."""
    lowered = Lowered(text)
    hits: list[list] = []
    pos = 0
    for token in tokens:
        start = lowered.lower.find(token, pos)
        if start < 0:
            continue
        end = start + len(token)
        pos = end
        kind = kind_of(token)
        if kind is not None:
            hits.append([*lowered.span(start, end), kind])
            if len(hits) >= MAX_HITS:
                break
    return hits
