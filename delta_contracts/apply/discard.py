"""Undoing by hand: `rehash` accepts changed migration files, `discard` removes the last planned migration
when nothing of it reached what readers or producers see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.errors import InputError
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine
    from delta_contracts.plan.migrations import StoredMigration
    from delta_contracts.state.ledger import Ledger


def rehash(ledger: Ledger | Path, migrations: Path | str, contract: str, *, reason: str) -> list[str]:
    """Accept the migration files of `contract` as they are now: rewrite its `migrations.sum` and record the
    new checksum of every applied migration that changed, in `ledger` (or the one in a state folder). Returns
    the migration ids rehashed."""
    from delta_contracts.plan.migrations import (
        SUM_FILE,
        compute_sum,
        load_history,
        migration_files,
        table_folder,
        write_atomically,
    )
    from delta_contracts.state import ledger as lg

    folder = table_folder(Path(migrations), contract)
    write_atomically(folder / SUM_FILE, compute_sum(folder, migration_files(folder)))
    if isinstance(ledger, Path):
        ledger = lg.Ledger(ledger)
    entries = ledger.entries([contract])
    rows = []
    for stored in load_history(folder):
        recorded = lg.recorded_checksum(entries, contract, stored.migration_id)
        current = lg.migration_checksum(stored.sql_path, stored.json_path)
        if recorded is None or recorded == current:
            continue
        rows.append(
            lg.contract_event(
                contract,
                "rehash",
                lg.Status.REHASHED,
                migration_id=stored.migration_id,
                reason=reason,
                checksum=current,
                to_version=stored.migration.to_version,
                detail=f"was {recorded}",
            )
        )
    ledger.append(rows)
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
    from delta_contracts.plan.migrations import (
        SUM_FILE,
        compute_sum,
        load_history,
        migration_files,
        verify,
        write_atomically,
    )
    from delta_contracts.state import ledger as lg

    folder = Path(migrations) / contract
    verify(folder)
    history = load_history(folder)
    ids = [stored.migration_id for stored in history]
    if migration_id not in ids:
        raise DiscardRefusedError(
            f"{folder}: no migration {migration_id} (planned: {', '.join(ids) or 'none'})"
        )
    if ids[-1] != migration_id:
        raise DiscardRefusedError(
            f"{migration_id} is followed by {ids[-1]}: discard the later migrations first"
        )
    if isinstance(ledger, Path):
        ledger = lg.Ledger(ledger)
    entries = ledger.entries([contract])
    stored = history[-1]
    created = unserved_tables(entries, contract, stored)
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
    write_atomically(folder / SUM_FILE, compute_sum(folder, migration_files(folder)))
    undone = f"dropped {', '.join(dropped)}, created by it and never served" if dropped else ""
    event = lg.contract_event(
        contract,
        "discard",
        lg.Status.DISCARDED,
        migration_id=migration_id,
        reason=reason,
        to_version=stored.migration.to_version,
        detail=undone,
    )
    ledger.append([event])
    return Discarded(removed, dropped)


def unserved_tables(entries: Sequence[Any], contract: str, stored: StoredMigration) -> list[str]:
    """The tables the migration's work so far is confined to — tables it created itself, before any cutover
    served them — or DiscardRefusedError when any of its work reached a table readers or producers use (or one
    that stood before it). Empty when nothing of it ran."""
    from delta_contracts.state import ledger as lg

    rows = [e for e in entries if (e.contract, e.migration_id) == (contract, stored.migration_id)]
    # An attempt that failed without a commit (a pre-check refused it) touched nothing.
    untouched = {
        (e.run_id, e.key) for e in rows if e.status == lg.Status.FAILED and e.version == e.version_before
    }
    touched = {
        e.op_index
        for e in rows
        if e.op_index
        and e.status in lg.APPLIED | {lg.Status.FAILED}
        and e.status != lg.Status.REHASHED
        and (e.run_id, e.key) not in untouched
    }
    ops = stored.migration.ops
    made = {op.table for op in ops if op.creates() is not None}
    made_here = {
        ops[e.op_index - 1].table
        for e in rows
        if e.op_index in touched
        and ops[e.op_index - 1].creates() is not None
        and e.status in lg.DONE
        and e.status != lg.Status.SKIPPED
    }
    refusal = (
        f"{stored.migration_id} has reached the table: {{}}; it cannot be undone by discarding it. Plan a "
        "new migration that moves the table on instead"
    )
    for index in sorted(touched):
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
    return sorted({str(ops[i - 1].table) for i in touched})
