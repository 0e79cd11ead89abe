"""The `gbdesk` command's argument parser: one function per group of subcommands, then
the subcommands the studies add (`Study.commands`)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gbdesk import __version__
from gbdesk.cli._args import (
    _batch_size,
    _bounded,
    _db_arg,
    _draw_seed,
    _json_arg,
    _label_mode,
    _name,
    _Parser,
    _positive_int,
    _presets,
    _run_id,
    _seed,
    _share,
    _temperature,
    _text,
    _top_p,
    _wording,
)
from gbdesk.cli._common import _emit, _open_store, _ProgressPrinter
from gbdesk.cli.commands import COMMANDS
from gbdesk.cli.selftest import prompt_count


def build_parser() -> argparse.ArgumentParser:
    """The parser of `gbdesk`: its own --version and --db, each group's subcommands, then
    the studies' own."""
    parser = _Parser(
        prog="gbdesk",
        description="Audit a local language model for gender bias, alone and combined with "
        "other identities. Without arguments, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"gbdesk {__version__}")
    parser.add_argument(
        "--db",
        dest="app_db",
        metavar="PATH",
        help="without a command: open the desktop app on this database",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    # the groups in the order `gbdesk --help` lists their commands
    for add in (
        _catalogue_commands,
        _run_commands,
        _result_commands,
        _audit_commands,
        _export_commands,
        _verify_command,
        _import_commands,
        _labelling_commands,
        _people_commands,
    ):
        add(sub)
    _add_study_commands(sub)
    return parser


def _subset_args(p: argparse.ArgumentParser) -> None:
    """--limit and --sample: which of a probe's items (`items` and `run` take them alike)."""
    p.add_argument(
        "--limit",
        type=_bounded("limit"),
        help="N items: the first N, or — for a probe whose metrics compare groups of items — "
        "a seeded subset keeping every group (the run says which)",
    )
    p.add_argument("--sample", type=_bounded("sample"), help="a seeded random sample of K items")


def _catalogue_commands(sub: Any) -> None:
    """probes, card, items, models: what can be run, on what."""
    p = sub.add_parser("probes", help="list the probes (of every installed study)")
    p.add_argument("--markdown", action="store_true", help="print the README's probe table instead")
    _json_arg(p)

    p = sub.add_parser("card", help="show a probe's card (what it measures, data, limits)")
    p.add_argument("probe")
    _json_arg(p)

    p = sub.add_parser("items", help="list a probe's items and prompts")
    p.add_argument("--probe", required=True)
    p.add_argument("--template", type=_text, help="template text or preset name")
    p.add_argument(
        "--wordings",
        metavar="all|0,2,3",
        help="list every item under each of these wordings (0 = the study's own; 'all', or "
        "ids), with its wording id",
    )
    _subset_args(p)
    _json_arg(p)

    p = sub.add_parser(
        "models", help="list the bundled default model, registered GGUF files and endpoints"
    )
    p.add_argument(
        "--add",
        metavar="PATH",
        action="append",
        help="register a GGUF file, or an endpoint URL#MODEL (e.g. ollama#llama3.1:8b), whose "
        "capabilities are then checked",
    )
    _db_arg(p)
    _json_arg(p)


def _wait_arg(p: Any) -> None:
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another gbdesk process is running, auditing or importing into this database, "
        "wait for it to end (without it the command stops at once, naming that process)",
    )


def _run_commands(sub: Any) -> None:
    """run, runs, jobs, resume."""
    _run_command(sub)

    p = sub.add_parser("runs", help="list the runs in the database")
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "jobs", help="the runs, audits and imports holding the database (and clear a stale one)"
    )
    p.add_argument(
        "--clear",
        type=_run_id,
        metavar="JOB",
        help="remove the row of a job whose process is gone (another machine's, which "
        "gbdesk cannot check from here)",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("resume", help="continue an interrupted or cancelled run")
    p.add_argument("run_id", type=_run_id)
    _wait_arg(p)
    _db_arg(p)
    _json_arg(p)


def _run_command(sub: Any) -> None:
    """run: a probe, the model or endpoint, the subset and the generation settings."""
    p = sub.add_parser("run", help="run a probe on a model")
    p.add_argument("--probe", required=True)
    _model_args(p)
    p.add_argument("--attempts", type=_bounded("attempts"), help="samples per prompt")
    _subset_args(p)
    _generation_args(p)
    p.add_argument(
        "--new",
        action="store_true",
        help="start another run even if this database holds one of the same probe, model "
        "file and settings; without it the same command continues that run where it "
        "stopped, or shows its results when it is done",
    )
    _wait_arg(p)
    _db_arg(p)
    _json_arg(p)


def _model_args(p: Any) -> None:
    """What a run runs on: a GGUF file, or an endpoint with its model, concurrency and key."""
    which = p.add_mutually_exclusive_group()
    which.add_argument("--model", help="GGUF path or 'default' (bundled SmolLM2; the default)")
    which.add_argument(
        "--endpoint",
        metavar="URL",
        help="an OpenAI-compatible server instead of a GGUF file, e.g. http://host:8000/v1 "
        "(vLLM, llama-cpp-python's server), or a local one by name: "
        + ", ".join(f"{name} = {url} ({title})" for name, (title, url, _) in _presets().items())
        + "; perplexity probes need log-probabilities of prompt tokens, which only vLLM and "
        "llama-cpp-python's server give",
    )
    p.add_argument(
        "--endpoint-model",
        dest="endpoint_model",
        type=_text,
        metavar="NAME",
        help="model name at --endpoint",
    )
    p.add_argument(
        "--concurrency",
        type=_bounded("concurrency"),
        help="requests in flight at once (--endpoint only; default 1)",
    )
    p.add_argument(
        "--api-key-env",
        dest="api_key_env",
        metavar="VAR",
        help="environment variable holding the endpoint's API key (default: GBDESK_API_KEY, "
        "then the OS keyring); the key is never stored",
    )


def _generation_args(p: Any) -> None:
    """The run's seed, sampling, template, wordings, prompt mode, batching and probe
    parameters."""
    p.add_argument(
        "--seed", type=_seed, default=0, help="run seed (per-attempt seeds derive from it)"
    )
    p.add_argument("--temperature", type=_temperature)
    p.add_argument("--top-p", type=_top_p, dest="top_p")
    p.add_argument("--max-tokens", type=_bounded("max_tokens"), dest="max_tokens")
    p.add_argument("--template", type=_text, help="template text or preset name")
    p.add_argument(
        "--wordings",
        metavar="all|0,2,3",
        help="ask the items in several wordings of the prompt (0 = the study's own; "
        "'all', or ids): one run per wording, same items and seeds, then the metrics by "
        "wording",
    )
    p.add_argument(
        "--prompt-mode",
        choices=("auto", "chat", "completion"),
        default="auto",
        help="chat template or completion frame (auto: chat if the GGUF has one)",
    )
    p.add_argument(
        "--batch",
        type=_batch_size,
        default=0,
        dest="batch_size",
        metavar="N|auto",
        help="local models: continuous batching with N sequences at once (default auto: "
        "chosen from the model's size and the free memory); 1 decodes one attempt at a time "
        "(slower; its texts differ from batched ones, which do not depend on N). Kept with "
        "the run: a resume decodes the same way",
    )
    p.add_argument(
        "--set",
        dest="options",
        type=_text,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a probe parameter, e.g. --set domains=Love,Labor --set name_table=census2020 "
        "(see `gbdesk card PROBE`)",
    )


def _result_commands(sub: Any) -> None:
    """metrics, compare: a run's numbers, two runs against each other."""
    p = sub.add_parser("metrics", help="metrics of a run with 95%% CIs and marks")
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="auto",
        metavar="MODE",
        help="auto: automatic labels; reviewed: human where present; ppi: automatic "
        "labels corrected by the reviewed random sample (prediction-powered intervals); "
        "rater:NAME: one rater's labels; consensus: adjudicated where raters disagreed, "
        "else a reviewer's",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "wordings",
        help="does it survive a rewording? a run's metrics under each wording of its prompts "
        "(gbdesk run --wordings); several runs: whether the models' order holds",
    )
    p.add_argument("run_ids", type=_run_id, nargs="+", metavar="RUN")
    p.add_argument("--labels", type=_label_mode, default="auto", metavar="MODE")
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "compare", help="compare two runs of a probe item by item (paired bootstrap, BH)"
    )
    p.add_argument("run_a", type=_run_id, metavar="RUN_A")
    p.add_argument("run_b", type=_run_id, metavar="RUN_B", help="differences are B − A")
    p.add_argument("--labels", choices=("auto", "reviewed"), default="auto")
    p.add_argument("--resamples", type=_bounded("resamples"), default=1000, help="default 1000")
    p.add_argument("--seed", type=_draw_seed, default=0, help="seed of the resampling (default 0)")
    _db_arg(p)
    _json_arg(p)


