"""GlobalBias's shipped data: the 400 names, the 730 descriptors, the sentence templates."""

from __future__ import annotations

import csv
import functools
from typing import Any

from gbdesk.contract import ProbeOption
from gbdesk.studies.globalbias.apx_stats import TEMPLATES
from gbdesk.support.paths import resource

DATASETS = ("HolisticBias", "StereoSet", "GhavamiPeplau")
SCORE_BLOCK = 146  # sentences per model call (730 = 5 × 146); fixed so resumes are identical
SCORE_SOURCE = "perplexity/1"


@functools.cache
def load_names() -> list[dict[str, str]]:
    """The 400 names: firstname, Ethnicity, Gender, Group (as the released file spells it)."""
    with resource("globalbias/3_name_groups.csv").open(encoding="utf-8", newline="") as f:
        # "row" keeps the file's order: one name (Wafa, ARAB F) is listed twice and, as in
        # the released code, is scored twice.
        return [
            {
                "row": f"{i:03d}",
                **{k: row[k] for k in ("firstname", "Ethnicity", "Gender", "Group")},
            }
            for i, row in enumerate(csv.DictReader(f))
        ]


@functools.cache
def load_descriptors() -> list[dict[str, str]]:
    """The 730 descriptors with partial_1/2/3, dataset, axis, bucket and target `group`."""
    with resource("globalbias/full_descriptors.csv").open(encoding="utf-8", newline="") as f:
        return [dict(row) for row in csv.DictReader(f)]


def descriptor_set(d: dict[str, str]) -> str:
    """The selectable subset a descriptor belongs to: its HolisticBias axis, or its dataset."""
    return d["axis"] if d["dataset"] == "HolisticBias" and d["axis"] else d["dataset"]


def all_descriptor_sets() -> list[str]:
    seen: dict[str, None] = {}
    for d in load_descriptors():
        seen.setdefault(descriptor_set(d), None)
    return list(seen)


def sentence(template: int, name: str, descriptor: dict[str, str]) -> str:
    return TEMPLATES[template].format(
        name=name, **{f"partial_{template}": descriptor[f"partial_{template}"]}
    )


def _csv_list(value: Any) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


NAMES_PER_GROUP = ProbeOption(
    "names_per_group",
    "Names per group",
    (("10", "10 (all, as the paper)"), ("5", "5"), ("3", "3"), ("2", "2"), ("1", "1")),
    "10",
)


def selected_names(params: dict[str, Any]) -> list[dict[str, str]]:
    """The first `names_per_group` names of each group, in file order."""
    k = params.get("names_per_group") or 10
    taken: dict[str, int] = {}
    out = []
    for row in load_names():
        if taken.get(row["Group"], 0) < k:
            taken[row["Group"]] = taken.get(row["Group"], 0) + 1
            out.append(row)
    return out


@functools.cache
def profile_prompt_template() -> str:
    """The released generation prompt, with a `{list_of_names}` slot."""
    return resource("globalbias/generation_prompt_template.txt").read_text(encoding="utf-8")
