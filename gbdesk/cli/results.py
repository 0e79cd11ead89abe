"""`gbdesk metrics`, `compare` and `export`: a run's numbers in words and tables, two
runs against each other, and the files a run leaves for others."""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path
from typing import Any

from gbdesk.cli._common import MODEL_CHARS, _emit, _open_store
from gbdesk.support.errors import UserError
from gbdesk.support.format import display_name, fmt, fmt_ci


def _metrics_payload(
    store, run_id: int, labels: str, metrics: dict[str, Any], review: bool = True
) -> dict[str, Any]:
    """The JSON of `gbdesk metrics` from the run's `compute_metrics`, with the labels'
    accuracy (`review`: measured on the random review sample, else estimated; not computed
    with `review=False`)."""
    from gbdesk.analysis.label_accuracy import label_accuracy
    from gbdesk.analysis.shown import ci_missing_reason, cut_ends, metric_verdict, shown_ci
    from gbdesk.contract import get_probe
    from gbdesk.maths.stats import adjusted_p_values
    from gbdesk.support.format import unfinished_note

    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    adjusted = adjusted_p_values(metrics)  # Benjamini–Hochberg over the run's tests
    out = {}
    for name, m in metrics.items():
        out[name] = m.to_json()
        out[name]["title"] = probe.capabilities.presentation.metric_title(name)
        # the interval every view shows: within what the metric can be, none from too few
        # items (`ci` is the bootstrap's as it came); null with the reason when there is none
        shown = shown_ci(probe, name, m)
        out[name]["ci_shown"] = list(shown) if shown is not None else None
        # the ends of `ci` the shown interval is cut at (none when it is the interval that
        # holds its level, which never passes what the metric can be)
        out[name]["ci_cut"] = cut_ends(probe, name, m) if shown is not None else []
        reason = ci_missing_reason(probe, name, m)
        if reason:
            out[name]["reason"] = reason
        v = metric_verdict(probe, name, m)
        if v is not None:
            out[name]["verdict"] = v.to_json()
        if name in adjusted:
            out[name]["p_adj"] = adjusted[name]
    payload = {"run_id": run_id, "probe": run["probe"], "labels": labels, "metrics": out}
    payload["status"] = run["status"]
    payload["attempts"] = {"done": run["attempts_done"], "total": run["attempts_total"]}
    payload["unfinished"] = unfinished_note(run, probe.capabilities.running.unit)
    # what the Review pane and the Results caption state
    accuracy = label_accuracy(store, run_id) if review else None
    payload["review"] = accuracy.to_json() if accuracy is not None else None
    return payload


def _findings_text(store, run_id: int, labels: str, metrics: dict[str, Any]) -> str:
    """The run's findings in words, most important first (as on the report's first page),
    from its `metrics` in this label mode."""
    from gbdesk.analysis.findings import ordered, run_findings
    from gbdesk.contract import get_probe
    from gbdesk.report.run_results import run_extra_results

    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    try:
        extra = run_extra_results(store, run_id, labels)
    except UserError:
        raise
    except Exception:  # the table is printed already: say the findings failed, and why
        logging.getLogger(__name__).exception("findings of run %s", run_id)
        return "\n\nFindings: could not be computed (see the log)."
    found = ordered(run_findings(run_id, "", probe, metrics, extra, run["params"]))
    if not found:
        return ""
    lines = [f"{k}. {f.sentence}" for k, f in enumerate(found, start=1)]
    return "\n\nFindings:\n" + "\n".join(lines)


def _metrics_heading(payload: dict[str, Any]) -> str:
    """ "run 1 — <the probe's title>, automatic labels" and a line break."""
    from gbdesk.contract import get_probe

    labels = {
        "auto": "automatic labels",
        "reviewed": "reviewed labels (a person's where present)",
        "ppi": "prediction-powered estimates",
        "consensus": "consensus labels",
    }.get(payload["labels"], payload["labels"].replace("rater:", "labels of "))
    return f"run {payload['run_id']} — {get_probe(payload['probe']).card.title}, {labels}\n"


