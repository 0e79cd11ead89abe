"""The six figures of the core's shape (issue 25), measured on the source tree.

    python scripts/architecture_figures.py [--json] [--cycles]

1. modules caught in import cycles — every ``import``/``from … import`` of a gbdesk module,
   function-level ones included, as an edge; the strongly connected components with more
   than one module are the loops;
2. public members of the `Probe` base class a study author must understand;
3. lines holding SQL outside ``gbdesk/store/`` (a statement split over lines counts once);
4. loose modules directly in ``gbdesk/`` (``__init__`` and ``__main__`` not counted);
5. functions (and methods) longer than 100 lines;
6. README.md's size;
7. arrows back up in the house: pairs of gbdesk's top-level packages (`HOUSE`, lowest
   first) where the lower one imports the higher one. Without a `gbdesk/contract/`, the
   contract lives in `gbdesk/studies/`, and the house draws that package where the
   contract sits. The app's two faces (cli, ui) share a floor, with the studies' Qt
   views (`_qt`).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gbdesk"
SQL = re.compile(
    r"\b(SELECT\b.*\bFROM\b|SELECT\s+(COUNT|SUM|MAX|MIN|AVG|DISTINCT|\*|\w+\.)|"
    r"INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|"
    r"CREATE\s+(TABLE|INDEX|UNIQUE|TEMP)|DROP\s+(TABLE|INDEX)|ALTER\s+TABLE|PRAGMA\s+\w+)"
)  # SQL as the project writes it: upper-case keywords


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: set[str]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: set[str]) -> Iterator[tuple[int, str]]:
    """(line, gbdesk module) for every import anywhere in a module's source — inside
    functions and under `if TYPE_CHECKING:` too. `from pkg import name` counts `pkg` as
    well: importing anything from a package runs its `__init__`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            resolved = _resolve(target, known) if target.startswith("gbdesk") else None
            if resolved and resolved != module:
                yield node.lineno, resolved


def import_graph() -> dict[str, set[str]]:
    """module → the gbdesk modules it imports anywhere in its body."""
    found = modules()
    known = set(found)
    return {m: {t for _, t in imports(m, path, known)} for m, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import loops: strongly connected components of more than one module."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    edges = [(index[m], index[t]) for m in names for t in graph[m]]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    matrix = csr_matrix(([1] * len(edges), (rows, cols)), shape=(len(names), len(names)))
    _, label = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, component in zip(names, label, strict=True):
        groups.setdefault(int(component), []).append(name)
    return sorted((g for g in groups.values() if len(g) > 1), key=len, reverse=True)


#: gbdesk's top-level packages as the house is drawn, lowest first
HOUSE = (
    "support", "maths", "store", "engine", "contract", "analysis", "people", "report",
    "workflows", "studies", "cli", "ui", "__main__",
)  # fmt: skip


def arrows_back_up(graph: dict[str, set[str]] | None = None) -> list[str]:
    """"lower → higher" for each pair of top-level packages where a module of the lower
    imports a module of the higher (see figure 7)."""
    graph = graph if graph is not None else import_graph()
    rank = {name: i for i, name in enumerate(HOUSE)}
    if not (PACKAGE / "contract").is_dir():
        rank["studies"] = rank["contract"]

    rank["cli"] = rank["ui"]  # the app: its two faces

    def top(module: str) -> str | None:
        parts = module.split(".")
        if "_qt" in parts:  # a study's Qt views are drawn with the app (napari's `_qt`)
            return "ui"
        return parts[1] if len(parts) > 1 and parts[1] in rank else None

    pairs = {
        (top(m), top(t))
        for m, targets in graph.items()
        for t in targets
        if top(m) and top(t) and top(m) != top(t)
    }
    return sorted(f"{a} → {b}" for a, b in pairs if rank[b] > rank[a])  # type: ignore[index]


def probe_members() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from gbdesk.contract.probe import Probe

    return sorted(n for n in dir(Probe) if not n.startswith("_"))


def _literal_text(node: ast.AST) -> str | None:
    """A string literal's text (adjacent literals are one node; an f-string's fixed parts
    joined), whitespace collapsed, or None for any other node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = " ".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    else:
        return None
    return " ".join(text.split())


def sql_in_source(source: str) -> list[int]:
    """The line numbers of a module's source that hold SQL: a line that matches `SQL`, or
    the first line of a string literal that does once its lines are joined and matched on
    none of its lines (a statement split over several lines, "SELECT a, b, " / "FROM t")."""
    by_line = {n for n, line in enumerate(source.splitlines(), 1) if SQL.search(line)}
    found = set(by_line)
    for node in ast.walk(ast.parse(source)):
        text = _literal_text(node)
        if text and SQL.search(text):
            end = node.end_lineno or node.lineno
            if not any(node.lineno <= n <= end for n in by_line):  # not counted yet
                found.add(node.lineno)
    return sorted(found)


def sql_lines(package: Path = PACKAGE) -> list[str]:
    """`path:line: text` of every line holding SQL in `package` outside its ``store/``."""
    out = []
    for path in sorted(package.rglob("*.py")):
        if "store" in path.relative_to(package).parts[:1]:
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for number in sql_in_source(source):
            where = path.relative_to(package.parent)
            out.append(f"{where}:{number}: {lines[number - 1].strip()[:80]}")
    return out


def loose_modules() -> list[str]:
    return sorted(
        p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")
    )


def long_functions(limit: int = 100) -> list[tuple[int, str]]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    out.append((length, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def figures() -> dict:
    graph = import_graph()
    loops = cycles(graph)
    readme = ROOT / "README.md"
    return {
        "modules_in_import_cycles": sum(len(c) for c in loops),
        "import_loops": len(loops),
        "loops": loops,
        "probe_public_members": len(probe_members()),
        "sql_lines_outside_store": len(sql_lines()),
        "sql_lines": sql_lines(),
        "loose_modules": len(loose_modules()),
        "loose_module_names": loose_modules(),
        "functions_over_100_lines": len(long_functions()),
        "long_functions": [f"{n} {where}" for n, where in long_functions()],
        "arrows_back_up": len(arrows_back_up(graph)),
        "arrows": arrows_back_up(graph),
        "readme_bytes": readme.stat().st_size,
        "readme_lines": len(readme.read_text(encoding="utf-8").splitlines()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cycles", action="store_true", help="list the modules of each loop")
    args = parser.parse_args()
    f = figures()
    if args.json:
        print(json.dumps(f, indent=1))
        return 0
    print(f"modules in import cycles     {f['modules_in_import_cycles']} "
          f"(in {f['import_loops']} loops)")  # fmt: skip
    print(f"Probe public members         {f['probe_public_members']}")
    print(f"SQL lines outside store/     {f['sql_lines_outside_store']}")
    print(f"loose modules in gbdesk/     {f['loose_modules']}")
    print(f"functions over 100 lines     {f['functions_over_100_lines']}")
    print(f"README.md                    {f['readme_bytes'] / 1024:.1f} KB, "
          f"{f['readme_lines']} lines")  # fmt: skip
    print(f"arrows back up in the house  {f['arrows_back_up']}"
          + (f" ({', '.join(f['arrows'])})" if f["arrows"] else ""))  # fmt: skip
    if args.cycles:
        for loop in f["loops"]:
            print(f"\nloop of {len(loop)}: " + ", ".join(loop))
        print("\n" + "\n".join(f["sql_lines"]))
        print("\n" + "\n".join(f["long_functions"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
