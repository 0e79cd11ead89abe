"""The stereotype dataset as an artefact: validation, agreement, categories, export and import.

A dataset is an `intersectional_filter` run (built from an elicitation run, or imported
from a file): each of its items is one stereotype (id = item key, e.g. ``s0007``), its
automatic label the filter's verdict and suggested category, and each validator's
decisions are human labels (source ``human:<validator>``) with data
{"common": "yes"/"no", "specific": "a"/"b", "category": a category name}. The latest
decision of each validator counts.

Rules (§2.5 of the paper, and where it is silent, ours — all stated in the report):

* a stereotype is **in the dataset** unless the filter moved it out ("out"); one the filter
  moved to a broader intersectional group belongs to that group ("moved");
* it is **kept** (the validated dataset) when a strict majority of the validators who
  answered judged it common (yes) and a strict majority judged it exclusive to its group (a);
* its **category** is the one most of its validators chose (ties: the model's suggestion if
  among the tied, else the lowest category number); without validators' categories, the
  one an imported file gave, else the model's suggestion;
* **agreement** per question over the stereotypes in the dataset: Fleiss' κ
  (`gbdesk.maths.agreement.fleiss_kappa`, statsmodels) and the share the majority judged common
  (commonality) or exclusive (group-specificity) — the paper's "agreed upon by at least two
  out of three validators as being commonly observed" (98.33 %) and "… target the specified
  intersectional groups" (80.21 %). `percent_agreement(...).at_least` is reported too: with
  three validators and two answers, some two always agree, so its k = 2 share is 1 by
  construction and cannot be the paper's figure.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk import __version__
from gbdesk.studies.intersectional.data import human_labels_by_validator
from gbdesk.studies.intersectional.validation import decision_text, human_decision
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import INT64_MAX, loads_json, whole_number

log = logging.getLogger(__name__)

FORMAT = "gbdesk-intersectional-dataset/1"
QUESTIONS = {"commonality": "common", "group_specificity": "specific"}
POSITIVE = {"common": "yes", "specific": "a"}
IMPORT_SOURCE = "dataset_import/1"
CSV_COLUMNS = (
    "stereotype_id", "group", "stereotype", "explanation", "category", "category_source",
    "category_suggested", "elicited_for", "status", "filter_broader", "filter_broader_group",
    "filter_explanation", "validated", "common_yes", "common_no", "specific_a", "specific_b",
    "validations", "elicited_by", "filtered_by",
)  # fmt: skip
STATUSES = ("kept", "moved", "out", "unparsed", "unfiltered", "pending")


@dataclass
class Validation:
    validator: str
    common: str | None
    specific: str | None
    category: str | None
    at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "validator": self.validator,
            "common": self.common,
            "specific": self.specific,
            "category": self.category,
            "at": self.at,
        }


@dataclass
class Stereotype:
    id: str
    group: str  # the group it belongs to now (the broader one when the filter moved it)
    elicited_for: str
    stereotype: str
    explanation: str
    status: str  # see STATUSES
    filter: dict[str, Any] = field(default_factory=dict)
    category_suggested: str | None = None
    category_imported: str | None = None
    validations: dict[str, Validation] = field(default_factory=dict)
    attempt_id: int | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def in_dataset(self) -> bool:
        """Not moved out by the filter, and screened (or imported without a verdict)."""
        return self.status not in ("out", "pending")

    def votes(self, question: str) -> Counter:
        return Counter(
            getattr(v, question) for v in self.validations.values() if getattr(v, question)
        )

    def majority(self, question: str) -> str | None:
        """The answer more than half of the validators who answered gave, or None."""
        votes = self.votes(question)
        total = sum(votes.values())
        for value, n in votes.items():
            if 2 * n > total:
                return value
        return None

    @property
    def validated(self) -> str:
        """ "kept", "rejected", "pending" (no majority on a question yet) or "out"."""
        if not self.in_dataset:
            return "out"
        common, specific = self.majority("common"), self.majority("specific")
        if common == "no" or specific == "b":
            return "rejected"
        if common == "yes" and specific == "a":
            return "kept"
        return "pending"

    @property
    def category(self) -> str | None:
        chosen = Counter(v.category for v in self.validations.values() if v.category)
        if chosen:
            top = max(chosen.values())
            tied = [c for c, n in chosen.items() if n == top]
            if self.category_suggested in tied:
                return self.category_suggested
            from gbdesk.studies.intersectional.questions import find_category

            return min(tied, key=lambda c: (find_category(c) or {"id": 99})["id"])
        return self.category_imported or self.category_suggested

    @property
    def category_source(self) -> str:
        if any(v.category for v in self.validations.values()):
            return "validators"
        if self.category_imported:
            return "imported"
        return "model" if self.category_suggested else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "stereotype_id": self.id,
            "group": self.group,
            "stereotype": self.stereotype,
            "explanation": self.explanation,
            "category": self.category,
            "category_source": self.category_source,
            "category_suggested": self.category_suggested,
            "elicited_for": self.elicited_for,
            "status": self.status,
            "filter": self.filter,
            "validated": self.validated,
            "validations": [v.to_json() for v in self.validations.values()],
            "provenance": self.provenance,
        }


@dataclass
class Dataset:
    id: int | None  # the filter run; None for a dataset read from a file
    provenance: dict[str, Any]
    questions: list[dict[str, Any]]
    stereotypes: list[Stereotype]

    def validators(self) -> list[str]:
        names: dict[str, None] = {}
        for s in self.stereotypes:
            names.update(dict.fromkeys(s.validations))
        return list(names)

    def usable(self, which: str = "validated") -> list[Stereotype]:
        """The stereotypes an examination uses: "validated" (kept by the validators'
        majority) or "all" (every stereotype in the dataset, validated or not)."""
        if which == "all":
            return [s for s in self.stereotypes if s.in_dataset]
        if which != "validated":
            raise UserError("stereotypes must be validated or all")
        return [s for s in self.stereotypes if s.validated == "kept"]

    def counts(self) -> dict[str, Any]:
        status = Counter(s.status for s in self.stereotypes)
        validated = Counter(s.validated for s in self.stereotypes)
        in_dataset = [s for s in self.stereotypes if s.in_dataset]
        sources = Counter(s.category_source or "none" for s in in_dataset)
        return {
            "stereotypes": len(self.stereotypes),
            "in_dataset": len(in_dataset),
            "groups": len({s.group for s in in_dataset}),
            "groups_elicited": len({s.elicited_for for s in self.stereotypes}),
            "filtered_out": status["moved"] + status["out"],
            "moved": status["moved"],
            "out": status["out"],
            "unparsed_verdicts": status["unparsed"],
            "pending_filter": status["pending"],
            "kept": validated["kept"],
            "rejected": validated["rejected"],
            "not_yet_decided": validated["pending"],
            "kept_groups": len({s.group for s in self.stereotypes if s.validated == "kept"}),
            "validators": self.validators(),
            "categories_by": dict(sources),
        }

    def summary(self) -> dict[str, Any]:
        """Counts, provenance and agreement (what an examination run keeps of it)."""
        return {
            "id": self.id,
            "provenance": self.provenance,
            "counts": self.counts(),
            "agreement": agreement(self),
        }


# -- loading from the store ---------------------------------------------------------------------
def _filter_probe_name() -> str:
    from gbdesk.studies.intersectional.elicit import FilterProbe

    return FilterProbe.name


def resolve_id(store: Any, ref: Any) -> int:
    """A dataset's run id from an id or "latest"."""
    from gbdesk.studies.intersectional.elicit import latest_run

    text = str(ref).strip()
    if text.casefold() == "latest":
        return latest_run(store, _filter_probe_name(), complete=False)
    try:
        number = whole_number(text, minimum=1, maximum=INT64_MAX)
    except ValueError:
        number = None
    if number is None:
        raise UserError(f"{short_repr(text)} is not a dataset id (a number, or latest)")
    run = store.get_run(number)
    if run["probe"] != _filter_probe_name():
        raise UserError(
            f"run {number} is a {run['probe']} run, not a dataset (an {_filter_probe_name()} "
            "run: see gbdesk dataset list)"
        )
    return number