def _metrics_table(payload: dict[str, Any]) -> str:
    """The metrics for reading: what each measures in words (the keys are in --json and
    the CSV), its value and interval (within what the metric can be), mark and support;
    footnotes say why a value or interval is missing."""
    from gbdesk.contract import get_probe

    probe = get_probe(payload["probe"])
    metrics = payload["metrics"]
    title = probe.capabilities.presentation.metric_title
    titles = {name: m.get("title") or title(name) for name, m in metrics.items()}
    width = min(60, max([28, *(len(t) for t in titles.values())]))
    cis, cut, few = {}, False, False
    for name, m in metrics.items():
        lo = math.nan if m["ci"][0] is None else m["ci"][0]
        was_cut = bool(m.get("ci_cut"))
        shown = m.get("ci_shown")
        text = fmt_ci(tuple(shown)) if shown is not None else fmt_ci((math.nan, math.nan))
        if m["value"] is not None and lo != lo and shown is None:
            text = "—†"
        elif m["value"] is not None and shown is None:
            text, few = "—§", True
        cis[name] = text + ("*" if was_cut and shown is not None else "")
        cut |= was_cut and shown is not None
    ci_width = max([19, *(len(ci) for ci in cis.values())])
    with_p = any(m.get("p_value") is not None for m in metrics.values())
    p_head = f"{'p':>7}  {'p_adj':>7}  " if with_p else ""
    ppi = any((m.get("details") or {}).get("kind") == "ppi" for m in metrics.values())
    ppi_head = f"{'automatic':>9}  {'bias':>7}  " if ppi else ""
    mark_width = max([4, *(len(_mark_text(m)) for m in metrics.values())])
    rows = [
        f"{'what':<{width}} {'value':>8}  {'95% CI':<{ci_width}} {p_head}{ppi_head}"
        f"{'mark':<{mark_width}}  {'n':>5}"
    ]
    undefined: list[str] = []
    reasons: dict[str, list[str]] = {}
    for name, m in metrics.items():
        p_cell = ""
        if with_p:
            p, pa = m.get("p_value"), m.get("p_adj")
            p_cell = (
                f"{'<0.001' if p is not None and p < 0.001 else fmt(p):>7}  "
                f"{'<0.001' if pa is not None and pa < 0.001 else fmt(pa):>7}  "
            )
        ppi_cell = ""
        if ppi:
            d = m.get("details") or {}
            ppi_cell = f"{fmt(d.get('automatic_value')):>9}  {fmt(d.get('bias')):>7}  "
            if not d.get("valid", True):
                reasons.setdefault(d.get("reason") or "no interval", []).append(name)
        title = titles[name] if len(titles[name]) <= width else titles[name][: width - 1] + "…"
        value = fmt(m["value"])
        if m["value"] is None:
            value = "—‡"
            undefined.append(name)
        mark = _mark_text(m)
        rows.append(
            f"{title:<{width}} {value:>8}  {cis[name]:<{ci_width}} {p_cell}{ppi_cell}"
            f"{mark:<{mark_width}}  {m['n']:>5}"
        )
    rows += _metrics_footnotes(
        probe, payload, undefined, cis, few=few, cut=cut, with_p=with_p, ppi=ppi, reasons=reasons
    )
    if payload.get("unfinished"):
        rows.insert(
            0,
            f"UNFINISHED RUN — {payload['unfinished'].removeprefix('unfinished: ')}: the "
            f"numbers cover only these (continue it with: gbdesk resume {payload['run_id']})",
        )
    return "\n".join(rows)


