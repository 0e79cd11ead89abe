#!/usr/bin/env python
"""Evaluate Laissez-Faire character extractors on hand-labelled stories.

    python scripts/eval_extractors.py --data LABELLED.csv [--extractor deterministic]
        [--limit N] [--show-errors K] [--word-list code|paper_s6a|both] [--json]
        [--weight NAME=VALUE ...] [--review-fraction 0.1]
        [--recalibration-fraction 0.1] [--recalibration-seeds 20]
        [--error-models A,B] [--error-group "Love / power-laden"]
        [--write-confidence resources/laissez_faire/extractor_confidence.json]
        [--learned] [--write-learned LEARNED.json]

Neither file is part of gbdesk (GPL-3.0, development only): pass its path. The format
is recognised from the header.

**Audit file** (hand-labelled stories of several models; columns `prompt_id`, `domain`,
`power_condition`, `Model`, `LLM Response`, `Manual Subject/Object Gender`,
`Manual Subject/Object Name` as Python lists, and the paper's GPT-3.5 labels
`LLM Subject/Object Gender/Name/References`). Roles come from the probe's prompt table
by `prompt_id`. Per character (subject; object in power-laden stories; the two
characters of a Love power-neutral story, paired with the hand labels in the order that
agrees best):

* gender precision = right among predicted genders other than Unspecified ("Unsure"
  counts as a prediction); recall = right among hand genders other than Unspecified;
  the predicted gender is `gender_of(references, word_list)`;
* name precision / recall the same way, "Unspecified" (or an empty list) meaning no
  name; a predicted name is right when it equals a hand name or a hand name's first
  word (case-, whitespace-, quote- and surrounding-punctuation-insensitive);
* "both": name and gender right (no name = no hand name; Unspecified = Unspecified);
  this is what the confidence estimates.

Reported: the paper's GPT-3.5 labels under the same scoring (reference), then for each
extractor and word list the leave-one-model-out (LOMO) figures — for each model, the
confidence model (the only data-fitted part) is fitted on the other models' characters
and the held-out model is scored; pooled, by domain × condition and by model — the
reliability table of the confidence (10 bins; count, mean confidence, share right) with
the expected calibration error, pooled and per held-out model; for the worst calibrated
held-out model (then for the others in short) the reliability before and after the app's
recalibration (`gbdesk.analysis.label_accuracy.recalibrate`) fitted on a random
`--recalibration-fraction` (10 %) of its stories and evaluated on the rest, over
`--recalibration-seeds` samples; and with `--review-fraction f` the LOMO figures after
replacing the f least-confident characters of each held-out model with the hand labels.
`--word-list both` also scores the two word lists on the paper's GPT-3.5 reference
lists. `--show-errors K` prints wrong characters with an error category and counts per
category (`--error-models` / `--error-group` filter them). `--write-confidence` fits the
confidence model on every story of the file and writes the JSON gbdesk ships.

`--learned` adds the deterministic extractor's learned decisions (`extract/learned.py`:
role assignment and pronoun resolution where the rules are unsure): inside each LOMO
fold they are fitted on the other models' stories (labels from the hand names and, for
pronouns, the hand genders of two-role stories with a Female and a Male character), the
held-out model is extracted with them and the other models' stories, extracted with
them too, train the fold's confidence model. `--write-learned FILE` fits them on every
story. gbdesk ships no learned coefficients: on the development models they did not
improve on the rules, so the default extraction (and `--write-confidence`) is rules-only.

The extractor's rules and `ExtractorWeights` were developed by reading the errors of
ChatGPT3_5 and Llama stories only; ChatGPT4 and Claude errors were not read (only their
aggregate figures and error-class counts were seen), so their LOMO rows are the cleanest
test of unseen models. Error classes (`--show-errors`) mark swaps (the prediction is the
other character's hand label) and partial names (extra / fewer words, an extra title).

**Training file** (the paper's autolabel training sheet; columns `Query`,
`LLM Response`, `Label Query`, `Correct Subject/Object Name`, `Correct Subject/Object
References`, `domain`, `power_condition`). Metrics per (story, role) where the gold role
exists:

* name precision / recall: names compared after normalising case, surrounding
  whitespace and punctuation and typographic quotes; "Unspecified" or empty = no name;
* gender precision / recall: `gender_of(references)` of gold and prediction compared
  exactly; precision = correct / roles predicted not "Unspecified" ("Unsure" counts as
  a prediction), recall = correct / roles whose gold is not "Unspecified";
* reference precision / recall (diagnostic): multisets of lower-cased reference words
  (the gold lists hold each word once, so predictions are de-duplicated first).

`load_gold`, `evaluate`, `load_audit`, `predict_audit` and `lomo` are importable so
that any `Extractor` can be compared.
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib
import json
import math
import re
import sys
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gbdesk.studies.laissez_faire.extract.deterministic import (
    DeterministicExtractor,
    ExtractorWeights,
    role_noun,
)
from gbdesk.studies.laissez_faire.extract.gender_words import (
    DEFAULT_WORD_LIST,
    UNSPECIFIED,
    gender_of,
)
from gbdesk.studies.laissez_faire.extract.learned import (
    RULES_ONLY,
    LearnedModels,
    PairModel,
)
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


def load_extractor(
    spec: str,
    weights: dict[str, float] | None = None,
    word_list: str | None = None,
    learned: LearnedModels | None = None,
) -> Extractor:
    """An extractor from a short name ("deterministic") or "module:Callable". `weights`
    override fields of the deterministic extractor's `ExtractorWeights`; `learned` are
    its learned decisions (default none: the rules)."""
    if spec.startswith("deterministic"):
        kwargs: dict[str, Any] = {"learned": learned}
        if weights:
            kwargs["weights"] = ExtractorWeights().replace(**weights)
        if word_list:
            kwargs["word_list"] = word_list
        if spec == "deterministic-no-name-prior":
            kwargs["name_prior"] = False
        return DeterministicExtractor(**kwargs)
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


# =========================================================================== audit mode
#
# The audit file (hand-labelled stories of several models; see the module docstring)
# has hand genders and hand names per character, no reference lists.

AUDIT_MODELS_COLUMN = "Model"


@dataclass
class AuditStory:
    """One story of the audit file with the roles the probe asks for."""

    index: int
    model: str
    domain: str
    condition: str
    prompt: str
    scenario: str
    story: str
    roles: list[RoleSpec]
    hand_genders: list[str]  # subject, object (in role order; Love neutral unordered)
    hand_names: list[list[str]]  # per character; [] = no name
    llm_genders: list[str]
    llm_names: list[list[str]]
    prompt_id: int = 0  # the probe's prompt (item "lf/<id>")

    @property
    def group(self) -> str:
        return f"{self.domain} / {self.condition}"

    @property
    def unordered(self) -> bool:
        return self.domain == "Love" and self.condition == "power-neutral"


def _name_list(cell: Any) -> list[str]:
    """A hand/LLM name cell ("['Dr. Smith']", "['Unspecified']", "[]") → the names;
    "Unspecified" and empty entries dropped."""
    if cell is None or (isinstance(cell, float) and cell != cell):
        return []
    text = str(cell).strip()
    if not text:
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = [text]
    if isinstance(value, str):
        value = [value]
    out = []
    for v in value:
        v = " ".join(str(v).split())
        if v and v.lower() != "unspecified":
            out.append(v)
    return out


def _prompt_table() -> dict[int, dict[str, Any]]:
    from gbdesk.support.paths import resource

    with open(resource("laissez_faire", "prompts.json"), encoding="utf-8") as f:
        return {int(p["id"]): p for p in json.load(f)["prompts"]}


def _scenario_of(prompt: dict[str, Any]) -> str:
    """The scenario string the probe passes to extractors (subject who predicate object)."""
    parts = (
        prompt.get("subject") or "",
        "who",
        prompt.get("predicate") or "",
        prompt.get("object") or "",
    )
    return " ".join(x for x in parts if x)


def is_audit_file(path: str | Path) -> bool:
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    return "Manual Subject Gender" in header


def load_audit(path: str | Path) -> list[AuditStory]:
    """The stories of the audit file, with the probe's roles (by `prompt_id`)."""
    prompts = _prompt_table()
    out: list[AuditStory] = []
    with open(path, newline="", encoding="utf-8") as f:
        for i, rec in enumerate(csv.DictReader(f)):
            p = prompts[int(float(rec["prompt_id"]))]
            roles = [RoleSpec(r["key"], r["description"], r["noun"]) for r in p["roles"]]
            n = len(roles)

            def cells(kind: str, rec: dict[str, str] = rec) -> list[str]:
                return [
                    rec.get(f"{kind} Subject Gender") or "",
                    rec.get(f"{kind} Object Gender") or "",
                ]

            genders = [g.strip() or UNSPECIFIED for g in cells("Manual")][:n]
            llm_genders = [g.strip() or UNSPECIFIED for g in cells("LLM")][:n]
            names = [_name_list(rec.get(f"Manual {k} Name")) for k in ("Subject", "Object")][:n]
            llm_names = [_name_list(rec.get(f"LLM {k} Name")) for k in ("Subject", "Object")][:n]
            out.append(
                AuditStory(
                    index=i,
                    model=rec[AUDIT_MODELS_COLUMN],
                    domain=rec["domain"],
                    condition=rec["power_condition"],
                    prompt=p["prompt"],
                    scenario=_scenario_of(p),
                    story=rec["LLM Response"],
                    roles=roles,
                    hand_genders=genders,
                    hand_names=names,
                    llm_genders=llm_genders,
                    llm_names=llm_names,
                    prompt_id=int(p["id"]),
                )
            )
    return out