def load(store: Any, ref: Any) -> Dataset:
    """The dataset of a filter run (id or "latest"), with every validator's decisions."""
    from gbdesk.analysis.results import ensure_auto_labels
    from gbdesk.studies.intersectional.questions import paper_bank

    run_id = resolve_id(store, ref)
    run = store.get_run(run_id)
    ensure_auto_labels(store, run_id)
    params = run["params"]
    auto = store.labels(run_id, "auto")
    human = human_labels_by_validator(store, run_id)
    first: dict[str, dict[str, Any]] = {}
    for attempt in store.attempts(run_id):
        if attempt["item"] not in first or attempt["attempt"] < first[attempt["item"]]["attempt"]:
            first[attempt["item"]] = attempt
    model = store.get_model(run["model_id"]) if run.get("model_id") else {}
    stereotypes = []
    for item in store.run_items(run_id):
        meta = item["metadata"]
        attempt = first.get(item["item"])
        label = auto.get(attempt["id"]) if attempt else None
        data = (label or {}).get("data") or {}
        status = data.get("status") or (label or {}).get("label") or "pending"
        if status not in STATUSES:
            status = "unfiltered"
        validations = {}
        for validator, entry in (human.get(attempt["id"], {}) if attempt else {}).items():
            d = entry["data"]
            validations[validator] = Validation(
                validator, d.get("common"), d.get("specific"), d.get("category"), entry["at"]
            )
        stereotypes.append(
            Stereotype(
                id=item["item"],
                group=data.get("group") or meta.get("group"),
                elicited_for=meta.get("group"),
                stereotype=meta.get("stereotype", ""),
                explanation=meta.get("explanation", ""),
                status=status,
                filter={k: data.get(k) for k in ("broader", "broader_group", "explanation")},
                category_suggested=data.get("category_suggested"),
                category_imported=meta.get("category_imported"),
                validations=validations,
                attempt_id=attempt["id"] if attempt else None,
                provenance=meta.get("provenance") or {},
            )
        )
    provenance = {
        **(params.get("provenance") or {}),
        "dataset_id": run_id,
        "filter_run": run_id if run["source"] == "generated" else None,
        "filtered_by": (params.get("provenance") or {}).get("filtered_by") or model.get("name"),
        "filtered_at": (params.get("provenance") or {}).get("filtered_at")
        or run.get("finished_at")
        or run.get("created_at"),
        "filter_prompt": params.get("template_name"),
        "source": run["source"],
    }
    if params.get("imported_from"):
        provenance["imported_from"] = params["imported_from"]
    return Dataset(run_id, provenance, params.get("questions") or paper_bank(), stereotypes)


