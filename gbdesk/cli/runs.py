"""`gbdesk run`, `runs` and `resume`: start or continue a run (the same command again
continues it), list the runs, and what a run prints when it ends."""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

from gbdesk.cli._common import (
    MODEL_CHARS,
    Interrupts,
    _emit,
    _holding,
    _open_store,
    _ProgressPrinter,
)
from gbdesk.cli.results import _findings_text, _metrics_payload, _metrics_table, _tiny_notice
from gbdesk.support.errors import UserError
from gbdesk.support.format import display_name
from gbdesk.support.guards import one_line


def cmd_run(args) -> int:
    """Run a probe on a model; the same command again continues that run (or shows it).
    With --wordings: one run per wording (each continued or shown the same way), then the
    metrics by wording."""
    from gbdesk.contract import get_probe
    from gbdesk.contract.running import parse_wordings, refuse_template_with_wordings

    if args.wordings is None:
        return _run_one(args, 0)[0]
    refuse_template_with_wordings(args.template, args.wordings)
    probe = get_probe(args.probe)
    available = probe.capabilities.parameters.wordings()
    if len(available) < 2:
        raise UserError(
            f"{probe.name} has no other wording than its study's own: drop --wordings "
            "(gbdesk card PROBE lists a probe's wordings)"
        )
    chosen = parse_wordings(args.wordings, available)
    run_ids = []
    for wording in chosen:
        print(f"— wording {wording} —", file=sys.stderr)
        status, run_id = _run_one(args, wording, show=False)
        if status:
            return status
        run_ids.append(run_id)
    return _show_wordings(args, run_ids)


def _show_wordings(args, run_ids: list[int]) -> int:
    """The metrics by wording of the runs just made (`gbdesk wordings`)."""
    from gbdesk.cli.results import wordings_payload, wordings_text

    with _open_store(args.db) as store:
        payload = wordings_payload(store, run_ids[0])
        _emit(args, payload, wordings_text(payload))
    return 0


def _run_one(args, wording: int, show: bool = True) -> tuple[int, int | None]:
    """`gbdesk run` of one wording: (exit status, run id)."""
    from gbdesk.contract import get_probe
    from gbdesk.contract.running import wording_kwargs
    from gbdesk.engine.llama_backend import LlamaCppBackend
    from gbdesk.workflows.runs import (
        check_engine_needs,
        plan_run,
        resolve_model,
        same_run,
        subset_note,
    )

    # fail fast on a typo or a bad parameter, before loading anything
    probe = get_probe(args.probe)
    params = probe.resolve_params(
        template=args.template,
        limit=args.limit,
        sample=args.sample,
        **_options(args.options),
        **wording_kwargs(wording),
    )
    _check_endpoint_flags(args)
    planned = {**_planned(args), **wording_kwargs(wording)}
    with (
        _open_store(args.db, writes=True) as store,
        _holding(store, args, "run", f"a run of {args.probe}"),
    ):
        # parameters naming data in the database (a dataset, an elicitation run) are
        # checked before the model is registered: a refused run writes nothing
        probe.capabilities.parameters.bind(store, params)
        if args.endpoint:
            backend, model = _endpoint_model(args, store)
        else:
            backend = None
            model = resolve_model(store, args.model)
        earlier = None if args.new else same_run(store, args.probe, model, **planned)
        if earlier is not None and earlier["status"] == "done":
            if backend is not None:
                backend.close()
            print(
                f"run {earlier['id']} already holds these results (the same probe, model and "
                f"settings; {earlier['attempts_done']:,}/{earlier['attempts_total']:,} "
                "attempts); showing them — --new runs it again",
                file=sys.stderr,
            )
            return (_show_run(args, store, earlier["id"]) if show else 0), earlier["id"]
        if earlier is not None:
            _refuse_if_running_elsewhere(store, earlier)
            check_engine_needs(store, get_probe(args.probe), model)  # as plan_run does
        if backend is None:
            # Load before planning, so a file llama.cpp rejects leaves no empty run behind.
            backend = LlamaCppBackend(
                model["path"], prompt_mode=args.prompt_mode, batch_size=args.batch_size
            )
        if earlier is not None:
            run_id = earlier["id"]
            print(
                f"continuing run {run_id} ({earlier['attempts_done']:,}/"
                f"{earlier['attempts_total']:,} attempts done): the same probe, model and "
                "settings; --new starts another",
                file=sys.stderr,
            )
        else:
            try:
                run_id = plan_run(store, args.probe, model, **planned)
            except BaseException:
                backend.close()
                raise
        via = f" ({backend.concurrency} concurrent requests)" if args.endpoint else ""
        print(
            f"[run {run_id}] {args.probe} on {model['name']}{via} → {store.path}", file=sys.stderr
        )
        run = store.get_run(run_id)
        print(
            f"[run {run_id}] {subset_note(get_probe(args.probe), run['params'])}; "
            f"{run['attempts_total']:,} attempts",
            file=sys.stderr,
        )
        status = _execute(args, store, run_id, lambda _model, _generation: backend, show=show)
        return status, run_id


