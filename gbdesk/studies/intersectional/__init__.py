"""Intersectional stereotypes (Ma, Chiang, Wu, Wang & Vosoughi, Findings of EMNLP 2023).

The paper builds a dataset and then examines models with it; both are here:

* `intersectional_elicit` (elicitation, §2.2–2.3) and `intersectional_filter` (automatic
  filtering and categories, §2.4; its run is the dataset, validated by people in Review,
  §2.5) — `elicit.py`, `dataset.py`, and the `gbdesk dataset …` commands (`commands.py`);
* `intersectional_sdeg` (§3): simulated roles of each group answer the questions of its
  stereotypes' categories; the stereotype degree (SDeg, `stats`) measures how uniform their
  answers are. Data: `resources/intersectional/`.
"""

from __future__ import annotations

from gbdesk.contract import Study
from gbdesk.studies.intersectional.elicit import ElicitationProbe, FilterProbe
from gbdesk.studies.intersectional.probe import IntersectionalProbe

STUDY = Study(
    name="intersectional",
    title="Intersectional stereotypes",
    probes=(IntersectionalProbe, ElicitationProbe, FilterProbe),
    citation="Ma, Chiang, Wu, Wang & Vosoughi (2023) Intersectional Stereotypes in Large "
    "Language Models: Dataset and Analysis, Findings of EMNLP 2023",
    summary="A stereotype dataset for intersectional groups, built as the paper did (elicit, "
    "filter, validate, categorise), and the stereotype degree: how uniformly simulated "
    "members of each group answer the questions of its stereotypes' categories.",
    order=40,
    commands="gbdesk.studies.intersectional.commands:add_commands",
)