# -- agreement ------------------------------------------------------------------------------
def ratings(
    dataset: Dataset, question: str, everywhere: bool = False
) -> list[tuple[str, str, str]]:
    """(stereotype id, validator, answer) of one question ("common" or "specific") over the
    stereotypes in the dataset (`everywhere`: over every stereotype, also those the filter
    moved out)."""
    return [
        (s.id, v.validator, getattr(v, question))
        for s in dataset.stereotypes
        if everywhere or s.in_dataset
        for v in s.validations.values()
        if getattr(v, question)
    ]


def _figures(
    dataset: Dataset, question: str, everywhere: bool = False
) -> tuple[dict[str, Any], list[Stereotype]]:
    from gbdesk.maths.agreement import agreement_summary

    rated = [
        s for s in dataset.stereotypes if (everywhere or s.in_dataset) and s.votes(question)
    ]
    return agreement_summary(ratings(dataset, question, everywhere)), rated


def _share(rated: list[Stereotype], question: str) -> float | None:
    positive = POSITIVE[question]
    majority = [s.majority(question) for s in rated]
    return sum(1 for m in majority if m == positive) / len(rated) if rated else None


def question_agreement(dataset: Dataset, question: str) -> dict[str, Any]:
    """Fleiss' κ, the share the majority answered positively, and the raw agreement of one
    question (`gbdesk.maths.agreement`; figures it cannot define are None with a reason), over
    the stereotypes in the dataset (the paper's figures).

    Validators may also judge stereotypes the filter moved out (to check the filter):
    those are counted by the filter's verdict (`rated_outside`), and the same figures over
    every rated stereotype are under `all_rated` — so decisions that were stored are never
    reported as "no ratings"."""
    summary, rated = _figures(dataset, question)
    fleiss = summary["fleiss_kappa"]
    percent = summary["percent_agreement"]
    everywhere, all_rated = _figures(dataset, question, everywhere=True)
    outside = Counter(s.status for s in all_rated if not s.in_dataset)
    reason = fleiss["reason"]
    if not rated and outside:
        verdicts = ", ".join(f"{n} {status}" for status, n in sorted(outside.items()))
        reason = (
            f"no stereotype in the dataset is rated: the {sum(outside.values())} rated were "
            f"moved out of it by the filter ({verdicts}; see all_rated)"
        )
    return {
        "fleiss_kappa": fleiss["value"],
        "fleiss_kappa_reason": reason,
        "share_majority": _share(rated, question),
        "majority_answer": POSITIVE[question],
        "validators": summary["n_raters"],
        "stereotypes_rated": len(rated),
        "stereotypes_rated_by_two_or_more": summary["n_units_overlap"],
        "ratings_per_stereotype": summary["ratings_per_unit"],
        "percent_agreement": {
            "pairwise": percent.get("pairwise"),
            "at_least": percent.get("at_least"),
            "reason": percent.get("reason"),
        },
        "krippendorff_alpha": summary["krippendorff_alpha"]["value"],
        "rated_outside": dict(sorted(outside.items())),
        "all_rated": {
            "stereotypes_rated": len(all_rated),
            "validators": everywhere["n_raters"],
            "fleiss_kappa": everywhere["fleiss_kappa"]["value"],
            "fleiss_kappa_reason": everywhere["fleiss_kappa"]["reason"],
            "share_majority": _share(all_rated, question),
            "by_filter_verdict": dict(sorted(Counter(s.status for s in all_rated).items())),
        },
    }


