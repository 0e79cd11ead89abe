"""`gbdesk import` and `import-labels`: generations and hand labels made elsewhere."""

from __future__ import annotations

import sys

from gbdesk.cli._common import _emit, _holding, _open_store


def cmd_import(args) -> int:
    from gbdesk.workflows.importer import import_generations

    with (
        _open_store(args.db, writes=True) as store,
        _holding(store, args, "import", f"an import of {args.probe} answers"),
    ):
        result = import_generations(
            store,
            args.probe,
            args.file,
            model_name=args.model_name,
            template=args.template,
            deal_rows=args.deal_rows,
            wording=args.wording,
        )
    for warning in result.get("warnings") or []:
        print(f"gbdesk: note: {warning}", file=sys.stderr)
    _emit(args, result, f"imported {result['attempts']} attempts as run {result['run_id']}")
    return 0


def cmd_import_labels(args) -> int:
    from gbdesk.people.label_import import import_labels

    with _open_store(args.db) as store:
        result = import_labels(store, args.run_id, args.file, args.rater, consensus=args.consensus)
    what = "adjudicated (consensus) by" if args.consensus else "labelled by"
    text = f"run {args.run_id}: {result['labelled']} attempts {what} {result['rater']}"
    _emit(args, result, text)
    return 0
