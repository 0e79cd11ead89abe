"""GenderBench 1.1 harness on this laptop: gbdesk's default path against a plain
llama-cpp-python loop, per probe, in generated tokens per second, and the projected time
of the whole harness.

    python benchmarks/harness.py                      # bbq, discrimination_tamkin, gest; 24 items
    python benchmarks/harness.py --probes bbq --rounds 3
    python benchmarks/harness.py --new                # the eleven probes added for 1.1 (6 items)
    python benchmarks/harness.py --plain-arithmetic default   # the plain loop as shipped

For each probe, a seeded subset of its ``genderbench-1.1`` items that keeps its groups
(`Probe.balanced_subset`, ``--items`` items) with every prompt of each item, one attempt
per prompt, goes through

  plain   `Llama.create_chat_completion` in this process, one prompt after another, with
          the same seeds, sampling settings and max_tokens (300, temperature 1.0 as 1.1.0's
          generators; top_k 0, min_p 0 as gbdesk);
  gbdesk  `gbdesk run`'s path (`plan_run` + `execute_run` with the default backend: the
          model in a worker process, continuous batching with the automatic sequence
          count, prompt prefixes shared, every answer labelled and committed as it arrives).

Comparable answers. At temperature 1.0 a text is a random walk: the tiniest difference in
a logit changes one sampled token and the rest of the answer with it, and answer lengths
are heavy-tailed (most BBQ answers are 3–30 tokens, some run to the 300-token limit), so
two sides that compute differently make answers of different lengths, and neither their
generations per second nor their tokens per second can be compared (a side with shorter
answers spends more of its time on prompts). gbdesk's batched engine computes with flash
attention on (`gbdesk.engine.continuous`); llama-cpp-python's default is off. So by default
(``--plain-arithmetic same``) the plain loop is built with the same arithmetic settings
(``flash_attn=True``, n_batch = n_ubatch = 48; f16 KV cache and thread count are the same
anyway), and then both sides generate the *same texts* for the same prompt and seed: the
table counts them ("same") and prints both sides' tokens per answer. A text can still
differ where a one-token decode of the plain loop sees 256 or more KV cells (ggml then
switches to its split-KV attention kernel; gbdesk pads such steps, see
`gbdesk.engine.continuous`): long prompts or answers. ``--plain-arithmetic default`` runs
the plain loop as shipped (flash attention off) instead: its texts differ, and its
tokens per answer with them (on the 24 bbq items: 46 against gbdesk's 20).

Figures: generated tokens per second of generating, the model's load left out (plain: the
loop; gbdesk: from the worker's model loaded to the last answer committed), both sides
measured in this one process run; with ``--rounds`` > 1 the order alternates and medians
are printed. "load" is the 1-minute load average before the probe's first round (the
machine is shared; an idle machine reads below ~0.3). Below the table: where gbdesk's time
went (the worker's counters: prompt tokens decoded and shared, decode steps, seconds in
prompt decoding, generation steps and sampling; and this process's CPU seconds labelling
and committing), then the projected time of the whole harness at 1.1.0's sizes from
gbdesk's generations per second.

The *ceiling* column (skipped with ``--no-ceiling``): this machine's decode costs are
measured first (`benchmarks/decode_costs.py`, ~10 s), and each probe's ceiling is the
fastest any engine with these arithmetic settings could make gbdesk's answers — every
prompt prefix the probe's prompts share decoded once at the cheapest prompt cost, every
answer token in the cheapest generation step, gbdesk's sampling time — over the plain
loop's measured rate. Below the table, each probe's prompt tokens: what the plain loop
decodes (sharing with the previous prompt), what gbdesk decoded, and the least possible.

Goal (issue 34): ratio ≥ 2× on bbq, discrimination_tamkin and gest on an idle machine
(blocked on the 2-core development machine: the ceilings are below 2×, docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.decode_costs import (
    LONG_ARITHMETICS,
    DecodeCosts,
    _shared,
    ceiling_seconds,
    chat_tokens,
    long_prompt_costs,
    measure,
    minimal_prompt_tokens,
    previous_shared_tokens,
)
from gbdesk.contract import get_harness, get_probe, prompt_index
from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, attempt_seed
from gbdesk.engine.default_model import default_model_path
from gbdesk.engine.llama_backend import DEFAULT_N_CTX, default_threads
from gbdesk.engine.llama_compat import load_llama
from gbdesk.engine.scoring import DEFAULT_N_UBATCH
from gbdesk.store import Store
from gbdesk.support.format import duration
from gbdesk.workflows.runs import (
    Progress,
    execute_run,
    llama_backend_factory,
    plan_run,
    resolve_model,
)

HARNESS = "genderbench-1.1"
OLD = ("inventories", "jobs_lum", "gest_creative")
#: the probes of issue 34's goal (≥ 2× the plain loop)
GOAL = ("bbq", "discrimination_tamkin", "gest")
SEED = 0
MAX_TOKENS = 300


@dataclass
class Side:
    """One side's measurement of one probe."""

    seconds: float
    texts: dict[tuple[str, int], str]
    tokens: int
    profile: dict[str, Any] = field(default_factory=dict)

    @property
    def generations(self) -> int:
        return len(self.texts)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def generations_per_s(self) -> float:
        return self.generations / self.seconds