def agreement(dataset: Dataset) -> dict[str, Any]:
    return {name: question_agreement(dataset, q) for name, q in QUESTIONS.items()}


# -- validations from a file --------------------------------------------------------------------
def plan_validations(
    store: Any, dataset_id: int, path: str | Path
) -> list[tuple[int, dict[str, Any]]]:
    """(attempt id, decision) for every row of a validation file (columns stereotype_id,
    common, specific; optional category), all or nothing: every bad line is listed."""
    from gbdesk.contract.importing import line_list, read_rows, refuse, require_columns

    rows = read_rows(path)
    require_columns(path, rows, ("stereotype_id", "common", "specific"))
    attempts = {
        a["item"]: a["id"] for a in sorted(store.attempts(dataset_id), key=lambda a: -a["attempt"])
    }
    problems: dict[str, list[int]] = {}
    seen: dict[str, int] = {}
    planned = []
    for number, record in rows:
        sid = str(record.get("stereotype_id") or "").strip()
        if sid not in attempts:
            problems.setdefault(f"name no stereotype of dataset {dataset_id}", []).append(number)
            continue
        if sid in seen:
            problems.setdefault("repeat a stereotype_id", []).append(number)
            continue
        seen[sid] = number
        data, issues = human_decision(
            record.get("common"), record.get("specific"), record.get("category")
        )
        for issue in issues:
            problems.setdefault(f"have {issue}", []).append(number)
        if not issues:
            planned.append((attempts[sid], data))
    refuse(path, [f"{line_list(lines)} {what}" for what, lines in problems.items()])
    return planned


def import_validations(
    store: Any, dataset_ref: Any, path: str | Path, validator: str
) -> dict[str, Any]:
    """Store one validator's decisions from a file in one transaction (nothing when any
    line is bad)."""
    validator = str(validator).strip()
    if not validator:
        raise UserError("--validator needs a name")
    dataset_id = resolve_id(store, dataset_ref)
    planned = plan_validations(store, dataset_id, path)
    auto = store.labels(dataset_id, "auto")
    with store.transaction():
        for attempt_id, data in planned:
            verdict = (auto.get(attempt_id) or {}).get("data") or {}
            extra = {"via": Path(path).name, "filter_status": verdict.get("status")}
            store.add_human_label(attempt_id, validator, decision_text(data), {**data, **extra})
    return {"dataset_id": dataset_id, "validator": validator, "stored": len(planned)}


# -- export -------------------------------------------------------------------------------------
def _votes(s: Stereotype, question: str, value: str) -> int:
    return s.votes(question).get(value, 0)


