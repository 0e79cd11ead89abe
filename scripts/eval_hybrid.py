#!/usr/bin/env python
"""Hybrid extraction on hand-labelled stories: the deterministic extractor everywhere and a
labeler model only for the characters it is less than THRESHOLD sure of (the `hybrid`
labelling pass), scored as Table S8 against the deterministic extractor alone.

    python scripts/eval_hybrid.py --data laissez_faire_autolabel_audit_dev.csv
        [--labeler default|PATH.gguf] [--models ChatGPT4,Claude] [--stories 400]
        [--threshold 0.8] [--seed 0]

The development sheet (GPL-3.0) is not part of gbdesk: pass its path. Stories are a seeded
sample of the chosen models' stories (default: the two models the extractor's rules were
not developed on).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_extractors import _records_for, audit_metrics, load_audit  # noqa: E402

from gbdesk.engine.default_model import default_model_path  # noqa: E402
from gbdesk.engine.llama_backend import LlamaCppBackend  # noqa: E402
from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor  # noqa: E402
from gbdesk.studies.laissez_faire.extract.gender_words import gender_of  # noqa: E402
from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor  # noqa: E402


def preds(story, chars, word_list="paper_s6a"):
    by_role = {c.role: c for c in chars}
    out = []
    for role in story.roles:
        c = by_role.get(role.key)
        g = (c.gender or gender_of(c.reference_words, word_list)) if c else "Unspecified"
        out.append((g, c.name if c else None, c.reference_words if c else [], {}, 0.0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--labeler", default="default")
    parser.add_argument("--models", default="ChatGPT4,Claude")
    parser.add_argument("--stories", type=int, default=400)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    models = set(args.models.split(","))
    stories = [s for s in load_audit(args.data) if s.model in models]
    stories = random.Random(args.seed).sample(stories, min(args.stories, len(stories)))
    det = DeterministicExtractor()
    path = default_model_path() if args.labeler == "default" else Path(args.labeler)
    backend = LlamaCppBackend(path)
    llm = LLMExtractor(backend, path.name)
    det_records, hyb_records, asked, replaced, started = [], [], 0, 0, time.perf_counter()
    try:
        for s in stories:
            chars = det.extract(s.story, s.roles, s.scenario)
            det_records += _records_for(s, preds(s, chars))
            unsure = [
                c for c in chars if c.confidence is not None and c.confidence < args.threshold
            ]
            final = chars
            if unsure:
                asked += 1
                answer = llm.parse(
                    s.story, s.roles, s.scenario,
                    backend.generate(llm.request(s.story, s.roles, s.scenario)).text,
                )  # fmt: skip
                if answer is not None:
                    by_role = {c.role: c for c in answer}
                    final = [by_role.get(c.role, c) if c in unsure else c for c in chars]
                    replaced += sum(1 for c in unsure if c.role in by_role)
            hyb_records += _records_for(s, preds(s, final))
    finally:
        backend.close()
    took = time.perf_counter() - started
    print(f"{len(stories)} stories of {', '.join(sorted(models))}; labeler {path.name}; "
          f"threshold {args.threshold}: {asked} stories asked, {replaced} characters replaced, "
          f"{took:.0f} s")  # fmt: skip
    for label, records in (("deterministic", det_records), ("hybrid", hyb_records)):
        m = {k: 100 * v for k, v in audit_metrics(records)["overall"]["all"].items()}
        print(f"{label:<14} gender P {m['gender_precision']:.1f} R {m['gender_recall']:.1f} · "
              f"name P {m['name_precision']:.1f} R {m['name_recall']:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