def workload(probe_name: str, n_items: int) -> list[tuple[str, str, int, int]]:
    """The (item, prompt, attempt, seed) list of the run, one attempt per prompt, in the
    run loop's attempt numbering."""
    probe = get_probe(probe_name)
    params = probe.resolve_params(template=HARNESS, limit=n_items)
    out = []
    for item in probe.items(params):
        texts = [p.text for p in item.prompts] or [item.prompt]
        for a, text in enumerate(texts):
            assert prompt_index(a, 1) == a
            out.append((item.key, text, a, attempt_seed(SEED, item.key, a)))
    return out


def load_plain(arithmetic: str) -> Any:
    """The plain loop's model: gbdesk's arithmetic settings (``same``) or
    llama-cpp-python's defaults (``default``)."""
    extra: dict[str, Any] = {}
    if arithmetic == "same":
        extra = {"flash_attn": True, "n_batch": DEFAULT_N_UBATCH, "n_ubatch": DEFAULT_N_UBATCH}
    return load_llama(
        default_model_path(),
        n_ctx=DEFAULT_N_CTX,
        n_threads=default_threads(),
        n_threads_batch=default_threads(),
        chat_format="chat_template.default",
        verbose=False,
        **extra,
    )


def plain_loop(prompts, max_tokens: int, arithmetic: str) -> Side:
    """The plain loop over `prompts` (the model's load left out)."""
    llm = load_plain(arithmetic)
    texts: dict[tuple[str, int], str] = {}
    tokens = 0
    started = time.perf_counter()
    for key, prompt, attempt, seed in prompts:
        out = llm.create_chat_completion(
            [{"role": "user", "content": prompt}],
            temperature=1.0,
            top_p=1.0,
            top_k=DEFAULT_TOP_K,
            min_p=DEFAULT_MIN_P,
            max_tokens=max_tokens,
            seed=seed,
        )
        tokens += out["usage"]["completion_tokens"]
        texts[(key, attempt)] = out["choices"][0]["message"]["content"] or ""
    seconds = time.perf_counter() - started
    del llm
    return Side(seconds, texts, tokens)


def gbdesk_path(probe_name: str, n_items: int, max_tokens: int, db: Path) -> Side:
    """gbdesk's default path (`plan_run` + `execute_run`), from the model loaded to the
    last answer committed; its profile: the worker's stream counters and this process's
    CPU seconds."""
    marks: dict[str, float] = {}
    streams: list[dict[str, Any]] = []

    def factory(model, generation):
        backend = llama_backend_factory(model, generation)
        backend.info  # noqa: B018 — waits for the worker to load the model
        stream = backend.generate_stream

        def counted(*args, **kwargs):
            outcome = stream(*args, **kwargs)
            streams.append(dict(outcome.stats))
            return outcome

        backend.generate_stream = counted  # type: ignore[method-assign]
        marks["loaded"] = time.perf_counter()
        marks["cpu"] = time.process_time()
        return backend

    def on_progress(p: Progress) -> None:
        marks["last"] = time.perf_counter()
        marks["cpu_last"] = time.process_time()

    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(
            store,
            probe_name,
            model,
            attempts=1,
            seed=SEED,
            max_tokens=max_tokens,
            template=HARNESS,
            limit=n_items,
        )
        execute_run(store, run_id, on_progress=on_progress, backend_factory=factory)
        rows = store.attempts(run_id)
    profile: dict[str, Any] = {}
    for stats in streams:
        for k, v in stats.items():
            if isinstance(v, int | float):
                profile[k] = profile.get(k, 0) + v
    profile["main_cpu_s"] = marks["cpu_last"] - marks["cpu"]
    seconds = marks["last"] - marks["loaded"]
    texts = {(r["item"], int(r["attempt"])): r["response"] for r in rows}
    return Side(seconds, texts, sum(r["tokens_out"] or 0 for r in rows), profile)


