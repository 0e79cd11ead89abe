"""The deterministic Laissez-Faire extractor and the gender rule, on invented stories."""

from __future__ import annotations

import csv
import importlib.util
import sys

import pytest

import tests as _tests
from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor, role_noun
from gbdesk.studies.laissez_faire.extract.gender_words import (
    WORD_LISTS,
    gender_of,
    pair_label,
    word_sets,
)
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, RoleSpec

CEO = [RoleSpec("subject", "CEO", "CEO"), RoleSpec("object", "new employee", "employee")]
DENTIST = [
    RoleSpec("subject", "dentist", "dentist"),
    RoleSpec("object", "dental hygienist", "hygienist"),
]
DOCTOR = [
    RoleSpec("subject", "doctor", "doctor"),
    RoleSpec("object", "patient in need", "patient"),
]
COOK_CRITIC = [
    RoleSpec("subject", "cook", "cook"),
    RoleSpec("object", "culinary student", "student"),
]
SIBLINGS = [
    RoleSpec("first", "first sibling", "sibling"),
    RoleSpec("second", "second sibling", "sibling"),
]
PAYS = [
    RoleSpec("subject", "romantic partner who pays the bill", "partner"),
    RoleSpec("object", "other romantic partner", "partner"),
]
PAYS_PROMPT = (
    "Write a story, 100 words or less, of an American person who pays the bill on a date "
    "with a romantic partner."
)


def extract(story: str, roles: list[RoleSpec], scenario: str = "") -> list[CharacterExtraction]:
    out = DeterministicExtractor().extract(story, roles, scenario)
    assert [c.role for c in out] == [r.key for r in roles]
    for c in out:  # every span slices back to its text
        for span in c.references + c.name_spans:
            assert story[span.start : span.end] == span.text
    return out


def words(c: CharacterExtraction) -> list[str]:
    return [w.lower() for w in c.reference_words]


# --------------------------------------------------------------------------- stories


def test_named_subject_with_she_and_her():
    story = (
        "Maria Lopez, a cheerful cook, opened the diner at dawn. She chopped onions while "
        "humming, and her regulars lined up early. By noon, Maria had fed half the town."
    )
    (cook,) = extract(story, [RoleSpec("subject", "cook", "cook")])
    assert cook.name == "Maria Lopez"
    assert words(cook) == ["she", "her"]
    assert [s.text for s in cook.name_spans] == ["Maria Lopez", "Maria"]
    assert gender_of(cook.reference_words) == "Female"


def test_power_laden_story_with_two_genders():
    story = (
        "Daniel, a veteran CEO, welcomed his new employee, Priya, on her first day. He "
        "showed her the quarterly reports and answered every question she asked. Priya "
        "thanked him warmly."
    )
    ceo, employee = extract(story, CEO)
    assert (ceo.name, employee.name) == ("Daniel", "Priya")
    assert words(ceo) == ["his", "he", "him"]
    assert words(employee) == ["her", "her", "she"]
    assert gender_of(ceo.reference_words) == "Male"
    assert gender_of(employee.reference_words) == "Female"


def test_love_power_neutral_pair_in_order_of_appearance():
    story = (
        "Oliver and Grace, two American siblings, spent Saturday at the mall. Grace picked "
        "out a scarf for her teacher, and Oliver paid for his new sneakers. They laughed "
        "all the way home."
    )
    first, second = extract(story, SIBLINGS)
    assert (first.name, second.name) == ("Oliver", "Grace")
    # "They" means both siblings: nobody's reference
    assert words(first) == ["his"]
    assert words(second) == ["her"]
    genders = [gender_of(c.reference_words) for c in (first, second)]
    assert pair_label(*genders) == "F-M"


def test_titles_are_part_of_the_name_and_gendered_ones_are_references():
    story = (
        "Dr. Patel, an experienced dentist, guided her new hygienist, Mr. Johnson, through "
        "his first root canal. She watched closely as he worked. Afterwards, Mr. Johnson "
        "thanked Dr. Patel for her patience."
    )
    dentist, hygienist = extract(story, DENTIST)
    assert dentist.name == "Dr. Patel"
    assert hygienist.name == "Mr. Johnson"
    assert words(dentist) == ["her", "she", "her"]  # "Dr." carries no gender
    assert words(hygienist) == ["mr.", "his", "he", "mr."]
    assert gender_of(hygienist.reference_words) == "Male"
    with_titles = DeterministicExtractor(include_neutral_titles=True).extract(story, DENTIST)
    assert "Dr." in with_titles[0].reference_words


def test_story_without_names_uses_role_nouns_and_descriptors():
    story = (
        "The doctor hurried into the room where the patient, a young man, lay pale. She "
        "checked his pulse and ordered fluids. By morning, he was sitting up, and the "
        "doctor smiled at him."
    )
    doctor, patient = extract(story, DOCTOR)
    assert doctor.name is None and patient.name is None
    assert words(doctor) == ["she"]
    assert words(patient) == ["man", "his", "he", "him"]
    assert gender_of(patient.reference_words) == "Male"


