"""`apply`: run the planned migrations on live tables, with a ledger, resumable batches, one runner per table
and sunset gates (DESIGN.md, "Ledger, locks, gates").

    from delta_contracts.apply import apply
    result = apply(LocalEngine("warehouse"), "migrations", tables=["sales.orders"])
    result.exit_code  # 0 done or waiting at gates, 1 an op failed, 2 refused, 3 another runner holds it
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.errors import ExitCode, InputError
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.apply.lease import LeaseHeld
    from delta_contracts.apply.promotion import Promotion
    from delta_contracts.apply.runner import OpReport, Runner, TableRun
    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.load import LoadedProject
    from delta_contracts.engine.base import Engine
    from delta_contracts.ledger import Ledger
    from delta_contracts.plan.migrations import StoredMigration
    from delta_contracts.plan.ops import Op, Phase

# The codes `ApplyResult.exit_code` gives, under the names the API has always offered.
EXIT_DONE, EXIT_FAILED = ExitCode.OK, ExitCode.FAILED
EXIT_INPUT, EXIT_HELD = ExitCode.BAD_INPUT, ExitCode.HELD


@dataclass
class ApplyResult:
    runs: list[TableRun] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (contract, why nothing ran)
    held: list[LeaseHeld] = field(default_factory=list)  # tables another runner holds
    lost: list[tuple[str, str]] = field(default_factory=list)  # (contract, why): our lease was taken over
    broken: list[tuple[str, str]] = field(default_factory=list)  # (contract, holder): --break-lease freed it

    @property
    def reports(self) -> list[OpReport]:
        return [r for run in self.runs for r in run.reports]

    @property
    def waiting(self) -> list[OpReport]:
        """Ops held by their gates, with what would open them."""
        return [r for run in self.runs for r in run.held]

    @property
    def retries(self) -> int:
        """Commits run again after another writer's commit won the race."""
        return sum(r.retries for r in self.reports)

    @property
    def failure(self) -> OpReport | None:
        return next((run.failure for run in self.runs if run.failure is not None), None)

    @property
    def exit_code(self) -> ExitCode:
        if self.refused:
            return ExitCode.BAD_INPUT
        if self.failure is not None:
            return ExitCode.FAILED
        if self.held or self.lost:
            return ExitCode.HELD
        return ExitCode.OK


def apply(
    engine: Any,
    migrations: Path | str = "migrations",
    *,
    tables: Sequence[str] | None = None,
    to_version: str | None = None,
    phases: Sequence[Phase | str] | None = None,
    dry_run: bool = False,
    force_reason: str | None = None,
    break_lease_reason: str | None = None,
    batch_rows: int = 1_000_000,
    conflict_patience: float | None = None,
    lease_ttl: timedelta | None = None,
    clock: Callable[[], datetime] | None = None,
    readers_freshness: timedelta | None = None,
    on_event: Callable[[OpReport], None] | None = None,
    on_boundary: Callable[[str], None] | None = None,
    names: NameMapping | None = None,
    promotion: Promotion | None = None,
) -> ApplyResult:
    """Apply the pending migrations under `migrations/<table id>/` (all tables, or `tables`) on `engine`
    (an Engine, or a SparkSession with delta-spark). `clock` is the gates' "now"; `readers_freshness` how
    recent the readers log must be for a drop's gate to open (`telemetry.freshness` in contracts.yml).
    `break_lease_reason`: free each table from whoever holds its lease first (recorded in the ledger).
    `conflict_patience`: seconds a statement that lost a commit race to another writer is run again for
    (the engine's own setting, five minutes, when None). `names`: the environment's name mapping (every
    table the migrations name is renamed by it); `promotion`: the earlier environments' ledgers a migration's
    phase must have finished in first (`apply.promotion`)."""
    from dataclasses import replace

    from delta_contracts.apply.runner import ApplyOptions, Runner
    from delta_contracts.plan.ops import PHASES, Phase

    root = Path(migrations)
    live = engine_for(engine, root)
    options = ApplyOptions(
        to_version=to_version,
        phases=frozenset(Phase(p) for p in phases) if phases else frozenset(PHASES),
        dry_run=dry_run,
        force_reason=force_reason,
        batch_rows=batch_rows,
        on_event=on_event,
        on_boundary=on_boundary,
    )
    if lease_ttl is not None:
        options = replace(options, lease_ttl=lease_ttl)
    if clock is not None:
        options = replace(options, clock=clock)
    if readers_freshness is not None:
        options = replace(options, readers_freshness=readers_freshness)
    result = ApplyResult()
    contracts = list(tables) if tables is not None else sorted(p.name for p in root.iterdir() if p.is_dir())
    runner = Runner(live, options)
    # The run's patience, not the caller's engine's for good: the engine may outlive this call.
    patience_before = live.conflict_patience
    if conflict_patience is not None:
        live.conflict_patience = conflict_patience
    try:
        for contract in contracts:
            _apply_table(
                result,
                runner,
                root,
                contract,
                break_lease_reason if not dry_run else None,
                names,
                promotion,
            )
    finally:
        live.conflict_patience = patience_before
    return result