def _audit_commands(sub: Any) -> None:
    """audit: a verdict for every marked metric within a time budget."""
    p = sub.add_parser(
        "audit",
        help="audit a model in one go: a verdict for every marked metric within a time "
        "budget, then the PDF report",
        description="Measure the model's speed (seconds), print the plan, then run every "
        "probe in rounds: first a look at a small random draw of its items, then more items "
        "for the probes whose verdicts are still open, until every verdict is decided or the "
        "budget is spent; then write the PDF report. A verdict names the marks its interval "
        "still allows (one = decided); each decided verdict is wrong with probability at most "
        "5 %% over its two looks (--family-wise: 5 %% for the whole audit). Running the same "
        "command again continues an unfinished audit of the model with the rest of its "
        "budget. Ctrl-C once stops after the answers under way.",
    )
    p.add_argument(
        "--model",
        default="default",
        help="a GGUF path, 'default' (bundled), or a server: http://HOST/v1#MODEL",
    )
    p.add_argument("--budget", required=True, help="time budget: 30m, 2h, 8h, 1h30m …")
    p.add_argument(
        "--concurrency",
        type=_bounded("concurrency"),
        help="a model behind a server: requests in flight at once (default 1; vLLM or "
        "llama-server hosts take 16–64)",
    )
    p.add_argument("--report", metavar="FILE", help="the PDF (default: next to the database)")
    p.add_argument("--plan-only", action="store_true", help="show the plan, run nothing")
    p.add_argument(
        "--harness",
        metavar="NAME",
        help="run a study's harness: its probes with their own templates (`gbdesk probes` "
        "lists the harnesses); default: every probe",
    )
    p.add_argument(
        "--wordings",
        metavar="all|0,2,3",
        help="also ask every drawn item in other wordings of its probe's prompts (each "
        "wording costs about as much again; the verdicts stay the study's own wording's, "
        "and the report says which depend on the wording)",
    )
    p.add_argument("--new", action="store_true", help="plan a new audit even if one is unfinished")
    p.add_argument(
        "--family-wise",
        action="store_true",
        help="each verdict at 5 %% / (the audit's verdicts), so that the chance that at least "
        "one decided verdict of the audit is wrong is at most 5 %% (default: 5 %% per verdict)",
    )
    _wait_arg(p)
    _db_arg(p)
    _json_arg(p)