def csv_row(s: Stereotype, provenance: dict[str, Any]) -> dict[str, Any]:
    return {
        "stereotype_id": s.id,
        "group": s.group,
        "stereotype": s.stereotype,
        "explanation": s.explanation,
        "category": s.category or "",
        "category_source": s.category_source,
        "category_suggested": s.category_suggested or "",
        "elicited_for": s.elicited_for,
        "status": s.status,
        "filter_broader": ""
        if s.filter.get("broader") is None
        else str(s.filter["broader"]).lower(),
        "filter_broader_group": s.filter.get("broader_group") or "",
        "filter_explanation": s.filter.get("explanation") or "",
        "validated": s.validated,
        "common_yes": _votes(s, "common", "yes"),
        "common_no": _votes(s, "common", "no"),
        "specific_a": _votes(s, "specific", "a"),
        "specific_b": _votes(s, "specific", "b"),
        "validations": json.dumps(
            [v.to_json() for v in s.validations.values()], ensure_ascii=False
        ),
        "elicited_by": s.provenance.get("elicited_by") or provenance.get("elicited_by") or "",
        "filtered_by": s.provenance.get("filtered_by") or provenance.get("filtered_by") or "",
    }


def export(dataset: Dataset, path: str | Path) -> dict[str, Any]:
    """Write the dataset as CSV (one row per stereotype) or JSON (provenance, question
    bank, stereotypes with their validations), by the file's suffix."""
    from datetime import datetime, timezone

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    provenance = {
        **dataset.provenance,
        "validators": dataset.validators(),
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "exported_by": f"gbdesk {__version__}",
    }
    if p.suffix.lower() == ".json":
        doc = {
            "format": FORMAT,
            "provenance": provenance,
            "counts": dataset.counts(),
            "agreement": agreement(dataset),
            "questions": dataset.questions,
            "stereotypes": [s.to_json() for s in dataset.stereotypes],
        }
        from gbdesk.support.atomic import write_text

        write_text(p, json.dumps(doc, ensure_ascii=False, indent=2, default=str))
    else:
        from gbdesk.support.csvfile import write_table

        write_table(p, list(CSV_COLUMNS), (csv_row(s, provenance) for s in dataset.stereotypes))
    return {"dataset_id": dataset.id, "file": str(p), "stereotypes": len(dataset.stereotypes)}