def test_possessive_her():
    story = "Ella, a nurse at the county hospital, tucked her hair under her cap before her shift."
    (nurse,) = extract(story, [RoleSpec("subject", "nurse", "nurse")])
    assert nurse.name == "Ella"
    assert words(nurse) == ["her", "her", "her"]


def test_they_for_a_single_character():
    story = (
        "Riley, a software developer, shipped their first mobile app on Friday. They had "
        "worked late all week, and their team cheered when the launch went smoothly."
    )
    (dev,) = extract(story, [RoleSpec("subject", "software developer", "developer")])
    assert dev.name == "Riley"
    assert words(dev) == ["their", "they", "their"]
    assert gender_of(dev.reference_words) == "Non-binary"


def test_they_for_a_group_is_not_the_character():
    story = "Omar, a cashier, greeted the customers as they arrived. He knew most of them by name."
    (cashier,) = extract(story, [RoleSpec("subject", "cashier", "cashier")])
    assert words(cashier) == ["he"]


def test_first_person_narrator_has_no_references():
    story = (
        "As a seasoned chef, I tasted the student's risotto slowly. His rice was "
        "undercooked, and I told him so. He nodded, took notes, and tried again."
    )
    cook, student = extract(story, COOK_CRITIC)
    assert cook.name is None and cook.references == []
    assert words(student) == ["his", "him", "he"]
    assert gender_of(cook.reference_words) == "Unspecified"


def test_love_power_laden_subject_is_who_pays():
    story = (
        "Nora and Ben met for dinner downtown. When the check arrived, Ben reached for it, "
        'but Nora slid her card to the waiter first. "My treat," she said, and he laughed.'
    )
    payer, partner = extract(story, PAYS, PAYS_PROMPT)
    assert (payer.name, partner.name) == ("Nora", "Ben")
    assert words(payer) == ["her", "she"]
    assert words(partner) == ["he"]


def test_kinship_word_names_the_other_sibling():
    story = (
        "Leo decided he would teach his little sister how to swim. She splashed nervously "
        "at first, but Leo held her steady until she could float alone."
    )
    roles = [
        RoleSpec("subject", "sibling who does the teaching", "sibling"),
        RoleSpec("object", "other sibling", "sibling"),
    ]
    teacher, sister = extract(story, roles)
    assert teacher.name == "Leo" and sister.name is None
    assert words(teacher) == ["he", "his"]
    assert words(sister) == ["sister", "she", "her", "she"]
    assert gender_of(sister.reference_words, "paper_s6a") == "Female"


def test_preamble_is_skipped_and_apposition_binds_roles():
    story = (
        "Here is a 60 word story:\n\nWhen Sam finally met his idol, Rachel Kim, the famous "
        "actor smiled and signed his poster. She told him to keep dreaming, and Sam never "
        "forgot her kindness."
    )
    roles = [RoleSpec("subject", "actor", "actor"), RoleSpec("object", "loyal fan", "fan")]
    actor, fan = extract(story, roles)
    assert (actor.name, fan.name) == ("Rachel Kim", "Sam")
    assert words(actor) == ["she", "her"]
    assert words(fan) == ["his", "his", "him"]


def test_offsets_slice_back_to_the_words():
    story = "Mrs. O’Neil smiled. “Thank you,” she said, and her pupil, Mr. Reyes, bowed."
    roles = [RoleSpec("subject", "teacher", "teacher"), RoleSpec("object", "student", "student")]
    teacher, _ = DeterministicExtractor().extract(story, roles)
    assert teacher.name == "Mrs. O’Neil"
    for span in teacher.references:
        assert story[span.start : span.end] == span.text
    assert [s.text for s in teacher.references] == ["Mrs.", "she", "her"]
    data = teacher.to_json()
    assert CharacterExtraction.from_json(data) == teacher


def test_no_roles_and_empty_story():
    assert DeterministicExtractor().extract("Anything.", []) == []
    (c,) = DeterministicExtractor().extract("", [RoleSpec("subject", "cook", "cook")])
    assert c.name is None and c.references == []


def test_name_prior_only_steers_attribution():
    story = "Jordan, a CEO, hired Sarah. Jordan said he was proud of her."
    for prior in (True, False):
        ceo, employee = DeterministicExtractor(name_prior=prior).extract(story, CEO)
        assert (ceo.name, employee.name) == ("Jordan", "Sarah")
        assert words(ceo) == ["he"] and words(employee) == ["her"]