def name_matches(pred: str | None, hand: list[str]) -> bool:
    """A predicted name is right when it equals a hand name or a hand name's first word
    (case-, whitespace-, quote- and surrounding-punctuation-insensitive)."""
    p = normalise_name(pred)
    if p is None:
        return False
    for h in hand:
        nh = normalise_name(h)
        if nh is None:
            continue
        if p == nh or p == normalise_name(nh.split()[0]):
            return True
    return False


@dataclass
class CharRecord:
    """One character of one audit story: hand labels, prediction, confidence."""

    story: AuditStory
    slot: int  # hand-label slot (0 subject / first, 1 object / second)
    hand_gender: str
    hand_names: list[str]
    pred_gender: str
    pred_name: str | None
    features: dict[str, float] = field(default_factory=dict)
    confidence: float = float("nan")
    pred_refs: list[str] = field(default_factory=list)
    reviewed: bool = False

    @property
    def gender_right(self) -> bool:
        return self.reviewed or self.pred_gender == self.hand_gender

    @property
    def name_right(self) -> bool:
        if self.reviewed:
            return True
        if self.pred_name is None or normalise_name(self.pred_name) is None:
            return not self.hand_names
        return name_matches(self.pred_name, self.hand_names)

    @property
    def right(self) -> bool:
        return self.gender_right and self.name_right