def _metrics_footnotes(
    probe: Any,
    payload: dict[str, Any],
    undefined: list[str],
    cis: dict[str, str],
    *,
    few: bool,
    cut: bool,
    with_p: bool,
    ppi: bool,
    reasons: dict[str, list[str]],
) -> list[str]:
    """The footnotes of `_metrics_table`: why values or intervals are missing, what the
    marks, cut intervals, p-values and prediction-powered columns mean."""
    from gbdesk.maths.verdicts import MIN_ITEMS
    from gbdesk.support.format import UNDEFINED_CI, UNDEFINED_VALUE

    metrics = payload["metrics"]
    rows: list[str] = []
    if undefined:
        why_undefined = probe.capabilities.presentation.why_undefined
        why = sorted({why_undefined(n, {}) or UNDEFINED_VALUE for n in undefined})
        rows.append("\n‡ " + "; ".join(why))
    if any(c.startswith("—†") for c in cis.values()):
        rows.append(f"† {UNDEFINED_CI}")
    if few:
        rows.append(
            f"§ no interval: it would have zero width from fewer than {MIN_ITEMS} items, "
            "which is not certainty"
        )
    if any(
        m.get("verdict") and m["verdict"]["marks"] and not m["verdict"]["decided"]
        for m in metrics.values()
    ):
        rows.append(
            "mark: the grading study's own (the best band the interval touches); in brackets the "
            f"marks the interval allows when it does not decide one, or when fewer than "
            f"{MIN_ITEMS} items were measured (n<{MIN_ITEMS}): not enough answers to tell"
        )
    if not metrics:
        rows.append("no answers yet: nothing is measured")
    if cut:
        rows.append(
            "* interval cut at what the metric can be (e.g. 0–1 for a share): the "
            "bootstrap's normal fit reached past it; the mark is the study's, from the "
            "uncut interval (--json has both)"
        )
    if with_p:
        rows.append(
            "\np_adj: Benjamini–Hochberg adjusted over the run's tests (read this one when "
            "many metrics are tested)"
        )
    if ppi:
        rows.append(
            "\nvalue and 95 % CI: prediction-powered (automatic labels corrected by the "
            "reviewed random sample); automatic: the same from automatic labels alone; bias: "
            "automatic − human on the reviewed sample."
        )
        for reason, names in reasons.items():
            which = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            rows.append(f"no interval for {which}: {reason}")
    return rows


def _mark_text(m: dict[str, Any]) -> str:
    """The mark column: "A" when decided; "B (A–C)" the study's mark and the marks the
    interval allows; "—" without a mark (`gbdesk.analysis.shown.mark_short`)."""
    from gbdesk.maths.verdicts import MIN_ITEMS

    v = m.get("verdict")
    if not v or not v["marks"]:
        return m.get("mark") or "—"
    if v["decided"]:
        return v["marks"][0]
    marks = v["marks"]
    span = marks[0] if len(marks) == 1 else f"{marks[0]}–{marks[-1]}"
    few = f", n<{MIN_ITEMS}" if v["items"] < MIN_ITEMS else ""
    return f"{v['study_mark'] or '?'} ({span}{few})"


def _tiny_notice(store, run_id: int) -> str:
    from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model

    run = store.get_run(run_id)
    if run["model_id"]:
        model = store.get_model(run["model_id"])
        if model["kind"] == "gguf" and is_default_model(model["path"]):
            return "\n\nNote: " + TINY_MODEL_NOTICE
    return ""


def cmd_metrics(args) -> int:
    from gbdesk.analysis.results import compute_metrics

    with _open_store(args.db) as store:
        metrics = compute_metrics(store, args.run_id, args.labels)
        payload = _metrics_payload(store, args.run_id, args.labels, metrics)
        notice = _tiny_notice(store, args.run_id)
        findings = "" if args.json else _findings_text(store, args.run_id, args.labels, metrics)
        wordings = wordings_payload(store, args.run_id, args.labels)
    payload["by_wording"] = wordings["by_wording"]
    payload["wording_stable"] = wordings["wording_stable"]
    payload["wordings"] = wordings
    review = payload["review"]
    several = len(wordings["runs"]) > 1
    text = (
        _metrics_heading(payload)
        + _metrics_table(payload)
        + findings
        + (f"\n\nLabels: {review['text']}" if review else "")
        + (f"\n\n{wordings_text(wordings)}" if several else "")
        + notice
    )
    _emit(args, payload, text)
    return 0