def _check_endpoint_flags(args) -> None:
    """The endpoint's own flags need --endpoint, and --endpoint needs a model name."""
    endpoint_only = {
        "--endpoint-model": args.endpoint_model,
        "--concurrency": args.concurrency,
        "--api-key-env": args.api_key_env,
    }
    if not args.endpoint:
        given = [flag for flag, value in endpoint_only.items() if value is not None]
        if given:
            raise UserError(
                f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --endpoint URL"
            )
    elif not args.endpoint_model:
        raise UserError(
            "--endpoint needs --endpoint-model NAME (the model name the server serves; "
            "its /v1/models lists them)"
        )


def _planned(args) -> dict[str, Any]:
    """The settings a run is planned with (and recognised by, `same_run`)."""
    return {
        "attempts": args.attempts,
        "seed": args.seed,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_tokens": args.max_tokens,
        "prompt_mode": args.prompt_mode,
        "batch_size": args.batch_size,
        "template": args.template,
        "limit": args.limit,
        "sample": args.sample,
        **_options(args.options),
    }


def _endpoint_model(args, store) -> tuple[Any, dict[str, Any]]:
    """The backend of `--endpoint` and its model row, registered with what it can do."""
    from gbdesk.contract import get_probe
    from gbdesk.engine.http import (
        HttpBackend,
        endpoint_capabilities,
        register_endpoint,
        store_capabilities,
    )

    # Probe the endpoint before planning: a wrong address, path, model name or key
    # fails here in one line and leaves no empty run behind.
    backend = HttpBackend(
        args.endpoint,
        args.endpoint_model,
        api_key_env=args.api_key_env,
        concurrency=args.concurrency or 1,
        prompt_mode=args.prompt_mode,
        on_wait=lambda line: print(f"[endpoint] {line}", file=sys.stderr, flush=True),
    )
    model = register_endpoint(
        store,
        backend.base_url,
        backend.model,
        api_key_env=backend.api_key_env,
        concurrency=backend.concurrency,
    )
    # what it can do, stored with it (checked now when never checked, or when the
    # probe needs something): `plan_run` refuses a probe it cannot serve
    if get_probe(args.probe).capabilities.running.engine_needs or not endpoint_capabilities(model):
        try:
            model = store_capabilities(store, model["id"], backend.capabilities())
        except BaseException:
            backend.close()
            raise
    return backend, model


def _execute(args, store, run_id: int, backend_factory=None, show: bool = True) -> int:
    from gbdesk.store.db import DatabaseFault, database_fault
    from gbdesk.workflows.runs import RunControl, execute_run, llama_backend_factory

    def connecting(model: dict[str, Any], generation: dict[str, Any]) -> Any:
        """The run's engine; an endpoint's silence while it is connected to is said."""
        say = f"[run {run_id}]"
        return llama_backend_factory(
            model, generation, on_wait=lambda line: print(f"{say} {line}", file=sys.stderr)
        )

    control = RunControl()
    again = " (or the same command again)" if args.command == "run" else ""
    try:
        with Interrupts(control) as stop:  # Ctrl-C once: the answers under way are kept
            execute_run(
                store,
                run_id,
                control=control,
                on_progress=_ProgressPrinter(),
                backend_factory=backend_factory or connecting,
            )
    except (sqlite3.Error, DatabaseFault) as exc:
        fault = database_fault(exc, store.path, store.BUSY_TIMEOUT_S)
        if fault is None or fault.kind in ("corrupt", "notadb"):
            raise
        raise DatabaseFault(
            f"{fault}; run {run_id} keeps every attempt saved before — continue it with: "
            f"gbdesk resume {run_id}",
            fault.kind,
        ) from exc
    except KeyboardInterrupt:
        print(
            f"interrupted; run {run_id} is saved — continue it with: gbdesk resume {run_id}"
            f"{again}",
            file=sys.stderr,
        )
        return 130
    if stop.asked and store.get_run(run_id)["status"] != "done":
        run = store.get_run(run_id)
        print(
            f"interrupted; run {run_id} is saved ({run['attempts_done']:,}/"
            f"{run['attempts_total']:,} attempts) — continue it with: gbdesk resume {run_id}"
            f"{again}",
            file=sys.stderr,
        )
        return 130
    return _show_run(args, store, run_id) if show else 0