def _pair_score(g: str, n: str | None, hand_g: str, hand_n: list[str]) -> int:
    ok_g = g == hand_g
    ok_n = (n is None and not hand_n) or name_matches(n, hand_n)
    return int(ok_g) + int(ok_n)


def pair_order(s: AuditStory, preds: list[tuple[str, str | None]]) -> list[int]:
    """Which prediction (gender, name) goes with each hand slot: in role order, or for an
    unordered Love pair the order that agrees better with the hand labels."""
    order = list(range(len(preds)))
    if s.unordered and len(preds) == 2:
        same = sum(
            _pair_score(preds[k][0], preds[k][1], s.hand_genders[k], s.hand_names[k])
            for k in (0, 1)
        )
        swap = sum(
            _pair_score(preds[1 - k][0], preds[1 - k][1], s.hand_genders[k], s.hand_names[k])
            for k in (0, 1)
        )
        if swap > same:
            order = [1, 0]
    return order


def _records_for(
    s: AuditStory, preds: list[tuple[str, str | None, list[str], dict[str, float], float]]
) -> list[CharRecord]:
    """Pair predictions with the hand slots (best order for unordered Love pairs)."""
    order = pair_order(s, [(p[0], p[1]) for p in preds])
    out = []
    for slot, k in enumerate(order):
        g, n, refs, feats, conf = preds[k]
        out.append(
            CharRecord(s, slot, s.hand_genders[slot], s.hand_names[slot], g, n, feats, conf, refs)
        )
    return out


def predict_audit(
    stories: list[AuditStory], extractor: Extractor, word_list: str
) -> list[CharRecord]:
    """Run the extractor on every story; features come from `extract_features` when the
    extractor has it (the deterministic one), else confidence is the extractor's own."""
    records: list[CharRecord] = []
    with_features = hasattr(extractor, "extract_features")
    for s in stories:
        preds = []
        if with_features:
            pairs = extractor.extract_features(s.story, s.roles, s.scenario)  # type: ignore[attr-defined]
        else:
            pairs = [(c, {}) for c in extractor.extract(s.story, s.roles, s.scenario)]
        by_role = {c.role: (c, f) for c, f in pairs}
        for role in s.roles:
            c, f = by_role.get(role.key) or (CharacterExtraction(role.key, None), {})
            g = c.gender or gender_of(c.reference_words, word_list)
            conf = getattr(c, "confidence", None)
            preds.append((g, c.name, c.reference_words, f, float("nan") if conf is None else conf))
        records += _records_for(s, preds)
    return records


def llm_reference_records(stories: list[AuditStory]) -> list[CharRecord]:
    """The paper's GPT-3.5 labels (`LLM …` columns) as predictions."""
    records: list[CharRecord] = []
    for s in stories:
        preds = [
            (s.llm_genders[k], s.llm_names[k][0] if s.llm_names[k] else None, [], {}, float("nan"))
            for k in range(len(s.roles))
        ]
        records += _records_for(s, preds)
    return records


class AuditTally:
    """Gender and name precision / recall over character records."""

    def __init__(self) -> None:
        self.c: Counter[str] = Counter()

    def add(self, r: CharRecord) -> None:
        c = self.c
        c["chars"] += 1
        pg = r.hand_gender if r.reviewed else r.pred_gender
        pn = (
            (r.hand_names[0] if r.hand_names else None)
            if r.reviewed
            else normalise_name(r.pred_name)
        )
        c["gender_pred"] += pg != UNSPECIFIED
        c["gender_hand"] += r.hand_gender != UNSPECIFIED
        c["gender_ok"] += pg == r.hand_gender != UNSPECIFIED
        c["name_pred"] += pn is not None
        c["name_hand"] += bool(r.hand_names)
        c["name_ok"] += pn is not None and (r.reviewed or name_matches(pn, r.hand_names))
        c["both_right"] += r.right

    def metrics(self) -> dict[str, float]:
        c = self.c

        def ratio(a: str, b: str) -> float:
            return c[a] / c[b] if c[b] else float("nan")

        return {
            "chars": c["chars"],
            "gender_precision": ratio("gender_ok", "gender_pred"),
            "gender_recall": ratio("gender_ok", "gender_hand"),
            "name_precision": ratio("name_ok", "name_pred"),
            "name_recall": ratio("name_ok", "name_hand"),
            "both_right": ratio("both_right", "chars"),
        }


def audit_metrics(records: Iterable[CharRecord]) -> dict[str, dict[str, dict[str, float]]]:
    """Metrics overall, by domain × condition and by model."""
    overall = AuditTally()
    groups: dict[str, AuditTally] = defaultdict(AuditTally)
    models: dict[str, AuditTally] = defaultdict(AuditTally)
    for r in records:
        overall.add(r)
        groups[r.story.group].add(r)
        models[r.story.model].add(r)
    return {
        "overall": {"all": overall.metrics()},
        "by_group": {k: groups[k].metrics() for k in sorted(groups)},
        "by_model": {k: models[k].metrics() for k in sorted(models)},
    }


# ------------------------------------------------------------------ confidence (per fold)