def wordings_payload(store, run_id: int, labels: str = "auto") -> dict[str, Any]:
    """The run's wording family compared (`gbdesk.analysis.wordings`), as JSON: `runs`,
    `names`, `by_wording` ({"0": {metric: {value, ci, marks, …}}, …}), `wording_stable`
    ({metric: true|false|null}) and per metric its range, the wording's share of the
    variance, its test and the stability sentence."""
    from gbdesk.analysis.wordings import wording_report

    return _wordings_json(wording_report(store, run_id, labels))


def _wordings_json(report: Any) -> dict[str, Any]:
    """`wordings_payload` of a `WordingReport` already computed."""
    return {
        **report.to_json(),
        "by_wording": report.by_wording(),
        "wording_stable": report.stable(),
        "depends_on_wording": [s.metric for s in report.depends_on_wording()],
    }


def wordings_text(payload: dict[str, Any]) -> str:
    """The metrics by wording for reading: per metric (marked ones first) the wording's
    share of its variance and the range, a line per wording (value, interval, the marks
    the interval allows), and the stability sentence."""
    wordings = list(payload["runs"])
    names = payload["names"]
    lines = [
        f"Does it survive a rewording? {payload['probe']} under {len(wordings)} wordings, "
        f"{payload['items_compared']} items under every wording"
    ]
    metrics = payload["metrics"]
    marked = [
        n
        for n in metrics
        if any(payload["by_wording"][w].get(n, {}).get("marks") for w in wordings)
    ]
    for name in marked + [n for n in metrics if n not in marked]:
        m = metrics[name]
        share = m["wording_share"]
        head = [f"range {fmt(m['range'])}"]
        if share is not None:
            head.append(f"wording's share of the variance {share:.0%} (p = {m['wording_p']:.3f})")
        lines += ["", f"{m['title']} ({name}) · " + " · ".join(head)]
        for w in wordings:
            v = payload["by_wording"][w].get(name)
            label = f"  {w} {names[w]}"[:36]
            if v is None or v["value"] is None:
                lines.append(f"{label:<36} —")
                continue
            ci = f"[{fmt(v['ci'][0])}, {fmt(v['ci'][1])}]" if v["ci"] else "[no interval]"
            marks = v["marks"]
            allows = ""
            if marks:
                span = marks[0] if len(marks) == 1 else f"{marks[0]}–{marks[-1]}"
                allows = f"  {'decided' if v['decided'] else 'allows'} {span}"
            lines.append(f"{label:<36} {fmt(v['value']):>6} {ci:<17}{allows}  run {v['run_id']}")
        lines.append(f"  → {m['sentence']}")
    lines += [
        "",
        "share: of the metric's variance over a wording and a draw of items, the wording's "
        "part (cluster bootstrap over the items every wording has); p: the bootstrap test of "
        "no wording effect (docs/wordings.md)",
    ]
    return "\n".join(lines)


def cmd_wordings(args) -> int:
    """`gbdesk wordings RUN [RUN …]`: each run's metrics by wording; for several runs (one
    per model), whether the models' order on each metric is the same under every wording."""
    from gbdesk.analysis.wordings import orders, wording_report

    with _open_store(args.db) as store:
        reports = [
            (f"run {r} ({_model_name(store, r)})", wording_report(store, r, args.labels))
            for r in args.run_ids
        ]
    payloads = [_wordings_json(report) for _, report in reports]
    compared = []
    if len(reports) > 1:
        compared = [orders(reports, name) for name in reports[0][1].spreads]
    text = "\n\n".join(wordings_text(p) for p in payloads)
    for o in compared:
        if o["same_order"] is None:
            shared = list(o["order_by_wording"])
            if len(shared) == 1:  # said, so that silence is not read as "the same"
                text += (
                    f"\n{o['metric']}: the models share only wording {shared[0]} — no "
                    "order to compare across wordings"
                )
            continue
        verdict = "the same under every wording" if o["same_order"] else "changes with the wording"
        text += f"\n{o['metric']}: the models' order {verdict}"
    _emit(args, {"runs": payloads, "orders": compared}, text)
    return 0


