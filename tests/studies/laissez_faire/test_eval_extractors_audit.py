"""The audit mode of scripts/eval_extractors.py on made-up records and a made-up file:
name rule, Love pairing, precision/recall, reliability/ECE, LOMO and review."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys

import pytest

import tests as _tests
from gbdesk.studies.laissez_faire.extract.types import RoleSpec


def _load_script():
    path = _tests.ROOT / "scripts" / "eval_extractors.py"
    spec = importlib.util.spec_from_file_location("eval_extractors_audit", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_extractors_audit"] = module
    spec.loader.exec_module(module)
    return module


ev = _load_script()


def story(model="M1", domain="Labor", condition="power-laden", n=2, index=0):
    roles = [RoleSpec("subject", "CEO", "CEO"), RoleSpec("object", "new employee", "employee")]
    if domain == "Love" and condition == "power-neutral":
        roles = [
            RoleSpec("first", "first sibling", "sibling"),
            RoleSpec("second", "second sibling", "sibling"),
        ]
    return ev.AuditStory(
        index,
        model,
        domain,
        condition,
        "p",
        "s",
        "text",
        roles[:n],
        ["Unspecified"] * n,
        [[] for _ in range(n)],
        ["Unspecified"] * n,
        [[] for _ in range(n)],
    )


def rec(hand_g, pred_g, hand_n=(), pred_n=None, conf=float("nan"), s=None):
    return ev.CharRecord(s or story(), 0, hand_g, list(hand_n), pred_g, pred_n, {}, conf)


@pytest.mark.parametrize(
    ("pred", "hand", "ok"),
    [
        ("Emily", ["Emily Stone"], True),  # a hand name's first word
        ("emily stone", ["Emily Stone"], True),
        ("Stone", ["Emily Stone"], False),
        ("Dr. Smith", ["Dr. Smith"], True),
        ("Chef Evan", ["Evan"], False),
        ("Evan", ["Chef Evan", "Evan"], True),
        (None, ["Ana"], False),
        ("Ana", [], False),
    ],
)
def test_name_rule(pred, hand, ok):
    assert ev.name_matches(pred, hand) is ok


def test_name_cells():
    assert ev._name_list("['Unspecified']") == []
    assert ev._name_list("[]") == []
    assert ev._name_list("['Chef Davis', 'Unspecified']") == ["Chef Davis"]
    assert ev._name_list(float("nan")) == []


def test_tally_precision_recall_by_hand():
    t = ev.AuditTally()
    t.add(rec("Female", "Female", ["Ana"], "Ana"))  # both right
    t.add(rec("Male", "Unspecified", ["Bo"], None))  # gender and name missed
    t.add(rec("Unspecified", "Female", [], "Cy"))  # a gender and a name too many
    t.add(rec("Non-binary", "Unsure", [], None))  # wrong gender, no name right
    m = t.metrics()
    assert m["gender_precision"] == pytest.approx(1 / 3)  # 1 right of F, F, Unsure
    assert m["gender_recall"] == pytest.approx(1 / 3)  # 1 right of F, M, NB
    assert m["name_precision"] == pytest.approx(1 / 2)  # Ana right, Cy wrong
    assert m["name_recall"] == pytest.approx(1 / 2)  # Ana found, Bo missed
    assert m["both_right"] == pytest.approx(1 / 4)


def test_love_pairs_are_matched_in_the_better_order():
    s = story(domain="Love", condition="power-neutral")
    s.hand_genders = ["Female", "Male"]
    s.hand_names = [["Ana"], ["Bo"]]
    preds = [("Male", "Bo", [], {}, 0.9), ("Female", "Ana", [], {}, 0.8)]
    out = ev._records_for(s, preds)
    assert [r.pred_name for r in out] == ["Ana", "Bo"] and all(r.right for r in out)
    ordered = story()  # power-laden: no reordering
    ordered.hand_genders, ordered.hand_names = ["Female", "Male"], [["Ana"], ["Bo"]]
    assert not any(r.right for r in ev._records_for(ordered, preds))


def test_reliability_table_and_ece_by_hand():
    records = [
        rec("Female", "Female", conf=0.95),
        rec("Female", "Female", conf=0.95),
        rec("Female", "Male", conf=0.15),
        rec("Female", "Female", conf=0.15),
    ]
    rows, ece = ev.reliability(records)
    by_bin = {round(r["lo"], 1): r for r in rows if r["count"]}
    assert by_bin[0.9]["count"] == 2 and by_bin[0.9]["right"] == 1.0
    assert by_bin[0.1]["count"] == 2 and by_bin[0.1]["right"] == 0.5
    assert ece == pytest.approx(0.5 * 0.05 + 0.5 * 0.35)


def test_lomo_refits_per_fold_and_review_replaces_the_least_confident():
    records = []
    for m in ("M1", "M2", "M3"):
        for k in range(10):
            s = story(model=m, index=k)
            good = k < 8
            r = rec("Female", "Female" if good else "Male", s=s)
            r.features = {"named": 1.0 if good else 0.0}
            records.append(r)
    res = ev.lomo(records)
    assert set(res["per_model"]) == {"M1", "M2", "M3"}
    assert res["overall"]["all"]["both_right"] == pytest.approx(0.8)
    wrong = [r.confidence for r in res["records"] if not r.right]
    right = [r.confidence for r in res["records"] if r.right]
    assert max(wrong) < min(right)  # the fold model learnt the feature
    reviewed = ev.lomo(records, review_fraction=0.2)
    assert reviewed["overall"]["all"]["both_right"] == 1.0  # the 2 wrong of 10 per model
    assert sum(r.reviewed for r in reviewed["records"]) == 6


def test_audit_file_end_to_end(tmp_path, capsys):
    path = tmp_path / "audit.csv"
    cols = [
        "prompt_id",
        "domain",
        "power_condition",
        "Model",
        "Query",
        "LLM Response",
        "Manual Subject Gender",
        "Manual Object Gender",
        "Manual Subject Name",
        "Manual Object Name",
        "LLM Subject Gender",
        "LLM Object Gender",
        "LLM Subject Name",
        "LLM Object Name",
        "LLM Subject References",
        "LLM Object References",
    ]
    stories = [
        ("Nadia, a veteran actor, greeted the crowd. She bowed twice.", "Female", "['Nadia']"),
        ("Tomas, an actor, waved. He smiled at the cameras.", "Male", "['Tomas']"),
        ("The actor took a bow. She thanked everyone.", "Female", "['Unspecified']"),
    ]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for k, (text, g, name) in enumerate(stories * 2):
            model = "A" if k < 3 else "B"
            w.writerow(
                [
                    1,
                    "Labor",
                    "power-neutral",
                    model,
                    "q",
                    text,
                    g,
                    "",
                    name,
                    "",
                    g,
                    "",
                    name,
                    "",
                    "Counter({'she': 1})" if g == "Female" else "Counter({'he': 1})",
                    "",
                ]
            )
    assert ev.is_audit_file(path)
    assert ev.main(["--data", str(path), "--review-fraction", "0.1", "--word-list", "both"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-model-out" in out and "expected calibration error" in out
    assert "word lists on the paper's GPT-3.5 reference lists" in out
    m = ev.word_list_agreement(path, "code")
    assert m["agreement"] == 1.0 and m["chars"] == 6
    assert not math.isnan(m["gender_precision"])


def _write_two_role_file(path):
    cols = [
        "prompt_id",
        "domain",
        "power_condition",
        "Model",
        "Query",
        "LLM Response",
        "Manual Subject Gender",
        "Manual Object Gender",
        "Manual Subject Name",
        "Manual Object Name",
        "LLM Subject Gender",
        "LLM Object Gender",
        "LLM Subject Name",
        "LLM Object Name",
        "LLM Subject References",
        "LLM Object References",
    ]
    stories = [
        (
            "Omar, a CEO, welcomed his new employee, Lena. She thanked him.",
            "Male",
            "Female",
            "['Omar']",
            "['Lena']",
        ),
        (
            "Rachel ran the firm. Her new hire, Daniel, was nervous, so she coached him.",
            "Female",
            "Male",
            "['Rachel']",
            "['Daniel']",
        ),
        (
            "The CEO, Priya, met Tom, the new employee. He listened as she explained.",
            "Female",
            "Male",
            "['Priya']",
            "['Tom']",
        ),
    ]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for k, (text, gs, go, ns, no) in enumerate(stories * 2):
            model = "A" if k < 3 else "B"
            w.writerow(
                [
                    17,
                    "Labor",
                    "power-laden",
                    model,
                    "q",
                    text,
                    gs,
                    go,
                    ns,
                    no,
                    gs,
                    go,
                    ns,
                    no,
                    "",
                    "",
                ]
            )


def test_learned_decisions_are_refitted_per_fold_and_written(tmp_path, capsys):
    path = tmp_path / "audit2.csv"
    _write_two_role_file(path)
    stories = ev.load_audit(path)
    base = ev.load_extractor("deterministic", learned=ev.RULES_ONLY)
    rows = ev.learned_rows(stories, base)
    assert all(rows[s.index]["roles"] for s in stories)  # one option group per role
    assert any(rows[s.index]["pronouns"] for s in stories)
    for groups in rows.values():
        for g in groups["roles"]:
            assert sum(y for _, y in g) == 1  # exactly the hand-named candidate is right
    held, train = ev.predict_lomo(stories, "deterministic", {}, "paper_s6a", learned=True)
    assert len(held) == 2 * len(stories)
    assert {m: {r.story.model for r in rs} for m, rs in train.items()} == {
        "A": {"B"},
        "B": {"A"},
    }
    assert ev.main(["--data", str(path), "--learned", "--word-list", "paper_s6a"]) == 0
    assert "leave-one-model-out" in capsys.readouterr().out
    out = tmp_path / "learned.json"
    conf = tmp_path / "conf.json"
    args = ["--data", str(path), "--write-learned", str(out), "--write-confidence", str(conf)]
    assert ev.main(args) == 0
    from gbdesk.studies.laissez_faire.extract.learned import load

    learned = load(out)
    assert learned.roles is not None and learned.pronouns is not None
    assert "hand-labelled stories" in learned.fitted_on
    assert json.loads(conf.read_text(encoding="utf-8"))["features"]
