"""`gbdesk selftest --determinism`: are a model's texts the same decoded alone and in a
full batch? (`gbdesk.workflows.determinism`; the result is stored with the model.)"""

from __future__ import annotations

import argparse
import sys

from gbdesk.cli._args import _positive_int
from gbdesk.cli._common import _emit, _open_store
from gbdesk.support.errors import UserError

#: the most prompts a check decodes at once (one sequence each; `continuous.MAX_SLOTS` - 1)
MOST_PROMPTS = 47


def prompt_count(text: str) -> int:
    """2 … `MOST_PROMPTS` prompts (alone and batched need two at least)."""
    value = _positive_int(text, MOST_PROMPTS)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2: {text!r}")
    return value


def cmd_selftest(args) -> int:
    """0: every text identical; 1: some differ (each named with its first differing
    token); a server model: 0, nothing checked (its batching is not gbdesk's)."""
    from gbdesk import __version__
    from gbdesk.report.test_log import SERVER_BATCHING
    from gbdesk.store.selftests import DETERMINISM, add_selftest
    from gbdesk.workflows.determinism import check_determinism
    from gbdesk.workflows.runs import llama_backend_factory, resolve_model

    if not args.determinism:
        raise UserError("say which check to run: gbdesk selftest --determinism")
    with _open_store(args.db, writes=True) as store:
        model = resolve_model(store, args.model)
        if model.get("kind") == "endpoint":
            line = "not checked: " + SERVER_BATCHING.format(
                endpoint=model.get("path"), model=model.get("file_name") or model.get("name")
            )
            _emit(args, {"model": model.get("name"), "passed": None, "summary": line}, line)
            return 0
        print(f"decoding {args.prompts} prompts alone, then together…", file=sys.stderr)
        backend = llama_backend_factory(model, {"batch_size": args.prompts})
        if not hasattr(backend, "generate_stream"):  # decodes one prompt at a time
            backend.close()
            line = "not checked: this engine decodes one prompt at a time (no batch to compare)"
            _emit(args, {"model": model.get("name"), "passed": None, "summary": line}, line)
            return 0
        try:
            result = check_determinism(
                backend, prompts=args.prompts, max_tokens=args.max_tokens, seed=args.seed
            )
        finally:
            backend.close()
        add_selftest(
            store,
            model.get("id"),
            DETERMINISM,
            passed=result.passed,
            summary=result.summary(),
            result=result.to_json(),
            app_version=__version__,
        )
    payload = {"model": model.get("name"), "passed": result.passed, **result.to_json()}
    text = "\n".join([f"{model.get('name')}: {result.summary()}", *result.lines])
    _emit(args, payload, text)
    return 0 if result.passed else 1