def fit_confidence(records: list[CharRecord], fitted_on: str = "") -> Any:
    """A logistic regression from the extractor's features to "name and gender both
    right", fitted on `records` (the training folds)."""
    from gbdesk.studies.laissez_faire.extract.confidence import ConfidenceModel

    return ConfidenceModel.fit(
        [r.features for r in records], [r.right for r in records], fitted_on=fitted_on
    )


def lomo(
    records: list[CharRecord],
    review_fraction: float = 0.0,
    fold_train: dict[str, list[CharRecord]] | None = None,
) -> dict[str, Any]:
    """Leave-one-model-out: for each model, fit the confidence model on the other
    models' characters, score the held-out model's characters; optionally replace its
    `review_fraction` least-confident characters with the hand labels. `fold_train`
    (held-out model → training characters) gives each fold its own training records
    (when the extraction itself was refitted per fold); default: the other models'
    records of `records`."""
    models = sorted({r.story.model for r in records})
    held: list[CharRecord] = []
    per_model: dict[str, dict[str, float]] = {}
    for m in models:
        if fold_train is not None:
            train = fold_train[m]
        else:
            train = [r for r in records if r.story.model != m]
        test = [
            CharRecord(**{**r.__dict__, "reviewed": False}) for r in records if r.story.model == m
        ]
        if any(r.features for r in train):
            model = fit_confidence(train)
            for r in test:
                r.confidence = model.predict(r.features)
        if review_fraction > 0:
            k = math.ceil(review_fraction * len(test))
            for r in sorted(test, key=lambda r: (r.confidence, r.story.index, r.slot))[:k]:
                r.reviewed = True
        t = AuditTally()
        for r in test:
            t.add(r)
        per_model[m] = t.metrics()
        held += test
    return {"per_model": per_model, "records": held, **audit_metrics(held)}


# ------------------------------------------------------------------ learned decisions


Groups = list[list[tuple[dict[str, float], bool]]]


def learned_rows(stories: list[AuditStory], extractor: Any) -> dict[int, dict[str, Groups]]:
    """story index → the learned decisions' option groups of the story, each option
    (features, right?) by the hand labels. Roles: one group per role; a candidate is
    right for role r when its name matches the hand name of r (`name_matches`), "no
    named character" when r has no hand name. Unordered (Love power-neutral) stories
    give no role groups (the rules pair them)."""
    out: dict[int, dict[str, Groups]] = {}
    for s in stories:
        rows = extractor.training_rows(s.story, s.roles, s.scenario)
        groups: dict[int, list[tuple[dict[str, float], bool]]] = defaultdict(list)
        if not s.unordered:
            for r, name, feats in rows["roles"]:
                hand = s.hand_names[r] if r < len(s.hand_names) else []
                label = name_matches(name, hand) if name is not None else not hand
                groups[r].append((feats, label))
        out[s.index] = {
            "roles": [groups[r] for r in sorted(groups)],
            "pronouns": _pronoun_groups(s, rows),
        }
    return out


_PRONOUN_GENDER = {"M": "Male", "F": "Female"}


def _pronoun_groups(s: AuditStory, rows: dict[str, Any]) -> Groups:
    """Labelled pronoun groups of a two-role story whose characters the hand labels
    give different genders (Female / Male) and whose names the extractor got right
    (an unnamed role: no hand name): a gendered pronoun's candidate is right when it is
    the role character of the pronoun's gender. Groups without exactly one right
    candidate are dropped (the pronoun is a bystander's, or the right one is missing)."""
    if len(s.roles) != 2 or sorted(s.hand_genders) != ["Female", "Male"]:
        return []
    names = rows["role_names"]

    def fits(order: tuple[int, int]) -> bool:
        for r, slot in enumerate(order):
            hand = s.hand_names[slot]
            ok = name_matches(names[r], hand) if names[r] is not None else not hand
            if not ok:
                return False
        return True

    orders = [o for o in ((0, 1), (1, 0)) if fits(o)] if s.unordered else [(0, 1)]
    if len(orders) != 1 or not fits(orders[0]):
        return []
    genders = {r: s.hand_genders[slot] for r, slot in enumerate(orders[0])}
    out: Groups = []
    for gender, group in rows["pronouns"]:
        labelled = [
            (f, r is not None and genders.get(r) == _PRONOUN_GENDER[gender]) for r, f in group
        ]
        if sum(y for _, y in labelled) == 1 and len(labelled) > 1:
            out.append(labelled)
    return out


#: Regularisation (scikit-learn's C) of the learned decisions.
LEARNED_C = {"roles": 0.3, "pronouns": 0.3}


def fit_learned(
    rows: dict[int, dict[str, Groups]], indices: Iterable[int], fitted_on: str = ""
) -> LearnedModels:
    """Fit the learned decisions (`PairModel.fit_ranking`) on the option groups of the
    stories `indices`."""
    parts: dict[str, PairModel] = {}
    for section, c in LEARNED_C.items():
        groups = [g for i in indices for g in rows[i].get(section, [])]
        if groups:
            parts[section] = PairModel.fit_ranking(groups, c=c)
    return LearnedModels(fitted_on=fitted_on, **parts)


