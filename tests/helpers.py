"""Small helpers shared by the tests."""

from __future__ import annotations

import csv


def read_csv(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def first_metadata(probe) -> dict:
    """What a probe's labeller sees for the first attempt of its first item (its first
    prompt's metadata merged over the item's); {} for a probe whose items come from the
    database."""
    from gbdesk.contract.running import attempt_item
    from gbdesk.support.errors import UserError

    try:
        item = probe.items(probe.resolve_params())[0]
    except UserError:
        return {}
    row = {"metadata": item.metadata, "prompts": item.prompts_json()}
    return attempt_item(row, 0, 1)["metadata"]
