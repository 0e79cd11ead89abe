"""GenderBench (Pikuliak et al. 2025): the fourteen probes of its 1.1.0 harness.

Character-profile probes scored by pronoun counting: `inventories` (BSRI, EPAQ, Gaucher
traits), `jobs_lum` (Kennison occupations), `gest_creative` (GEST mottos); shared labels,
marks and metrics in `common`, the pronoun detector in `pronouns`, the review view in
`_qt`. 1.1.0's other eleven probes build on `gb_probe`, one module each (e.g. `dreaddit`,
`isear`, `business_vocabulary`); Report 1.1 over several models in `report11`. Data:
`resources/genderbench/`.
"""

from __future__ import annotations

from gbdesk.studies.base import Harness, Study
from gbdesk.studies.genderbench.bbq import BbqProbe
from gbdesk.studies.genderbench.business_vocabulary import BusinessVocabularyProbe
from gbdesk.studies.genderbench.direct import DirectProbe
from gbdesk.studies.genderbench.discrimination_tamkin import DiscriminationTamkinProbe
from gbdesk.studies.genderbench.diversity_med_qa import DiversityMedQaProbe
from gbdesk.studies.genderbench.dreaddit import DreadditProbe
from gbdesk.studies.genderbench.gest import GestProbe
from gbdesk.studies.genderbench.gest_creative import GestCreativeProbe
from gbdesk.studies.genderbench.hiring_an import HiringAnProbe
from gbdesk.studies.genderbench.hiring_bloomberg import HiringBloombergProbe
from gbdesk.studies.genderbench.inventories import InventoriesProbe
from gbdesk.studies.genderbench.isear import IsearProbe
from gbdesk.studies.genderbench.jobs_lum import JobsLumProbe
from gbdesk.studies.genderbench.relationship_levy import RelationshipLevyProbe
from gbdesk.studies.genderbench.report11 import HARNESS_PROBES

STUDY = Study(
    name="genderbench",
    title="GenderBench",
    probes=(
        InventoriesProbe,
        JobsLumProbe,
        GestCreativeProbe,
        BbqProbe,
        BusinessVocabularyProbe,
        DirectProbe,
        DiscriminationTamkinProbe,
        DiversityMedQaProbe,
        DreadditProbe,
        GestProbe,
        HiringAnProbe,
        HiringBloombergProbe,
        IsearProbe,
        RelationshipLevyProbe,
    ),
    citation="Pikuliak et al. (2025) GenderBench: A Resource for Evaluating Gender Biases in "
    "LLMs; github.com/matus-pikuliak/genderbench",
    summary="Character profiles from stereotyped traits, occupations and mottos; gender from "
    "pronouns; rates with GenderBench's marks.",
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
        ),
    ),
)