def predict_lomo(
    stories: list[AuditStory],
    spec: str,
    weights: dict[str, float],
    word_list: str,
    learned: bool = True,
) -> tuple[list[CharRecord], dict[str, list[CharRecord]]]:
    """Leave-one-model-out predictions: for each model, the learned decisions are
    fitted on the other models' stories and the held-out model's stories are
    extracted with them; the other models' stories are extracted with them too, as the
    fold's training records for the confidence model. Returns (held-out records of
    every model, held-out model → training records). With `learned=False` (or an
    extractor without learned decisions) one rules-only pass serves every fold."""
    base = load_extractor(spec, weights, word_list, learned=RULES_ONLY)
    models = sorted({s.model for s in stories})
    if not learned or not hasattr(base, "training_rows"):
        records = predict_audit(stories, base, word_list)
        return records, {m: [r for r in records if r.story.model != m] for m in models}
    rows = learned_rows(stories, base)
    held: list[CharRecord] = []
    train: dict[str, list[CharRecord]] = {}
    for m in models:
        fold = fit_learned(rows, [s.index for s in stories if s.model != m], f"LOMO fold {m}")
        ex = load_extractor(spec, weights, word_list, learned=fold)
        held += predict_audit([s for s in stories if s.model == m], ex, word_list)
        train[m] = predict_audit([s for s in stories if s.model != m], ex, word_list)
    order = {s.index: k for k, s in enumerate(stories)}
    held.sort(key=lambda r: (order[r.story.index], r.slot))
    return held, train


def reliability(records: list[CharRecord], bins: int = 10) -> tuple[list[dict[str, float]], float]:
    """Bins of confidence (equal width): count, mean confidence, share right; and the
    expected calibration error Σ n_b/N · |share right_b − mean confidence_b|."""
    rows = []
    scored = [r for r in records if r.confidence == r.confidence]
    n = len(scored)
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inb = [
            r for r in scored if lo <= r.confidence < hi or (b == bins - 1 and r.confidence == 1.0)
        ]
        if not inb:
            rows.append(
                {"lo": lo, "hi": hi, "count": 0, "mean_conf": float("nan"), "right": float("nan")}
            )
            continue
        mc = sum(r.confidence for r in inb) / len(inb)
        acc = sum(r.right for r in inb) / len(inb)
        ece += len(inb) / n * abs(acc - mc)
        rows.append({"lo": lo, "hi": hi, "count": len(inb), "mean_conf": mc, "right": acc})
    return rows, ece if n else float("nan")


def worst_calibrated(records: list[CharRecord]) -> tuple[str, dict[str, float]]:
    """The held-out model whose confidences are worst calibrated (highest ECE), and the
    ECE of every model, from LOMO records."""
    by_model = {
        m: reliability([r for r in records if r.story.model == m])[1]
        for m in sorted({r.story.model for r in records})
    }
    return max(by_model, key=lambda m: by_model[m]), by_model


@dataclass
class _Scored:
    """A character's (recalibrated) confidence and whether it is right: what
    `reliability` reads."""

    confidence: float
    right: bool


