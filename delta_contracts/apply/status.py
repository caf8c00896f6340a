"""What `status` and `drift` say of a contract's table in one environment, from its record (`state.record`)
and the live tables: its status row (where it lives, its stamp, what is pending, where producers write), its
drift (what differs from the contract it is at, and the commits that are not the toolkit's), and a cell of
`status --all-envs` in words."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract
    from delta_contracts.engine.base import Engine
    from delta_contracts.live import LiveTable
    from delta_contracts.state.record import TableRecord
    from delta_contracts.tableid import TableId
    from delta_contracts.tables.drift import DriftItem

# A live table by name, None when there is none (read once per table by the caller).
Describe = Callable[["TableId"], "LiveTable | None"]
# Why a view cannot be read, or None when it can.
UnreadableView = Callable[["TableId"], "str | None"]


def status_row(
    record: TableRecord,
    contract: Contract,
    views: Mapping[TableId, str],
    describe: Describe,
    unreadable: UnreadableView,
) -> dict[str, object]:
    """`status`'s row of the contract: the live table and its stamp (and the next table a pending versioned
    migration fills), what readers read and producers write, the migrations and phases still pending, and
    the views that no longer read."""
    from delta_contracts.marks import STAMP_VERSION
    from delta_contracts.tables.drift import compatibility_drift, write_target

    if record.unreadable is not None:
        return {"contract": contract.id, "version": contract.version, "error": record.unreadable}
    # The stamp is the live table's: behind the alias view, or of the contract's name (a migration to the
    # planned table may be pending).
    where = record.location(contract, views, lambda t: describe(t) is not None)
    planned, current, alias = where.planned, where.current, where.read
    table = describe(planned)
    serving = table if current == planned else describe(current)
    stamped = serving.properties.get(STAMP_VERSION) if serving else None
    # The table named is the live one, whose stamp is shown; the planned one a pending versioned migration is
    # filling is the next, with its own state (it has no stamp before its cutover).
    upcoming: dict[str, object] | None = None
    if current != planned:
        upcoming = {
            "table": str(planned),
            "exists": table is not None,
            "stamped": table.properties.get(STAMP_VERSION) if table else None,
        }
    return {
        "contract": contract.id,
        "version": contract.version,
        "table": str(current),
        "exists": serving is not None,
        "stamped": stamped,
        "next": upcoming,
        "read": str(alias),
        # Producers write where readers read until a versioned cutover moves both: a planned table that a
        # pending migration is still filling is not theirs yet (docs/migrations.md).
        "write": write_target(contract, current, serving is not None, views, alias),
        "pending": [p.to_json() for p in record.pending()],
        "broken": [i.message for i in compatibility_drift(contract, views, unreadable)],
    }


def contract_drift(
    record: TableRecord,
    contract: Contract,
    engine: Engine,
    views: Mapping[TableId, str],
    describe: Describe,
    unreadable: UnreadableView,
) -> tuple[TableId, list[DriftItem]]:
    """The table the contract's rows live in now, and how it drifted: from the contract it is at (what a
    pending migration changes is reported as pending, not drift), its alias view, the views reading it, and
    its commits that are neither the toolkit's nor before an adoption."""
    from delta_contracts.tables.drift import (
        DriftItem,
        alias_drift,
        commit_drift,
        compatibility_drift,
        table_drift,
    )

    where = record.location(contract, views, lambda t: describe(t) is not None)
    physical = where.current
    table = describe(physical)
    expected, pending, order = _contract_live_table_is_at(record, contract, table, physical)
    items = [*pending, *table_drift(expected, table, physical, order)]
    if record.unreadable is not None:
        items.insert(0, DriftItem("migrations", "", None, None, record.unreadable))
    items += alias_drift(expected, physical, views, where.read)
    items += compatibility_drift(expected, views, unreadable)
    if table is not None:
        adopted = _adopted_at(record)

        def is_toolkit(version: int) -> bool:
            return version <= adopted or record.claimed(physical, version)

        items += commit_drift(engine.history(physical), is_toolkit)
    return physical, items


def _contract_live_table_is_at(
    record: TableRecord, contract: Contract, table: LiveTable | None, physical: TableId
) -> tuple[Contract, list[DriftItem], tuple[str, ...] | None]:
    """The contract a live table must match, what is pending, and the column order its migrations made up to
    that contract (None when they did not make the table). While a planned migration has not finished (a
    versioned cutover waiting behind a held drop, say), the table is still at the version it is stamped
    with: what the later contract changes is pending, not drift. The pending migrations are reported, with
    why they wait (the ledger's `held` rows), as information."""
    from delta_contracts.marks import STAMP_VERSION
    from delta_contracts.plan.column_order import history_order
    from delta_contracts.tables.drift import DriftItem

    if record.unreadable is not None:
        return contract, [], None  # reported as a drift item of its own
    history = record.history
    pending = record.pending()
    stamped = None if table is None else table.properties.get(STAMP_VERSION)
    made = history_order(history, stamped or contract.version, physical)
    if not pending or stamped is None or stamped == contract.version:
        return contract, [], made
    at = [stored for stored in history if stored.migration.to_version == stamped]
    if not at:
        return contract, [], made
    items = []
    to_version = {stored.migration_id: stored.migration.to_version for stored in history}
    for waiting in pending:
        held = record.waiting_for(waiting.migration_id)
        why = f"; waiting: {held}" if held else ""
        message = (
            f"migration {waiting.migration_id} to {to_version[waiting.migration_id]} pending (phases "
            f"{', '.join(waiting.phases)} not finished){why}; the table is at {stamped}: what a pending "
            "migration changes is not drift"
        )
        items.append(DriftItem("pending", waiting.migration_id, contract.version, stamped, message, False))
    return at[-1].contract, items, made


def _adopted_at(record: TableRecord) -> int:
    """The table version before which commits predate the contract (an adopted table's), else -1."""
    from delta_contracts.tables.adopt import adopted_at_version

    history = record.history
    if not history or "_baseline_" not in history[0].migration_id:
        return -1
    found = adopted_at_version(history[0].json_path)
    return -1 if found is None else found


def cell_summary(cell: Mapping[str, object]) -> str:
    """One cell of the contract × environment matrix (`status --all-envs`, the site's index) in words: the
    stamped version, what is pending and what a gate waits for."""
    if "error" in cell:
        return f"error: {cell['error']}"
    stamped = cell["stamped"] or "not created"
    pending = cell["pending"]
    assert isinstance(pending, list)
    parts = [str(stamped)]
    for item in pending:
        parts.append(f"pending {item['migration']} [{'/'.join(item['phases'])}]")
    waiting = cell["waiting"]
    assert isinstance(waiting, list)
    parts += [f"waiting {w['migration']}: {w['waits_for']}" for w in waiting]
    return "; ".join(parts)
