"""The column order a table's migration history made. A table is in the order its reviewed migrations gave
it: a migration planned before ADD COLUMNS took a position appended its column at the end, and that table is
no drift for it. Drift compares a table's order with this one, not with the contract's listing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from delta_contracts.plan.ops import Op
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.plan.stored import StoredMigration


def replayed_order(ops: Iterable[Op], table: TableId) -> tuple[str, ...] | None:
    """The top-level columns of `table`, in order, after `ops` ran; None when they never created it."""
    tables: dict[TableId, list[str]] = {}
    for op in ops:
        op.order_columns(tables)
    found = tables.get(table)
    return None if found is None else tuple(found)


def history_order(history: Sequence[StoredMigration], version: str, table: TableId) -> tuple[str, ...] | None:
    """The column order of `table` once the history's migrations up to the one reaching `version` ran; None
    when they did not make it (a table adopted as it was, say) or never reach `version`."""
    upto = [i for i, stored in enumerate(history) if stored.migration.to_version == version]
    if not upto:
        return None
    return replayed_order((op for stored in history[: upto[-1] + 1] for op in stored.migration.ops), table)