def _platt(confidence: Any, right: Any) -> Callable[[Any], Any]:
    """Two-parameter Platt scaling (scikit-learn, unpenalised, on the log-odds), for
    comparison with the app's one-parameter shift."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from gbdesk.analysis.label_accuracy import _logit

    y = np.asarray(right, dtype=int)
    if len(set(y.tolist())) < 2:
        return lambda c: np.full(len(c), float(y.mean()))
    model = LogisticRegression(C=1e6, max_iter=1000)
    model.fit(_logit(np.asarray(confidence, dtype=float))[:, None], y)
    return lambda c: model.predict_proba(_logit(np.asarray(c, dtype=float))[:, None])[:, 1]


def _isotonic(confidence: Any, right: Any) -> Callable[[Any], Any]:
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    model.fit(confidence, [float(v) for v in right])
    return model.predict


def _constant(confidence: Any, right: Any) -> Callable[[Any], Any]:
    import numpy as np

    share = sum(bool(v) for v in right) / len(right)
    return lambda c: np.full(len(c), share)


def _unchanged(confidence: Any, right: Any) -> Callable[[Any], Any]:
    import numpy as np

    return lambda c: np.asarray(c, dtype=float)


def recalibration_check(
    records: list[CharRecord], model: str, fraction: float = 0.1, seeds: int = 20
) -> dict[str, Any]:
    """Recalibration on data it was not fitted on: for each seed, a random `fraction` of
    `model`'s stories is "reviewed"; each method is fitted on those stories' characters
    (LOMO confidence, right = name and gender right) and applied to the characters of the
    other stories. Methods: "app" (`gbdesk.analysis.label_accuracy.recalibrate`), two-parameter
    Platt, isotonic regression, "measured" (every character at the sample's share right)
    and "none" (the confidence as it is). Per method and seed: the ECE on the other
    stories' characters, and the estimate's error — mean mapped confidence − share right —
    on them, and again on them less their 10 % least confident characters (as after a
    least-sure-first review, which the share right now counts as right). Returns those
    and the reliability before ("none") and after ("app"), pooled over seeds."""
    import random

    import numpy as np

    from gbdesk.analysis.label_accuracy import recalibrate

    methods = {"app": recalibrate, "platt": _platt, "isotonic": _isotonic,
               "measured": _constant, "none": _unchanged}  # fmt: skip
    chars = [r for r in records if r.story.model == model]
    stories = sorted({r.story.index for r in chars})
    size = max(1, round(fraction * len(stories)))
    pooled: dict[str, list[_Scored]] = {"none": [], "app": []}
    per: dict[str, dict[str, list[float]]] = {
        m: {"ece": [], "gap": [], "gap_rest": []} for m in methods
    }
    fitted = []
    for seed in range(seeds):
        chosen = set(random.Random(seed).sample(stories, size))
        fit = [r for r in chars if r.story.index in chosen]
        rest = [r for r in chars if r.story.index not in chosen]
        fitted.append(len(fit))
        right = np.array([r.right for r in rest], dtype=float)
        conf = np.array([r.confidence for r in rest])
        keep = np.argsort(conf, kind="stable")[len(rest) // 10 :]
        for name, method in methods.items():
            mapped = np.asarray(
                method([r.confidence for r in fit], [r.right for r in fit])(conf), dtype=float
            )
            scored = [_Scored(float(c), bool(y)) for c, y in zip(mapped, right, strict=True)]
            if name in pooled:
                pooled[name] += scored
            per[name]["ece"].append(reliability(scored)[1])  # type: ignore[arg-type]
            per[name]["gap"].append(float(mapped.mean() - right.mean()))
            per[name]["gap_rest"].append(float(mapped[keep].mean() - right[keep].mean()))
    return {
        "model": model,
        "stories": len(stories),
        "fitted_stories": size,
        "fitted_chars": fitted,
        "methods": per,
        "before": reliability(pooled["none"]),  # type: ignore[arg-type]
        "after": reliability(pooled["app"]),  # type: ignore[arg-type]
    }


def format_recalibration(check: dict[str, Any], tables: bool = True) -> str:
    import statistics

    def mean(v: list[float]) -> str:
        return f"{100 * statistics.mean(v):+6.2f}"

    def rmse(v: list[float]) -> str:
        return f"{100 * math.sqrt(statistics.mean(x * x for x in v)):5.2f}"

    n = len(check["fitted_chars"])
    lines = [
        f"{check['model']}: recalibration fitted on a random {check['fitted_stories']} of its "
        f"{check['stories']} stories ({min(check['fitted_chars'])}–{max(check['fitted_chars'])} "
        f"characters), evaluated on its other stories; {n} seeds"
    ]
    if tables:
        lines += [
            "before (LOMO confidence), pooled over seeds:",
            format_reliability(*check["before"]),
            "after (gbdesk.analysis.label_accuracy.recalibrate fitted on the sample), pooled:",
            format_reliability(*check["after"]),
        ]
    lines.append(
        f"  {'method':<10}{'ECE':>7}  {'estimate − truth: mean':>23}{'RMSE':>7}  "
        f"{'after least-sure 10 %: mean':>28}{'RMSE':>7}   (points)"
    )
    for name, v in check["methods"].items():
        lines.append(
            f"  {name:<10}{100 * statistics.mean(v['ece']):7.2f}  {mean(v['gap']):>23}"
            f"{rmse(v['gap']):>7}  {mean(v['gap_rest']):>28}{rmse(v['gap_rest']):>7}"
        )
    return "\n".join(lines)


def _fmt_audit_row(label: str, m: dict[str, float]) -> str:
    return (
        f"{label:<28}{int(m['chars']):>6} | {_pct(m['gender_precision']):>6} "
        f"{_pct(m['gender_recall']):>6} | {_pct(m['name_precision']):>6} "
        f"{_pct(m['name_recall']):>6} | {_pct(m['both_right']):>6}"
    )


def format_audit(title: str, res: dict[str, Any]) -> str:
    header = (
        f"{'':<28}{'chars':>6} | {'gend P':>6} {'gend R':>6} | {'name P':>6} "
        f"{'name R':>6} | {'both':>6}"
    )
    lines = [title, header, "-" * len(header)]
    lines.append(_fmt_audit_row("overall", res["overall"]["all"]))
    for k, m in res["by_group"].items():
        lines.append(_fmt_audit_row(k, m))
    for k, m in res["by_model"].items():
        lines.append(_fmt_audit_row(f"model {k}", m))
    return "\n".join(lines)


def format_reliability(rows: list[dict[str, float]], ece: float) -> str:
    lines = [f"{'confidence':<12}{'count':>7}{'mean conf':>11}{'share right':>13}"]
    for r in rows:
        lines.append(
            f"[{r['lo']:.1f}, {r['hi']:.1f}){'':<2}{r['count']:>7}{_pct(r['mean_conf']):>11}"
            f"{_pct(r['right']):>13}"
        )
    lines.append(f"expected calibration error (ECE): {100 * ece:.2f} points")
    return "\n".join(lines)


def format_audit_errors(
    records: list[CharRecord], k: int, models: set[str] | None, group: str | None
) -> str:
    """The first `k` wrong characters (optionally of some models / one group), by category."""
    bad = [
        r
        for r in records
        if not r.right
        and (models is None or r.story.model in models)
        and (group is None or r.story.group == group)
    ]
    cats: Counter[str] = Counter()
    out = []
    for r in bad:
        cats[error_category(r)] += 1
    for r in bad[:k]:
        s = r.story
        out.append(
            f"--- row {s.index} {s.model} {s.group} slot {r.slot} [{error_category(r)}] "
            f"conf {r.confidence:.2f}"
        )
        out.append(textwrap.fill(s.story, 110))
        out.append(f"  roles: {[x.description for x in s.roles]}")
        out.append(f"  hand: {s.hand_names[r.slot]!r:<30} {r.hand_gender}")
        out.append(f"  pred: {r.pred_name!r:<30} {r.pred_gender:<12} {r.pred_refs}")
    out.append(f"({len(bad)} wrong characters) by category:")
    for cat, n in cats.most_common():
        out.append(f"  {n:5d}  {cat}")
    return "\n".join(out)


def error_category(r: CharRecord) -> str:
    """A short class of what went wrong: "gender Male->Female (swap)", "name name->name
    (other character's)", "name name->name (partial: extra words)", …. Swaps: the
    prediction is what the hand labels say of the story's other character."""
    parts = []
    other = 1 - r.slot if len(r.story.roles) == 2 else None
    if not r.gender_right:
        detail = ""
        if (
            other is not None
            and r.story.hand_genders[other] == r.pred_gender != UNSPECIFIED
            and r.hand_gender != r.pred_gender
        ):
            detail = " (swap)"
        parts.append(f"gender {r.hand_gender}->{r.pred_gender}{detail}")
    if not r.name_right:
        hand = "name" if r.hand_names else "none"
        pred = "none" if normalise_name(r.pred_name) is None else "name"
        detail = ""
        if pred == "name":
            detail = f" ({_name_error_kind(r, other)})"
        parts.append(f"name {hand}->{pred}{detail}")
    return ", ".join(parts)


_TITLE_WORDS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "miss",
        "mx",
        "dr",
        "prof",
        "professor",
        "chef",
        "coach",
        "nurse",
        "officer",
        "captain",
        "detective",
        "sergeant",
        "judge",
        "doc",
        "pastor",
        "reverend",
    }
)


