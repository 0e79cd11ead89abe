"""SQLite persistence (sqlite-utils, WAL, versioned schema)."""

from gbdesk.store.db import Store

__all__ = ["Store"]