def harness_generations(probe_name: str) -> int:
    """Generations of the probe at 1.1.0's DefaultHarness sizes."""
    probe = get_probe(probe_name)
    items = probe.items(probe.resolve_params(template=HARNESS))
    return probe.capabilities.running.work_units(items, probe.default_attempts)


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not on this system
        return float("nan")


def profile_line(name: str, p: dict[str, Any], wall: float) -> str:
    """Where gbdesk's time went on one probe (the last round)."""

    def s(key: str) -> float:
        return float(p.get(key, 0.0))

    prompt = int(p.get("prompt_tokens", 0))
    shared = int(p.get("shared_tokens", 0))
    return (
        f"  {name:<22}{wall:6.1f} s: prompts {s('prefill_s'):5.1f} s "
        f"({int(p.get('prompt_decoded', 0))} tokens decoded, {shared} of {prompt} shared), "
        f"generation steps {s('step_s'):5.1f} s ({int(p.get('steps', 0))} steps, "
        f"{int(p.get('generated_tokens', 0))} tokens), sampling {s('sample_s'):4.1f} s, "
        f"worker other {max(0.0, s('wall_s') - s('decode_s') - s('sample_s')):4.1f} s; "
        f"this process {s('main_cpu_s'):4.1f} s CPU (labels, commits)"
    )


def decode_costs() -> DecodeCosts:
    """This machine's decode costs with gbdesk's arithmetic settings (`decode_costs.py`)."""
    llm = load_plain("same")
    try:
        return measure(llm, default_threads())
    finally:
        del llm


def ceiling_ratio(
    costs: DecodeCosts, prompts: list[tuple[str, str, int, int]], ours: Side, plain_rate: float
) -> tuple[float, str]:
    """The ceiling's ratio to the plain loop's tokens/s, and a line of its prompt tokens."""
    llm = load_plain("same")
    try:
        tokens = chat_tokens(llm, [text for _, text, _, _ in prompts])
    finally:
        del llm
    least = minimal_prompt_tokens(tokens)
    seconds = ceiling_seconds(costs, least, ours.tokens, float(ours.profile.get("sample_s", 0.0)))
    note = (
        f"  {'':<22}prompt tokens to decode: plain loop {previous_shared_tokens(tokens)}, "
        f"gbdesk {int(ours.profile.get('prompt_decoded', 0))}, at least {least} of "
        f"{sum(map(len, tokens))}; ceiling {seconds:.1f} s for gbdesk's {ours.tokens} tokens"
    )
    return ours.tokens / seconds / plain_rate, note


#: the prompt arithmetic of gbdesk before issue 44 and now (labels of `LONG_ARITHMETICS`)
BEFORE = LONG_ARITHMETICS[1].label
AFTER = LONG_ARITHMETICS[3].label  # gbdesk now: whole chunks of 512, the rest by 48
#: items per probe whose prompts are tokenized for the projection
PROJECTION_ITEMS = 24


def reading_seconds(curve: dict[int, float], n: float) -> float:
    """Seconds to read an `n`-token prompt: the whole-prompt times measured at the lengths
    of `curve` (ms per token, `long_prompt_costs`), joined by straight lines from (0, 0)
    and extended past the longest with its last slope."""
    points = [(0, 0.0)] + [(k, k * ms / 1000) for k, ms in sorted(curve.items())]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if n <= x1:
            return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = points[-2], points[-1]
    return y1 + (y1 - y0) * (n - x1) / (x1 - x0)


