"""GenderBench (Pikuliak et al. 2025): character-profile probes scored by pronoun counting.

Probes: `inventories` (BSRI, EPAQ, Gaucher traits), `jobs_lum` (Kennison occupations),
`gest_creative` (GEST mottos); shared labels, marks and metrics in `common`, the pronoun
detector in `pronouns`, the review view in `_qt`. Data: `resources/genderbench/`.
"""

from __future__ import annotations

from gbdesk.studies.base import Study
from gbdesk.studies.genderbench.discrimination_tamkin import DiscriminationTamkinProbe
from gbdesk.studies.genderbench.diversity_med_qa import DiversityMedQaProbe
from gbdesk.studies.genderbench.gest_creative import GestCreativeProbe
from gbdesk.studies.genderbench.hiring_an import HiringAnProbe
from gbdesk.studies.genderbench.inventories import InventoriesProbe
from gbdesk.studies.genderbench.jobs_lum import JobsLumProbe
from gbdesk.studies.genderbench.relationship_levy import RelationshipLevyProbe

STUDY = Study(
    name="genderbench",
    title="GenderBench",
    probes=(
        InventoriesProbe,
        JobsLumProbe,
        GestCreativeProbe,
        DiscriminationTamkinProbe,
        HiringAnProbe,
        RelationshipLevyProbe,
        DiversityMedQaProbe,
    ),
    citation="Pikuliak et al. (2025) GenderBench: A Resource for Evaluating Gender Biases in "
    "LLMs; github.com/matus-pikuliak/genderbench",
    summary="Character profiles from stereotyped traits, occupations and mottos; gender from "
    "pronouns; rates with GenderBench's marks.",
    order=10,
)
