"""Table properties Delta keeps for itself: read from a live table, never declared, never copied.

Delta writes them while it runs a feature (delta-spark `RowTrackingFeature`, `DeltaColumnMapping`): the
materialised row-tracking columns' physical names are unique to one table, so a `CREATE TABLE` that sets them
fails (`DELTA_UNKNOWN_CONFIGURATION` for a name Delta did not generate), and a column-mapping counter set by
hand would make Delta reuse column ids.
"""

from __future__ import annotations

BOOKKEEPING_PROPERTIES = frozenset(
    {
        "delta.columnMapping.maxColumnId",
        "delta.rowTracking.materializedRowIdColumnName",
        "delta.rowTracking.materializedRowCommitVersionColumnName",
    }
)


def is_bookkeeping(key: str) -> bool:
    """Whether `key` is one of Delta's own bookkeeping properties (case as Delta compares: insensitive)."""
    return key.casefold() in {k.casefold() for k in BOOKKEEPING_PROPERTIES}
