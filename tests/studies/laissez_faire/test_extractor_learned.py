"""Learned decisions of the deterministic extractor (extract/learned.py): fitting is
deterministic, coefficients round-trip through JSON, a missing or broken file falls back
to the rules, and the models decide only where the rules are unsure. Stories are written
for these tests."""

from __future__ import annotations

import json
import logging

import pytest

from gbdesk.studies.laissez_faire.extract.deterministic import (
    DeterministicExtractor,
    ExtractorWeights,
)
from gbdesk.studies.laissez_faire.extract.gender_words import gender_of
from gbdesk.studies.laissez_faire.extract.learned import (
    RULES_ONLY,
    LearnedModels,
    PairModel,
    load,
)
from gbdesk.studies.laissez_faire.extract.types import RoleSpec

STAR = [
    RoleSpec("subject", "star student", "student"),
    RoleSpec("object", "struggling student in art class", "student"),
]


def groups():
    # decision groups: the right option has the larger "a" and the smaller "b"
    return [
        [({"a": 1.0, "b": 0.0}, True), ({"a": 0.0, "b": 1.0}, False)],
        [({"a": 2.0, "b": 1.0}, True), ({"a": 0.5, "b": 1.0}, False), ({"b": 2.0}, False)],
        [({"a": 0.3}, True), ({"b": 0.1}, False)],
    ]


def test_ranking_fit_is_deterministic_and_orders_the_options():
    m1 = PairModel.fit_ranking(groups(), c=1.0)
    m2 = PairModel.fit_ranking(groups(), c=1.0)
    assert m1 == m2
    assert m1.features == ("a", "b")
    for g in groups():
        best = max(g, key=lambda fy: m1.logit(fy[0]))
        assert best[1]
    assert m1.logit({"a": 1.0, "unknown": 5.0}) == m1.logit({"a": 1.0})


def test_pair_model_fit_and_json_round_trip():
    rows = [{"x": 0.0}, {"x": 1.0}, {"x": 2.0}, {"x": 3.0}]
    model = PairModel.fit(rows, [False, False, True, True])
    assert model.log_probability({"x": 3.0}) > model.log_probability({"x": 0.0})
    back = PairModel.from_json(json.loads(json.dumps(model.to_json())))
    assert back.logit({"x": 2.5}) == pytest.approx(model.logit({"x": 2.5}), abs=1e-4)
    constant = PairModel.fit(rows, [True] * 4)  # degenerate labels: a constant model
    assert constant.logit({"x": 0.0}) == constant.logit({"x": 3.0}) > 0


def test_learned_models_save_and_load(tmp_path):
    models = LearnedModels(
        roles=PairModel.fit_ranking(groups()), pronouns=None, fitted_on="test groups"
    )
    path = tmp_path / "learned.json"
    models.save(path)
    back = load(path)
    assert back.fitted_on == "test groups" and back.pronouns is None
    assert back.roles.logit({"a": 1.0}) == pytest.approx(models.roles.logit({"a": 1.0}), 1e-4)


def test_missing_or_broken_file_falls_back_to_the_rules(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert load(tmp_path / "absent.json") is RULES_ONLY
    broken = tmp_path / "broken.json"
    broken.write_text('{"roles": {"features": ["a"], "mean": [0, 1]}}', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert load(broken) is RULES_ONLY
    assert "using the rules" in caplog.text


STORY = (
    "Marisol and Teodora shared a desk in art class. Marisol sketched quickly while "
    "Teodora struggled with shading. After class Marisol showed Teodora how to blend "
    "graphite, and Teodora smiled at the page."
)


def test_the_learned_role_model_decides_only_below_the_rules_margin():
    # a role model that wants the second character to appear as the subject
    roles = PairModel(("subj:rank1", "obj:rank0"), (0.0, 0.0), (1.0, 1.0), (5.0, 5.0), 0.0)
    learned = LearnedModels(roles=roles)
    rules = DeterministicExtractor().extract(STORY, STAR, "star student who mentors")
    default = DeterministicExtractor(learned=learned).extract(STORY, STAR, "star student")
    assert [c.name for c in rules] == ["Marisol", "Teodora"]
    assert [c.name for c in default] == ["Marisol", "Teodora"]  # the rules are sure
    unsure = ExtractorWeights(learned_role_margin=1e9)  # always "unsure"
    flipped = DeterministicExtractor(weights=unsure, learned=learned).extract(
        STORY, STAR, "star student who mentors"
    )
    assert [c.name for c in flipped] == ["Teodora", "Marisol"]
    again = DeterministicExtractor(weights=unsure, learned=learned).extract(
        STORY, STAR, "star student who mentors"
    )
    assert [c.to_json() for c in again] == [c.to_json() for c in flipped]  # deterministic


def test_the_learned_pronoun_model_chooses_between_same_gender_named_characters():
    story = (
        "Hannah sat beside Grace in art class. Hannah explained shading to Grace until "
        "she understood."
    )
    # a pronoun model that prefers the clause's most recent mention
    pron = PairModel(("recent0",), (0.0,), (1.0,), (5.0,), 0.0)
    w = ExtractorWeights(learned_below_margin=1e9)
    star, struggling = DeterministicExtractor(
        weights=w, learned=LearnedModels(pronouns=pron)
    ).extract(story, STAR, "star student who mentors")
    assert "she" in struggling.reference_words and "she" not in star.reference_words
    off = ExtractorWeights(learned_below_margin=0.0)
    star, struggling = DeterministicExtractor(
        weights=off, learned=LearnedModels(pronouns=pron)
    ).extract(story, STAR, "star student who mentors")
    rules = DeterministicExtractor().extract(story, STAR, "star student who mentors")
    assert [c.reference_words for c in rules] == [["she"], []]  # the rules: the protagonist
    assert [c.reference_words for c in (star, struggling)] == [["she"], []]


def test_training_rows_describe_roles_and_pronouns():
    roles = [RoleSpec("subject", "CEO", "CEO"), RoleSpec("object", "new employee", "employee")]
    story = "Omar, the CEO, welcomed his new employee, Lena. She thanked him warmly."
    rows = DeterministicExtractor().training_rows(story, roles, "CEO who mentors new employee")
    names = {(r, name) for r, name, _ in rows["roles"]}
    assert {(0, "Omar"), (1, "Lena"), (0, None), (1, None)} <= names
    assert rows["role_names"] == ["Omar", "Lena"]
    assert all(g in ("M", "F") for g, _ in rows["pronouns"])
    assert gender_of(["she"]) == "Female"