def _export_commands(sub: Any) -> None:
    """export: CSV files and the PDF report."""
    p = sub.add_parser("export", help="export runs as CSV files and/or a PDF report")
    p.add_argument("run_ids", type=_run_id, nargs="+", metavar="RUN_ID")
    p.add_argument("--csv", metavar="DIR", help="write attempts.csv and metrics.csv here")
    p.add_argument("--pdf", metavar="FILE", help="write the PDF report here")
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="reviewed",
        metavar="MODE",
        help="labels the PDF's metrics use (default: reviewed, i.e. human where present; "
        "ppi: prediction-powered estimates from the reviewed random sample; rater:NAME: one "
        "rater's labels; consensus: adjudicated where raters disagreed)",
    )
    _db_arg(p)
    _json_arg(p)


def _verify_command(sub: Any) -> None:
    """verify: does a PDF report still match its database?"""
    p = sub.add_parser(
        "verify",
        help="check that a PDF report still matches its database (read only)",
        description="Recompute the digest a gbdesk PDF report carries — every answer, label, "
        "review, setting and computed metric of its runs — from the database, which is only "
        "read (never updated or migrated), and say in one line whether the report matches. "
        "Exit 0: it matches; 1: some run's data changed since (each such run is named, with "
        "what changed); 2: not a gbdesk report, a missing file, or not the report's database.",
    )
    p.add_argument("report", metavar="REPORT.pdf", help="a PDF report made by gbdesk")
    p.add_argument(
        "--db",
        metavar="FILE",
        help="the report's database (default: gbdesk.sqlite in the per-user data folder, or "
        "$GBDESK_DB); opened read only",
    )
    _json_arg(p)
    p = sub.add_parser(
        "selftest",
        help="check a model: the same prompts decoded alone and in a full batch",
        description="--determinism: decode short and long prompts alone, then all at once, "
        "and compare the texts byte for byte (the first differing token is named); the "
        "result is stored with the model for the report's test log. Exit 0: identical; 1: "
        "some differ. A server model is not checked (its batching is the server's).",
    )
    p.add_argument("--determinism", action="store_true", help="the alone-versus-batch check")
    p.add_argument("--model", default="default", help="'default', a GGUF path or an endpoint")
    p.add_argument("--prompts", type=prompt_count, default=8, help="prompts, 2 to 47 (default 8)")
    p.add_argument("--max-tokens", type=_positive_int, default=64, help="tokens per answer")
    p.add_argument("--seed", type=_seed, default=0)
    _db_arg(p)
    _json_arg(p)


