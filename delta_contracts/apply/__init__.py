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

if TYPE_CHECKING:
    from delta_contracts.apply.lease import LeaseHeld
    from delta_contracts.apply.ledger import Ledger
    from delta_contracts.apply.runner import OpReport, TableRun
    from delta_contracts.plan.ops import Phase

EXIT_DONE, EXIT_FAILED, EXIT_INPUT, EXIT_HELD = 0, 1, 2, 3


@dataclass
class ApplyResult:
    runs: list[TableRun] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (contract, why nothing ran)
    held: list[LeaseHeld] = field(default_factory=list)  # tables another runner holds
    lost: list[tuple[str, str]] = field(default_factory=list)  # (contract, why): our lease was taken over

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
    def exit_code(self) -> int:
        if self.refused:
            return EXIT_INPUT
        if self.failure is not None:
            return EXIT_FAILED
        if self.held or self.lost:
            return EXIT_HELD
        return EXIT_DONE


def apply(
    engine: Any,
    migrations: Path | str = "migrations",
    *,
    tables: Sequence[str] | None = None,
    to_version: str | None = None,
    phases: Sequence[Phase | str] | None = None,
    dry_run: bool = False,
    force_reason: str | None = None,
    batch_rows: int = 1_000_000,
    lease_ttl: timedelta | None = None,
    clock: Callable[[], datetime] | None = None,
    readers_freshness: timedelta | None = None,
    on_event: Callable[[OpReport], None] | None = None,
    on_boundary: Callable[[str], None] | None = None,
) -> ApplyResult:
    """Apply the pending migrations under `migrations/<table id>/` (all tables, or `tables`) on `engine`
    (an Engine, or a SparkSession with delta-spark). `clock` is the gates' "now"; `readers_freshness` how
    recent the readers log must be for a drop's gate to open (`telemetry.freshness` in contracts.yml)."""
    from dataclasses import replace

    from delta_contracts.apply.lease import LeaseHeld, LeaseLost
    from delta_contracts.apply.runner import ApplyOptions, ApplyRefused, Runner
    from delta_contracts.create import as_engine
    from delta_contracts.engine.state_table import StateTableError
    from delta_contracts.plan.migrations import IntegrityError, load_history, verify
    from delta_contracts.plan.ops import PHASES, Phase

    live = as_engine(engine)
    root = Path(migrations)
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
    names = list(tables) if tables is not None else sorted(p.name for p in root.iterdir() if p.is_dir())
    runner = Runner(live, options)
    for contract in names:
        folder = root / contract
        if not folder.is_dir():
            result.refused.append((contract, f"{folder}: no migrations folder (run `delta-contracts plan`)"))
            continue
        try:
            verify(folder)
            history = load_history(folder)
            result.runs.append(runner.apply_table(contract, history))
        except IntegrityError as err:
            result.refused.append((contract, str(err)))
        except ApplyRefused as err:
            result.refused.append((contract, str(err)))
        except LeaseHeld as err:
            result.held.append(err)
        except (
            StateTableError
        ) as err:  # an op that ran unrecorded is found done by its postcondition next time
            result.refused.append((contract, str(err)))
        except LeaseLost as err:
            result.lost.append((contract, str(err)))
    return result


def rehash(ledger: Ledger | Path, migrations: Path | str, contract: str, *, reason: str) -> list[str]:
    """Accept the migration files of `contract` as they are now: rewrite its `migrations.sum` and record the
    new checksum of every applied migration that changed, in `ledger` (or the one in a state folder). Returns
    the migration ids rehashed."""
    from delta_contracts.apply import ledger as lg
    from delta_contracts.plan.migrations import (
        SUM_FILE,
        compute_sum,
        load_history,
        migration_files,
        write_atomically,
    )

    folder = Path(migrations) / contract
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
