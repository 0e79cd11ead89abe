"""How long each probe's automatic labeller takes on one long answer: the measurements behind
`gbdesk.support.limits.MAX_LABELLED_CHARS` (issue 35, item 4).

For every probe (or `--probes`), each text shape below is cut to each size of `--sizes`
characters and labelled once by the probe's own labeller, *without* the size rule (the
function the contract wraps) and with nltk's 5 s regular-expression limit switched off, so
the real time shows instead of a `TimeoutError`. A 300-character answer of the same shape
is labelled side by side as the baseline; the table prints seconds and the ratio to it, and
the slowest probe per size. With `--bounded` it also times the labeller as a run and an
import call it (`probe.label`, the size rule on) on a `--huge`-character answer.

    PYTHONPATH=. python benchmarks/label_sizes.py [--sizes 10000 100000 1000000]
        [--probes direct bbq] [--shapes prose] [--bounded] [--huge 10000000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

#: the answer shapes: prose with many sentences, one endless sentence, one line per word,
#: a single unbroken token, one-word sentences, and the tiny sentences that cost nltk the
#: most per character (numbers; letters beyond ASCII)
SHAPES: dict[str, str] = {
    "prose": "She said yes, and he told her no: option (a) is wrong. ",
    "run-on": "she and he said yes or no about option (b) and them ",
    "lines": "yes\nhe\n(a)\n",
    "token": "x",
    "periods": "a. ",
    "numbers": "1.5. ",
    "letters": "é. ß? İ! ",
}
BASELINE_CHARS = 300


def unbounded(probe: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """The probe's labeller without the contract's size rule."""
    label = type(probe).label
    raw = getattr(label, "__wrapped__", label)
    return lambda text, metadata: raw(probe, text, metadata)


def first_metadata(items: list[Any]) -> dict[str, Any]:
    """What the labeller sees for the first attempt of the first item (its first prompt's
    metadata merged over the item's)."""
    from gbdesk.contract.running import attempt_item

    if not items:
        return {}
    row = {"metadata": items[0].metadata, "prompts": items[0].prompts_json()}
    return attempt_item(row, 0, 1)["metadata"]


def text_of(shape: str, size: int) -> str:
    unit = SHAPES[shape]
    return (unit * (size // len(unit) + 1))[:size]


def timed(fn: Callable[..., Any], *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    from nltk import redos

    from gbdesk.contract import get_probe, probe_names
    from gbdesk.support.errors import UserError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--probes", nargs="+", default=None)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--bounded", action="store_true")
    parser.add_argument("--huge", type=int, default=10_000_000)
    args = parser.parse_args()
    redos.DEFAULT_TIMEOUT = None  # the real time, not nltk's 5 s backstop
    slowest: dict[int, tuple[float, str, str]] = {}
    for name in args.probes or probe_names():
        probe = get_probe(name)
        try:
            items = probe.items(probe.resolve_params())
        except UserError as exc:  # items only from a database (intersectional_filter)
            print(f"{name:22} skipped: {exc}")
            continue
        metadata = first_metadata(items)
        label = unbounded(probe)
        for shape in args.shapes:
            base = timed(label, text_of(shape, BASELINE_CHARS), metadata)
            cells = []
            for size in args.sizes:
                text = text_of(shape, size)
                seconds = timed(label, text, metadata)
                cells.append(f"{size:>9,}: {seconds:7.3f} s ({seconds / max(base, 1e-6):8.0f}×)")
                if seconds > slowest.get(size, (0.0, "", ""))[0]:
                    slowest[size] = (seconds, name, shape)
            print(f"{name:22} {shape:8} base {base * 1000:6.2f} ms | " + " | ".join(cells))
            if args.bounded:
                seconds = timed(probe.label, text_of(shape, args.huge), metadata)
                print(f"{'':22} {shape:8} with the size rule, {args.huge:,} chars: {seconds:.3f} s")
    for size, (seconds, name, shape) in sorted(slowest.items()):
        print(f"slowest at {size:,} characters: {name} on {shape}, {seconds:.3f} s")


if __name__ == "__main__":
    main()
