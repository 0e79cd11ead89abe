"""Small helpers shared by the tests."""

from __future__ import annotations

import csv


def read_csv(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))