def _refuse_if_running_elsewhere(store, run: dict[str, Any]) -> None:
    """An identical run another gbdesk process is running now is not joined."""
    from gbdesk.store.db import ACTIVE_STATUSES

    if run["status"] in ACTIVE_STATUSES:
        raise UserError(
            f"run {run['id']} (the same probe, model and settings) is being run by another "
            "gbdesk process now; wait for it, or start another with --new"
        )


def _show_run(args, store, run_id: int) -> int:
    """What `gbdesk run` prints at the end: the summary, or the metrics and findings."""
    summary = _run_summary(store, run_id)
    if args.json:
        _emit(args, summary, "")
        return 0
    from gbdesk.analysis.results import compute_metrics

    metrics = compute_metrics(store, run_id, "auto")
    payload = _metrics_payload(store, run_id, "auto", metrics, review=False)
    findings = _findings_text(store, run_id, "auto", metrics)
    print(
        f"run {run_id}: {summary['status']}, {summary['attempts']}/{summary['attempts_total']} "
        f"attempts\n\n{_metrics_table(payload)}{findings}"
        f"{_tiny_notice(store, run_id)}\n\n"
        f"Export: gbdesk export {run_id} --csv DIR  (database: {store.path})"
    )
    return 0


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set expects KEY=VALUE, got {pair!r}")
        options[key.strip().replace("-", "_")] = value.strip()
    return options


def _run_summary(store, run_id: int) -> dict[str, Any]:
    run = store.get_run(run_id)
    return {
        "run_id": run_id,
        "status": run["status"],
        "attempts": run["attempts_done"],
        "attempts_total": run["attempts_total"],
        # sequences decoded at once by the last session (continuous batching when > 1)
        "batch_size": (run["engine"].get("batching") or {}).get("slots", 1),
    }


def cmd_runs(args) -> int:
    with _open_store(args.db) as store:
        runs = store.list_runs()
    payload = [
        {
            "run_id": r["id"],
            "probe": r["probe"],
            "model": r["model_name"],
            "status": r["status"],
            "attempts_done": r["attempts_done"],
            "attempts_total": r["attempts_total"],
            "created_at": r["created_at"],
            "source": r["source"],
        }
        for r in runs
    ]
    text = (
        "\n".join(
            f"{r['run_id']:>4}  {r['probe']:<14} {r['status']:<11} "
            f"{r['attempts_done']:>5}/{r['attempts_total']:<5} "
            f"{display_name(r['model'], MODEL_CHARS)}"
            for r in payload
        )
        or "no runs yet — start one with: gbdesk run --probe PROBE (see: gbdesk probes)"
    )
    _emit(args, payload, text)
    return 0


def cmd_jobs(args) -> int:
    """`gbdesk jobs`: the jobs holding the database; `--clear JOB` removes a stale one."""
    from gbdesk.store import jobs

    with _open_store(args.db, writes=args.clear is not None) as store:
        if args.clear is not None:
            gone = jobs.clear_job(store, args.clear)
            print(f"cleared job {gone.id}: {gone.describe()}", file=sys.stderr)
        found = jobs.all_jobs(store)
    payload = [
        {"job_id": j.id, "kind": j.kind, "what": j.what, "host": j.host, "pid": j.pid,
         "command": j.command, "started_at": j.started_at, "heartbeat_at": j.heartbeat_at,
         "alive": j.alive()}
        for j in found
    ]  # fmt: skip
    text = "\n".join(
        f"{j.id:>4}  {'alive' if j.alive() else 'gone '}  {one_line(j.describe(), 200)}"
        for j in found
    )
    _emit(args, payload, text or "no job holds the database")
    return 0


def cmd_resume(args) -> int:
    with (
        _open_store(args.db, writes=True) as store,
        _holding(store, args, "run", f"run {args.run_id}"),
    ):
        run = store.get_run(args.run_id)
        if run["source"] == "imported":
            raise UserError(
                f"run {args.run_id} was imported from a file: it is complete as imported and "
                f"there is nothing to generate (see: gbdesk metrics {args.run_id})"
            )
        if run["status"] == "done":
            print(f"run {args.run_id} is already complete", file=sys.stderr)
        return _execute(args, store, args.run_id)
