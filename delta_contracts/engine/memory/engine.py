"""The in-memory engine: the engine protocol over tables held in this process (`catalog`), for the tests of
what the runner, the gates and the schedule decide. It starts in milliseconds and keeps nothing on disk but
the state folder: its leases, telemetry logs and apply ledger, which `telemetry` and the CLI read there as
they read any engine's.

An op runs as the spark engine runs it: its rendered statement (`plan.render`), interpreted here
(`statements`, `alter`), with the same row movers, fence and rename catch-up. What Delta itself does with
files — the change data feed, identity columns, nested fields — is not modelled:
those ops are refused before a migration starts (`unsupported_reason`), and the local and spark engines keep
every test of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delta_contracts.engine.base import Engine, EngineError, OpOutcome
from delta_contracts.engine.fence import apply_old_changes, carry_renamed_column, fence_versions
from delta_contracts.engine.memory.catalog import Catalog
from delta_contracts.engine.memory.statements import Statements
from delta_contracts.engine.op_table import OpTable
from delta_contracts.engine.row_moves import BACKFILL_ROWS, COPY_ROWS, LAST_CATCH_UP_ROWS, RowMover
from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.fence import fence_statement
from delta_contracts.plan.fields import AddField, DropField, RenameField, WidenField
from delta_contracts.plan.ops import (
    Backfill,
    CopyRows,
    CreateTable,
    CreateView,
    DropTable,
    LastCatchUp,
    Op,
    RenameTable,
    SyncIdentity,
)
from delta_contracts.plan.render import render
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

Statement = Callable[["MemoryEngine", Any], "str | None"]


def rendered(engine: MemoryEngine, op: Op) -> str | None:
    return render(op)


def catch_up_statement(engine: MemoryEngine, op: CatchUpRows) -> str | None:
    """The cutover's fence binds its versions and applies the old table's changes first (`engine.fence`);
    the other catch-ups are their rendered MERGE."""
    if op.strategy is CatchUpStrategy.INSERT_MISSING:
        versions = fence_versions(engine, op)
        apply_old_changes(engine, op, versions)
        statement = fence_statement(op, None, source_version=versions.source, stamp_version=versions.stamp)
        return x.sql(statement)
    return render(op)


def last_catch_up_statement(engine: MemoryEngine, op: LastCatchUp) -> str | None:
    carry_renamed_column(engine, op)
    return render(op)


def renamed_table(op: RenameTable) -> TableId:
    return op.new_name


def same_table(op: Op) -> TableId:
    return op.table


def no_change_feed(op: CatchUpRows) -> str | None:
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        return "it keeps no change data feed (a change-feed catch-up runs on the spark engine)"
    return None


def no_identity_or_generated(op: CreateTable) -> str | None:
    if any(c.identity is not None or c.generated is not None for c in op.columns):
        return "it does not model identity or generated columns (the local and spark engines do)"
    return None


def refused(why: str) -> Callable[[Op], str | None]:
    return lambda op: why


def runs(op: Op) -> str | None:
    return None


NESTED_FIELDS = refused("it does not change nested fields (the local and spark engines do)")
NO_FILES = refused(
    "it keeps no data files to rewrite (REORG … APPLY (PURGE) runs on the local and spark engines)"
)


@dataclass(frozen=True, slots=True)
class MemoryOp:
    statement: Statement = rendered
    table_left: Callable[[Any], TableId] = same_table
    commits: bool = True  # the op ends with a commit whose version it reports
    rows: RowMover[Any] | None = None
    refusal: Callable[[Any], str | None] = runs  # why this engine cannot run the op, or None


MEMORY_OPS: OpTable[MemoryOp] = OpTable(
    {
        CreateTable: MemoryOp(refusal=no_identity_or_generated),
        CreateView: MemoryOp(commits=False),
        RenameTable: MemoryOp(table_left=renamed_table),
        DropTable: MemoryOp(commits=False),
        Backfill: MemoryOp(rows=BACKFILL_ROWS),
        LastCatchUp: MemoryOp(rows=LAST_CATCH_UP_ROWS, statement=last_catch_up_statement),
        CopyRows: MemoryOp(rows=COPY_ROWS),
        CatchUpRows: MemoryOp(statement=catch_up_statement, refusal=no_change_feed),
        SyncIdentity: MemoryOp(refusal=refused("it does not model identity columns")),
        AddField: MemoryOp(refusal=NESTED_FIELDS),
        DropField: MemoryOp(refusal=NESTED_FIELDS),
        RenameField: MemoryOp(refusal=NESTED_FIELDS),
        WidenField: MemoryOp(refusal=NESTED_FIELDS),
    },
    default=MemoryOp(),
)


class MemoryEngine(Engine):
    """Tables in this process; `state_dir` holds the ledger, leases and telemetry logs, as any engine's."""

    name = "memory"

    def __init__(self, state_dir: Path | str) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog()
        self._tag: str | None = None
        self.statements = Statements(self.catalog, lambda: self._tag)

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return self.statements.execute(statement)

    def run_statement(
        self, statement: str, *, tag: str | None = None, table: TableId | None = None
    ) -> int | None:
        with self._tagged(tag):
            found = self.sql(statement)
        return (
            int(found[0]["num_affected_rows"])
            if len(found) == 1 and "num_affected_rows" in found[0]
            else None
        )

    def describe(self, table: TableId, *, with_version: bool = True) -> LiveTable | None:
        found = self.catalog.table(TableId(table))
        return None if found is None else found.live(with_version)

    def views(self) -> Mapping[TableId, str]:
        return {name: query for name, query in self.catalog.views.values()}

    def history(self, table: TableId) -> list[Commit]:
        return list(self.catalog.existing(TableId(table)).commits)

    def row_mover(self, op: Op) -> RowMover[Any] | None:
        return MEMORY_OPS[op].rows

    def unsupported_reason(self, op: Op) -> str | None:
        return MEMORY_OPS[op].refusal(op)

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        why = self.unsupported_reason(op)
        if why is not None:
            raise EngineError(f"{op.summary()} on {op.table}: the memory engine cannot: {why}")
        entry = MEMORY_OPS[op]
        with self._tagged(tag):
            try:
                for key, value, _ in op.session_settings():
                    self.statements.conf[key] = value
                statement = entry.statement(self, op)
                if statement is not None:
                    self.sql(statement)
            except EngineError as err:
                raise EngineError(f"{op.summary()} on {op.table}: {err}") from err
            finally:
                for key, _, _ in op.session_settings():
                    self.statements.conf.pop(key, None)
        left = entry.table_left(op)
        version = self.table_version(left) if entry.commits else None
        return OpOutcome(op.kind, left, version, "sql")

    @contextmanager
    def _tagged(self, tag: str | None) -> Iterator[None]:
        """The commits made inside carry `tag` as their user metadata (as the spark engine's session conf)."""
        before = self._tag
        if tag is not None:
            self._tag = tag
        try:
            yield
        finally:
            self._tag = before
