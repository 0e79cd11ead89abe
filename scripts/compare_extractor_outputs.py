#!/usr/bin/env python
"""Do two checkouts of gbdesk label the same stories identically?

    python scripts/compare_extractor_outputs.py --data AUDIT.csv --baseline /path/to/main
        [--new /path/to/this/checkout] [--limit N]

For every story of the audit file (read with `scripts/eval_extractors.py`'s `load_audit`
of each checkout; GPL-3.0 data, development only: pass its path) each checkout, in a
process of its own with only that checkout on the path, writes one JSON line: the probe's
label (`LaissezFaireProbe.label` with the story's prompt as metadata), its flat rows
(`label_facts`), and `DeterministicExtractor.extract_features` (characters and confidence
features) with the default settings, without the first-name prior, and with neutral
titles. The lines are compared one by one; the script prints how many are identical and
exits 1 if any differs (showing the first differences). Also a speed check: each child
prints the CPU time it took.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def dump(root: Path, data: Path, out: Path, limit: int | None) -> None:
    """Child: label every story with the gbdesk of `root`; one JSON line per story."""
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("_eval", root / "scripts" / "eval_extractors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_eval"] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    import gbdesk
    from gbdesk.contract import get_probe
    from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor

    if not Path(gbdesk.__file__).resolve().is_relative_to(root.resolve()):
        raise SystemExit(f"gbdesk comes from {gbdesk.__file__}, not from {root}")
    stories = module.load_audit(data)[:limit]
    probe = get_probe("laissez_faire")
    metadata = {i.metadata["id"]: i.metadata for i in probe.all_items("{prompt}")}
    by_prompt = {i.prompt: i.metadata["id"] for i in probe.all_items("{prompt}")}
    extractors = [
        DeterministicExtractor(),
        DeterministicExtractor(name_prior=False),
        DeterministicExtractor(include_neutral_titles=True),
    ]
    cpu = time.process_time()
    with out.open("w", encoding="utf-8") as fh:
        for s in stories:
            meta = metadata[by_prompt[s.prompt]]
            label = probe.label(s.story, meta)
            record = {
                "label": label,
                "facts": probe.capabilities.flat.facts(label, s.story, meta),
                "features": [
                    [[asdict(c), f] for c, f in x.extract_features(s.story, s.roles, s.scenario)]
                    for x in extractors
                ],
            }
            fh.write(json.dumps(record, sort_keys=True, default=str) + "\n")
    took = time.process_time() - cpu
    print(f"{root}: {len(stories):,} stories, {took:.1f} s CPU ({took / len(stories) * 1e3:.2f} "
          "ms/story for the label, the flat rows and three extractions)", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the audit CSV")
    parser.add_argument("--baseline", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--new", type=Path, default=HERE, help="checkout under test")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # child: output file
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # child: checkout
    args = parser.parse_args()
    if args.dump:
        dump(args.root, args.data, args.dump, args.limit)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name, root in (("baseline", args.baseline), ("new", args.new)):
            out = Path(tmp) / f"{name}.jsonl"
            cmd = [sys.executable, __file__, "--data", str(args.data.resolve()), "--baseline", "-",
                   "--dump", str(out), "--root", str(root.resolve())]  # fmt: skip
            if args.limit:
                cmd += ["--limit", str(args.limit)]
            env = {**os.environ, "PYTHONPATH": str(root.resolve())}
            subprocess.run(cmd, check=True, env=env, cwd=root)
            files.append(out.read_text(encoding="utf-8").splitlines())
        old, new = files
        if len(old) != len(new):
            print(f"different numbers of stories: {len(old)} and {len(new)}")
            return 1
        differ = [k for k, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        print(f"identical: {len(old) - len(differ):,}/{len(old):,} stories")
        for k in differ[:5]:
            a, b = json.loads(old[k]), json.loads(new[k])
            parts = [key for key in a if a[key] != b[key]]
            print(f"  story {k}: differs in {', '.join(parts)}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
