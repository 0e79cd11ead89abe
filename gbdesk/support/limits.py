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
#: `gbdesk.contract.running`), and its label's data says so (`LABELLED_CHARS`).
#:
#: Why a bound: labelling time grows with the text, fastest for plain substring rules and
#: slowest for labellers that tokenize with nltk (sentence splitting, then ~30 regular
#: expressions per sentence), so texts of many short sentences cost the most. nltk also
#: stopped any pattern after 5 s of wall clock, so a 5 MB answer failed on import on one
#: machine and not on another, and a 10 MB one stopped a run at the same attempt on every
#: resume; with this bound that limit is lifted for nltk's own patterns (see the tokenizer
#: of the study that uses them), and a label depends on the text alone.
#:
#: Why 50,000: measured with benchmarks/label_sizes.py (every probe, seven text shapes, a
#: 300-character answer timed beside each as the baseline) on a shared 2-core machine. The
#: slowest labeller took 0.15 s on 10,000 characters, 0.8 s on 50,000, 2.1 s on 100,000
#: with a load average near 2 (on "a. a. a. …"); with a load average of 10 to 19 and the
#: worst shapes ("1.5. 1.5. …", "é. ß? İ! …") 1.5 s, 7.5 s, 15 s and 270 s on 1,000,000 —
#: 100 to 500 times its 300-character answer at 50,000. 50,000 characters are about 12,000
#: tokens, 40 times the 300-token answers most probes ask for, so only runaway or hostile
#: answers are cut, and those cost seconds rather than minutes.
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
