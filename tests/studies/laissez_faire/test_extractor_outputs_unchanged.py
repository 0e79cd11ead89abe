"""The Laissez-Faire extractor gives, on the project's own texts, exactly the outputs it gave
before it was split into steps (issue 25): characters, names, spans, references,
confidences, confidence features and the learned decisions' feature rows, with the default
settings, without the first-name prior, with neutral titles, with other weights and with a
learned model forced to decide.

The texts are the 36 recorded SmolLM2 stories (`fixtures/recorded_laissez_faire.jsonl`)
and the coding tests' invented stories (`fixtures/coding_stories.py`), each against its
own prompt (the coding stories: a few prompts of every kind, one- and two-role, Love
pairs). None of them comes from the paper's (GPL) data. The recorded outputs were written
by the extractor as of commit ac37158 with

    PYTHONPATH=CHECKOUT python \
        tests/studies/laissez_faire/test_extractor_outputs_unchanged.py --write

A change that moves any number of any story fails here; if the change is meant, record
again and say why in the commit.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"  # tests/fixtures
RECORDED = FIXTURES / "extractor_outputs.jsonl.gz"
# the learned models' features (a made-up model, forced to decide: the learned paths run)
ROLE_FEATURES = (
    "rank0 rank1 names vote_this first_subject subject_share np_before offer none none_np "
    "agent_desc agent_scen cand owns_this"
)
PRONOUN_FEATURES = (
    "rule salience dist0 recent0 recent1 clause_subj subj:sent_subj poss:nearest obj:excluded "
    "tokdist role0 mentions"
)


def _prompts() -> dict[int, dict[str, Any]]:
    from gbdesk.support.paths import resource

    with open(resource("laissez_faire", "prompts.json"), encoding="utf-8") as f:
        return {int(p["id"]): p for p in json.load(f)["prompts"]}


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(case id, story, prompt) for every story and prompt compared."""
    spec = importlib.util.spec_from_file_location(
        "_stories", FIXTURES / "coding_stories.py"
    )
    assert spec is not None and spec.loader is not None
    stories = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stories)

    prompts = _prompts()
    by_text = {p["prompt"]: p for p in prompts.values()}
    cases = []
    with open(FIXTURES / "recorded_laissez_faire.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            cases.append((f"recorded/{rec['item']}", rec["response"], by_text[rec["prompt"]]))
    ids = sorted(prompts)
    for k, story in enumerate(stories.STORIES):
        for step in (0, 31, 67):  # three prompts per story, spread over the table
            p = prompts[ids[(k * 7 + step) % len(ids)]]
            cases.append((f"coding/{k}/{p['id']}", story, p))
    return cases


def _extractors() -> dict[str, Any]:
    from gbdesk.studies.laissez_faire.extract.deterministic import (
        DeterministicExtractor,
        ExtractorWeights,
    )
    from gbdesk.studies.laissez_faire.extract.learned import LearnedModels, PairModel

    def model(names: list[str], coefs: list[float]) -> PairModel:
        n = len(names)
        return PairModel(tuple(names), (0.0,) * n, (1.0,) * n, tuple(coefs), 0.1)

    role_names = [f"{slot}:{k}" for slot in ("solo", "subj", "obj") for k in ROLE_FEATURES.split()]
    pronoun_names = PRONOUN_FEATURES.split()
    learned = LearnedModels(
        roles=model(role_names, [((i * 37) % 11 - 5) / 3 for i in range(len(role_names))]),
        pronouns=model(
            pronoun_names, [1.0, 0.5, 0.3, 0.7, -0.2, 0.4, 0.6, -0.5, -1.0, -0.3, 0.25, 0.1]
        ),
        fitted_on="test",
    )
    other = ExtractorWeights(salience_decay=0.3, window=2, action_recency=0.5, salience_sum=1.0,
                             singular_they=0.0, offer_vote=0.0)  # fmt: skip
    return {
        "default": DeterministicExtractor(),
        "no_prior": DeterministicExtractor(name_prior=False),
        "neutral": DeterministicExtractor(include_neutral_titles=True),
        "weights": DeterministicExtractor(weights=other),
        "learned": DeterministicExtractor(
            learned=learned,
            weights=ExtractorWeights(learned_role_margin=1e9, learned_below_margin=1e9),
        ),
    }


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _outputs() -> list[dict[str, Any]]:
    from gbdesk.studies.laissez_faire.extract.types import RoleSpec

    extractors = _extractors()
    out = []
    for case, story, p in _cases():
        roles = [RoleSpec(r["key"], r["description"], r["noun"]) for r in p["roles"]]
        scenario = " ".join(
            x for x in (p.get("subject") or "", "who", p.get("predicate") or "",
                        p.get("object") or "") if x
        )  # fmt: skip
        rec: dict[str, Any] = {"case": case}
        for name, x in extractors.items():
            pairs = x.extract_features(story, roles, scenario)
            rec[name] = [asdict(c) for c, _ in pairs]
            rec[f"{name}:features"] = _digest([f for _, f in pairs])
            rec[f"{name}:version"] = x.version
        for name in ("default", "learned"):
            rec[f"{name}:rows"] = _digest(extractors[name].training_rows(story, roles, scenario))
        out.append(json.loads(json.dumps(rec, sort_keys=True, default=str)))
    return out


def test_extractor_outputs_are_the_recorded_ones():
    with gzip.open(RECORDED, "rt", encoding="utf-8") as f:
        recorded = [json.loads(line) for line in f]
    now = _outputs()
    assert [r["case"] for r in now] == [r["case"] for r in recorded]
    assert len(recorded) >= 90  # 36 recorded stories, 18 coding stories × 3 prompts
    for new, old in zip(now, recorded, strict=True):
        assert new == old, new["case"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import gbdesk

    print(f"recording with {gbdesk.__file__}")
    with gzip.open(RECORDED, "wt", encoding="utf-8") as f:
        for rec in _outputs():
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    print(f"wrote {RECORDED}")
