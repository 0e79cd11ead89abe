"""Intersectional groups: the paper's six attributes, their values, and combinations (no Qt).

§2.1 of Ma et al. (2023) names six attributes with 14 values — race (White, Black, Asian),
age (young, old), religion (non-religious, Christian, Muslim), gender (men, women),
political leaning (conservative, progressive) and disability (with, without) — and "all
possible combinations" of them. Table 1 also lists non-binary groups (e.g. White;non-binary),
so gender here has a third value, `non-binary` (15 values in all); choose groups without it
to stay within §2.1's list.

A group is one value for each of some attributes, written as Table 1 writes it: values
joined by ";" in the order race, gender, religion, political, disability, age
("Black;women;Muslim;old"). `parse_group` also reads other orders, "+" as separator (the
paper's 'Black+Women') and any letter case.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Mapping

from gbdesk.support.errors import UserError

#: attribute → its values (the paper's §2.1, plus non-binary from Table 1)
ATTRIBUTE_VALUES: dict[str, tuple[str, ...]] = {
    "race": ("White", "Black", "Asian"),
    "gender": ("men", "women", "non-binary"),
    "religion": ("non-religious", "Christian", "Muslim"),
    "political": ("conservative", "progressive"),
    "disability": ("with disability", "without disability"),
    "age": ("young", "old"),
}
#: the order Table 1 writes a group's values in
CANONICAL_ORDER = tuple(ATTRIBUTE_VALUES)
#: values §2.1 does not list (Table 1 does)
NOT_IN_SECTION_2_1 = frozenset({"non-binary"})

_VALUE_ATTRIBUTE = {v.casefold(): (a, v) for a, vs in ATTRIBUTE_VALUES.items() for v in vs}


def group_name(attributes: Mapping[str, str | None]) -> str:
    """ "Black;women;Muslim" from {"race": "Black", "gender": "women", ...} (Table 1's order)."""
    return ";".join(attributes[a] for a in CANONICAL_ORDER if attributes.get(a))  # type: ignore[misc]


def parse_group(text: str) -> dict[str, str]:
    """The attributes of a group written as values joined by ";" or "+" (any order and
    case): {"race": "Black", "gender": "women"}. Raises `UserError` for an unknown value,
    two values of one attribute, or fewer than one value."""
    parts = [p.strip() for p in re.split(r"[;+]", str(text)) if p.strip()]
    if not parts:
        raise UserError(f"{text!r} names no group (e.g. Black;women;young)")
    out: dict[str, str] = {}
    for part in parts:
        found = _VALUE_ATTRIBUTE.get(re.sub(r"\s+", " ", part).casefold())
        if found is None:
            known = ", ".join(v for vs in ATTRIBUTE_VALUES.values() for v in vs)
            raise UserError(f"{part!r} in {text!r} is no attribute value; values: {known}")
        attribute, value = found
        if attribute in out and out[attribute] != value:
            raise UserError(f"{text!r} gives two values of {attribute}")
        out[attribute] = value
    return out


def canonical(text: str) -> str:
    """A group's name in Table 1's form ("women;Black" → "Black;women")."""
    return group_name(parse_group(text))


def combinations(max_attributes: int, min_attributes: int = 2) -> list[str]:
    """Every group combining `min_attributes` to `max_attributes` attributes (one value
    each), in Table 1's order of attributes; 2 attributes give 93 groups."""
    if not 1 <= min_attributes <= max_attributes <= len(ATTRIBUTE_VALUES):
        raise UserError(
            f"the number of attributes must be from {min_attributes} to {len(ATTRIBUTE_VALUES)}"
        )
    out = []
    for k in range(min_attributes, max_attributes + 1):
        for attrs in itertools.combinations(CANONICAL_ORDER, k):
            for values in itertools.product(*(ATTRIBUTE_VALUES[a] for a in attrs)):
                out.append(group_name(dict(zip(attrs, values, strict=True))))
    return out


def broader_groups(group: str) -> list[str]:
    """The groups one gets by removing one or more attributes (not all): for
    "Black;women;old", Black;women, Black;old, women;old, Black, women and old — largest
    first."""
    attrs = parse_group(group)
    keys = [a for a in CANONICAL_ORDER if a in attrs]
    out = []
    for k in range(len(keys) - 1, 0, -1):
        for chosen in itertools.combinations(keys, k):
            out.append(group_name({a: attrs[a] for a in chosen}))
    return out


def people_phrase(group: Mapping[str, str | None], count: int = 1) -> str:
    """'old White man' / 'old White men' (count ≠ 1): the group's attributes as a noun
    phrase (the number itself is not included)."""
    words = [group.get("age"), group.get("political"), group.get("religion"), group.get("race")]
    gender = group.get("gender") or ""
    singular = {"men": "man", "women": "woman", "non-binary": "non-binary person"}
    plural = {"men": "men", "women": "women", "non-binary": "non-binary people"}
    noun = (singular if count == 1 else plural).get(gender) or (
        "person" if count == 1 else "people"
    )
    phrase = " ".join(w for w in words if w) + (" " if any(words) else "") + noun
    if group.get("disability"):
        phrase += f" {group['disability']}"
    return phrase


def plural_phrase(group: str) -> str:
    """ "old White men" for "White;men;old"."""
    return people_phrase(parse_group(group), 2)


def one_step_broader(group: str) -> list[str]:
    """The groups with exactly one attribute removed (the examples a prompt gives)."""
    attrs = parse_group(group)
    keys = [a for a in CANONICAL_ORDER if a in attrs]
    if len(keys) < 2:
        return []
    return [group_name({a: attrs[a] for a in keys if a != drop}) for drop in keys]


def or_list(phrases: Iterable[str]) -> str:
    items = list(phrases)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


@functools.cache
def table1_groups() -> tuple[str, ...]:
    """The 106 groups of the paper's Table 1, in its order."""
    from gbdesk.studies.intersectional.data import load_groups

    return tuple(g["group"] for g in load_groups())


def resolve_groups(spec: str | Iterable[str] | None) -> list[str]:
    """Groups from a parameter: None or "table1" (the 106 of Table 1), "combinations:N"
    (every group of 2 to N attributes), or a list of groups (a list, or a text with groups
    separated by "," or "|"). Duplicates are dropped; names become Table 1's form."""
    if spec is None or (isinstance(spec, str) and spec.strip().casefold() in ("", "table1")):
        return list(table1_groups())
    if isinstance(spec, str):
        text = spec.strip()
        match = re.fullmatch(r"(?:combinations|all)\s*:\s*(\d)", text, re.IGNORECASE)
        if match:
            return combinations(int(match.group(1)))
        names = [p for p in re.split(r"[,|\n]", text) if p.strip()]
    else:
        names = [str(p) for p in spec]
    out: list[str] = []
    for name in names:
        group = canonical(name)
        if len(parse_group(group)) < 2:
            raise UserError(
                f"{name!r} has one attribute; an intersectional group combines two or more"
            )
        if group not in out:
            out.append(group)
    if not out:
        raise UserError("no group given (e.g. White;women, or table1 for the 106 of Table 1)")
    return out