def _import_commands(sub: Any) -> None:
    """import, import-labels: generations and hand labels made elsewhere."""
    p = sub.add_parser("import", help="analyse generations made elsewhere")
    p.add_argument("--probe", required=True)
    p.add_argument(
        "--file",
        required=True,
        help="CSV or JSONL with response and item or prompt columns (e.g. an exported "
        "attempts.csv), or the probe's own layout",
    )
    p.add_argument("--model-name", type=_text, help="name of the model that wrote the responses")
    p.add_argument(
        "--template", type=_text, help="template the prompts were made with (text or preset)"
    )
    p.add_argument(
        "--wording",
        type=_wording,
        default=0,
        help="the wording the prompts were asked in (0 = the study's own; gbdesk items "
        "--wordings all lists them)",
    )
    p.add_argument(
        "--deal-rows",
        action="store_true",
        help="rows without an item column whose prompt several items share are dealt to "
        "those items in turn (otherwise such a file is refused)",
    )
    _wait_arg(p)
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "import-labels",
        help="store a rater's hand labels for a run from CSV/JSONL (e.g. an edited export)",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--file",
        required=True,
        help="rows keyed by attempt_id, item + attempt, or prompt + response; the label "
        "columns depend on the probe (characters.csv: role, name, gender, references; "
        "answers.csv: category, option; others: label)",
    )
    p.add_argument("--rater", type=_name, required=True, help="who made these labels")
    p.add_argument(
        "--consensus",
        action="store_true",
        help="the labels are adjudicated ones (where raters disagreed), decided by --rater",
    )
    _db_arg(p)
    _json_arg(p)