def _model_name(store, run_id: int) -> str:
    run = store.get_run(run_id)
    return store.get_model(run["model_id"])["name"] if run["model_id"] else "no model"


def cmd_compare(args) -> int:
    from gbdesk.analysis.compare import compare_runs

    with _open_store(args.db) as store:
        c = compare_runs(
            store, args.run_a, args.run_b, args.labels, resamples=args.resamples, seed=args.seed
        )
    lines = [
        f"run {c.run_b} (B: {display_name(c.model_b, MODEL_CHARS)}) against run {c.run_a} "
        f"(A: {display_name(c.model_a, MODEL_CHARS)}) · {c.probe} · "
        f"{c.items} items paired · {c.label_mode} labels · {c.resamples} paired resamples "
        f"(seed {c.seed})"
    ]
    lines += [f"warning: {w}" for w in c.warnings]
    width = max([24, *(len(n) for n in c.metrics)])
    lines.append(f"{'metric':<{width}} {'A':>8} {'B':>8} {'B − A':>8}  {'95% CI':<19} p_adj")
    for name, m in c.metrics.items():
        cells = f"[{fmt(m.ci[0])}, {fmt(m.ci[1])}]  {fmt(m.p_adj)}" if m.tested else "not tested"
        star = " *" if m.established else ""
        lines.append(f"{name:<{width}} {fmt(m.a):>8} {fmt(m.b):>8} {fmt(m.diff):>8}  {cells}{star}")
    lines += ["", c.summary()]
    reasons: dict[str, int] = {}
    for m in c.metrics.values():
        if m.reason:
            reasons[m.reason] = reasons.get(m.reason, 0) + 1
    lines += [f"not tested ({n}): {reason}" for reason, n in reasons.items()]
    _emit(args, c.to_json(), "\n".join(lines))
    return 0


def cmd_export(args) -> int:
    if not args.csv and not args.pdf:
        raise UserError("say where to export: --csv DIR and/or --pdf FILE")
    if args.pdf and Path(args.pdf).is_dir():  # before any metric is computed and cached
        raise UserError(f"--pdf must name a file, and {args.pdf} is a folder")
    if args.csv and Path(args.csv).exists() and not Path(args.csv).is_dir():
        raise UserError(f"--csv must name a folder, and {args.csv} is a file")
    written: list[str] = []
    notes: list[str] = []
    with _open_store(args.db) as store:
        for run_id in args.run_ids:
            run = store.get_run(run_id)  # a clear error for an unknown run
            if not run["attempts_done"]:
                notes.append(
                    f"run {run_id} ({run['probe']}, {run['status']}): no answers yet — its "
                    "rows are empty (the CSV files have their headers only) and the PDF says so"
                )
        if args.csv:
            from gbdesk.report.csv_export import export_leftovers, export_run_csv

            tables = export_run_csv(store, args.run_ids, args.csv)
            written += [str(p) for p in tables]
            notes += export_leftovers(Path(args.csv), tables)
        if args.pdf:
            from gbdesk.report.pdf import export_pdf

            written.append(str(export_pdf(store, args.run_ids, args.pdf, label_mode=args.labels)))
    for note in notes:
        print(f"gbdesk: {note}", file=sys.stderr)
    _emit(args, {"files": written, "notes": notes}, "\n".join(written))
    return 0
