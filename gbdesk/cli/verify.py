"""`gbdesk verify REPORT.pdf`: does a PDF report still match its database? (read only)"""

from __future__ import annotations

from pathlib import Path

from gbdesk.cli._common import _emit
from gbdesk.support.errors import UserError


def cmd_verify(args) -> int:
    """0: the report matches; 1: some run's data changed (named); 2 (a `UserError`): not
    a gbdesk report, no such file, or not the report's database."""
    from gbdesk.report.verify import verify_report
    from gbdesk.support.paths import default_db_path

    report = Path(args.report).expanduser()
    if not report.is_file():  # the file named first: a missing report, whatever the database
        what = "a folder, not a report," if report.is_dir() else "no report"
        raise UserError(f"{what} at {report}")
    db = Path(args.db).expanduser() if args.db else default_db_path()
    if not db.is_file():
        what = "a folder" if db.is_dir() else "no database"
        raise UserError(f"{what} at {db}: give the report's database with --db FILE")
    result = verify_report(report, db)
    _emit(args, result.to_json(), result.line())
    return 0 if result.matches else 1
