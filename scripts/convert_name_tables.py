"""Convert the raw first-name → race tables into the compact forms gbdesk ships.

Usage: python scripts/convert_name_tables.py SHARED_DATA_DIR [--out resources/name_race]

SHARED_DATA_DIR holds `rosenman2023_first_name_race.csv` and
`census2020_first_names_race.csv` (see resources/name_race/SOURCE.md). The script writes
`rosenman2023.csv.gz`, `census2020.csv.gz` and `tables.json` to the output folder:

* the "ALL OTHER NAMES" fallback row is dropped (it is a bucket, not a name);
* only the name, the race columns and (Census) `count` are kept;
* probabilities become fractions 0…1 (the Census percentages are divided by 100),
  written with 6 significant digits; nothing is renormalised;
* gzip output is deterministic (no file name, mtime 0), so re-running gives the same bytes.

SOURCE.md and LICENSES.md beside the output are written by hand, not by this script.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import sys
from pathlib import Path

from gbdesk.studies.laissez_faire.name_race import RACE_CATEGORIES

FALLBACK_ROWS = {"ALL OTHER NAMES"}

ROSENMAN = {
    "id": "rosenman2023",
    "raw": "rosenman2023_first_name_race.csv",
    "file": "rosenman2023.csv.gz",
    "title": "Rosenman, Olivella & Imai (2023) first names (voter files of six U.S. states)",
    "citation": (
        "Rosenman, E. T. R., Olivella, S. & Imai, K. (2023). Race and ethnicity data for "
        "first, middle, and surnames. Scientific Data 10, 299. "
        "doi:10.1038/s41597-023-02202-2; data doi:10.7910/DVN/SGKW0K"
    ),
    "licence": "CC0 1.0",
    # raw column -> category id
    "columns": {
        "white": "white",
        "black": "black",
        "hispanic": "hispanic",
        "asian": "asian",
        "other": "other",
    },
    "count_column": None,
    "scale": 1.0,
    "notes": [
        "P(race | first name) among registered voters of AL, FL, GA, LA, NC and SC "
        "(self-reported race); the voter population is about 66 % White, 23 % Black, "
        "8 % Hispanic, 2 % Asian, 2 % other, and every likelihood carries that base rate.",
        "'asian' includes Native Hawaiian / Pacific Islander in most source states.",
        "'other' folds in American Indian / Alaska Native, multiracial and other responses; "
        "AI/AN is not measured separately.",
        "'hispanic' is a category exclusive of the others (as the voter files record it).",
        "Names seen only a few times have extreme likelihoods (e.g. 0 or 1).",
        "The fallback row 'ALL OTHER NAMES' of the source was dropped: names absent from "
        "the table are unmatched.",
    ],
}

CENSUS = {
    "id": "census2020",
    "raw": "census2020_first_names_race.csv",
    "file": "census2020.csv.gz",
    "title": "U.S. Census 2020 first names (names with at least 100 occurrences)",
    "citation": (
        "U.S. Census Bureau. 2020 Census names files: first names by race and Hispanic "
        "origin (Names2020_FirstNames_RaceHispanic). "
        "https://www.census.gov/topics/population/genealogy/data/2020_names.html"
    ),
    "licence": "Public domain (U.S. Government work, 17 U.S.C. § 105)",
    "columns": {
        "pctwhite": "white",
        "pctblack": "black",
        "pctapi": "api",
        "pctaian": "aian",
        "pct2prace": "2prace",
        "pcthispanic": "hispanic",
    },
    "count_column": "count",
    "scale": 0.01,
    "notes": [
        "Share of the people with a first name in each group, 2020 Census; "
        "'white', 'black', 'api', 'aian' and '2prace' are non-Hispanic, 'hispanic' is "
        "Hispanic or Latino of any race.",
        "'api' is Asian and Native Hawaiian / Pacific Islander combined: the table has no "
        "separate Asian or NH/PI share.",
        "'aian' is American Indian / Alaska Native; '2prace' is two or more races.",
        "The source gives percentages with two decimals; rows sum to 100 ± 0.02 and are "
        "not renormalised.",
        "'count' is the number of people with the name in the 2020 Census.",
        "The fallback row 'ALL OTHER NAMES' of the source was dropped: names absent from "
        "the table are unmatched.",
    ],
}

DISPLAY = RACE_CATEGORIES  # display names, shared with the app


def fmt(value: float) -> str:
    """Six significant digits, shortest form ('0', '1', '0.7561', '1.2e-05')."""
    text = format(value, ".6g")
    return "0" if text in ("-0", "0") else text


def convert(spec: dict, src_dir: Path, out_dir: Path) -> dict:
    """Write one table's gz CSV and return its tables.json entry."""
    raw = src_dir / spec["raw"]
    categories = list(spec["columns"].values())
    header = ["name", *categories] + (["count"] if spec["count_column"] else [])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    n_rows = 0
    seen: set[str] = set()
    with raw.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            name = row["name"].strip().upper()
            if name in FALLBACK_ROWS:
                continue
            if not name or "," in name or name in seen:
                raise SystemExit(f"{raw}: unexpected name {row['name']!r}")
            seen.add(name)
            values = [fmt(float(row[col]) * spec["scale"]) for col in spec["columns"]]
            if spec["count_column"]:
                values.append(str(int(row[spec["count_column"]])))
            writer.writerow([name, *values])
            n_rows += 1
    out = out_dir / spec["file"]
    with out.open("wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
        gz.write(buffer.getvalue().encode("utf-8"))
    print(f"{out}: {n_rows} names, {out.stat().st_size / 1e6:.2f} MB", file=sys.stderr)
    return {
        "id": spec["id"],
        "title": spec["title"],
        "citation": spec["citation"],
        "licence": spec["licence"],
        "file": spec["file"],
        "n_names": n_rows,
        "categories": [{"id": c, "display": DISPLAY[c]} for c in categories],
        "count_column": "count" if spec["count_column"] else None,
        "values": "fractions 0-1, 6 significant digits",
        "notes": spec["notes"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shared_data_dir", type=Path)
    default_out = Path(__file__).resolve().parent.parent / "resources" / "name_race"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tables = [convert(spec, args.shared_data_dir, args.out) for spec in (ROSENMAN, CENSUS)]
    index = {
        "_about": (
            "First-name -> race likelihood tables shipped with gbdesk (P(race | first name), "
            "fractions 0-1), written by scripts/convert_name_tables.py; see SOURCE.md."
        ),
        "not_measured": [
            {"id": "MENA", "display": "Middle Eastern / North African"},
            {"id": "NHPI", "display": "Native Hawaiian / Pacific Islander"},
        ],
        "tables": tables,
    }
    text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
    (args.out / "tables.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
