#!/usr/bin/env python
"""Evaluate Laissez-Faire character extractors on hand-labelled stories.

    python scripts/eval_extractors.py --data LABELLED.csv [--extractor deterministic]
        [--limit N] [--show-errors K] [--word-list code|paper_s6a] [--json]

The CSV is the paper's autolabel training file (columns `Query`, `LLM Response`,
`Label Query`, `Correct Subject Name`, `Correct Object Name`, `Correct Subject
References`, `Correct Object References`, `domain`, `power_condition`). It is not part
of gbdesk: pass its path. Metrics are computed per (story, role) where the gold role
exists:

* name precision / recall: names compared after normalising case, surrounding
  whitespace and punctuation and typographic quotes; "Unspecified" or empty = no name;
* gender precision / recall: `gender_of(references)` of gold and prediction compared
  exactly; precision = correct / roles predicted not "Unspecified" ("Unsure" counts as
  a prediction), recall = correct / roles whose gold is not "Unspecified";
* reference precision / recall (diagnostic): multisets of lower-cased reference words
  (the gold lists hold each word once, so predictions are de-duplicated first).

`load_gold` and `evaluate` are importable so that any `Extractor` can be compared.
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib
import json
import re
import sys
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor, role_noun
from gbdesk.studies.laissez_faire.extract.gender_words import UNSPECIFIED, gender_of
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, Extractor, RoleSpec


#: Extractors the command line knows by name; any "module:Callable" that builds an
#: extractor without arguments works too. Extractors that need arguments (an LLM
#: backend) are evaluated from Python: `evaluate(load_gold(path), extractor)`.
def _llm_on_default_model() -> Extractor:
    """The Table S7 prompt on the bundled SmolLM2 (JSON-schema constrained decoding)."""
    from gbdesk.engine.default_model import default_model_path
    from gbdesk.engine.llama_backend import LlamaCppBackend
    from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor

    path = default_model_path()
    return LLMExtractor(LlamaCppBackend(path), path.name)


EXTRACTORS: dict[str, Callable[[], Extractor]] = {
    "deterministic": DeterministicExtractor,
    "deterministic-no-name-prior": lambda: DeterministicExtractor(name_prior=False),
    "llm-default": _llm_on_default_model,
}

_KEY_RE = re.compile(r'"([^"\n]+?) name"\s*:')
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


@dataclass
class GoldCharacter:
    """A labelled character: its name (None = "Unspecified") and reference words."""

    role: str
    name: str | None
    references: list[str] = field(default_factory=list)

    @property
    def reference_words(self) -> list[str]:
        return list(self.references)


def _parse_list(cell: str) -> list[str]:
    cell = (cell or "").strip()
    if not cell:
        return []
    value = ast.literal_eval(cell)
    return [str(v) for v in value]


def _parse_name(cell: str) -> str | None:
    cell = (cell or "").strip()
    return None if not cell or cell.lower() == "unspecified" else cell


def roles_from_label_query(label_query: str) -> list[RoleSpec]:
    """Roles named by the labelling prompt's JSON type definition ("CEO name", "new
    employee name" → subject, object; "first sibling name", "second sibling name" →
    first, second)."""
    descriptions: list[str] = []
    for m in _KEY_RE.finditer(label_query):
        if m.group(1) not in descriptions:
            descriptions.append(m.group(1))
    if len(descriptions) == 2 and descriptions[0].startswith("first "):
        keys = ["first", "second"]
    else:
        keys = ["subject", "object"][: len(descriptions)]
    return [RoleSpec(k, d, role_noun(d)) for k, d in zip(keys, descriptions, strict=True)]


def load_gold(path: str | Path) -> list[dict[str, Any]]:
    """Rows of the labelled CSV: `prompt`, `story`, `roles` (RoleSpec list), `gold`
    (GoldCharacter list, in role order), `domain`, `condition`."""
    rows: list[dict[str, Any]] = []
    with open(path, newline="", encoding="utf-8") as f:
        for i, rec in enumerate(csv.DictReader(f)):
            roles = roles_from_label_query(rec["Label Query"])
            if not roles:
                continue
            cells = [
                ("Correct Subject Name", "Correct Subject References"),
                ("Correct Object Name", "Correct Object References"),
            ]
            gold = [
                GoldCharacter(role.key, _parse_name(rec[n]), _parse_list(rec[r]))
                for role, (n, r) in zip(roles, cells, strict=False)
            ]
            rows.append(
                {
                    "index": i,
                    "prompt": rec["Query"].strip(),
                    "story": rec["LLM Response"],
                    "roles": roles,
                    "gold": gold,
                    "domain": rec.get("domain", ""),
                    "condition": rec.get("power_condition", ""),
                }
            )
    return rows


def normalise_name(name: str | None) -> str | None:
    """Case-, whitespace-, quote- and punctuation-insensitive form; None = no name."""
    if name is None:
        return None
    text = " ".join(name.translate(_QUOTES).split()).strip(" \t.,;:!?'\"()[]").lower()
    return None if not text or text == "unspecified" else text


def _words(refs: Iterable[str]) -> Counter[str]:
    return Counter({r.translate(_QUOTES).strip().lower(): 1 for r in refs if r.strip()})


class _Tally:
    """Counts for one group of (story, role) pairs."""

    def __init__(self) -> None:
        self.c: Counter[str] = Counter()

    def add(self, gold: GoldCharacter, pred: CharacterExtraction, word_list: str) -> dict:
        c = self.c
        c["roles"] += 1
        gname, pname = normalise_name(gold.name), normalise_name(pred.name)
        c["name_pred"] += pname is not None
        c["name_gold"] += gname is not None
        c["name_ok"] += pname is not None and pname == gname
        ggender = gender_of(gold.references, word_list)
        pgender = gender_of(pred.reference_words, word_list)
        c["gender_pred"] += pgender != UNSPECIFIED
        c["gender_gold"] += ggender != UNSPECIFIED
        c["gender_ok"] += pgender == ggender != UNSPECIFIED
        c["gender_exact"] += pgender == ggender
        gw, pw = _words(gold.references), _words(pred.reference_words)
        c["ref_pred"] += sum(pw.values())
        c["ref_gold"] += sum(gw.values())
        c["ref_ok"] += sum((gw & pw).values())
        return {"gold_gender": ggender, "pred_gender": pgender, "gname": gname, "pname": pname}

    def metrics(self) -> dict[str, float | int]:
        c = self.c

        def ratio(a: str, b: str) -> float:
            return c[a] / c[b] if c[b] else float("nan")

        return {
            "roles": c["roles"],
            "name_precision": ratio("name_ok", "name_pred"),
            "name_recall": ratio("name_ok", "name_gold"),
            "gender_precision": ratio("gender_ok", "gender_pred"),
            "gender_recall": ratio("gender_ok", "gender_gold"),
            "gender_accuracy": ratio("gender_exact", "roles"),
            "reference_precision": ratio("ref_ok", "ref_pred"),
            "reference_recall": ratio("ref_ok", "ref_gold"),
            **{f"n_{k}": v for k, v in sorted(c.items())},
        }


def evaluate(
    rows: list[dict[str, Any]], extractor: Extractor, word_list: str = "code"
) -> dict[str, Any]:
    """Run `extractor` on every row and score it against the gold labels.

    Returns {"overall": metrics, "by_group": {"domain / condition": metrics},
    "details": [per (story, role) record with gold, prediction and verdicts]}."""
    overall = _Tally()
    groups: dict[str, _Tally] = defaultdict(_Tally)
    details: list[dict[str, Any]] = []
    for row in rows:
        preds = extractor.extract(row["story"], row["roles"], row["prompt"])
        by_role = {p.role: p for p in preds}
        for role, gold in zip(row["roles"], row["gold"], strict=False):
            pred = by_role.get(role.key) or CharacterExtraction(role.key, None)
            verdict = overall.add(gold, pred, word_list)
            groups[f"{row['domain']} / {row['condition']}"].add(gold, pred, word_list)
            details.append(
                {
                    "index": row["index"],
                    "role": role.key,
                    "description": role.description,
                    "story": row["story"],
                    "gold_name": gold.name,
                    "pred_name": pred.name,
                    "gold_refs": gold.references,
                    "pred_refs": pred.reference_words,
                    "name_ok": verdict["pname"] == verdict["gname"],
                    **verdict,
                }
            )
    return {
        "extractor": f"{getattr(extractor, 'name', '?')} v{getattr(extractor, 'version', '?')}",
        "overall": overall.metrics(),
        "by_group": {k: groups[k].metrics() for k in sorted(groups)},
        "details": details,
    }


def load_extractor(spec: str) -> Extractor:
    """An extractor from a short name ("deterministic") or "module:Callable"."""
    if spec in EXTRACTORS:
        return EXTRACTORS[spec]()
    module, _, attr = spec.partition(":")
    factory: Callable[[], Extractor] = getattr(importlib.import_module(module), attr)
    return factory()


def _pct(x: float) -> str:
    return "  n/a" if x != x else f"{100 * x:5.1f}"


def format_report(result: dict[str, Any]) -> str:
    lines = [f"extractor: {result['extractor']}"]
    header = (
        f"{'group':<28}{'roles':>6} | {'name P':>6} {'name R':>6} | {'gend P':>6} "
        f"{'gend R':>6} {'acc':>6} | {'ref P':>6} {'ref R':>6}"
    )
    lines += [header, "-" * len(header)]
    items = [("overall", result["overall"]), *result["by_group"].items()]
    for label, m in items:
        lines.append(
            f"{label:<28}{m['roles']:>6} | {_pct(m['name_precision']):>6} "
            f"{_pct(m['name_recall']):>6} | {_pct(m['gender_precision']):>6} "
            f"{_pct(m['gender_recall']):>6} {_pct(m['gender_accuracy']):>6} | "
            f"{_pct(m['reference_precision']):>6} {_pct(m['reference_recall']):>6}"
        )
    return "\n".join(lines)


def format_errors(result: dict[str, Any], k: int) -> str:
    """The first `k` (story, role) records whose gender or name is wrong."""
    out: list[str] = []
    bad = [d for d in result["details"] if d["gold_gender"] != d["pred_gender"] or not d["name_ok"]]
    for d in bad[:k]:
        out.append(f"--- row {d['index']} {d['role']} ({d['description']})")
        out.append(textwrap.fill(d["story"], 100))
        out.append(f"  gold: {d['gold_name']!r:<28} {d['gold_gender']:<12} {d['gold_refs']}")
        out.append(f"  pred: {d['pred_name']!r:<28} {d['pred_gender']:<12} {d['pred_refs']}")
    out.append(f"({len(bad)} records with a wrong name or gender)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="labelled CSV (the paper's training file)")
    ap.add_argument(
        "--extractor",
        action="append",
        help=f"name ({', '.join(EXTRACTORS)}) or module:Callable; repeatable",
    )
    ap.add_argument("--limit", type=int, default=None, help="first N stories only")
    ap.add_argument("--show-errors", type=int, default=0, metavar="K")
    ap.add_argument("--word-list", default="code", choices=("code", "paper_s6a"))
    ap.add_argument("--json", action="store_true", help="print metrics as JSON")
    args = ap.parse_args(argv)

    rows = load_gold(args.data)
    if args.limit is not None:
        rows = rows[: args.limit]
    results = []
    for spec in args.extractor or ["deterministic"]:
        result = evaluate(rows, load_extractor(spec), args.word_list)
        results.append(result)
        if not args.json:
            print(format_report(result))
            if args.show_errors:
                print(format_errors(result, args.show_errors))
            print()
    if args.json:
        keys = ("extractor", "overall", "by_group")
        print(json.dumps([{k: r[k] for k in keys} for r in results]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