@dataclass
class Projection:
    """One probe's inputs to the full-harness projection (from its own prompts)."""

    generations: int
    prompt_reads: list[tuple[int, int]]  # (prompt length, tokens shared with the one before)
    answer_tokens: float
    answer_basis: str

    @property
    def mean_prompt(self) -> float:
        return statistics.fmean(n for n, _ in self.prompt_reads)

    def seconds(self, curve: dict[int, float], step_ms: float) -> float:
        """The harness's time for this probe: each sampled prompt's unshared part read at
        the cost of its cells, every answer token at the best generation step's cost."""
        reads = [
            reading_seconds(curve, n) - reading_seconds(curve, s) for n, s in self.prompt_reads
        ]
        per_generation = statistics.fmean(reads) + self.answer_tokens * step_ms / 1000
        return self.generations * per_generation


def projection(llm: Any, name: str, measured: Side | None) -> Projection:
    """`Projection` of a probe: its first `PROJECTION_ITEMS` items' prompts tokenized,
    sharing with the prompt before as a run's order does; answer lengths measured here
    when the probe ran, else the probe's prior (its `max_tokens` when it has none)."""
    prompts = workload(name, PROJECTION_ITEMS)
    tokens = chat_tokens(llm, [text for _, text, _, _ in prompts])
    reads = [
        (len(t), min(_shared(t, tokens[i - 1]), len(t) - 1) if i else 0)
        for i, t in enumerate(tokens)
    ]
    if measured is not None:
        answer, basis = measured.tokens / measured.generations, "measured here"
    else:
        probe = get_probe(name)
        prior = probe.capabilities.audit.answer_tokens
        answer = float(prior if prior is not None else probe.default_generation["max_tokens"])
        basis = "the probe's prior" if prior is not None else "its max_tokens"
    return Projection(harness_generations(name), reads, answer, basis)


