"""Deprecated: the import helpers' old path for third-party studies. Import them from
`gbdesk.contract.importing`."""

from __future__ import annotations

from gbdesk.contract.deprecated import old_path

__getattr__, __dir__ = old_path(
    __name__,
    {
        "gbdesk.contract.importing": (
            "MAX_LISTED",
            "check_export_file",
            "export_hint",
            "export_hints",
            "is_gbdesk_export",
            "line_list",
            "model_of",
            "parse_json_line",
            "read_rows",
            "refuse",
            "require_columns",
            "require_text",
        ),
    },
)
