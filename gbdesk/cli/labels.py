"""`gbdesk label`, `sample`, `review`, `code` and `agreement`: labels by a pass or a
person, the random review sample, qualitative codes and the raters' agreement."""

from __future__ import annotations

from typing import Any

from gbdesk.cli._common import _emit, _open_store, _ProgressPrinter
from gbdesk.support.errors import UserError


def cmd_label(args) -> int:
    from gbdesk.workflows.labeling import label_run

    with _open_store(args.db, writes=True) as store:
        result = label_run(
            store, args.run_id, args.extractor, args.labeler_model, on_progress=_ProgressPrinter()
        )
    _emit(
        args,
        {"run_id": args.run_id, **result},
        f"run {args.run_id}: {result['labelled']} {result.get('unit', 'attempts')} labelled by "
        f"{result['source']}"
        + (
            f" ({result['fallbacks']} fell back to the built-in labeller)"
            if result.get("fallbacks")
            else ""
        )
        + "; the run's metrics now use these labels",
    )
    return 0


def cmd_sample(args) -> int:
    from gbdesk.analysis.ppi_metrics import draw_sample

    with _open_store(args.db) as store:
        result = draw_sample(store, args.run_id, args.size, args.seed)
        # the sampled attempts, for a reviewer's own tools (gbdesk review ATTEMPT LABEL)
        result["attempt_ids"] = sorted(store.review_sample(args.run_id))
        if result["unit"] == "item":
            sampled = set(result["attempt_ids"])
            result["items"] = sorted(
                {a["item"] for a in store.attempts(args.run_id) if a["id"] in sampled}
            )
    unit = "items (all their attempts)" if result["unit"] == "item" else "attempts"
    _emit(
        args,
        result,
        f"run {args.run_id}: review sample of {result['size']} of {result['of']} {unit}, "
        f"seed {result['seed']} — review them (Review → “In the random review sample”, or "
        f"gbdesk import-labels), then: gbdesk metrics {args.run_id} --labels ppi",
    )
    return 0


def cmd_review(args) -> int:
    from gbdesk.contract import get_probe

    with _open_store(args.db, writes=True) as store:
        attempt = store.get_attempt(args.attempt_id)
        probe = get_probe(store.get_run(attempt["run_id"])["probe"])
        metadata = next(
            (
                row["metadata"]
                for row in store.run_items(attempt["run_id"])
                if row["item"] == attempt["item"]
            ),
            {},
        )
        human_label = probe.capabilities.labelling.human_label
        label = human_label(attempt["response"], metadata, args.label, args.reviewer)
        add = store.add_consensus_label if args.consensus else store.add_human_label
        label_id = add(
            args.attempt_id, args.reviewer, label["label"], label.get("data"), label.get("evidence")
        )
    kind = "consensus" if args.consensus else "human"
    payload = {"label_id": label_id, "attempt_id": args.attempt_id, "label": label["label"]}
    who = f"consensus, decided by {args.reviewer}" if args.consensus else f"by {args.reviewer}"
    _emit(args, {**payload, "kind": kind}, f"attempt {args.attempt_id}: {label['label']} ({who})")
    return 0


def cmd_code(args) -> int:
    """Code a run's texts: draw them, import codes, edit the codebook, or show progress."""
    from gbdesk.people import coding

    if args.consensus and not args.file:
        raise UserError("--consensus goes with --file")
    with _open_store(args.db, writes=not args.show) as store:
        store.get_run(args.run_id)
        if args.select:
            return _code_select(args, store)
        if args.file:
            if not args.rater:
                raise UserError("--file needs --rater NAME (who coded)")
            result = coding.import_codes(
                store, args.run_id, args.file, args.rater, consensus=args.consensus
            )
            what = "adjudicated codings" if args.consensus else "codings"
            _emit(
                args,
                result,
                f"run {args.run_id}: {result['coded']} {what} by {result['rater']} stored",
            )
            return 0
        who = args.rater or ""
        if args.add_code:
            key = coding.add_code(store, args.run_id, args.add_code, args.definition, who)
            _emit(args, {"code": key}, f"added code {args.add_code!r} (key {key})")
            return 0
        if args.rename:
            key = coding.rename_code(store, args.run_id, args.rename[0], args.rename[1], who)
            _emit(args, {"code": key}, f"code {key} is now called {args.rename[1]!r}")
            return 0
        if args.define:
            key = coding.define_code(store, args.run_id, args.define[0], args.define[1], who)
            _emit(args, {"code": key}, f"code {key} defined")
            return 0
        book = coding.codebook(store, args.run_id)
        summary = coding.coding_summary(store, args.run_id)
        items = coding.coding_items(store, args.run_id)
    return _show_coding(args, book, summary, items)


def _code_select(args, store) -> int:
    """`code --select`: draw the texts to code, per category."""
    from gbdesk.people import coding

    categories = (
        [c.strip() for c in args.categories.split(",") if c.strip()] if args.categories else None
    )
    result = coding.draw_selection(
        store,
        args.run_id,
        per_category=args.per_category,
        seed=args.seed,
        threshold=args.threshold,
        categories=categories,
        label_mode=args.labels,
    )
    lines = [
        f"run {args.run_id}: {len(result['drawn'])} texts drawn to code "
        f"({result['per_category']} per category, seed {result['seed']})",
        f"rule: {result['rule']}",
    ]
    lines += [
        f"  {c}: {sum(1 for d in result['drawn'] if d['category'] == c)} of {n} available"
        for c, n in result["available"].items()
    ]
    lines += [
        f"  {d['item']}#{d['attempt']} (attempt {d['attempt_id']}) · {d['category']} · "
        f"{d['reason']}"
        for d in result["drawn"]
    ]
    _emit(args, result, "\n".join(lines))
    return 0