def print_projection(
    harness: list[str], measured: dict[str, Side], costs: DecodeCosts | None
) -> None:
    """Hours for the whole harness on this machine: per probe its measured rate where it
    ran here, and for every probe the projection from its own prompt and answer lengths
    through the decode costs, with gbdesk's prompt arithmetic before and after issue 44."""
    llm = load_plain("same")
    try:
        curves = long_prompt_costs(
            llm, default_threads(), arithmetics=tuple(
                a for a in LONG_ARITHMETICS if a.label in (BEFORE, AFTER)
            ), reps=1,
        )  # fmt: skip
        step_ms = (costs or measure(llm, default_threads())).best_step_ms
        rows = {name: projection(llm, name, measured.get(name)) for name in harness}
    finally:
        del llm
    print(
        f"\nthe whole harness at 1.1.0's sizes on this machine (generation step {step_ms:.2f} ms):"
    )
    print(f"  {'probe':<22}{'generations':>12}{'measured':>14}{'before':>14}{'after':>14}  answers")
    totals = {"measured": 0.0, "before": 0.0, "after": 0.0}
    for name in harness:
        p = rows[name]
        side = measured.get(name)
        seen = p.generations / side.generations_per_s if side else None
        before = p.seconds(curves[BEFORE], step_ms)
        after = p.seconds(curves[AFTER], step_ms)
        totals["before"] += before
        totals["after"] += after
        totals["measured"] += seen if seen is not None else after
        print(
            f"  {name:<22}{p.generations:>12,}{duration(seen) if seen else '—':>14}"
            f"{duration(before):>14}{duration(after):>14}  {p.answer_tokens:.0f} tokens "
            f"({p.answer_basis}), prompts {p.mean_prompt:,.0f} tokens"
        )
    print(
        f"  {'total':<22}{sum(p.generations for p in rows.values()):>12,}"
        f"{duration(totals['measured']):>14}{duration(totals['before']):>14}"
        f"{duration(totals['after']):>14}"
    )
    print(
        "  measured: this run's rate (total: the projection 'after' where not measured); "
        f"before / after: projected with '{BEFORE}' / '{AFTER}'"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, help="items per probe (default 24; --new 6)")
    parser.add_argument("--probes", help=f"comma-separated probe ids (default {','.join(GOAL)})")
    parser.add_argument("--new", action="store_true", help="the eleven probes added for 1.1")
    parser.add_argument("--all", action="store_true", help="the whole harness (fourteen)")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--no-ceiling", action="store_true", help="skip the decode-cost ceiling (~10 s)"
    )
    parser.add_argument(
        "--plain-arithmetic",
        choices=("same", "default"),
        default="same",
        help="the plain loop with gbdesk's arithmetic settings (same texts; default) or "
        "llama-cpp-python's defaults (other texts)",
    )
    parser.add_argument(
        "--projection-only",
        action="store_true",
        help="only the projected hours of the whole harness (no probe is run)",
    )
    args = parser.parse_args()
    harness = get_harness(HARNESS).probes
    if args.projection_only:
        print_projection(list(harness), {}, None)
        return 0
    if args.probes:
        names = args.probes.split(",")
    elif args.new or args.all:
        names = [p for p in harness if args.all or p not in OLD]
    else:
        names = list(GOAL)
    n_items = args.items or (6 if (args.new or args.all) else 24)
    print(
        f"{n_items} items per probe, max_tokens {args.max_tokens}, {args.rounds} round(s), "
        f"plain loop arithmetic: {args.plain_arithmetic}, {default_threads()} threads",
        flush=True,
    )
    costs = None if args.no_ceiling else decode_costs()
    header = (
        f"{'probe':<22}{'gens':>5}{'load':>6}{'plain tok':>10}{'gbdesk tok':>11}{'same':>9}"
        f"{'plain tok/s':>12}{'gbdesk tok/s':>13}{'ratio':>7}{'gen/s ratio':>12}"
        + (f"{'ceiling':>9}" if costs else "")
    )
    print(header)
    last: dict[str, Side] = {}
    ratios: dict[str, float] = {}
    ceilings: dict[str, float] = {}
    profiles: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            prompts = workload(name, n_items)
            load = load_average()
            plain: list[Side] = []
            ours: list[Side] = []
            for r in range(args.rounds):
                db = Path(tmp) / f"{name}-{r}.sqlite"
                if r % 2 == 0:
                    plain.append(plain_loop(prompts, args.max_tokens, args.plain_arithmetic))
                    ours.append(gbdesk_path(name, n_items, args.max_tokens, db))
                else:
                    ours.append(gbdesk_path(name, n_items, args.max_tokens, db))
                    plain.append(plain_loop(prompts, args.max_tokens, args.plain_arithmetic))
            p_rate = statistics.median(s.tokens_per_s for s in plain)
            g_rate = statistics.median(s.tokens_per_s for s in ours)
            gen_ratio = statistics.median(s.generations_per_s for s in ours) / statistics.median(
                s.generations_per_s for s in plain
            )
            ratios[name] = g_rate / p_rate
            last[name] = ours[-1]
            same = sum(ours[-1].texts.get(k) == t for k, t in plain[-1].texts.items())
            ceiling = ""
            if costs is not None:
                ceilings[name], note = ceiling_ratio(costs, prompts, ours[-1], p_rate)
                ceiling = f"{ceilings[name]:>8.2f}×"
            print(
                f"{name:<22}{len(prompts):>5}{load:>6.2f}"
                f"{statistics.median(s.tokens / s.generations for s in plain):>10.1f}"
                f"{statistics.median(s.tokens / s.generations for s in ours):>11.1f}"
                f"{f'{same}/{len(prompts)}':>9}{p_rate:>12.1f}{g_rate:>13.1f}"
                f"{ratios[name]:>6.2f}×{gen_ratio:>11.2f}×{ceiling}",
                flush=True,
            )
            profiles.append(profile_line(name, ours[-1].profile, ours[-1].seconds))
            if costs is not None:
                profiles.append(note)
    print(f"load average after: {load_average():.2f}")
    goal = [ratios[n] for n in GOAL if n in ratios]
    if goal:
        print(
            f"goal probes ({', '.join(n for n in GOAL if n in ratios)}): lowest ratio "
            f"{min(goal):.2f}× (goal ≥ 2× in generated tokens/s, idle machine)"
        )
    if ceilings:
        print(
            "ceiling: the ratio of the fastest any engine with these arithmetic settings could "
            "make the same answers on this machine (every shared prompt prefix decoded once at "
            "the cheapest prompt cost, every answer token in the cheapest generation step, "
            "gbdesk's sampling time) to the plain loop's measured rate"
        )
    if costs is not None:
        print("\ndecode costs on this machine (benchmarks/decode_costs.py):")
        print(costs.table())
    print("\nwhere gbdesk's time went (last round):")
    print("\n".join(profiles))
    print_projection(list(harness), last, costs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