def _labelling_commands(sub: Any) -> None:
    """label, sample: a labelling pass, the random review sample."""
    p = sub.add_parser(
        "label", help="label a run's stored texts with one of its probe's labelling passes"
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--extractor",
        default="llm",
        metavar="PASS",
        help="the labelling pass (see the probe's card; default: llm)",
    )
    p.add_argument(
        "--labeler-model", default="default", help="GGUF path or 'default' for a model-based pass"
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "sample",
        help="draw a uniformly random review sample of a run (for --labels ppi)",
        description="Draw a uniformly random review sample of a run: the items (or "
        "attempts) a person reviews so that the automatic labels' accuracy is measured "
        "without bias — the review queue's other orders (least sure first, ties first) "
        "are not random and cannot give it. Once the sample is reviewed (Review → “In the "
        "random review sample”, gbdesk review, or gbdesk import-labels), `gbdesk metrics "
        "RUN --labels ppi` corrects every metric for the labeller's errors measured on it "
        "(prediction-powered intervals), and the reports state the labels' measured "
        "accuracy. Drawing again with another --size or --seed replaces the sample; --json "
        "lists the sampled attempt ids.",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument("--size", type=_positive_int, required=True, help="units to draw")
    p.add_argument("--seed", type=_seed, default=0)
    _db_arg(p)
    _json_arg(p)


def _people_commands(sub: Any) -> None:
    """code, agreement, review: what people decide, and how far they agree."""
    p = sub.add_parser(
        "code",
        help="code a run's texts with a codebook: draw the texts to code, import a rater's "
        "codes, edit the codebook, show progress",
    )
    p.add_argument("run_id", type=_run_id)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--select", action="store_true", help="draw the texts to code (per category, seeded)"
    )
    action.add_argument(
        "--file",
        help="CSV/JSONL of codes to store as --rater's (all or nothing): attempt_id, item + "
        "attempt, or story (item#attempt); codes (names separated by ';'); memo",
    )
    action.add_argument("--add-code", metavar="NAME", type=_text, help="add a code")
    action.add_argument(
        "--rename", nargs=2, metavar=("CODE", "NEW_NAME"), type=_text, help="rename a code"
    )
    action.add_argument(
        "--define", nargs=2, metavar=("CODE", "DEFINITION"), type=_text, help="define a code"
    )
    action.add_argument(
        "--show", action="store_true", help="the codebook, the drawn texts and the progress"
    )
    p.add_argument("--rater", type=_name, help="who coded (--file), or who edits the codebook")
    p.add_argument(
        "--consensus",
        action="store_true",
        help="with --file: the codes are the adjudicated ones, decided by --rater",
    )
    p.add_argument("--definition", type=_text, default="", help="with --add-code")
    p.add_argument(
        "--per-category", type=_positive_int, default=3, help="texts per category (default 3)"
    )
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draw (default 0)")
    p.add_argument(
        "--threshold",
        type=_share,
        help="name-likelihood threshold of a name-based category (default: the probe's own)",
    )
    p.add_argument(
        "--categories", type=_text, help="comma-separated categories to draw (default: all)"
    )
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="reviewed",
        metavar="MODE",
        help="labels whose names the selection reads (default: reviewed)",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "agreement",
        help="agreement between raters of a run: per label kind, and for codes per code "
        "and overall (initial, current, after adjudication)",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--with-auto",
        action="store_true",
        help="count the automatic labeller as one more rater",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("review", help="record a reviewer's label for an attempt")
    p.add_argument("attempt_id", type=_run_id)
    p.add_argument(
        "label",
        type=_text,
        help="a label (e.g. male/female/undetected), or JSON for probes with structured labels, "
        'e.g. [{"role": "subject", "name": "Jane", "references": ["she", "her"]}]',
    )
    p.add_argument("--reviewer", type=_name, required=True)
    p.add_argument(
        "--consensus",
        action="store_true",
        help="store the label as the adjudicated one (raters disagreed), decided by --reviewer",
    )
    _db_arg(p)
    _json_arg(p)


@dataclass(frozen=True)
class CommandKit:
    """What a study's own subcommands (`Study.commands`) use to behave like the built-in
    ones: the --db and --json arguments, opening the database, printing the result, a
    progress printer for runs, and the argument types."""

    db_arg: Callable[[argparse.ArgumentParser], None]
    json_arg: Callable[[argparse.ArgumentParser], None]
    open_store: Callable[..., Any]
    emit: Callable[[argparse.Namespace, Any, str], None]
    progress: Callable[[], Callable[[Any], None]]
    text: Callable[[str], str]
    run_id: Callable[[str], int]
    positive_int: Callable[[str], int]
    seed: Callable[[str], int]
    name: Callable[[str], str]
    bounded: Callable[[str], Callable[[str], int]]  # a positive int up to `LIMITS[name]`


#: subcommands added by studies (`Study.commands`), filled when the parser is built
STUDY_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _add_study_commands(sub: Any) -> None:
    """Let every study that declares `commands` add its subcommands."""
    from importlib import import_module

    from gbdesk.contract import studies

    kit = CommandKit(
        _db_arg, _json_arg, _open_store, _emit, _ProgressPrinter, _text, _run_id,
        _positive_int, _seed, _name, _bounded,
    )  # fmt: skip
    for study in studies():
        if not study.commands:
            continue
        module, _, attr = study.commands.partition(":")
        try:
            handlers = getattr(import_module(module), attr)(sub, kit)
        except Exception:  # a broken study must not break the other commands
            logging.getLogger(__name__).exception("commands of the study %r failed", study.name)
            continue
        for name, handler in handlers.items():
            if name in COMMANDS:
                logging.getLogger(__name__).error("study command %r shadows a built-in", name)
                continue
            STUDY_COMMANDS[name] = handler
