"""The `apply` call: each table's pending migrations through a `Runner` under its lease, their outcomes in
one `ApplyResult`; the engine a SparkSession stands for; breaking a lease."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.errors import ExitCode

if TYPE_CHECKING:
    from delta_contracts.apply.promotion import Promotion
    from delta_contracts.apply.reports import BatchProgress
    from delta_contracts.apply.runner import OpReport, Runner, TableRun
    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.load import LoadedProject
    from delta_contracts.engine.base import Engine
    from delta_contracts.plan.ops import Phase
    from delta_contracts.state.lease import LeaseHeldError

# The codes `ApplyResult.exit_code` gives, under the names the API has always offered.
EXIT_DONE, EXIT_FAILED = ExitCode.OK, ExitCode.FAILED
EXIT_INPUT, EXIT_HELD = ExitCode.BAD_INPUT, ExitCode.HELD


@dataclass
class ApplyResult:
    runs: list[TableRun] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (contract, why nothing ran)
    held: list[LeaseHeldError] = field(default_factory=list)  # tables another runner holds
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


def phases_not_run_first(result: ApplyResult, phase: str) -> list[str]:
    """With `phases=[phase]`, the migrations where nothing of `phase` could run because an earlier phase is
    pending (none when anything ran, or with every phase)."""
    from delta_contracts.plan.ops import PHASES

    order = [p.value for p in PHASES]
    if phase == "all" or any(r.status.value in {"succeeded", "forced", "skipped"} for r in result.reports):
        return []
    blocked: dict[tuple[str, str], str] = {}
    for report in result.reports:
        earlier = order.index(report.phase) < order.index(phase)
        if report.status.value == "waiting" and earlier:
            blocked.setdefault((report.table, report.migration_id), report.phase)
    return [
        f"{table} {migration}: its {first} phase has not run; run `apply --phase {first}` first "
        "(or `apply` without --phase to run every phase in order)"
        for (table, migration), first in blocked.items()
    ]


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
    on_batch: Callable[[BatchProgress], None] | None = None,
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
    phase must have finished in first (`apply.promotion`). `on_event` hears of every op as it starts and ends,
    `on_batch` of every batch of a backfill or copy as it finishes."""
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
        on_batch=on_batch,
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
    from delta_contracts.apply.runner import ApplyRefusedError
    from delta_contracts.paths import OutsideRootError
    from delta_contracts.plan.migrations import IntegrityError, table_folder
    from delta_contracts.state.lease import LeaseHeldError, LeaseLostError
    from delta_contracts.state.state_table import StateTableError

    try:
        folder = table_folder(root, contract)
    except OutsideRootError as err:
        result.refused.append((contract, str(err)))
        return
    if not folder.is_dir():
        result.refused.append((contract, f"{folder}: no migrations folder (run `delta-contracts plan`)"))
        return
    try:
        record = runner.open(root, contract, names)
        if promotion is not None:
            refusal = promotion.check(runner, record)
            if refusal is not None:
                result.refused.append((contract, refusal))
                return
        if break_lease_reason:
            holder = break_lease(runner.engine, contract, break_lease_reason)
            if holder is not None:
                result.broken.append((contract, holder))
        result.runs.append(runner.apply_table(record))
    except (IntegrityError, ApplyRefusedError) as err:
        result.refused.append((contract, str(err)))
    except LeaseHeldError as err:
        result.held.append(err)
    except StateTableError as err:  # an op that ran unrecorded is found done by its postcondition next time
        result.refused.append((contract, str(err)))
    except LeaseLostError as err:
        result.lost.append((contract, str(err)))


def break_lease(engine: Engine, contract: str, reason: str) -> str | None:
    """Free `contract`'s table from the runner holding its lease, recording who and why in the ledger; the
    holder's description, or None when nobody held it."""
    from delta_contracts.state.lease import Lease
    from delta_contracts.state.record import TableRecord, open_ledger

    holder = Lease(engine.state_dir, contract).break_lease(reason)
    if holder is None:
        return None
    record = TableRecord(contract, (), None, open_ledger(engine))
    record.append_event("break_lease", reason=reason, detail=f"broke the lease of {holder.describe()}")
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
    from delta_contracts.engine.spark.engine import SparkEngine

    choice = choose(
        name="spark", url=None, warehouse=None, project=project.project.engine, project_root=project.root
    )
    return SparkEngine(spark_or_engine, choice.warehouse / "_delta_contracts", ledger=choice.ledger)
