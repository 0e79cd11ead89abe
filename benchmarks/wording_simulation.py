"""Does the wording report find the wording effect that is there, and none where there is
none? Simulated wording families of known truth (issue 32).

Each world is a stand-in model (`tests/wording_fakes.py`) that agrees with the direct
probe's stereotypes with a known probability under each wording — the same under every
wording (no effect), or higher when asked for a sentence (wording 3) — and answers in each
wording's format; 80 % of its answers follow a number the item has under every wording
(the item noise the wordings share), the rest a number of their own. A family is five real
runs (planned, executed and stored by gbdesk) of the same items under wordings 0–4, then
`wording_report` (400 resamples) on their fail_rate.

Printed per world: the rate of `stable == false` (the interval rule says the value depends
on the wording), the rate of p < 0.05 (the bootstrap test of no wording effect), each with
its 95 % Wilson interval, the mean p, the mean wording's share of the variance and the
mean range across wordings (against the true range).

    python benchmarks/wording_simulation.py                     # 200 families per world
    python benchmarks/wording_simulation.py --families 40 --workers 1
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gbdesk.store import Store  # noqa: E402
from tests.fakes import fake_model  # noqa: E402
from tests.wording_fakes import WordingWorld, run_family  # noqa: E402

#: name → world (P(agree) under wording 3 and under the others)
WORLDS: dict[str, WordingWorld] = {
    "none (0.30 everywhere)": WordingWorld({}, base=0.3),
    "none (0.15 everywhere, a band edge)": WordingWorld({}, base=0.15),
    "small (0.30; 0.40 for w3)": WordingWorld({3: 0.4}, base=0.3),
    "medium (0.30; 0.50 for w3)": WordingWorld({3: 0.5}, base=0.3),
    "large (0.10; 0.60 for w3)": WordingWorld({3: 0.6}, base=0.1),
}
#: families per store (one store per chunk keeps the family look-up short)
CHUNK = 20

Row = tuple[bool, bool, float, float, float]  # unstable, p < .05, p, share, range


def simulate(name: str, seeds: list[int], items: int) -> list[Row]:
    """The families of `seeds` in world `name`: one row each."""
    world = WORLDS[name]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "families.sqlite")
        try:
            model = fake_model(store, Path(folder))
            for seed in seeds:
                spread = run_family(store, model, world, items=items, seed=seed).spreads[
                    "fail_rate"
                ]
                p = math.nan if spread.p_value is None else spread.p_value
                share = math.nan if spread.share is None else spread.share
                rows.append((spread.stable is False, p < 0.05, p, share, spread.range or math.nan))
        finally:
            store.close()
    return rows


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of k successes in n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k / n:.1%} ({low:.1%}–{high:.1%})"


def mean(values: list[float]) -> float:
    got = [v for v in values if not math.isnan(v)]
    return sum(got) / len(got) if got else math.nan


def table(results: dict[str, list[Row]]) -> str:
    """The Markdown table of the rates per world."""
    lines = [
        "| world | families | stable = false | p < 0.05 | mean p | mean share | mean range "
        "(true) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rows in results.items():
        world = WORLDS[name]
        truth = [world.rate(w) for w in range(5)]
        n = len(rows)
        lines.append(
            f"| {name} | {n} | {rate(sum(r[0] for r in rows), n)} | "
            f"{rate(sum(r[1] for r in rows), n)} | {mean([r[2] for r in rows]):.2f} | "
            f"{mean([r[3] for r in rows]):.2f} | {mean([r[4] for r in rows]):.3f} "
            f"({max(truth) - min(truth):.2f}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=int, default=200, help="families per world")
    parser.add_argument("--items", type=int, default=100, help="items per family")
    parser.add_argument("--workers", type=int, default=2, help="processes")
    args = parser.parse_args(argv)
    started = time.monotonic()
    jobs = [
        (name, list(range(start, min(start + CHUNK, args.families))))
        for name in WORLDS
        for start in range(0, args.families, CHUNK)
    ]
    results: dict[str, list[Row]] = {name: [] for name in WORLDS}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [(name, pool.submit(simulate, name, seeds, args.items)) for name, seeds in jobs]
        for name, future in futures:
            results[name].extend(future.result())
    print(
        f"{args.families} families per world, {args.items} items, wordings 0–4, "
        f"fail_rate; {time.monotonic() - started:.0f} s with {args.workers} workers\n"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
