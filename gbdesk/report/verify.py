"""`gbdesk verify REPORT.pdf`: does a PDF report still match the database it came from?

The PDF carries its digest (`gbdesk.report.digest`) as the attachment `gbdesk-digest.json`
(and prints it in its test log). Verifying reads that manifest, opens the database read
only (`Store(path, reader=True)`: `mode=ro`, never migrated, no write reaches SQLite),
checks that its runs are the report's (the same ids, probes and creation times; else it
is another database), recomputes every run's digest — its metrics computed afresh from
the stored labels, never read from the metrics cache — and compares. A run that differs
is named with the parts of it that changed ("its answers", "its labels and reviews").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbdesk.report.digest import ATTACHMENT, FORMAT, PARTS, VERSION, run_digest, total_digest
from gbdesk.store import Store
from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunCheck:
    run_id: int
    probe: str
    matches: bool
    differ: list[str] = field(default_factory=list)  # the parts that changed, in words


@dataclass(frozen=True)
class Verification:
    """What `verify_report` found: each run's check, and the one line that says it."""

    pdf: Path
    db: Path
    label_mode: str
    expected: str  # the report's digest, as the PDF carries it
    found: str  # the digest of the database's data now
    runs: list[RunCheck]

    @property
    def matches(self) -> bool:
        return self.expected == self.found and all(r.matches for r in self.runs)

    def line(self) -> str:
        if self.matches:
            return (
                f"{self.pdf.name} matches {self.db}: the answers, labels, reviews, settings "
                f"and metrics of its {len(self.runs)} run(s) are as reported (digest "
                f"{self.found[:16]}…)"
            )
        differ = [
            f"run {r.run_id} ({r.probe}) differs in its {' and '.join(r.differ) or 'data'}"
            for r in self.runs
            if not r.matches
        ]
        return (
            f"{self.pdf.name} does not match {self.db}: " + "; ".join(differ) + " — changed "
            "since the report was made"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "matches": self.matches,
            "pdf": str(self.pdf),
            "db": str(self.db),
            "label_mode": self.label_mode,
            "expected": self.expected,
            "found": self.found,
            "runs": [
                {"id": r.run_id, "probe": r.probe, "matches": r.matches, "differ": r.differ}
                for r in self.runs
            ],
        }


def read_manifest(pdf: Path) -> dict[str, Any]:
    """The digest manifest a gbdesk PDF carries; `UserError` (one line) for a missing file,
    a file that is no PDF, or a PDF gbdesk did not make (or made before digests)."""
    import pypdf
    from pypdf.errors import PyPdfError

    if not pdf.is_file():
        raise UserError(f"no report at {pdf}")
    try:
        reader = pypdf.PdfReader(pdf)
        creator = str((reader.metadata or {}).get("/Creator") or "")
        attached = reader.attachments.get(ATTACHMENT)
    except (PyPdfError, OSError, ValueError, KeyError) as exc:
        raise UserError(f"{pdf.name} is not a PDF that can be read ({exc})") from None
    if not attached:
        made = f" (its creator: {creator})" if creator else ""
        older = " before reports carried a digest" if creator.startswith("gbdesk") else ""
        raise UserError(
            f"{pdf.name} carries no gbdesk digest: it was not made by gbdesk{older}{made}, so "
            "there is nothing to verify"
        )
    try:
        manifest = json.loads(attached[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{pdf.name}'s gbdesk digest cannot be read ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise UserError(f"{pdf.name}'s attachment {ATTACHMENT} is no gbdesk digest")
    if manifest.get("version") != VERSION:
        raise UserError(
            f"{pdf.name}'s digest has version {manifest.get('version')}; this gbdesk verifies "
            f"version {VERSION}: use the gbdesk that made the report"
        )
    return manifest


def _not_this_database(db: Path, manifest: dict[str, Any], why: str) -> UserError:
    made = manifest.get("database")
    hint = f" (the report was made from {made})" if made and str(made) != str(db) else ""
    return UserError(f"{db} is not this report's database: {why}{hint}")


def verify_report(pdf: str | Path, db: str | Path) -> Verification:
    """Check `pdf` against the database `db` (read only). `UserError` when the PDF is not
    a gbdesk report, the database is missing or not the report's."""
    from gbdesk.analysis.results import fresh_metrics

    pdf, db = Path(pdf), Path(db)
    manifest = read_manifest(pdf)
    label_mode = str(manifest.get("label_mode") or "reviewed")
    entries = [r for r in manifest.get("runs") or [] if isinstance(r, dict)]
    with Store(db, reader=True) as store:
        for entry in entries:
            try:
                row = store.run_row(int(entry["id"]))
            except UserError:
                raise _not_this_database(db, manifest, f"it has no run {entry['id']}") from None
            if (row["probe"], str(row["created_at"])) != (entry["probe"], entry["created_at"]):
                raise _not_this_database(
                    db,
                    manifest,
                    f"its run {entry['id']} is {row['probe']} created {row['created_at']}, the "
                    f"report's is {entry['probe']} created {entry['created_at']}",
                )
        checks, digests = [], []
        for entry in entries:
            run_id = int(entry["id"])
            found = run_digest(store, run_id, fresh_metrics(store, run_id, label_mode))
            digests.append(found)
            expected = entry.get("parts") or {}
            differ = [PARTS.get(p, p) for p in PARTS if expected.get(p) != found.parts.get(p)]
            same = found.digest == entry.get("digest")
            checks.append(RunCheck(run_id, found.probe, same, [] if same else differ))
    return Verification(
        pdf=pdf,
        db=db,
        label_mode=label_mode,
        expected=str(manifest.get("total") or ""),
        found=total_digest(label_mode, digests),
        runs=checks,
    )
