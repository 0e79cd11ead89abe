"""The uniformly random set of units to label by hand, reproducible from a seed."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Hashable, Iterable

logger = logging.getLogger(__name__)


def review_sample(ids: Iterable[Hashable], size: int, seed: int) -> list:
    """A uniformly random sample of `size` ids to review by hand, reproducible from `seed`.

    Each id is ranked by BLAKE2b(seed, str(id)) and the `size` lowest are returned, lowest
    first. Hence the sample
    * does not depend on the order of `ids` (nor on numpy's version: the hash is fixed
      forever, unlike numpy generators' streams);
    * is nested: the first k of a sample of size m > k are the sample of size k (a reviewer
      who stops early, or a later enlargement, keeps a uniform random sample);
    * keeps an id's rank when other ids are added or removed.
    Ids are compared through `str(id)` (1 and "1" are the same unit; duplicates raise
    ValueError). `size` larger than the number of ids returns them all. Choose the seed
    before looking at the sample: trying seeds until one "looks right" breaks the
    randomness every interval relies on.
    """
    if size < 0:
        raise ValueError(f"sample size must be ≥ 0, not {size}")
    items = list(ids)
    keys = [str(i) for i in items]
    if len(set(keys)) != len(keys):
        raise ValueError("ids contain duplicates")
    if size > len(items):
        logger.warning("review sample of %d asked from %d ids: all of them", size, len(items))
    prefix = f"gbdesk-review-sample\x00{int(seed)}\x00".encode()

    def rank(k: str) -> bytes:
        return hashlib.blake2b(prefix + k.encode("utf-8"), digest_size=16).digest()

    order = sorted(range(len(items)), key=lambda x: (rank(keys[x]), keys[x]))
    return [items[x] for x in order[:size]]
