"""Record the Laissez-Faire metrics of the four paths (plain, flat, resampled, PPI) on the
tests' seeded runs into tests/fixtures/lf_metric_snapshot.json (numbers and metric names
only; see tests/studies/laissez_faire/lf_metric_cases.py). Run once before a change to the
metric code, so tests/studies/laissez_faire/test_laissez_faire_metric_snapshot.py can
compare the new code's numbers with them.

    python scripts/lf_metric_snapshot.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.studies.laissez_faire.lf_metric_cases import snapshot

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests/fixtures/lf_metric_snapshot.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = snapshot(Path(tmp))
    args.out.write_text(json.dumps(data, separators=(",", ":"), allow_nan=False) + "\n")
    n = sum(len(v) for case in data.values() for v in case.values())
    print(f"{args.out}: {len(data)} cases, {n} metric series")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
