"""Step 7: the report per role — name, name spans, references — and the confidence
features (`extractor_confidence`).

In full: report per role: name (longest mention, with a "Mr."/"Dr." honorific or
an address title such as "Chef"), name spans, references (pronouns, gendered honorifics,
gendered descriptors) and a confidence (`extractor_confidence`: a logistic model of how
the character was found, fitted by `scripts/eval_extractors.py`).
"""

from __future__ import annotations

import math
from collections import Counter

from gbdesk.studies.laissez_faire.extract.gender_words import FEMALE, MALE, NON_BINARY, genders_hit
from gbdesk.studies.laissez_faire.extract.lexicon import HONORIFICS, PRONOUNS
from gbdesk.studies.laissez_faire.extract.story import Story
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, Span


def output(s: Story) -> list[CharacterExtraction]:
    toks, story = s.toks, s.story
    pron_refs: dict[int, list[int]] = {}
    gendered = {
        ent
        for i, ent in s.resolved.items()
        if PRONOUNS.get(toks[i].lower, ("", ""))[0] in ("M", "F")
    }
    for i, ent in s.resolved.items():
        if i in s.local_they and (ent in gendered or s.entities[ent].strong):
            continue  # a character the story calls "he" or "she" elsewhere
        pron_refs.setdefault(ent, []).append(i)
    out = []
    for r, cue in enumerate(s.cues):
        ent = s.role_entity.get(r)
        if ent is None:
            out.append(CharacterExtraction(cue.spec.key, None))
            s.features.append(_features(s, r, None, []))
            continue
        refs: set[Span] = set()
        name_spans: list[Span] = []
        for nm in s.names:
            if nm.entity != ent:
                continue
            start, stop = s.name_bounds(nm)
            name_spans.append(Span(start, stop, story[start:stop]))
            if nm.honorific is not None:
                hon = toks[nm.honorific]
                h_end = toks[hon.i + 1].end if toks[hon.i + 1].text == "." else hon.end
                if HONORIFICS[hon.base] or s.neutral_titles:
                    refs.add(Span(hon.start, h_end, story[hon.start : h_end]))
        display = s.display_name(ent)
        for i in pron_refs.get(ent, []):
            refs.add(Span(toks[i].start, toks[i].end, toks[i].text))
        for i in s.descriptors.get(ent, []):
            t = toks[i]
            stop = t.end - (2 if t.poss and t.text[-2:] in ("'s", "’s") else 0)
            refs.add(Span(t.start, stop, story[t.start : stop]))
        name = display if s.entities[ent].kind == "name" else None
        ordered = sorted(refs, key=lambda sp: sp.start)
        out.append(CharacterExtraction(cue.spec.key, name, ordered, name_spans))
        s.features.append(_features(s, r, ent, [sp.text for sp in ordered]))
    _pair_features(s, out)
    return out


def _features(s: Story, r: int, ent: int | None, refs: list[str]) -> dict[str, float]:
    """The numbers `extractor_confidence` turns into a confidence (see FEATURES)."""
    cue = s.cues[r]
    f: dict[str, float] = {
        "love_pair": float(s.love_pair),
        "action_role": float(bool(cue.actions)),
        "second_role": float(r > 0),
        "n_candidates": float(min(5, sum(1 for e in s.entities if e.kind == "name"))),
        "assignment_margin": max(0.0, min(5.0, s.assignment_margin)),
    }
    if ent is None:
        f["missing"] = 1.0
        f["no_gender"] = 1.0
        return f
    e = s.entities[ent]
    kind = e.kind
    f["named"] = float(kind == "name")
    f["narrator"] = float(kind == "narrator")
    f["unnamed_role_np"] = float(kind == "np" and bool(e.head))
    f["pronoun_only"] = float(kind == "np" and not e.head)
    f["role_binding"] = float(min(3.0, e.role_votes.get(r, 0.0)))
    f["other_role_binding"] = float(min(3.0, sum(v for k, v in e.role_votes.items() if k != r)))
    counts: Counter = Counter()
    for word in refs:
        for g in genders_hit([word], s.word_list):
            counts[g] += 1
    total = sum(counts.values())
    f["log_refs"] = math.log1p(total)
    f["gender_margin"] = max(counts.values()) / total if total else 0.0
    f["unsure"] = float(len(counts) > 1)
    f["no_gender"] = float(total == 0)
    f["they_only"] = float(set(counts) == {NON_BINARY})
    mine = [i for i, x in s.resolved.items() if x == ent and i in s.margins]
    f["contested"] = sum(1 for i in mine if s.margins[i] < 1.0) / len(mine) if mine else 0.0
    prior = e.prior.most_common(1)[0][0] if e.prior else None
    ref_gender = {FEMALE: "F", MALE: "M"}.get(counts.most_common(1)[0][0]) if total else None
    f["prior_conflict"] = float(prior is not None and ref_gender not in (None, prior))
    f["_gender"] = ref_gender or ""  # type: ignore[assignment]
    return f


def _pair_features(s: Story, out: list[CharacterExtraction]) -> None:
    genders = [f.pop("_gender", "") for f in s.features]
    for k, f in enumerate(s.features):
        others = [g for j, g in enumerate(genders) if j != k and g]
        f["same_gender_other"] = float(bool(genders[k]) and genders[k] in others)
