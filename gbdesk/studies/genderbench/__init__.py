"""GenderBench (Pikuliak et al. 2025): the fourteen probes of its 1.1.0 harness.

The probes are in `probes/`, one folder each as upstream keeps them (`probe.py`: items,
evaluator, metric calculator; `card.toml`, read by `card.py`: the card, metrics and labels
as data; `words.py`: its sentences); what they share is here. Every probe is a
`gb_probe.GenderBenchProbe` (1.1.0's probe shape: evaluator, metric calculator, its
bootstrap and marks — with `resampling` for intervals and `words` for the shared
wording) and declares each of its metrics once (`metric.Metric`: title, card words,
marks, bounds, headline rank, Report 1.1 section and normalization), from which
its marks, headline, titles, card and Report 1.1's tables are derived. Outcome disparity —
`discrimination_tamkin`, `hiring_an`, `hiring_bloomberg`, `relationship_levy`,
`diversity_med_qa`; stereotypical reasoning — `bbq`, `business_vocabulary`, `direct`,
`dreaddit`, `gest`, `isear`; character profiles scored by pronoun counting —
`inventories` (BSRI, EPAQ, Gaucher traits), `jobs_lum` (Kennison occupations),
`gest_creative` (GEST mottos), on `common.CharacterProfileProbe` with the pronoun
detector in `pronouns`. Data several probes read is loaded once in `data`. The harness
(`genderbench-1.1`: every probe with 1.1.0's template preset and sizes) is an audit, and
`report11` is GenderBench's Report 1.1 over several models. Review views in `_qt`; data
in `resources/genderbench/`; nltk's tokenizer offline in `tokenize`.
"""

from __future__ import annotations

from gbdesk.contract import Harness, Study
from gbdesk.studies.genderbench.metric import HARM_SECTIONS
from gbdesk.studies.genderbench.report11 import CHART_CONFIG, HARNESS, HARNESS_PROBES, SECTIONS

#: the character-profile probes first (GenderBench's oldest), then the others in 1.1.0's order
_FIRST = ("inventories", "jobs_lum", "gest_creative")
PROBES = tuple(
    sorted(HARNESS, key=lambda p: _FIRST.index(p.name) if p.name in _FIRST else len(_FIRST))
)

STUDY = Study(
    name="genderbench",
    title="GenderBench",
    probes=PROBES,
    citation="Pikuliak et al. (2025) GenderBench: A Resource for Evaluating Gender Biases in "
    "LLMs; github.com/matus-pikuliak/genderbench",
    summary="GenderBench 1.1's fourteen probes: hiring, loan and medical decisions by gender; "
    "stereotypes in multiple-choice, yes/no and scoring tasks; character profiles from "
    "stereotyped traits, occupations and mottos; marks A–D and Report 1.1's normalized table.",
    order=10,
    cross_run_report="gbdesk.studies.genderbench.report11:build",
    harnesses=(
        Harness(
            "genderbench-1.1",
            "GenderBench 1.1 harness",
            HARNESS_PROBES,
            template="genderbench-1.1",
            description="GenderBench 1.1.0's DefaultHarness: its fourteen probes with "
            "their templates, items and repetitions, reported by harm as in its Report 1.1.",
            sections=tuple((HARM_SECTIONS[s], tuple(CHART_CONFIG[s])) for s in SECTIONS),
        ),
    ),
)
