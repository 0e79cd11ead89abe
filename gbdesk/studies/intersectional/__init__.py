"""Intersectional stereotypes (Ma, Chiang, Wu, Wang & Vosoughi, Findings of EMNLP 2023).

Probe `intersectional_sdeg`: simulated roles of intersectional groups answer category
questions in character; the stereotype degree (SDeg, `stats`) measures how uniform their
answers are. Data: `resources/intersectional/`.
"""

from __future__ import annotations

from gbdesk.studies.base import Study
from gbdesk.studies.intersectional.probe import IntersectionalProbe

STUDY = Study(
    name="intersectional",
    title="Intersectional stereotypes",
    probes=(IntersectionalProbe,),
    citation="Ma, Chiang, Wu, Wang & Vosoughi (2023) Deciphering Stereotypes in Pre-Trained "
    "Language Models, Findings of EMNLP 2023",
    summary="Roles of 106 intersectional groups answer 16 category questions; the stereotype "
    "degree measures how uniform their answers are.",
    order=40,
)
