"""Hand labels in bulk: `gbdesk import-labels RUN --file F --rater NAME`.

A second rater, a spreadsheet, or an edited export (a story probe's characters.csv,
attempts.csv, answers.csv) becomes human labels of one rater. Rows are matched to the
run's attempts by an `attempt_id` column, else by `item` + `attempt`, else by `prompt` +
`response`; the rows of one attempt (e.g. one row per character) are turned into one
label by the probe (`Labelling.from_rows`). Rows of another run's export (their
`run_id`) label this run only where they hold its texts: the run imported from that
export. The whole file is validated first:
any bad row → nothing is stored, and every bad line is listed. The labels are then
written in one transaction.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.contract.importing import check_export_file, export_hints, line_list, read_rows, refuse
from gbdesk.contract.running import RunItems
from gbdesk.store import Store
from gbdesk.support.errors import UserError


def _whole_number(value: Any) -> int | None:
    try:
        text = str(value).strip()
        return int(text) if text and len(text) < 19 else None
    except ValueError:
        return None


def _same_texts(
    record: dict[str, Any], by_key: dict[tuple[str, int], dict[str, Any]]
) -> dict[str, Any] | None:
    """The attempt of this run a row of *another* run's export stands for: the same item
    and attempt with the same texts (the row's response — a role's text in answers.csv
    — and its prompt when it has one). So an export goes back onto the run imported from
    it; a row whose texts differ stays another run's."""
    attempt = _whole_number(record.get("attempt"))
    if attempt is None:
        return None
    found = by_key.get((str(record.get("item") or "").strip(), attempt))
    if found is None:
        return None
    response = record.get("response", record.get("role"))
    if response is None or str(response) != found["response"]:
        return None
    if "prompt" in record and str(record.get("prompt") or "") != found["prompt"]:
        return None
    return found


def plan_labels(
    store: Store, run_id: int, path: str | Path, rater: str
) -> list[tuple[int, dict[str, Any]]]:
    """(attempt id, label) for every attempt the file labels (rows with empty label cells
    label nothing); raises `UserError` listing every line that cannot be used."""
    rater = (rater or "").strip()
    if not rater:
        raise UserError("--rater must name who made these labels")
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    check_export_file(probe, path, "import-labels")
    with export_hints(probe, path, "import-labels"):
        return _plan_labels(store, run_id, probe, path, rater)


def _plan_labels(
    store: Store, run_id: int, probe: Any, path: str | Path, rater: str
) -> list[tuple[int, dict[str, Any]]]:
    rows = read_rows(path)
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    attempts = store.attempts(run_id)
    by_id = {a["id"]: a for a in attempts}
    by_key = {(a["item"], a["attempt"]): a for a in attempts}
    by_text: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for a in attempts:
        by_text[(a["prompt"], a["response"])].append(a)
    items = RunItems.of(store, run_id)

    unmatched, ambiguous, other_run = [], [], []
    grouped: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for number, record in rows:
        if str(record.get("run_id") or "").strip() not in ("", str(run_id)):
            copy = _same_texts(record, by_key)
            if copy is None:
                other_run.append(number)
            else:
                grouped[copy["id"]].append((number, record))
            continue
        attempt = None
        if str(record.get("attempt_id") or "").strip():
            attempt = by_id.get(_whole_number(record["attempt_id"]))
        elif (
            str(record.get("item") or "").strip()
            and _whole_number(record.get("attempt")) is not None
        ):
            attempt = by_key.get((str(record["item"]).strip(), _whole_number(record["attempt"])))
        elif "prompt" in record and "response" in record:
            found = by_text.get((str(record["prompt"]), str(record["response"])), [])
            if len(found) > 1:
                ambiguous.append(number)
                continue
            attempt = found[0] if found else None
        if attempt is None:
            unmatched.append(number)
            continue
        grouped[attempt["id"]].append((number, record))

    problems = []
    if other_run:
        problems.append(f"{line_list(other_run)} belong to another run (run_id column)")
    if unmatched:
        problems.append(
            f"{line_list(unmatched)} match no attempt of run {run_id} (give attempt_id, "
            "item + attempt, or prompt + response)"
        )
    if ambiguous:
        problems.append(
            f"{line_list(ambiguous)} match several attempts with the same prompt and response; "
            "add attempt_id or item + attempt"
        )
    planned: list[tuple[int, dict[str, Any]]] = []
    bad: dict[str, list[int]] = defaultdict(list)
    for attempt_id, group in grouped.items():
        a = by_id[attempt_id]
        try:
            label = probe.capabilities.labelling.from_rows(
                a["response"], items.metadata(a["item"], a["attempt"]), [r for _, r in group], rater
            )
        except UserError as exc:
            bad[str(exc)].extend(n for n, _ in group)
            continue
        if label is not None:
            planned.append((attempt_id, label))
    for message, numbers in bad.items():
        problems.append(f"{line_list(sorted(numbers))}: {message}")
    refuse(path, problems)
    return planned


def import_labels(
    store: Store, run_id: int, path: str | Path, rater: str, *, consensus: bool = False
) -> dict[str, Any]:
    """Store the file's labels as `human:<rater>` labels — or, with `consensus`, as
    adjudicated labels decided by `rater` (`consensus:<rater>`) — all or nothing."""
    planned = plan_labels(store, run_id, path, rater)
    add = store.add_consensus_label if consensus else store.add_human_label
    with store.transaction():
        for attempt_id, label in planned:
            add(attempt_id, rater, label["label"], label.get("data"), label.get("evidence"))
    out = {"run_id": run_id, "rater": rater.strip(), "labelled": len(planned)}
    return {**out, "kind": "consensus"} if consensus else out
