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
