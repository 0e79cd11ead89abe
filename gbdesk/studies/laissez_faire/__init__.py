"""Laissez-Faire harms (Shieh, Vassel, Sugimoto & Monroe-White 2024).

Probe `laissez_faire`: short stories → characters (extractors in `extract/`: the default
deterministic one and the paper's labelling prompt on a labeler model, `labeling`),
gender from referring words, race from first names (`name_race`) → representation and
subordination ratios (`stats`). Data: `resources/laissez_faire/`, `resources/name_race/`.
"""

from __future__ import annotations

from gbdesk.contract import Study
from gbdesk.studies.laissez_faire.probe import LaissezFaireProbe

STUDY = Study(
    name="laissez_faire",
    title="Laissez-Faire harms",
    probes=(LaissezFaireProbe,),
    citation="Shieh, Vassel, Sugimoto & Monroe-White (2024) Laissez-Faire Harms: Algorithmic "
    "Biases in Generative Language Models, arXiv:2404.07475",
    summary="Who appears in short stories, and in which role: omission and subordination by "
    "gender, race (from first names) and couple type.",
    order=20,
)
