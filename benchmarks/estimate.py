"""The pre-run time estimate (`gbdesk.workflows.runs.estimate_run`) against a run's actual time.

In a fresh temporary database, with the bundled model and the default decoding
(continuous batching, automatic batch size):

1. calibration: a short run of the probe (its first `--calibrate` items, seed 1) stores
   this model's measured speed at the chosen batch size;
2. the estimate of a second run (seed 2: other texts; enough attempts of the probe's
   items for about `--target-s` seconds by the calibration's speed), computed as the
   Runs pane does (`estimate_run(..., slots=N)`);
3. that run, timed from `execute_run`'s call to its return (model load included).

Printed: the estimate, both actual times and the estimate's error (target: within 15 %).

    python benchmarks/estimate.py [--probe inventories] [--target-s 300] [--calibrate 48]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

from gbdesk.contract import get_probe
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import LlamaCppBackend
from gbdesk.engine.slots import choose_slots
from gbdesk.store import Store
from gbdesk.workflows.runs import estimate_run, execute_run, plan_run, resolve_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", default="inventories")
    parser.add_argument("--target-s", type=float, default=300.0)
    parser.add_argument("--calibrate", type=int, default=48, help="calibration items")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="default: one per core")
    args = parser.parse_args()
    probe = get_probe(args.probe)
    max_tokens = args.max_tokens or probe.default_generation["max_tokens"]
    n_items = len(probe.items(probe.resolve_params()))
    _, why = choose_slots(default_model_path(), n_ctx_seq=max_tokens + 512)
    print(
        f"probe {probe.name} ({n_items} items), max_tokens {max_tokens}, model "
        f"{default_model_path().name}; batch: {why}",
        flush=True,
    )

    def factory(model, generation):  # the default factory's backend, with --threads
        return LlamaCppBackend(
            model["path"], batch_size=generation["batch_size"], n_threads=args.threads
        )

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "est.sqlite") as store:
        model = resolve_model(store, "default")
        calib = plan_run(
            store, probe.name, model, attempts=1, limit=args.calibrate, seed=1,
            max_tokens=max_tokens,
        )  # fmt: skip
        t0 = time.perf_counter()
        execute_run(store, calib, backend_factory=factory)
        used = store.get_run(calib)["engine"]["batching"]["slots"]
        print(
            f"calibration: {args.calibrate} generations in {time.perf_counter() - t0:.1f} s "
            f"({used} sequences at once)",
            flush=True,
        )
        one = estimate_run(
            store, probe.name, model["sha256"], attempts=1, max_tokens=max_tokens, slots=used
        )
        per_attempt_round = one.seconds or 1.0  # every item once
        attempts = max(1, math.ceil(args.target_s / per_attempt_round))
        limit = None
        if attempts == 1 and one.seconds and one.seconds > args.target_s:
            limit = max(1, int(n_items * args.target_s / one.seconds))
        est = estimate_run(
            store, probe.name, model["sha256"], attempts=attempts, max_tokens=max_tokens,
            limit=limit, slots=used,
        )  # fmt: skip
        print(
            f"estimate: {est.generations} generations ≈ {est.seconds:.1f} s at "
            f"{est.tokens_per_s:.1f} tokens/s, ~{est.tokens_per_generation:.1f} tokens each "
            f"({est.basis})",
            flush=True,
        )
        run_id = plan_run(
            store, probe.name, model, attempts=attempts, limit=limit, seed=2,
            max_tokens=max_tokens,
        )  # fmt: skip
        started = time.perf_counter()
        outcome = execute_run(store, run_id, backend_factory=factory)
        ended = time.perf_counter()
        assert outcome.status == "done", outcome
        rows = store.attempts(run_id)
        tokens = sum(r["tokens_out"] for r in rows)
        total = ended - started
        print(
            f"actual: {len(rows)} generations, {tokens} tokens ({tokens / len(rows):.1f} each) "
            f"in {total:.1f} s including the model load "
            f"({store.get_run(run_id)['engine']['load_time_s']:.1f} s; "
            f"{store.get_run(run_id)['engine']['batching']['slots']} sequences at once)"
        )
        error = (est.seconds - total) / total
        print(
            f"estimate {est.seconds:.1f} s vs actual {total:.1f} s: error {100 * error:+.1f} % "
            f"(target within ±15 %: {'met' if abs(error) <= 0.15 else 'NOT met'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
