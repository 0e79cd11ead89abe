"""GenderBench (Pikuliak et al. 2025): character-profile probes scored by pronoun counting,
and the other probes of its 1.1.0 harness.

Probes: `inventories` (BSRI, EPAQ, Gaucher traits), `jobs_lum` (Kennison occupations),
`gest_creative` (GEST mottos); shared labels, marks and metrics in `common`, the pronoun
detector in `pronouns`, the review view in `_qt`. 1.1.0's probes on `gb_probe`:
`dreaddit` (stress of a post's writer by gender), `isear` (emotions by role-played
gender), `business_vocabulary` (gendered words in business texts). Data:
`resources/genderbench/`.
"""

from __future__ import annotations

from gbdesk.studies.base import Study
from gbdesk.studies.genderbench.business_vocabulary import BusinessVocabularyProbe
from gbdesk.studies.genderbench.dreaddit import DreadditProbe
from gbdesk.studies.genderbench.gest_creative import GestCreativeProbe
from gbdesk.studies.genderbench.inventories import InventoriesProbe
from gbdesk.studies.genderbench.isear import IsearProbe
from gbdesk.studies.genderbench.jobs_lum import JobsLumProbe

STUDY = Study(
    name="genderbench",
    title="GenderBench",
    probes=(
        InventoriesProbe,
        JobsLumProbe,
        GestCreativeProbe,
        DreadditProbe,
        IsearProbe,
        BusinessVocabularyProbe,
    ),
    citation="Pikuliak et al. (2025) GenderBench: A Resource for Evaluating Gender Biases in "
    "LLMs; github.com/matus-pikuliak/genderbench",
    summary="Character profiles from stereotyped traits, occupations and mottos; gender from "
    "pronouns; rates with GenderBench's marks.",
    order=10,
)