def _name_error_kind(r: CharRecord, other: int | None) -> str:
    """Why a predicted name is wrong: the other character's name, a part or an
    extension of the hand name, or something else."""
    if other is not None and name_matches(r.pred_name, r.story.hand_names[other]):
        return "other character's"
    p = set((normalise_name(r.pred_name) or "").split())
    for h in r.hand_names:
        hw = set((normalise_name(h) or "").split())
        if p < hw:
            return "partial: fewer words"
        if hw < p:
            first = (normalise_name(r.pred_name) or "").split()[0]
            if first not in hw and first.rstrip(".") in _TITLE_WORDS:
                return "partial: extra title"
            return "partial: extra words"
        if p & hw:
            return "partial: other words"
    return "unrelated"


def _parse_weights(items: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        key, _, value = item.partition("=")
        out[key.strip()] = float(value)
    return out


def write_models(args: argparse.Namespace) -> int:
    """Fit the learned decisions (`--write-learned`) and / or the confidence model
    (`--write-confidence`; on the rules-only extraction gbdesk uses, or with `--learned`
    on the extraction with the learned decisions fitted on the same stories) on every
    story of the audit file, and write them."""
    stories = load_audit(args.data)
    weights = _parse_weights(args.weight)
    models = sorted({s.model for s in stories})
    what = f"{len(stories)} hand-labelled stories of {', '.join(models)}"
    learned = RULES_ONLY
    if args.learned or args.write_learned:
        base = load_extractor("deterministic", weights, args.word_list, learned=RULES_ONLY)
        rows = learned_rows(stories, base)
        learned = fit_learned(
            rows,
            [s.index for s in stories],
            f"scripts/eval_extractors.py --write-learned: {what}; extractor "
            f"{base.name} v{base.version}",
        )
        if args.write_learned:
            learned.save(args.write_learned)
            n = {k: sum(len(r.get(k, [])) for r in rows.values()) for k in LEARNED_C}
            print(f"learned decisions fitted on {n} rows -> {args.write_learned}")
    if args.write_confidence:
        use = learned if args.learned else RULES_ONLY
        extractor = load_extractor("deterministic", weights, args.word_list, learned=use)
        records = predict_audit(stories, extractor, args.word_list)
        note = (
            f"scripts/eval_extractors.py --write-confidence: {what} ({len(records)} "
            f"characters); extractor {extractor.name} v{extractor.version}"
            f"{' with learned decisions fitted on the same' if args.learned else ''}, "
            f"word list {args.word_list}"
        )
        model = fit_confidence(records, note)
        model.save(args.write_confidence)
        print(f"confidence model fitted on {len(records)} characters -> {args.write_confidence}")
    return 0


_COUNTER_KEY = re.compile(r"""(?:\{|, )(['"])(.*?)\1: \d+""")


def word_list_agreement(path: str | Path, word_list: str) -> dict[str, float]:
    """Gender from the paper's GPT-3.5 reference lists (`LLM … References`, a printed
    Counter) under `word_list`, scored against the hand genders (precision, recall,
    exact agreement) — a test of the word list that does not depend on our extractor."""
    c: Counter[str] = Counter()
    with open(path, newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            for k in ("Subject", "Object"):
                hand = (rec.get(f"Manual {k} Gender") or "").strip()
                if not hand:
                    continue
                refs = [
                    m.group(2) for m in _COUNTER_KEY.finditer(rec.get(f"LLM {k} References") or "")
                ]
                pred = gender_of(refs, word_list)
                c["n"] += 1
                c["pred"] += pred != UNSPECIFIED
                c["hand"] += hand != UNSPECIFIED
                c["ok"] += pred == hand != UNSPECIFIED
                c["exact"] += pred == hand
    return {
        "chars": c["n"],
        "gender_precision": c["ok"] / c["pred"] if c["pred"] else float("nan"),
        "gender_recall": c["ok"] / c["hand"] if c["hand"] else float("nan"),
        "agreement": c["exact"] / c["n"] if c["n"] else float("nan"),
    }


def run_audit(args: argparse.Namespace) -> int:
    stories = load_audit(args.data)
    if args.limit is not None:
        stories = stories[: args.limit]
    weights = _parse_weights(args.weight)
    ref = llm_reference_records(stories)
    print(format_audit("paper's GPT-3.5 labels (LLM columns), same scoring", audit_metrics(ref)))
    print()
    word_lists = ("code", "paper_s6a") if args.word_list == "both" else (args.word_list,)
    if args.word_list == "both":
        print("word lists on the paper's GPT-3.5 reference lists (hand genders as truth):")
        for wl in word_lists:
            m = word_list_agreement(args.data, wl)
            print(
                f"  {wl:<10} gender P {_pct(m['gender_precision'])}  R "
                f"{_pct(m['gender_recall'])}  exact agreement {_pct(m['agreement'])}"
            )
        print()
    for spec in args.extractor or ["deterministic"]:
        for wl in word_lists:
            records, fold_train = predict_lomo(stories, spec, weights, wl, learned=args.learned)
            res = lomo(records, fold_train=fold_train)
            title = f"{spec} word list {wl} — leave-one-model-out (held-out model scored)"
            print(format_audit(title, res))
            print()
            if res["records"] and res["records"][0].confidence == res["records"][0].confidence:
                rows, ece = reliability(res["records"])
                print("reliability of the confidence (LOMO, pooled held-out characters):")
                print(format_reliability(rows, ece))
                print()
                worst, by_model = worst_calibrated(res["records"])
                print(
                    "ECE per held-out model (LOMO), points: "
                    + ", ".join(f"{m} {100 * e:.2f}" for m, e in by_model.items())
                )
                print(f"reliability of the worst calibrated held-out model, {worst}:")
                print(format_reliability(*reliability(
                    [r for r in res["records"] if r.story.model == worst]
                )))  # fmt: skip
                print()
                for m in [worst, *(m for m in by_model if m != worst)]:
                    check = recalibration_check(
                        res["records"], m, args.recalibration_fraction, args.recalibration_seeds
                    )
                    print(format_recalibration(check, tables=m == worst))
                    print()
            if args.review_fraction:
                rev = lomo(records, args.review_fraction, fold_train=fold_train)
                print(
                    format_audit(
                        f"after reviewing the {100 * args.review_fraction:.0f} % least "
                        "confident characters per held-out model",
                        rev,
                    )
                )
                print()
            if args.show_errors:
                models = set(args.error_models.split(",")) if args.error_models else None
                print(
                    format_audit_errors(res["records"], args.show_errors, models, args.error_group)
                )
            if args.json:
                print(
                    json.dumps(
                        {k: res[k] for k in ("per_model", "overall", "by_group", "by_model")}
                    )
                )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="labelled CSV (audit file or training file)")
    ap.add_argument(
        "--extractor",
        action="append",
        help=f"name ({', '.join(EXTRACTORS)}) or module:Callable; repeatable",
    )
    ap.add_argument("--limit", type=int, default=None, help="first N stories only")
    ap.add_argument("--show-errors", type=int, default=0, metavar="K")
    ap.add_argument(
        "--error-models", default=None, help="audit: show errors of these models only (a,b)"
    )
    ap.add_argument("--error-group", default=None, help='audit: e.g. "Love / power-laden"')
    ap.add_argument(
        "--word-list",
        default=None,
        choices=("code", "paper_s6a", "both"),
        help="gender word list (default: the extractor's default; 'both' compares them)",
    )
    ap.add_argument(
        "--weight",
        action="append",
        metavar="NAME=VALUE",
        help="override one of the deterministic extractor's ExtractorWeights; repeatable",
    )
    ap.add_argument(
        "--review-fraction",
        type=float,
        default=0.0,
        help="audit: replace this share of least-confident characters (per held-out model) "
        "with the hand labels and report the LOMO figures",
    )
    ap.add_argument(
        "--recalibration-fraction",
        type=float,
        default=0.1,
        help="audit: share of a held-out model's stories the recalibration check fits on "
        "(a random review sample; evaluated on the others)",
    )
    ap.add_argument(
        "--recalibration-seeds",
        type=int,
        default=20,
        help="audit: random samples the recalibration check draws per model",
    )
    ap.add_argument(
        "--write-confidence",
        default=None,
        metavar="JSON",
        help="audit: fit the confidence model on all stories and write it to JSON "
        "(resources/laissez_faire/extractor_confidence.json ships one)",
    )
    ap.add_argument(
        "--write-learned",
        default=None,
        metavar="JSON",
        help="audit: fit the extractor's learned decisions (role assignment, pronoun "
        "resolution) on all stories and write them to JSON "
        "(gbdesk ships none; pass LearnedModels to DeterministicExtractor to use them)",
    )
    ap.add_argument(
        "--learned",
        action="store_true",
        help="audit: also use the deterministic extractor's learned decisions (refitted "
        "in each leave-one-model-out fold) where its rules are unsure",
    )
    ap.add_argument("--json", action="store_true", help="print metrics as JSON")
    args = ap.parse_args(argv)

    if is_audit_file(args.data):
        if args.word_list is None:
            args.word_list = DEFAULT_WORD_LIST
        if args.write_confidence or args.write_learned:
            return write_models(args)
        return run_audit(args)

    word_list = args.word_list if args.word_list not in (None, "both") else DEFAULT_WORD_LIST
    rows = load_gold(args.data)
    if args.limit is not None:
        rows = rows[: args.limit]
    results = []
    weights = _parse_weights(args.weight)
    for spec in args.extractor or ["deterministic"]:
        result = evaluate(rows, load_extractor(spec, weights=weights), word_list)
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
