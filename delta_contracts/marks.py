"""The table properties delta-contracts writes on the tables it governs and reads back: the contract stamp,
the deprecation marks and the producer hold.

Plain strings, importable from any stage (the pure core included): a module that only reads a property
imports its name from here, not from the planner's ops.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

STAMP_ID = "delta_contracts.id"
STAMP_VERSION = "delta_contracts.version"
STAMP_SCHEMA_HASH = "delta_contracts.schema_hash"
DEPRECATED_COLUMNS = "delta_contracts.deprecated.columns"
DEPRECATED_SINCE = "delta_contracts.deprecated.since"
DEPRECATED_TABLE = "delta_contracts.deprecated.table"
DEPRECATED_COLUMN_PREFIX = "delta_contracts.deprecated.column."
STAMP_CONTRACT = "delta_contracts.contract"
HOLD = "delta_contracts.hold"
# Set on an old version's table by the versioned cutover's fence, naming the new table: the commit that set it
# is the version of the old table the fence carried over, and any row changed after it is left behind.
FENCED_INTO = "delta_contracts.fenced_into"


def column_mark_key(column: str) -> str:
    """The property holding one column's own deprecation mark (`{"since": …, "window": …}`)."""
    return DEPRECATED_COLUMN_PREFIX + column


def marked_columns(properties: Mapping[str, str]) -> tuple[str, ...]:
    """The columns a table's properties mark deprecated (the list, and the per-column marks)."""
    names = {
        k.removeprefix(DEPRECATED_COLUMN_PREFIX) for k in properties if k.startswith(DEPRECATED_COLUMN_PREFIX)
    }
    raw = properties.get(DEPRECATED_COLUMNS)
    if raw:
        try:
            listed = json.loads(raw)
        except ValueError:
            listed = []
        names |= {n for n in listed if isinstance(n, str)}
    return tuple(sorted(names))