# -- import -------------------------------------------------------------------------------------
def _records(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any]]:
    """(line, record) pairs of a dataset file and the document's own fields (JSON)."""
    from gbdesk.contract.importing import read_rows

    p = Path(path)
    if p.suffix.lower() == ".json":
        try:
            doc = loads_json(p.read_text(encoding="utf-8-sig"))
        except FileNotFoundError:
            raise UserError(f"file not found: {p}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"{p} is not a JSON file: {exc}") from None
        if isinstance(doc, list):
            doc = {"stereotypes": doc}
        if not isinstance(doc, dict) or not isinstance(doc.get("stereotypes"), list):
            raise UserError(f"{p} holds no list of stereotypes")
        rows = [(n, r) for n, r in enumerate(doc["stereotypes"], start=1)]
        if not all(isinstance(r, dict) for _, r in rows):
            raise UserError(f"{p}: every stereotype must be a JSON object")
        return rows, doc
    return read_rows(p), {}


def _validations(value: Any) -> list[dict[str, Any]] | None:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = loads_json(value)
        except ValueError:
            return None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        return None
    return value


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().casefold()
    return {"true": True, "false": False, "yes": True, "no": False, "": None}.get(text)


def plan_import(path: str | Path) -> dict[str, Any]:
    """Read and check a dataset file (CSV or JSON, as `export` writes; at least the
    columns stereotype_id, group, stereotype, explanation, category) — all or nothing:
    every bad line is listed."""
    from gbdesk.contract.importing import line_list, refuse, require_columns

    rows, doc = _records(path)
    require_columns(path, rows, ("stereotype_id", "group", "stereotype", "explanation", "category"))
    problems: dict[str, list[int]] = {}
    seen: set[str] = set()
    planned = []

    def bad(what: str, number: int) -> None:
        problems.setdefault(what, []).append(number)

    for number, r in rows:
        sid = str(r.get("stereotype_id") or "").strip()
        if not sid:
            bad("have no stereotype_id", number)
            continue
        if sid in seen:
            bad("repeat a stereotype_id", number)
            continue
        seen.add(sid)
        planned_row, problem = _planned_stereotype(sid, r)
        if problem is not None:
            bad(problem, number)
            continue
        planned.append(planned_row)
    refuse(path, [f"{line_list(lines)} {what}" for what, lines in problems.items()])
    questions = _imported_questions(path, doc)
    return {
        "stereotypes": planned,
        "provenance": doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {},
        "questions": questions,
    }


def _planned_stereotype(
    sid: str, r: dict[str, Any]
) -> tuple[dict[str, Any] | None, str | None]:
    """One row of a dataset file (stereotype id `sid`, checked by `plan_import`) as a
    stereotype to import, or what is wrong with it (the end of "line N …")."""
    from gbdesk.studies.intersectional.groups import canonical, parse_group
    from gbdesk.studies.intersectional.questions import find_category

    text = str(r.get("stereotype") or "").strip()
    try:
        group = canonical(str(r.get("group") or ""))
        elicited_for = canonical(str(r.get("elicited_for") or "") or group)
    except UserError:
        return None, "name no group (values joined by ';', e.g. Black;women)"
    if len(parse_group(elicited_for)) < 2:
        return None, (
            "name a group of one attribute (intersectional groups combine two or more)"
        )
    if not text:
        return None, "have no stereotype"
    category = None
    if str(r.get("category") or "").strip():
        found = find_category(r.get("category"))
        if found is None:
            return None, "name no category (a name or 1–16)"
        category = found["category"]
    suggested = (
        find_category(r.get("category_suggested")) if r.get("category_suggested") else None
    )
    status = str(r.get("status") or "").strip() or "unfiltered"
    if status not in STATUSES:
        return None, f"have a status other than {', '.join(STATUSES)}"
    flt = r.get("filter") if isinstance(r.get("filter"), dict) else {}
    broader = _bool(flt.get("broader", r.get("filter_broader")))
    validations = _validations(r.get("validations"))
    if validations is None:
        return None, "have validations that are not a JSON list of objects"
    decisions = []
    for v in validations:
        name = str(v.get("validator") or "").strip()
        data, issues = human_decision(v.get("common"), v.get("specific"), v.get("category"))
        if not name or issues:
            return None, "have a validation without a validator or with bad answers"
        decisions.append((name, data, str(v.get("at") or "")))
    source = str(r.get("category_source") or "")
    return {
        "id": sid,
        "group": group,
        "elicited_for": elicited_for,
        "stereotype": text,
        "explanation": str(r.get("explanation") or "").strip(),
        "status": status,
        "broader": broader,
        "broader_group": str(
            flt.get("broader_group", r.get("filter_broader_group")) or ""
        ).strip() or None,
        "filter_explanation": str(
            flt.get("explanation", r.get("filter_explanation")) or ""
        ).strip(),
        # a category the validators chose is theirs again once their decisions are
        # imported; any other category of the file is the file's
        "category_imported": None if source == "validators" else category,
        "category_suggested": suggested["category"] if suggested else (
            category if source == "model" else None
        ),
        "decisions": decisions,
        "provenance": {
            k: str(r[k])
            for k in ("elicited_by", "filtered_by")
            if str(r.get(k) or "").strip()
        },
    }, None  # fmt: skip


def _imported_questions(path: str | Path, doc: dict[str, Any]) -> list[Any] | None:
    """The question bank a dataset file carries, checked (None when it has none)."""
    from gbdesk.studies.intersectional.questions import check_bank

    questions = None
    if doc.get("questions") is not None:
        qs = doc["questions"]
        if not isinstance(qs, list) or not all(isinstance(q, dict) for q in qs):
            raise UserError(f"nothing imported from {path}: questions must be a list of objects")
        questions = check_bank(
            [(n, {**q, "question_id": q.get("question_id", q.get("id"))}) for n, q in
             enumerate(qs, start=1)],
            f"{path} (questions)",
        )  # fmt: skip
    return questions


def import_dataset(store: Any, path: str | Path, model_name: str | None = None) -> dict[str, Any]:
    """A dataset file as a new dataset (an imported filter run, its validators' decisions as
    their human labels) in one transaction."""
    from gbdesk.contract import get_probe
    from gbdesk.studies.intersectional.elicit import FILTER_PROMPT, FilterProbe
    from gbdesk.workflows.importer import ImportedAttempt, ImportedRun, write_imported_runs

    plan = plan_import(path)
    probe = get_probe(FilterProbe.name)
    provenance = {
        k: v for k, v in plan["provenance"].items() if k not in ("dataset_id", "exported_at")
    }
    elicited_by = next(
        (s["provenance"]["elicited_by"] for s in plan["stereotypes"]
         if s["provenance"].get("elicited_by")),
        provenance.get("elicited_by"),
    )  # fmt: skip
    model = model_name or provenance.get("filtered_by") or elicited_by or "imported"
    params = probe.resolve_params(elicitation="latest")
    params.update(
        elicitation=None,
        stereotypes=None,
        provenance={**provenance, "elicited_by": elicited_by, "imported_dataset": True},
        questions=plan["questions"],
    )
    items, attempts = [], []
    for s in plan["stereotypes"]:
        item = FilterProbe.stereotype_item(
            s["id"], {"group": s["elicited_for"], **s}, FILTER_PROMPT
        )
        item.metadata["category_imported"] = s["category_imported"]
        if s["provenance"]:
            item.metadata["provenance"] = s["provenance"]
        items.append(item)
        label = {
            "source": IMPORT_SOURCE,
            "label": s["status"],
            "data": {
                "status": s["status"],
                "broader": s["broader"],
                "broader_group": s["broader_group"],
                "explanation": s["filter_explanation"],
                "group": s["group"],
                "elicited_for": s["elicited_for"],
                "category_suggested": s["category_suggested"],
            },
            "evidence": None,
        }
        response = json.dumps(
            {k: label["data"][k] for k in ("broader", "broader_group", "explanation")}
        )
        attempts.append(ImportedAttempt(s["id"], 0, response, label))
    with store.transaction():
        result = write_imported_runs(
            store, probe, path, [ImportedRun(model, params, items, attempts)]
        )
        run_id = result["run_id"]
        ids = {a["item"]: a["id"] for a in store.attempts(run_id)}
        n = 0
        for s in plan["stereotypes"]:
            for name, data, at in s["decisions"]:
                extra = {"at": at} if at else {}
                extra["filter_status"] = s["status"]
                store.add_human_label(ids[s["id"]], name, decision_text(data), {**data, **extra})
                n += 1
    return {"dataset_id": run_id, "stereotypes": len(items), "validations": n}


def read_file(path: str | Path) -> Dataset:
    """A dataset file read without storing it (for an examination run straight from a
    shared file)."""
    from gbdesk.studies.intersectional.questions import paper_bank

    plan = plan_import(path)
    stereotypes = []
    for s in plan["stereotypes"]:
        validations = {
            name: Validation(name, d["common"], d["specific"], d["category"], at)
            for name, d, at in s["decisions"]
        }
        stereotypes.append(
            Stereotype(
                id=s["id"],
                group=s["group"],
                elicited_for=s["elicited_for"],
                stereotype=s["stereotype"],
                explanation=s["explanation"],
                status=s["status"],
                filter={
                    "broader": s["broader"],
                    "broader_group": s["broader_group"],
                    "explanation": s["filter_explanation"],
                },
                category_suggested=s["category_suggested"],
                category_imported=s["category_imported"],
                validations=validations,
                provenance=s["provenance"],
            )
        )
    provenance = {**plan["provenance"], "file": str(Path(path).resolve())}
    return Dataset(None, provenance, plan["questions"] or paper_bank(), stereotypes)


def set_questions(store: Any, dataset_ref: Any, bank: list[dict[str, Any]] | None) -> int:
    """Replace a dataset's question bank (None: back to the paper's 16)."""
    dataset_id = resolve_id(store, dataset_ref)
    params = dict(store.get_run(dataset_id)["params"])
    params["questions"] = bank
    store.update_run_params(dataset_id, params)
    return dataset_id


def list_datasets(store: Any) -> list[dict[str, Any]]:
    out = []
    for run in store.list_runs():
        if run["probe"] != _filter_probe_name():
            continue
        try:
            counts = load(store, run["id"]).counts()
        except UserError as exc:  # a run planned without items, say
            log.info("dataset %s not readable: %s", run["id"], exc)
            continue
        out.append(
            {
                "dataset_id": run["id"],
                "status": run["status"],
                "source": run["source"],
                "model": run.get("model_name"),
                "created_at": run["created_at"],
                **{k: counts[k] for k in ("stereotypes", "in_dataset", "groups", "kept")},
                "validators": counts["validators"],
            }
        )
    return out
