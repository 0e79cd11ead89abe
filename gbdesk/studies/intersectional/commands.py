"""`gbdesk dataset …`: build, validate, measure agreement on, share and re-use a stereotype
dataset as Ma et al. (2023) built theirs (no Qt). Registered through `Study.commands`.

    gbdesk dataset build --groups "White;women" "Black;men;young" [--model PATH|default]
    gbdesk dataset validate DATASET --file decisions.csv --validator ana
    gbdesk dataset agreement DATASET [--json]
    gbdesk dataset export DATASET --file dataset.json|.csv
    gbdesk dataset import --file dataset.json|.csv
    gbdesk dataset questions DATASET [--export F | --import F | --reset]
    gbdesk dataset list | show DATASET

then ``gbdesk run --probe intersectional_sdeg --set dataset=ID [--set design=paper|all16]``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gbdesk.support.errors import UserError

KIT: Any = None


def _dataset_ref(text: str) -> str:
    from gbdesk.support.guards import INT64_MAX, whole_number

    value = text.strip()
    if value.casefold() == "latest":
        return value
    try:
        whole_number(value, minimum=1, maximum=INT64_MAX)
    except ValueError:
        shown = value if len(value) <= 24 else value[:20] + "…"
        raise argparse.ArgumentTypeError(
            f"not a dataset id (a run number, or latest): {shown!r}"
        ) from None
    return value


def _add_build(actions: Any, kit: Any) -> None:
    """`gbdesk dataset build`: the elicitation's choice of groups, its models and lengths."""
    a = actions.add_parser("build", help="elicit and filter stereotypes with a model")
    which = a.add_mutually_exclusive_group()
    which.add_argument(
        "--groups",
        nargs="+",
        type=kit.text,
        metavar="GROUP",
        help='target groups, values joined by ";" (e.g. "Black;women;young"); default: the '
        "106 groups of the paper's Table 1",
    )
    which.add_argument(
        "--max-attributes",
        type=int,
        choices=range(2, 7),
        metavar="N",
        help="every combination of 2 to N attributes instead (2: 93 groups)",
    )
    which.add_argument(
        "--elicitation",
        type=kit.run_id,
        metavar="RUN",
        help="filter an existing intersectional_elicit run (finishing it first) instead of "
        "eliciting anew",
    )
    a.add_argument("--model", help="GGUF path, 'default' (bundled) or http(s)://URL#MODEL")
    a.add_argument("--filter-model", help="another model for the filtering step (default: --model)")
    a.add_argument("--attempts", type=kit.bounded("attempts"), default=1, help="replies per group")
    a.add_argument(
        "--max-stereotypes", type=int, default=8, help="stereotypes per reply, at most (1–30)"
    )
    a.add_argument("--max-tokens", type=kit.bounded("max_tokens"), help="elicitation reply length")
    a.add_argument(
        "--filter-max-tokens", type=kit.bounded("max_tokens"), help="filter reply length"
    )
    a.add_argument("--limit", type=kit.bounded("limit"), help="keep the first N groups")
    a.add_argument("--seed", type=kit.seed, default=0)
    kit.db_arg(a)
    kit.json_arg(a)


def add_commands(sub: Any, kit: Any) -> dict[str, Any]:
    """Add `gbdesk dataset` and its actions; return the handler."""
    global KIT
    KIT = kit
    p = sub.add_parser(
        "dataset",
        help="build, validate, share and re-use an intersectional stereotype dataset "
        "(Ma et al. 2023)",
        description="An intersectional stereotype dataset built as Ma et al. (2023) built "
        "theirs: stereotypes elicited from a model, filtered by it, validated by people, "
        "assigned to 16 categories — then examined with intersectional_sdeg "
        "(--set dataset=ID).",
    )
    actions = p.add_subparsers(dest="action", parser_class=type(p), metavar="ACTION")

    _add_build(actions, kit)

    a = actions.add_parser("validate", help="store one validator's decisions from a CSV file")
    a.add_argument("dataset", type=_dataset_ref)
    a.add_argument(
        "--file",
        required=True,
        help="CSV or JSONL with stereotype_id, common (yes/no), specific (a/b) and optionally "
        "category (a name or 1–16); any bad line: nothing is stored",
    )
    a.add_argument("--validator", required=True, type=kit.name)
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("agreement", help="validators' agreement (Fleiss' κ) per question")
    a.add_argument("dataset", type=_dataset_ref)
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("export", help="write the dataset (CSV or JSON) with its provenance")
    a.add_argument("dataset", type=_dataset_ref)
    a.add_argument("--file", required=True, help="a .json or .csv path")
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("import", help="add a dataset from an exported (or hand-made) file")
    a.add_argument("--file", required=True)
    a.add_argument("--model-name", type=kit.text, help="name of the model that made it")
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("questions", help="show, export or import the question bank")
    a.add_argument("dataset", type=_dataset_ref)
    op = a.add_mutually_exclusive_group()
    op.add_argument("--export", metavar="FILE", help="write the bank (.csv or .json)")
    op.add_argument("--import", dest="import_", metavar="FILE", help="replace the bank")
    op.add_argument("--reset", action="store_true", help="back to the paper's 16 questions")
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("list", help="the datasets in the database")
    kit.db_arg(a)
    kit.json_arg(a)

    a = actions.add_parser("show", help="a dataset's provenance and counts")
    a.add_argument("dataset", type=_dataset_ref)
    kit.db_arg(a)
    kit.json_arg(a)
    return {"dataset": cmd_dataset}