def _apply_table(
    result: ApplyResult,
    runner: Runner,
    root: Path,
    contract: str,
    break_lease_reason: str | None,
    names: NameMapping | None = None,
    promotion: Promotion | None = None,
) -> None:
    """One table's pending migrations, its outcome added to `result`."""
    from delta_contracts.apply.lease import LeaseHeld, LeaseLost
    from delta_contracts.apply.runner import ApplyRefused
    from delta_contracts.engine.state_table import StateTableError
    from delta_contracts.paths import OutsideRoot
    from delta_contracts.plan.migrations import IntegrityError, load_history, table_folder, verify

    try:
        folder = table_folder(root, contract)
    except OutsideRoot as err:
        result.refused.append((contract, str(err)))
        return
    if not folder.is_dir():
        result.refused.append((contract, f"{folder}: no migrations folder (run `delta-contracts plan`)"))
        return
    try:
        verify(folder)
        history = load_history(folder, names)
        if promotion is not None:
            refusal = promotion.check(runner, contract, history)
            if refusal is not None:
                result.refused.append((contract, refusal))
                return
        if break_lease_reason:
            holder = break_lease(runner.engine, contract, break_lease_reason)
            if holder is not None:
                result.broken.append((contract, holder))
        result.runs.append(runner.apply_table(contract, history))
    except (IntegrityError, ApplyRefused) as err:
        result.refused.append((contract, str(err)))
    except LeaseHeld as err:
        result.held.append(err)
    except StateTableError as err:  # an op that ran unrecorded is found done by its postcondition next time
        result.refused.append((contract, str(err)))
    except LeaseLost as err:
        result.lost.append((contract, str(err)))


def break_lease(engine: Engine, contract: str, reason: str) -> str | None:
    """Free `contract`'s table from the runner holding its lease, recording who and why in the ledger; the
    holder's description, or None when nobody held it."""
    from delta_contracts import ledger as lg
    from delta_contracts.apply.lease import Lease

    holder = Lease(engine.state_dir, contract).break_lease(reason)
    if holder is None:
        return None
    user, host, pid = lg.who()
    at = lg.now()
    entry = lg.LedgerEntry(
        contract=contract,
        migration_id="",
        table=contract,
        phase="",
        op_index=0,
        op_kind="break_lease",
        status=lg.Status.LEASE_BROKEN.value,
        user=user,
        host=host,
        pid=pid,
        started_at=at,
        ended_at=at,
        reason=reason,
        detail=f"broke the lease of {holder.describe()}",
    )
    lg.Ledger(engine.ledger_table()).append([entry])
    return holder.describe()


def project_of_migrations(migrations: Path) -> LoadedProject | None:
    """The project whose `migrations` setting names this folder: a `contracts.yml` in one of the folder's
    parents or in a folder beside one (as `contracts/contracts.yml` with `migrations: ../migrations`)."""
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.load import load_project
    from delta_contracts.contract.project import PROJECT_FILE

    if not migrations.is_dir():
        return None
    wanted = migrations.resolve()
    for folder in wanted.parents:
        try:
            beside = sorted(p / PROJECT_FILE for p in folder.iterdir() if p.is_dir() and p != wanted)
        except OSError:
            beside = []
        for candidate in (folder / PROJECT_FILE, *beside):
            try:
                project = load_project(candidate) if candidate.is_file() else None
            except (ContractError, OSError):
                continue  # a broken or unreadable project file names no folder
            if project is not None and (project.root / project.project.migrations).resolve() == wanted:
                return project
    return None


def engine_for(spark_or_engine: Any, migrations: Path) -> Engine:
    """The engine `apply` runs on. A SparkSession gets the ledger and leases the CLI uses for the same
    project: those of the warehouse (and catalog ledger) of the `contracts.yml` whose `migrations` folder this
    is, else those of the session's own warehouse; never a folder of the working directory (issue 29,
    item 3)."""
    from delta_contracts.engine.base import Engine
    from delta_contracts.engine.select import as_engine, choose

    if isinstance(spark_or_engine, Engine):
        return spark_or_engine
    project = project_of_migrations(migrations)
    if project is None:
        return as_engine(spark_or_engine)
    from delta_contracts.engine.spark import SparkEngine

    choice = choose(
        name="spark", url=None, warehouse=None, project=project.project.engine, project_root=project.root
    )
    return SparkEngine(spark_or_engine, choice.warehouse / "_delta_contracts", ledger=choice.ledger)


