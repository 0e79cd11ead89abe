"""GlobalBias (Siddique, Turner & Espinosa-Anke, EMNLP 2024).

Probes: `globalbias_apx` (perplexity of name × descriptor sentences → APX associations,
`apx` + `apx_stats`) and `globalbias_profiles` (character profiles → SVM, ablation,
Jensen–Shannon top words, `profiles` + `profiles_stats`). Data: `resources/globalbias/`.
"""

from __future__ import annotations

from gbdesk.contract import Study
from gbdesk.studies.globalbias.apx import GlobalBiasApxProbe
from gbdesk.studies.globalbias.profiles import GlobalBiasProfilesProbe

STUDY = Study(
    name="globalbias",
    title="GlobalBias",
    probes=(GlobalBiasApxProbe, GlobalBiasProfilesProbe),
    citation="Siddique, Turner & Espinosa-Anke (2024) Who is better at math, Jenny or "
    "Jingzhen? Uncovering Stereotypes in Large Language Models, EMNLP 2024",
    summary="Name–descriptor associations by perplexity, and what character profiles reveal "
    "about a name's group.",
    order=30,
)
