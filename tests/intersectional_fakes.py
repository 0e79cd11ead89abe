"""A fake model for building an intersectional stereotype dataset (no model loaded).

`dataset_answer(content, seed)` answers every prompt of the dataset pipeline from the
prompt's text alone (so it also serves `FakeOpenAIServer` for CLI tests):

* elicitation: three stereotypes per group, "Stereotype 0/1/2 of <people>";
* filter: "Stereotype 1 …" applies to a broader group (the first one the prompt offers —
  the largest: for a 3-attribute group another intersectional group, for a 2-attribute
  group a single attribute), the others are specific to the group;
* category: "Stereotype 0 …" → Religiosity, others → Socio-economic Status;
* role: "A role (seed <its seed>): <the role prompt>";
* answers: the first option, except for roles of women, who answer by their role's seed's
  parity (first or second option) — so groups of women have a lower SDeg.
"""

from __future__ import annotations

import json
import re

from gbdesk.engine.base import EngineInfo, GenerationResult

CATEGORY_OF = {"0": "Religiosity"}
DEFAULT_CATEGORY = "Socio-economic Status"


def dataset_answer(content: str, seed: int = 0) -> str:
    if "What are the common stereotypes about" in content:
        people = re.search(r"common stereotypes about (.+?)\?", content).group(1)
        items = [
            {"stereotype": f"Stereotype {k} of {people}", "explanation": f"explanation {k}"}
            for k in range(3)
        ]
        return json.dumps({"stereotypes": items})
    if '"applies_to_broader_group"' in content:
        choices = re.search(r"\(one of: (.+?); \"none\"", content).group(1).split(", ")
        if "Stereotype: Stereotype 1" in content:
            return json.dumps(
                {
                    "applies_to_broader_group": True,
                    "broader_group": choices[0],
                    "explanation": "it is said of a broader group too",
                }
            )
        return json.dumps(
            {"applies_to_broader_group": False, "broader_group": "none", "explanation": "only them"}
        )
    if content.startswith("Which category"):
        k = re.search(r"Stereotype: Stereotype (\d)", content).group(1)
        return json.dumps({"category": CATEGORY_OF.get(k, DEFAULT_CATEGORY)})
    if content.startswith("Generate the experiences"):
        return f"A role (seed {seed}): " + content[:60]
    found = re.search(r"Answer with one of: (.+)\.$", content, re.DOTALL)
    if found is None:  # an endpoint's check that it decodes under a schema ("Say OK.")
        return "{}"
    options = found.group(1).split(", ")
    if re.search(r"\bwoman\b", content):
        return json.dumps(options[int(re.search(r"seed (\d+)", content).group(1)) % 2])
    return json.dumps(options[0])


class DatasetBackend:
    """`dataset_answer` as an engine backend (`execute_run(..., backend_factory=...)`)."""

    def __init__(self) -> None:
        self.requests: list = []
        self.info = EngineInfo(backend="fake", model_name="fake", prompt_mode="chat")

    def generate(self, request, on_token=None) -> GenerationResult:
        self.requests.append(request)
        text = dataset_answer(request.messages[-1]["content"], request.seed)
        return GenerationResult(text, 10, 3, 0.01, "stop", "chat")

    def close(self) -> None:
        pass


def write_decisions(path, rows, header=("stereotype_id", "common", "specific")) -> None:
    """A validator's CSV file."""
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
