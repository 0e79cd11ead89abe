"""gbdesk's own cost per answer through an OpenAI-compatible server that answers at once.

Every probe of the GenderBench 1.1 harness (`genderbench-1.1`: fourteen probes, each with
its template preset and `default_attempts`; 156,492 answers at 1.1.0's sizes) runs as

    gbdesk run --probe P --template genderbench-1.1 --endpoint URL --endpoint-model fake \\
        --concurrency N --new --json --db (a fresh file)

in a child process against a stand-in server (`tests.fakes.FakeOpenAIServer`, in a
process of its own, keep-alive connections) that answers at once with plausible short
answers: GenderBench 1.1.0's own answers for that probe (tests/fixtures/genderbench_1_1,
drawn by the request's prompt and seed). So what is measured is gbdesk's side: planning
the run, sending the requests, labelling every answer with the probe's evaluator and
storing it (with its label and flat facts) in SQLite.

Per probe it prints the answers, the run's wall seconds (from the "model loaded" line —
the endpoint checked, the run planned — to the end of the command), answers/s, gbdesk's
CPU ms per answer (the child's user + system time over the whole command), the stand-in
server's CPU, and the time the whole harness would take at that rate; then the projected
total for 156,492 answers against the goal of 15 minutes (≥ ~175 answers/s sustained).

`--items N` runs the first N items of each probe (the run's `--limit`: balanced where the
probe balances) and projects from the rate; `--compare-with CHECKOUT` runs the same
commands with another checkout's gbdesk (e.g. /work/main before a change), taking turns
per probe so that a shared machine's load falls on both alike, and prints the ratio.

    python benchmarks/server_throughput.py [--probes bbq,isear] [--items 2000]
        [--concurrency 64] [--compare-with /work/main] [--profile DIR]

`--profile DIR` writes a cProfile of each (this checkout's) command to DIR/PROBE.prof;
`--http10` makes the stand-in close every connection after its answer (HTTP/1.0), as
tests.fakes' stand-in did before it kept connections alive.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S = 15 * 60
HARNESS = "genderbench-1.1"


def harness_sizes() -> dict[str, int]:
    """Answers per probe of the harness at 1.1.0's sizes (template preset, default
    attempts)."""
    from gbdesk.contract import get_probe
    from gbdesk.studies.genderbench import HARNESS_PROBES

    sizes = {}
    for name in HARNESS_PROBES:
        probe = get_probe(name)
        items = probe.items(probe.resolve_params(template=HARNESS))
        sizes[name] = probe.capabilities.running.work_units(items, probe.default_attempts)
    return sizes


# -- the stand-in server (a child process) ------------------------------------------------------
def serve(probe: str, keep_alive: bool = True) -> int:
    """Serve `probe`'s GenderBench answers until SIGTERM; print the URL first."""
    from tests import genderbench_fixtures as gbf
    from tests.fakes import FakeOpenAIServer

    pool = [str(row["answer"]) for row in gbf.answers(probe)]

    def answer(content: str, seed: int) -> str:
        return pool[zlib.crc32(f"{seed}\0{content}".encode()) % len(pool)]

    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    with FakeOpenAIServer(answer, keep_alive=keep_alive) as server:
        print(server.url, flush=True)
        while not stop["now"]:
            time.sleep(0.2)
    return 0


@dataclass
class Took:
    answers: int
    run_s: float  # from the "model loaded" line to the command's end
    command_s: float
    cpu_s: float  # the gbdesk child's user + system time
    server_cpu_s: float

    @property
    def rate(self) -> float:
        return self.answers / self.run_s if self.run_s > 0 else 0.0


