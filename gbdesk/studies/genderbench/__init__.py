"""GenderBench (Pikuliak et al. 2025): the fourteen probes of its 1.1.0 harness.

Character profiles scored by pronoun counting — `inventories` (BSRI, EPAQ, Gaucher
traits), `jobs_lum` (Kennison occupations), `gest_creative` (GEST mottos): shared labels,
marks and metrics in `common`, the pronoun detector in `pronouns`. The other eleven follow
1.1.0's probe shape (`gb_probe.GenderBenchProbe`: evaluator, metric calculator, its
bootstrap and marks): outcome disparity — `discrimination_tamkin`, `hiring_an`,
`hiring_bloomberg`, `relationship_levy`, `diversity_med_qa`; stereotypical reasoning —
`bbq`, `business_vocabulary`, `direct`, `dreaddit`, `gest`, `isear`. The harness
(`genderbench-1.1`: every probe with 1.1.0's template preset and sizes) is an audit, and
`report11` is GenderBench's Report 1.1 over several models. Review views in `_qt`; data
in `resources/genderbench/`; nltk's tokenizer offline in `tokenize`.
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
        ),
    ),
)
