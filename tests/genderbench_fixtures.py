"""Read GenderBench 1.1.0's reference fixtures (tests/fixtures/genderbench_1_1/).

Written by scripts/genderbench_reference.py from the released package itself; the README
beside them says what each file holds. Plain functions for the probes' tests:

    from tests import genderbench_fixtures as gbf
    fx = gbf.items("bbq")                       # counts, digests, some full items
    assert [gbf.prompt_digest(p) for p in my_prompts] == fx["prompt_digests"]
    rows = gbf.answers("bbq")                   # one dict per attempt
    case = gbf.case("bbq")                      # subset, point metrics, intervals, marks
    assert not gbf.mismatches(my_metrics, gbf.point_metrics(case))
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "genderbench_1_1"


def probes() -> list[str]:
    """gbdesk ids of the fourteen probes of 1.1.0's DefaultHarness, in its order."""
    return [p.name.removesuffix(".json") for p in sorted((FIXTURES / "metrics").glob("*.json"))]


@cache
def items(probe: str) -> dict[str, Any]:
    """`item_count`, `prompts_per_item`, `total_prompts`, `num_repetitions`,
    `total_attempts`, `parameters`, `prompt_digests`, `item_digests`, `full_items`
    ({index as str: {"metadata", "prompts": [{"text", "metadata"}]}})."""
    with gzip.open(FIXTURES / "items" / f"{probe}.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)


def full_items(probe: str) -> dict[int, dict[str, Any]]:
    """The items stored in full, by their index in the harness order."""
    return {int(k): v for k, v in items(probe)["full_items"].items()}


@cache
def metrics(probe: str) -> dict[str, Any]:
    """`mark_definitions`, `bootstrap` and `cases` ({name: case})."""
    return json.loads((FIXTURES / "metrics" / f"{probe}.json").read_text(encoding="utf-8"))


def cases(probe: str) -> list[str]:
    """The case names: "main" and the probe's degenerate cases."""
    return list(metrics(probe)["cases"])


def case(probe: str, name: str = "main") -> dict[str, Any]:
    """`rule`, `items` (harness indices), counts, `metrics`, `intervals`, `marks`,
    `marks_point`, `answers` (file name)."""
    return metrics(probe)["cases"][name]


def answers(probe: str, name: str = "main") -> list[dict[str, Any]]:
    """One dict per attempt, in 1.1.0's attempt order: `item` (harness index), `prompt`
    (index in the item), `repetition`, `answer`, `evaluation`, `evaluation_undetected`."""
    path = FIXTURES / case(probe, name)["answers"]
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def canonical(value: Any) -> str:
    """The JSON text a digest is taken of."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def digest(value: Any) -> str:
    """First 16 hex digits of sha256 over canonical(value) in UTF-8."""
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()[:16]


def prompt_digest(texts: list[str]) -> str:
    """An item's `prompt_digests` entry: the digest of its prompt texts, in order."""
    return digest(list(texts))


def item_digest(metadata: Any, prompts: list[tuple[str, Any]]) -> str:
    """An item's `item_digests` entry, from 1.1.0-style metadata (JSON-plain: enums by name,
    tuples as lists) and its (text, prompt metadata) pairs."""
    return digest(
        {"metadata": metadata, "prompts": [{"text": t, "metadata": m} for t, m in prompts]}
    )


def as_float(value: Any) -> float:
    """A fixture number: null is NaN, "inf"/"-inf" are infinities."""
    if value is None:
        return math.nan
    if value in ("inf", "-inf"):
        return float(value)
    return float(value)


def point_metrics(c: dict[str, Any]) -> dict[str, float]:
    """A case's point metrics as floats (NaN for null)."""
    return {k: as_float(v) for k, v in c["metrics"].items()}


def intervals(c: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """A case's bootstrap intervals as (low, high) floats (NaN for null)."""
    return {k: (as_float(lo), as_float(hi)) for k, (lo, hi) in c["intervals"].items()}


def marks(c: dict[str, Any], point: bool = False) -> dict[str, int | None]:
    """Mark values per metric (0-3 = A-D; None where 1.1.0 gives NaN), from the intervals
    (as the harness reports them) or, with point=True, from the point values."""
    return {k: v["mark_value"] for k, v in c["marks_point" if point else "marks"].items()}


def same(a: float, b: float, tol: float = 1e-9) -> bool:
    """Equal within tol, NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= tol


def mismatches(got: dict[str, Any], want: dict[str, Any], tol: float = 1e-9) -> list[str]:
    """Lines describing every difference between two metric dicts (floats or (low, high)
    pairs): missing or extra names and values further apart than tol. Empty when equal."""
    out = [f"missing {k}" for k in want if k not in got]
    out += [f"extra {k}" for k in got if k not in want]
    for k in want.keys() & got.keys():
        w, g = want[k], got[k]
        pairs = zip(w, g, strict=True) if isinstance(w, (tuple, list)) else [(w, g)]
        if not all(same(float(b), float(a), tol) for a, b in pairs):
            out.append(f"{k}: got {g!r}, want {w!r}")
    return sorted(out)
