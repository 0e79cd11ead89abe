"""GenderBench (Pikuliak et al. 2025): character-profile probes scored by pronoun counting.

Probes: `inventories` (BSRI, EPAQ, Gaucher traits), `jobs_lum` (Kennison occupations),
`gest_creative` (GEST mottos); shared labels, marks and metrics in `common`, the pronoun
detector in `pronouns`, the review view in `_qt`. Data: `resources/genderbench/`.
"""

from __future__ import annotations

from gbdesk.studies.base import Harness, Study
from gbdesk.studies.genderbench.gest_creative import GestCreativeProbe
from gbdesk.studies.genderbench.inventories import InventoriesProbe
from gbdesk.studies.genderbench.jobs_lum import JobsLumProbe
from gbdesk.studies.genderbench.report11 import HARNESS_PROBES

STUDY = Study(
    name="genderbench",
    title="GenderBench",
    probes=(InventoriesProbe, JobsLumProbe, GestCreativeProbe),
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