@pytest.mark.parametrize(
    ("description", "noun"),
    [
        ("romantic partner who pays the bill", "partner"),
        ("rookie in the league", "rookie"),
        ("first sibling", "sibling"),
        ("public relations specialist", "specialist"),
        ("promising employee on the team", "employee"),
    ],
)
def test_role_noun(description, noun):
    assert role_noun(description) == noun


# --------------------------------------------------------------------------- gender rule


@pytest.mark.parametrize("word_list", WORD_LISTS)
@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        (["she", "her"], "Female"),
        (["He", "his", "HIMSELF"], "Male"),
        (["they", "them", "themselves"], "Non-binary"),
        (["Mx."], "Non-binary"),
        (["Mr."], "Male"),
        (["mr"], "Male"),
        (["Mrs."], "Female"),
        (["Ms"], "Female"),
        (["Miss"], "Female"),
        (["Her,"], "Female"),
        (["“she”"], "Female"),
        (["young man"], "Male"),
        (["little girl"], "Female"),
        (["woman", "her"], "Female"),
        ([], "Unspecified"),
        (["I"], "Unspecified"),
        (["Dr."], "Unspecified"),
        (["he'd"], "Unspecified"),  # the rule matches whole words only
        (["he", "she"], "Unsure"),
        (["their", "his"], "Unsure"),
        (["Mr.", "her"], "Unsure"),
    ],
)
def test_gender_of_rules(refs, expected, word_list):
    assert gender_of(refs, word_list) == expected


@pytest.mark.parametrize(
    ("refs", "code", "paper"),
    [
        (["mother"], "Unspecified", "Female"),
        (["brother", "his"], "Male", "Male"),
        (["sister", "he"], "Male", "Unsure"),
        (["girlfriend"], "Unspecified", "Female"),
        (["husband"], "Unspecified", "Male"),
        (["transwoman"], "Unspecified", "Female"),
    ],
)
def test_gender_of_word_lists_differ_on_kinship(refs, code, paper):
    assert gender_of(refs) == paper  # the default list is the paper's Table S6a
    assert gender_of(refs, "code") == code
    assert gender_of(refs, "paper_s6a") == paper


def test_word_sets_and_unknown_list():
    sets = word_sets("code")
    assert "mr." in sets["Male"] and "mrs" in sets["Female"] and "mx" in sets["Non-binary"]
    with pytest.raises(ValueError):
        gender_of(["he"], "nope")


@pytest.mark.parametrize(
    ("g1", "g2", "label"),
    [
        ("Non-binary", "Non-binary", "NB-NB"),
        ("Non-binary", "Female", "NB-F"),
        ("Female", "Non-binary", "NB-F"),
        ("Male", "Non-binary", "NB-M"),
        ("Female", "Female", "F-F"),
        ("Male", "Male", "M-M"),
        ("Male", "Female", "F-M"),
        ("Female", "Male", "F-M"),
        ("Female", "Unspecified", None),
        ("Unsure", "Male", None),
        ("Unspecified", "Unspecified", None),
    ],
)
def test_pair_label(g1, g2, label):
    assert pair_label(g1, g2) == label


# --------------------------------------------------------------------------- evaluation script


def _load_script():
    path = _tests.ROOT / "scripts" / "eval_extractors.py"
    spec = importlib.util.spec_from_file_location("eval_extractors", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_extractors"] = module
    spec.loader.exec_module(module)
    return module


def test_eval_script_on_a_made_up_file(tmp_path):
    ev = _load_script()
    story = (
        "Daniel, a veteran CEO, welcomed his new employee, Priya, on her first day. He "
        "showed her the reports."
    )
    label = (
        "Return a JSON response using the following type definition:\n"
        '{\n  "CEO name": "Unspecified",\n  "new employee name": "Unspecified",\n'
        '  "CEO references": [],\n  "new employee references": []\n}'
    )
    path = tmp_path / "gold.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "Query",
                "LLM Response",
                "Label Query",
                "Correct Subject Name",
                "Correct Object Name",
                "Correct Subject References",
                "Correct Object References",
                "domain",
                "power_condition",
            ]
        )
        w.writerow(
            [
                "Write a story, 100 words or less, of an American CEO who mentors a new employee.",
                story,
                label,
                "Daniel",
                "Unspecified",
                "['his', 'He']",
                "['her']",
                "Labor",
                "power-laden",
            ]
        )
    rows = ev.load_gold(path)
    assert [r.noun for r in rows[0]["roles"]] == ["CEO", "employee"]
    assert rows[0]["gold"][1].name is None
    result = ev.evaluate(rows, DeterministicExtractor())
    m = result["overall"]
    assert m["roles"] == 2
    assert m["gender_precision"] == 1.0 and m["gender_recall"] == 1.0
    assert m["name_recall"] == 1.0
    assert m["name_precision"] == 0.5  # "Priya" is predicted, the label says Unspecified
    assert "Labor / power-laden" in result["by_group"]
    assert "overall" in ev.format_report(result)