def _wait(proc: subprocess.Popen) -> tuple[int, float]:
    """(exit status, user + system seconds) of a child."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def one_run(
    probe: str,
    root: Path,
    concurrency: int,
    items: int | None,
    profile: Path | None,
    keep_alive: bool = True,
) -> Took:
    """`gbdesk run` of one probe with `root`'s gbdesk against a fresh stand-in server."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    serve_args = ["--serve", probe] + ([] if keep_alive else ["--http10"])
    server = subprocess.Popen(
        [sys.executable, __file__, *serve_args], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.sqlite"
            gbdesk = ["-m", "gbdesk"]
            if profile is not None:
                profile.mkdir(parents=True, exist_ok=True)
                gbdesk = ["-m", "cProfile", "-o", str(profile / f"{probe}.prof"), "-m", "gbdesk"]
            cmd = [
                sys.executable, *gbdesk, "run", "--probe", probe, "--template", HARNESS,
                "--endpoint", url, "--endpoint-model", "fake", "--concurrency", str(concurrency),
                "--new", "--json", "--db", str(db),
                *(["--limit", str(items)] if items else []),
            ]  # fmt: skip
            started = time.perf_counter()
            child = subprocess.Popen(
                cmd,
                cwd=root,
                env={**os.environ, "PYTHONPATH": str(root), "GBDESK_DATA_DIR": tmp},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert child.stderr is not None and child.stdout is not None
            loaded = None
            err = []
            for line in child.stderr:
                err.append(line)
                if loaded is None and "loaded in" in line:
                    loaded = time.perf_counter()
            out = child.stdout.read()
            code, cpu = _wait(child)
            ended = time.perf_counter()
            if code != 0:
                raise SystemExit(f"{probe}: gbdesk run failed ({code}):\n{''.join(err)[-3000:]}")
            summary = json.loads(out)
    finally:
        server.send_signal(signal.SIGTERM)
        _, server_cpu = _wait(server)
    return Took(
        answers=int(summary["attempts"]),
        run_s=ended - (loaded or started),
        command_s=ended - started,
        cpu_s=cpu,
        server_cpu_s=server_cpu,
    )


def _line(name: str, took: Took, size: int) -> str:
    return (
        f"{name:<22} {took.answers:>7,} {took.run_s:>8.1f} {took.rate:>9.0f} "
        f"{1000 * took.cpu_s / took.answers:>9.2f} {took.server_cpu_s:>8.1f} "
        f"{size / took.rate / 60 if took.rate else float('inf'):>9.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", help="comma-separated probe names (default: the harness)")
    parser.add_argument("--items", type=int, help="the first N items of each probe (--limit)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--compare-with", type=Path, help="another checkout: run it too")
    parser.add_argument("--profile", type=Path, help="write DIR/PROBE.prof (this checkout)")
    parser.add_argument(
        "--http10", action="store_true", help="the stand-in closes every connection (HTTP/1.0)"
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the stand-in server's child
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, keep_alive=not args.http10)
    sizes = harness_sizes()
    probes = args.probes.split(",") if args.probes else list(sizes)
    sides = [("this", ROOT)]
    if args.compare_with is not None:
        sides.insert(0, ("baseline", args.compare_with.resolve()))
    print(
        f"{len(probes)} probes, {'all' if not args.items else f'the first {args.items:,}'} "
        f"items, --concurrency {args.concurrency}; the whole harness is {sum(sizes.values()):,} "
        "answers",
        flush=True,
    )
    print(
        f"{'probe (side)':<22} {'answers':>7} {'run s':>8} {'answers/s':>9} {'CPU ms/a':>9} "
        f"{'srv CPU':>8} {'harness':>9}",
        flush=True,
    )
    projected = {name: 0.0 for name, _ in sides}
    for probe in probes:
        for name, root in sides:
            profile = args.profile if name == "this" else None
            took = one_run(
                probe, root, args.concurrency, args.items, profile, keep_alive=not args.http10
            )
            projected[name] += sizes[probe] / took.rate
            label = probe if len(sides) == 1 else f"{probe} ({name})"
            print(_line(label, took, sizes[probe]) + " min", flush=True)
    for name, _ in sides:
        seconds = projected[name]
        print(
            f"projected harness ({name}, {len(probes)} probes): {seconds / 60:.1f} min — "
            f"{sum(sizes[p] for p in probes) / seconds:.0f} answers/s; goal "
            f"{GOAL_S / 60:.0f} min for all 14: {'met' if seconds <= GOAL_S else 'not met'}",
            flush=True,
        )
    if len(sides) == 2:
        print(f"this / baseline: ×{projected['baseline'] / projected['this']:.2f} faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
