"""Kept for third-party studies: the import helpers live in `gbdesk.contract.importing`."""

from __future__ import annotations

from gbdesk.contract.importing import (  # noqa: F401
    MAX_LISTED,
    check_export_file,
    export_hint,
    export_hints,
    is_gbdesk_export,
    line_list,
    model_of,
    parse_json_line,
    read_rows,
    refuse,
    require_columns,
    require_text,
)