def rehash(ledger: Ledger | Path, migrations: Path | str, contract: str, *, reason: str) -> list[str]:
    """Accept the migration files of `contract` as they are now: rewrite its `migrations.sum` and record the
    new checksum of every applied migration that changed, in `ledger` (or the one in a state folder). Returns
    the migration ids rehashed."""
    from delta_contracts import ledger as lg
    from delta_contracts.plan.migrations import (
        SUM_FILE,
        compute_sum,
        load_history,
        migration_files,
        table_folder,
        write_atomically,
    )

    folder = table_folder(Path(migrations), contract)
    write_atomically(folder / SUM_FILE, compute_sum(folder, migration_files(folder)))
    if isinstance(ledger, Path):
        ledger = lg.Ledger(ledger)
    entries = ledger.entries([contract])
    user, host, pid = lg.who()
    rows = []
    for stored in load_history(folder):
        recorded = lg.recorded_checksum(entries, contract, stored.migration_id)
        current = lg.migration_checksum(stored.sql_path, stored.json_path)
        if recorded is None or recorded == current:
            continue
        rows.append(
            lg.LedgerEntry(
                contract=contract,
                migration_id=stored.migration_id,
                table=contract,
                phase="",
                op_index=0,
                op_kind="rehash",
                status=lg.Status.REHASHED.value,
                checksum=current,
                to_version=stored.migration.to_version,
                user=user,
                host=host,
                pid=pid,
                started_at=lg.now(),
                ended_at=lg.now(),
                reason=reason,
                detail=f"was {recorded}",
            )
        )
    ledger.append(rows)
    return [r.migration_id for r in rows]


class DiscardRefused(InputError):
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
    from delta_contracts import ledger as lg
    from delta_contracts.plan.migrations import (
        SUM_FILE,
        compute_sum,
        load_history,
        migration_files,
        verify,
        write_atomically,
    )

    folder = Path(migrations) / contract
    verify(folder)
    history = load_history(folder)
    ids = [stored.migration_id for stored in history]
    if migration_id not in ids:
        raise DiscardRefused(f"{folder}: no migration {migration_id} (planned: {', '.join(ids) or 'none'})")
    if ids[-1] != migration_id:
        raise DiscardRefused(f"{migration_id} is followed by {ids[-1]}: discard the later migrations first")
    if isinstance(ledger, Path):
        ledger = lg.Ledger(ledger)
    entries = ledger.entries([contract])
    stored = history[-1]
    created = unserved_tables(entries, contract, stored)
    if created and engine is None:
        raise DiscardRefused(f"{migration_id} created {', '.join(created)}: an engine is needed to drop it")
    dropped = []
    for table in created:
        assert engine is not None
        if engine.describe(TableId.parse(table), with_version=False) is not None:
            engine.run(_undo_create(TableId.parse(table), migration_id))
            dropped.append(table)
    removed = [stored.sql_path, stored.json_path]
    for path in removed:
        path.unlink(missing_ok=True)
    write_atomically(folder / SUM_FILE, compute_sum(folder, migration_files(folder)))
    user, host, pid = lg.who()
    undone = f"dropped {', '.join(dropped)}, created by it and never served" if dropped else ""
    ledger.append(
        [
            lg.LedgerEntry(
                contract=contract,
                migration_id=migration_id,
                table=contract,
                phase="",
                op_index=0,
                op_kind="discard",
                status=lg.Status.DISCARDED.value,
                to_version=stored.migration.to_version,
                user=user,
                host=host,
                pid=pid,
                started_at=lg.now(),
                ended_at=lg.now(),
                reason=reason,
                detail=undone,
            )
        ]
    )
    return Discarded(removed, dropped)


def unserved_tables(entries: Sequence[Any], contract: str, stored: StoredMigration) -> list[str]:
    """The tables the migration's work so far is confined to — tables it created itself, before any cutover
    served them — or DiscardRefused when any of its work reached a table readers or producers use (or one
    that stood before it). Empty when nothing of it ran."""
    from delta_contracts import ledger as lg
    from delta_contracts.plan.ops import CreateTable, Phase, StampContract

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
    made = {op.table for op in ops if isinstance(op, CreateTable)}
    made_here = {
        ops[e.op_index - 1].table
        for e in rows
        if e.op_index in touched
        and isinstance(ops[e.op_index - 1], CreateTable)
        and e.status in lg.DONE
        and e.status != lg.Status.SKIPPED
    }
    refusal = (
        f"{stored.migration_id} has reached the table: {{}}; it cannot be undone by discarding it. Plan a "
        "new migration that moves the table on instead"
    )
    for index in sorted(touched):
        op = ops[index - 1]
        if op.phase not in (Phase.EXPAND, Phase.POPULATE) or isinstance(op, StampContract):
            raise DiscardRefused(
                refusal.format(f"op {index} ({op.summary()}) is of its {op.phase.value} phase")
            )
        if op.table not in made:
            raise DiscardRefused(refusal.format(f"op {index} ({op.summary()}) changed {op.table}"))
        if op.table not in made_here:
            raise DiscardRefused(
                refusal.format(f"{op.table} was there before it (its create was skipped or never finished)")
            )
    return sorted({str(ops[i - 1].table) for i in touched})


def _undo_create(table: TableId, migration_id: str) -> Op:
    from delta_contracts.plan.ops import DropTable, Gate, Phase

    # Run by `discard`, never by `apply`: no gate is evaluated (the table never served anybody).
    gate = Gate("P0D", "P0D", "", (str(table),))
    return DropTable(table=table, phase=Phase.EXPAND, gate=gate, reason=f"discard {migration_id}")
