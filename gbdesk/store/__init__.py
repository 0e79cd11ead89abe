"""SQLite persistence (sqlite-utils, WAL, versioned schema)."""

from gbdesk.store.db import DatabaseFault, Store

__all__ = ["DatabaseFault", "Store"]
