"""The walk of exporting runs' CSV files through the core's layers (issue 33, item 5).

    python scripts/export_walk.py DB RUN [RUN …] [--json] [--edges]

Runs ``gbdesk export RUN … --csv TMPDIR`` in this process under a call tracer
(`sys.setprofile`) and counts, over the distinct call sites the walk uses (a caller
function calling a callee function, counted once however often it is taken, so the figure
does not grow with the number of answers):

* **climbs back up** — calls from a module of a lower layer into a module of a higher one
  (layers as in ``tests/project/test_layers.py``; the contract ``gbdesk.contract`` calling a
  study plug-in's code counts as well, the study packages being a higher layer);
* **re-entries into analysis/results.py** — calls into ``gbdesk/analysis/results.py`` from
  any other module after the walk has left it once (the first entry is not counted).

A call made by code outside gbdesk (the standard library, a comprehension's frame in
gbdesk stays gbdesk's) is attributed to the nearest gbdesk frame below it. Work on a copy of
the database: the export computes and caches metrics.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gbdesk"
RESULTS = "gbdesk.analysis.results"
#: the command whose calls are the walk (file, function)
EXPORT = ("cli/results.py", "cmd_export")
#: the run looked up again from its id: its row, its probe
LOOKUPS = ("gbdesk.store._runs:get_run", "gbdesk.contract.registry:get_probe")


def _layers() -> Any:
    """tests/project/test_layers.py: the layers (`layer_of`, `RANK`) the walk is measured on."""
    path = ROOT / "tests" / "project" / "test_layers.py"
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("test_layers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_of(filename: str, cache: dict[str, str | None]) -> str | None:
    """The gbdesk module a code object's file is, or None outside gbdesk."""
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
    """The distinct call sites between gbdesk modules seen while tracing."""

    def __init__(self) -> None:
        self.edges: dict[tuple[str, str], int] = {}  # (caller, callee) "module:function"
        self._cache: dict[str, str | None] = {}
        self.active = False

    def _gbdesk(self, frame: FrameType | None) -> tuple[str, str] | None:
        while frame is not None:
            module = _module_of(frame.f_code.co_filename, self._cache)
            if module is not None:
                return module, frame.f_code.co_name
            frame = frame.f_back
        return None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code.co_name == EXPORT[1] and frame.f_code.co_filename.endswith(EXPORT[0]):
            self.active = event == "call"  # the walk: `cmd_export`, not the parser's making
            return
        if event != "call" or not self.active:
            return
        callee = _module_of(frame.f_code.co_filename, self._cache)
        if callee is None:
            return
        caller = self._gbdesk(frame.f_back)
        if caller is None or caller[0] == callee:
            return
        key = (f"{caller[0]}:{caller[1]}", f"{callee}:{frame.f_code.co_name}")
        self.edges[key] = self.edges.get(key, 0) + 1


def measure(db: Path, run_ids: list[int]) -> dict[str, Any]:
    """Trace `gbdesk export RUN … --csv` on a copy of `db`; the walk's figures."""
    layers = _layers()
    sys.path.insert(0, str(ROOT))
    from gbdesk.cli import main

    walk = Walk()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "walk.sqlite"
        shutil.copy(db, copy)
        argv = ["--db", str(copy), "export", *map(str, run_ids), "--csv", str(Path(tmp) / "csv")]
        sys.setprofile(walk.profile)
        try:
            code = main(argv)
        finally:
            sys.setprofile(None)
    if code:
        raise SystemExit(f"gbdesk export failed ({code})")

    def rank(site: str) -> int:
        return layers.RANK[layers.layer_of(site.split(":")[0])]

    climbs = sorted(e for e in walk.edges if rank(e[1]) > rank(e[0]))
    lookups = sorted(e for e in walk.edges if e[1] in LOOKUPS)
    entries = sorted(
        e
        for e in walk.edges
        if e[1].startswith(RESULTS + ":")
        and not e[0].startswith(RESULTS + ":")
        and not e[1].endswith(":<module>")  # its import
    )
    return {
        "runs": run_ids,
        "climbs_back_up": len(climbs),
        "results_entries": len(entries),
        "results_reentries": max(0, len(entries) - 1),
        "calls_climbing": sum(walk.edges[e] for e in climbs),
        "calls_into_results": sum(walk.edges[e] for e in entries),
        "run_lookups": len(lookups),
        "climbs": [f"{a} -> {b}" for a, b in climbs],
        "lookups": [f"{a} -> {b}" for a, b in lookups],
        "entries": [f"{a} -> {b}" for a, b in entries],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("run_ids", type=int, nargs="+")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--edges", action="store_true", help="list the call sites counted")
    args = parser.parse_args()
    got = measure(args.db, args.run_ids)
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    print(f"runs {' '.join(map(str, got['runs']))}")
    print(f"climbs back up: {got['climbs_back_up']}")
    print(f"re-entries into analysis/results.py: {got['results_reentries']}")
    print(
        f"calls made on those sites: {got['calls_climbing']} climbing, "
        f"{got['calls_into_results']} into analysis/results.py"
    )
    print(f"call sites looking the run up again (Store.get_run, get_probe): {got['run_lookups']}")
    if args.edges:
        print("\nclimbs:", *got["climbs"], sep="\n  ")
        print("\nentries into analysis/results.py:", *got["entries"], sep="\n  ")
        print("\nrun looked up:", *got["lookups"], sep="\n  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
