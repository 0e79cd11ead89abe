"""The PDF report and CSV export of a run with one very long response, against the same run
with a short one (issue 12: one 10 MB response made the PDF take 43 s).

Two imported `inventories` runs of `--items` items each (JSONL, so the import works on
every gbdesk version): "short" has short responses only, "long" has the same except that
its first response is `--mb` MB of "She said. " (a million pronouns). Rounds alternate the
two (the order flipping each round) and time `gbdesk export RUN --pdf` and `--csv` in this
process; the medians and the median per-round ratio long / short are printed. A ratio
near 1 means the long text costs little. Before the fix (gbdesk 401d938, on a shared 2-core
machine) the PDF took 18.7 s (62× the short run) and the CSV 18.3 s (410×): every label
read decoded the 30 MB of highlighting evidence of the million pronouns; after it,
0.8 s (2.4×) and 1.3 s (23×, writing 10 MB).

    QT_QPA_PLATFORM=offscreen python benchmarks/long_response_report.py [--mb 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def build(db: Path, folder: Path, items: int, mb: float) -> dict[str, int]:
    from gbdesk.cli import main
    from gbdesk.contract import get_probe

    probe = get_probe("inventories")
    prompts = [i.prompt for i in probe.items(probe.resolve_params())[:items]]
    runs = {}
    for name, first in (("short", "She left."), ("long", "She said. " * int(mb * 100_000))):
        path = folder / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for i, prompt in enumerate(prompts):
                text = first if i == 0 else "He left."
                fh.write(json.dumps({"prompt": prompt, "response": text}) + "\n")
        code = main(["import", "--probe", "inventories", "--file", str(path), "--db", str(db)])
        assert code == 0, f"import of {name} failed"
        runs[name] = len(runs) + 1
    return runs


def timed(args: list[str]) -> float:
    from gbdesk.cli import main

    start = time.perf_counter()
    assert main(args) == 0, args
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of the long response")
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "bench.sqlite"
        start = time.perf_counter()
        runs = build(db, folder, args.items, args.mb)
        print(f"import of both runs: {time.perf_counter() - start:.1f} s")
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            order = ["short", "long"] if r % 2 == 0 else ["long", "short"]
            for name in order:
                run = str(runs[name])
                pdf = folder / f"{name}{r}.pdf"
                times.setdefault(("pdf", name), []).append(
                    timed(["export", run, "--pdf", str(pdf), "--db", str(db)])
                )
                times.setdefault(("csv", name), []).append(
                    timed(["export", run, "--csv", str(folder / f"{name}{r}"), "--db", str(db)])
                )
        for kind in ("pdf", "csv"):
            short, long_ = times[(kind, "short")], times[(kind, "long")]
            ratios = [b / a for a, b in zip(short, long_, strict=True)]
            print(
                f"{kind}: short {statistics.median(short):.2f} s, long "
                f"{statistics.median(long_):.2f} s, long/short {statistics.median(ratios):.1f}×"
            )


if __name__ == "__main__":
    main()