def _show_coding(args, book, summary, items) -> int:
    """`code --show`: the codebook, the drawn texts with their codings, the progress."""
    from gbdesk.people import coding

    names = {e["code"]: e["name"] for e in book}
    lines = ["codebook:"]
    lines += [f"  {e['name']} ({e['code']}): {e['definition']}" for e in book]
    if summary:
        p = summary["progress"]
        coded = ", ".join(f"{r} {n}/{p['drawn']}" for r, n in p["coded_by"].items())
        lines.append(
            f"{p['drawn']} texts drawn; coded: {coded or 'nobody yet'}; disputed "
            f"{p['disputed']}, adjudicated {p['adjudicated']}, unresolved {p['unresolved']}"
        )
    for item in items:
        codings = "; ".join(
            f"{r}: {', '.join(names.get(c, c) for c in v['codes']) or coding.NO_CODE}"
            for r, v in item.codings.items()
        )
        if item.consensus:
            codings += f"; consensus ({item.consensus['by']}): " + (
                ", ".join(names.get(c, c) for c in item.consensus["codes"]) or coding.NO_CODE
            )
        lines.append(f"  {item.story} · {item.category} · {codings or 'not coded'}")
    payload = {
        "run_id": args.run_id,
        "codebook": book,
        "summary": summary,
        "texts": [
            {
                "attempt_id": i.attempt_id,
                "story": i.story,
                "category": i.category,
                "reason": i.reason,
                "codings": i.codings,
                "consensus": i.consensus,
            }
            for i in items
        ],
    }
    _emit(args, payload, "\n".join(lines))
    return 0


def _agreement_text(payload: dict[str, Any]) -> str:
    def num(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}"

    def pct(x: Any) -> str:
        return "—" if x is None else f"{100 * x:.1f} %"

    def figures(first: dict[str, Any], now: dict[str, Any], indent: str = "  ") -> list[str]:
        rows = [
            ("percent agreement", pct(first["percent_agreement"]["pairwise"]),
             pct(now["percent_agreement"]["pairwise"])),
            ("Cohen's κ", num(first["cohen_kappa"]["value"]), num(now["cohen_kappa"]["value"])),
            ("Fleiss' κ", num(first["fleiss_kappa"]["value"]), num(now["fleiss_kappa"]["value"])),
            ("Krippendorff's α", num(first["krippendorff_alpha"]["value"]),
             num(now["krippendorff_alpha"]["value"])),
        ]  # fmt: skip
        out = [f"{indent}{'':<20} {'initial':>9} {'current':>9}"]
        out += [f"{indent}{t:<20} {a:>9} {b:>9}" for t, a, b in rows]
        reasons = {
            f["reason"]
            for f in (now["cohen_kappa"], now["fleiss_kappa"], now["krippendorff_alpha"])
            if f.get("reason")
        }
        out += [f"{indent}(— {r})" for r in sorted(reasons)]
        return out

    def adjudication(adj: dict[str, Any], indent: str = "  ") -> list[str]:
        vs = "; ".join(
            f"{r} {pct(v['agreement'])} of {v['n_units']} (κ {num(v['cohen_kappa'])})"
            for r, v in adj["raters_vs_final"].items()
        )
        return [
            f"{indent}adjudication: {adj['n_disputed']} disputed, {adj['n_adjudicated']} "
            f"adjudicated, {adj['n_unresolved']} unresolved; against the final labels: "
            f"{vs or '—'}"
        ]

    head = (
        f"run {payload['run_id']} ({payload['probe']}) · raters of its labels: "
        f"{', '.join(payload['raters']) or 'none'}"
    )
    if payload.get("coders"):
        head += f" · coders: {', '.join(payload['coders'])}"
    if payload["with_automatic"]:
        head += " + the automatic labeller"
    if payload["adjudicators"]:
        head += f" · adjudicated by: {', '.join(payload['adjudicators'])}"
    lines = [head]
    rated = [k for k in payload["labels"].values() if k["current"]["n_units"]]
    if not rated:
        lines.append("\nLabels: no person has labelled this run yet.")
    for kind in rated:
        now = kind["current"]
        lines.append(
            f"\n{kind['title']}: {now['n_units']} units rated, {now['n_units_overlap']} by two "
            f"raters or more; {kind['changed']} rating(s) changed since first given"
        )
        if now["n_units_overlap"]:
            lines += figures(kind["initial"], now)
            lines += adjudication(kind["adjudication"])
    codes = payload.get("codes")
    if codes:
        now = codes["current"]
        lines.append(
            f"\nCodes ({', '.join(payload['coders'])}): {now['n_units']} texts coded, "
            f"{now['n_units_overlap']} by two raters or more"
        )
        first_codes = {c["code"]: c for c in codes["initial"]["multi_code"]["codes"]}
        for c in now["multi_code"]["codes"]:
            name = codes["names"].get(c["code"], c["code"])
            prevalence = pct(c["prevalence"])
            lines.append(f"  code {name} (given in {prevalence} of codings):")
            lines += figures(first_codes[c["code"]], c, "    ")
        lines.append("  all codes pooled (every text × code):")
        pooled = (codes["initial"]["multi_code"]["pooled"], now["multi_code"]["pooled"])
        lines += figures(*pooled, "    ")
        lines.append("  whole code sets (equal only when identical):")
        lines += figures(codes["initial"], now, "    ")
        lines += adjudication(codes["adjudication"])
    return "\n".join(lines)


def cmd_agreement(args) -> int:
    from gbdesk.people.raters import run_agreement

    with _open_store(args.db) as store:
        payload = run_agreement(store, args.run_id, include_auto=args.with_auto)
    _emit(args, payload, _agreement_text(payload))
    return 0
