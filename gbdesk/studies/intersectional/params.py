"""The Intersectional SDeg probe's run parameters: checked when a run is planned, and bound
to a stereotype dataset in the database before its items are listed — the probe's
`Parameters` capability (no Qt)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gbdesk.contract.capabilities import Parameters
from gbdesk.studies.intersectional.dataset import load as load_dataset
from gbdesk.studies.intersectional.dataset import read_file as read_dataset
from gbdesk.studies.intersectional.questions import by_category, paper_bank, read_bank
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import INT64_MAX, whole_number

ATTRIBUTES = ("race", "age", "religion", "gender", "political", "disability")
DESIGNS = {
    "paper": "as the paper: each group is asked only the questions of the categories its "
    "validated stereotypes fall in",
    "all16": "every group is asked every question of the bank (all 16 categories)",
}


def parameters(base: Parameters) -> Parameters:
    """A dataset named by id, "latest" or file is read when the run is planned (`bind`);
    a custom template is checked with "1 Black women"."""
    return base.with_(bind=bind, template_samples=lambda: {"count": 1, "people": "Black women"})


def study_params(
    attributes: Any = None,
    answer_temperature: Any = None,
    dataset: Any = None,
    design: Any = None,
    stereotypes: Any = None,
    questions: Any = None,
) -> dict[str, Any]:
    """The study's own run parameters, checked (`UserError` with one line otherwise): the
    attributes of the groups kept, the answer temperature, the dataset, the design, the
    stereotypes used and the question bank."""
    chosen = attributes
    if isinstance(chosen, str):
        chosen = [a.strip() for a in chosen.split(",") if a.strip()]
    chosen = list(chosen) if chosen else list(ATTRIBUTES)
    unknown = [a for a in chosen if a not in ATTRIBUTES]
    if unknown:
        raise UserError(
            f"unknown attribute(s) {', '.join(unknown)}; choose from {', '.join(ATTRIBUTES)}"
        )
    try:
        temperature = float(answer_temperature if answer_temperature not in (None, "") else 0)
    except ValueError:
        raise UserError("answer_temperature must be a number") from None
    if not math.isfinite(temperature) or temperature < 0:
        raise UserError("answer_temperature must be a finite number ≥ 0")
    ref = dataset_ref(dataset)
    chosen_design = str(design or "auto").strip().casefold()
    if chosen_design not in ("auto", *DESIGNS):
        raise UserError("design must be paper, all16 or auto")
    if chosen_design == "auto":
        chosen_design = "all16" if ref is None else "paper"
    if chosen_design == "paper" and ref is None:
        raise UserError(
            "design=paper asks each group only the categories of its own stereotypes, so "
            "it needs a stereotype dataset: --set dataset=ID (gbdesk dataset build / "
            "import), or design=all16"
        )
    which = str(stereotypes or "validated").strip().casefold()
    if which not in ("validated", "all"):
        raise UserError("stereotypes must be validated or all")
    bank_ref = str(questions or "").strip()
    if bank_ref.casefold() in ("", "dataset"):
        bank = None if ref is not None else paper_bank()
        bank_ref = "dataset" if ref is not None else "paper"
    elif bank_ref.casefold() == "paper":
        bank, bank_ref = paper_bank(), "paper"
    else:
        bank = read_bank(bank_ref)
    return dict(
        attributes=chosen,
        answer_temperature=temperature,
        dataset=ref,
        design=chosen_design,
        stereotypes=which,
        question_bank=bank_ref,
        questions=bank,
    )


def dataset_ref(value: Any) -> int | str | None:
    """None, "latest", a dataset id, or the path of a dataset file."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if text.casefold() in ("", "none"):
        return None
    if text.casefold() == "latest":
        return "latest"
    if text.isdigit():
        try:
            return whole_number(text, minimum=1, maximum=INT64_MAX)
        except ValueError:
            raise UserError(f"dataset {short_repr(text)} is not a run id") from None
    try:
        is_file = Path(text).expanduser().is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL …
        is_file = False
    if is_file:
        return str(Path(text).expanduser().resolve())
    raise UserError(
        f"dataset must be none, latest, a dataset id or a dataset file; {short_repr(text)} "
        "is none of these"
    )


def bind(store: Any, params: dict[str, Any]) -> dict[str, Any]:
    """With a dataset: its groups, and per group the questions the design asks (the
    categories of its stereotypes, or all), with a summary of the dataset (provenance,
    counts, validators' agreement) kept in the run's parameters."""
    ref = params.get("dataset")
    if ref is None:
        return params
    data = (
        read_dataset(ref) if isinstance(ref, str) and ref != "latest" else load_dataset(store, ref)
    )
    bank = params.get("questions") or data.questions
    used = data.usable(params.get("stereotypes", "validated"))
    if not used:
        detail = (
            "no stereotype a majority of validators kept yet (validate it in Review or "
            "with gbdesk dataset validate, or use --set stereotypes=all)"
            if params.get("stereotypes", "validated") == "validated"
            else "no stereotype"
        )
        raise UserError(f"the dataset has {detail}")
    per_category = by_category(bank)
    groups: dict[str, dict[str, Any]] = {}
    for s in used:
        entry = groups.setdefault(s.group, {"group": s.group, "stereotypes": [],
                                            "categories": []})  # fmt: skip
        entry["stereotypes"].append(s.id)
        if s.category and s.category not in entry["categories"]:
            entry["categories"].append(s.category)
    plan = []
    skipped = []
    for g in groups.values():
        if params["design"] == "all16":
            asked = [q["id"] for q in bank]
        else:
            asked = [q["id"] for c in g["categories"] for q in per_category.get(c, [])]
        if not asked:
            skipped.append(g["group"])
            continue
        plan.append({**g, "questions": asked})
    if not plan:
        raise UserError(
            "no group of the dataset has a stereotype with a category the question bank "
            "has questions for"
        )
    summary = data.summary()
    summary["source"] = "file" if data.id is None else "database"
    summary["groups_without_questions"] = skipped
    summary["stereotypes_used"] = len(used)
    return {
        **params,
        "dataset": data.id if data.id is not None else ref,
        "questions": bank,
        "groups_plan": plan,
        "dataset_info": summary,
    }
