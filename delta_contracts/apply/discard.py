"""Undoing by hand: `rehash` accepts changed migration files, `discard` removes the last planned migration
when nothing of it reached what readers or producers see."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from delta_contracts.errors import InputError
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine
    from delta_contracts.plan.stored import StoredMigration
    from delta_contracts.state.ledger import Ledger
    from delta_contracts.state.record import TableRecord


def rehash(ledger: Ledger | Path, migrations: Path | str, contract: str, *, reason: str) -> list[str]:
    """Accept the migration files of `contract` as they are now: rewrite its `migrations.sum` and record the
    new checksum of every applied migration that changed, in `ledger` (or the one in a state folder). Returns
    the migration ids rehashed."""
    from delta_contracts.plan.migrations import rewrite_sum, table_folder
    from delta_contracts.state import ledger as lg
    from delta_contracts.state.record import TableRecord, open_ledger

    root = Path(migrations)
    folder = table_folder(root, contract)
    rewrite_sum(folder)
    record = TableRecord.open(root, contract, open_ledger(ledger))
    rows = []
    for stored in record.history:
        recorded = record.recorded_checksum(stored.migration_id)
        current = lg.migration_checksum(stored.sql_path, stored.json_path)
        if recorded is None or recorded == current:
            continue
        rows.append(
            lg.event_row(
                contract,
                "rehash",
                migration_id=stored.migration_id,
                reason=reason,
                checksum=current,
                to_version=stored.migration.to_version,
                detail=f"was {recorded}",
            )
        )
    if rows:
        record.append(*rows)
    return [r.migration_id for r in rows]


class DiscardRefusedError(InputError):
    """The migration cannot be discarded: part of it reached what readers or producers see, a later one
    follows it, or it is not there."""


@dataclass(frozen=True)
class Discarded:
    removed: list[Path]  # the migration's files
    dropped: list[str]  # tables it had created, never served, dropped again


def discard(
    ledger: Ledger | Path,
    migrations: Path | str,
    contract: str,
    migration_id: str,
    *,
    reason: str,
    engine: Engine | None = None,
) -> Discarded:
    """Remove the last planned migration of `contract` when nothing of it reached what readers or producers
    see, so that the fixed contract can be planned again at the same version. That is a migration that never
    ran (or failed a pre-check), or one whose done work is invisible: a versioned migration stopped before its
    cutover has only created and filled its new `<table>__v<major>`, which nobody reads or writes yet; that
    table is dropped (with `engine`). The removal is recorded in the ledger, whose rows of the migration are
    retracted by it (`ledger.current`): the table and the ledger are as if it had never been planned."""
    from delta_contracts.plan.migrations import rewrite_sum
    from delta_contracts.state.record import TableRecord, open_ledger

    folder = Path(migrations) / contract
    record = TableRecord.open(Path(migrations), contract, open_ledger(ledger))
    history = record.history
    ids = [stored.migration_id for stored in history]
    if migration_id not in ids:
        raise DiscardRefusedError(
            f"{folder}: no migration {migration_id} (planned: {', '.join(ids) or 'none'})"
        )
    if ids[-1] != migration_id:
        raise DiscardRefusedError(
            f"{migration_id} is followed by {ids[-1]}: discard the later migrations first"
        )
    stored = history[-1]
    created = unserved_tables(record, stored)
    if created and engine is None:
        raise DiscardRefusedError(
            f"{migration_id} created {', '.join(created)}: an engine is needed to drop it"
        )
    undo = {
        str(op.table): reverse
        for op in stored.migration.ops
        if (reverse := op.reverse(f"discard {migration_id}")) is not None
    }
    dropped = []
    for table in created:
        assert engine is not None
        if engine.describe(TableId.parse(table), with_version=False) is not None:
            engine.run(undo[table])
            dropped.append(table)
    removed = [stored.sql_path, stored.json_path]
    for path in removed:
        path.unlink(missing_ok=True)
    rewrite_sum(folder)
    undone = f"dropped {', '.join(dropped)}, created by it and never served" if dropped else ""
    record.append_event(
        "discard",
        migration_id=migration_id,
        reason=reason,
        to_version=stored.migration.to_version,
        detail=undone,
    )
    return Discarded(removed, dropped)


def unserved_tables(record: TableRecord, stored: StoredMigration) -> list[str]:
    """The tables the migration's work so far is confined to — tables it created itself, before any cutover
    served them — or DiscardRefusedError when any of its work reached a table readers or producers use (or one
    that stood before it). Empty when nothing of it ran."""
    touched = record.touched_ops(stored.migration_id)
    ops = stored.migration.ops
    made = {op.table for op in ops if op.creates() is not None}
    made_here = {ops[index - 1].table for index, itself in touched if itself and ops[index - 1].creates()}
    refusal = (
        f"{stored.migration_id} has reached the table: {{}}; it cannot be undone by discarding it. Plan a "
        "new migration that moves the table on instead"
    )
    for index, _ in touched:
        op = ops[index - 1]
        if not op.undone_by_discard():
            raise DiscardRefusedError(
                refusal.format(f"op {index} ({op.summary()}) is of its {op.phase.value} phase")
            )
        if op.table not in made:
            raise DiscardRefusedError(refusal.format(f"op {index} ({op.summary()}) changed {op.table}"))
        if op.table not in made_here:
            raise DiscardRefusedError(
                refusal.format(f"{op.table} was there before it (its create was skipped or never finished)")
            )
    return sorted({str(ops[i - 1].table) for i, _ in touched})