def cmd_dataset(args: argparse.Namespace) -> int:
    handlers = {
        "build": cmd_build,
        "validate": cmd_validate,
        "agreement": cmd_agreement,
        "export": cmd_export,
        "import": cmd_import,
        "questions": cmd_questions,
        "list": cmd_list,
        "show": cmd_show,
    }
    if args.action is None:
        raise UserError("gbdesk dataset needs an action: " + ", ".join(handlers))
    return handlers[args.action](args)


# -- build ------------------------------------------------------------------------------------
def _execute(store: Any, run_id: int, what: str) -> None:
    from gbdesk.workflows.runs import execute_run

    run = store.get_run(run_id)
    if run["status"] == "done" and run["attempts_done"] >= run["attempts_total"]:
        return
    print(f"[run {run_id}] {what}", file=sys.stderr)
    try:
        execute_run(store, run_id, on_progress=KIT.progress())
    except KeyboardInterrupt:
        print(
            f"\ninterrupted; run {run_id} is saved — continue with: gbdesk resume {run_id}",
            file=sys.stderr,
        )
        raise


def cmd_build(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds
    from gbdesk.studies.intersectional.elicit import ElicitationProbe, FilterProbe
    from gbdesk.workflows.runs import plan_run, resolve_model

    if args.groups:
        spec = ",".join(args.groups)
    elif args.max_attributes:
        spec = f"combinations:{args.max_attributes}"
    else:
        spec = "table1"
    # fail fast on a bad group or parameter, before loading anything
    ElicitationProbe().resolve_params(groups=spec, max_stereotypes=args.max_stereotypes)
    with KIT.open_store(args.db, writes=True) as store:
        if args.elicitation:
            elicit_id = args.elicitation
            run = store.get_run(elicit_id)
            if run["probe"] != ElicitationProbe.name:
                raise UserError(f"run {elicit_id} is not an {ElicitationProbe.name} run")
            model = store.get_model(run["model_id"])
        else:
            model = resolve_model(store, args.model)
            elicit_id = plan_run(
                store,
                ElicitationProbe.name,
                model,
                attempts=args.attempts,
                seed=args.seed,
                max_tokens=args.max_tokens,
                limit=args.limit,
                groups=spec,
                max_stereotypes=args.max_stereotypes,
            )
        _execute(store, elicit_id, f"eliciting stereotypes with {model['name']}")
        filter_model = resolve_model(store, args.filter_model) if args.filter_model else model
        if not args.filter_model and args.model and args.elicitation:
            filter_model = resolve_model(store, args.model)
        dataset_id = plan_run(
            store,
            FilterProbe.name,
            filter_model,
            seed=args.seed,
            max_tokens=args.filter_max_tokens,
            elicitation=elicit_id,
        )
        _execute(store, dataset_id, f"filtering them with {filter_model['name']}")
        counts = ds.load(store, dataset_id).counts()
        targets = len(store.run_items(elicit_id))
    payload = {
        "dataset_id": dataset_id,
        "groups": targets,  # the target groups asked about
        "groups_with_stereotypes": counts["groups_elicited"],
        "stereotypes": counts["stereotypes"],
        "filtered_out": counts["filtered_out"],
        "moved": counts["moved"],
        "out": counts["out"],
        "in_dataset": counts["in_dataset"],
        "groups_in_dataset": counts["groups"],  # with broader groups stereotypes moved to
        "elicitation_run": elicit_id,
    }
    KIT.emit(
        args,
        payload,
        f"dataset {dataset_id}: {counts['stereotypes']} stereotypes for "
        f"{counts['groups_elicited']} of {targets} groups; the filter moved {counts['moved']} "
        f"to a broader group and {counts['out']} out; {counts['in_dataset']} remain in "
        f"{counts['groups']} groups.\nValidate them in the app's Review pane (run "
        f"{dataset_id}) or with: gbdesk dataset validate {dataset_id} --file F --validator NAME",
    )
    return 0


# -- validation and agreement ---------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db, writes=True) as store:
        result = ds.import_validations(store, args.dataset, args.file, args.validator)
    KIT.emit(
        args,
        result,
        f"dataset {result['dataset_id']}: {result['stored']} decisions of "
        f"{result['validator']} stored",
    )
    return 0


def _agreement_text(dataset_id: int, figures: dict[str, Any]) -> str:
    lines = [f"dataset {dataset_id}: validators' agreement"]
    for name, a in figures.items():
        kappa = a["fleiss_kappa"]
        share = a["share_majority"]
        lines.append(
            f"  {name.replace('_', ' ')}: Fleiss' κ "
            + (f"{kappa:.3f}" if kappa is not None else f"— ({a['fleiss_kappa_reason']})")
            + f"; majority {a['majority_answer']}: "
            + (f"{100 * share:.2f} %" if share is not None else "—")
            + f" of {a['stereotypes_rated']} stereotypes; {a['validators']} validators"
        )
        outside = a.get("rated_outside") or {}
        if outside:
            every = a["all_rated"]
            kappa = every["fleiss_kappa"]
            share = every["share_majority"]
            verdicts = (f"{n} with the filter's verdict {v}" for v, n in outside.items())
            lines.append(
                "    also rated: "
                + ", ".join(verdicts)
                + f"; over all {every['stereotypes_rated']} rated: Fleiss' κ "
                + (f"{kappa:.3f}" if kappa is not None else f"— ({every['fleiss_kappa_reason']})")
                + f"; majority {a['majority_answer']}: "
                + (f"{100 * share:.2f} %" if share is not None else "—")
            )
    return "\n".join(lines)


def cmd_agreement(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db) as store:
        data = ds.load(store, args.dataset)
    figures = ds.agreement(data)
    KIT.emit(args, {"dataset_id": data.id, **figures}, _agreement_text(data.id or 0, figures))
    return 0


# -- sharing -------------------------------------------------------------------------------
def cmd_export(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db) as store:
        data = ds.load(store, args.dataset)
    result = ds.export(data, args.file)
    KIT.emit(args, result, f"dataset {data.id}: {result['stereotypes']} stereotypes → {args.file}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db, writes=True) as store:
        result = ds.import_dataset(store, args.file, args.model_name)
    KIT.emit(
        args,
        result,
        f"dataset {result['dataset_id']}: {result['stereotypes']} stereotypes and "
        f"{result['validations']} validations imported",
    )
    return 0


def cmd_questions(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds
    from gbdesk.studies.intersectional.questions import read_bank, write_bank

    writes = bool(args.import_ or args.reset)
    with KIT.open_store(args.db, writes=writes) as store:
        if args.import_:
            bank = read_bank(args.import_)
            ds.set_questions(store, args.dataset, bank)
        elif args.reset:
            ds.set_questions(store, args.dataset, None)
        data = ds.load(store, args.dataset)
    if args.export:
        write_bank(data.questions, args.export)
    lines = [f"dataset {data.id}: {len(data.questions)} questions"]
    lines += [
        f"  [{q['id']}] {q['category']}: {q['question']} ({'; '.join(q['options'])})"
        for q in data.questions
    ]
    KIT.emit(args, {"dataset_id": data.id, "questions": data.questions}, "\n".join(lines))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db) as store:
        rows = ds.list_datasets(store)
    text = "\n".join(
        f"{r['dataset_id']:>5}  {r['source']:<9} {r['model'] or '?':<28} {r['stereotypes']:>5} "
        f"stereotypes, {r['in_dataset']} in {r['groups']} groups, {r['kept']} kept by "
        f"{len(r['validators'])} validators"
        for r in rows
    )
    KIT.emit(args, rows, text or "no dataset yet (gbdesk dataset build --groups …)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from gbdesk.studies.intersectional import dataset as ds

    with KIT.open_store(args.db) as store:
        data = ds.load(store, args.dataset)
    summary = data.summary()
    counts = summary["counts"]
    text = (
        f"dataset {data.id}: {counts['stereotypes']} stereotypes, {counts['in_dataset']} in "
        f"{counts['groups']} groups ({counts['moved']} moved, {counts['out']} out); kept by "
        f"the validators' majority: {counts['kept']}; validators: "
        f"{', '.join(counts['validators']) or 'none'}\n"
        + "\n".join(f"  {k}: {v}" for k, v in summary["provenance"].items() if v is not None)
        + "\n"
        + _agreement_text(data.id or 0, summary["agreement"])
    )
    KIT.emit(args, summary, text)
    return 0
