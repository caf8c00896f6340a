"""What each op is on a Spark session with delta-spark (the `spark` and `connect` engines), keyed by op class:
whether it may run, its statement, whether it is run again after losing a commit race, the table it leaves,
and how it moves rows. An op class not listed is one SQL statement (`plan.render`), retried on a conflict,
committing to its own table; the runtime decides what Delta allows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.engine.capabilities import Capability, EngineCapabilities, How, Route
from delta_contracts.engine.fence import apply_old_changes, carry_renamed_column, fence_versions
from delta_contracts.engine.op_table import OpTable
from delta_contracts.engine.row_moves import (
    BACKFILL_ROWS,
    COPY_CONVERTED_PARTITIONS,
    COPY_ROWS,
    LAST_CATCH_UP_ROWS,
    RowMover,
)
from delta_contracts.engine.spark.name_taken import take_back_name
from delta_contracts.plan.catch_up import (
    CatchUpRows,
    CatchUpStrategy,
    change_feed_start,
    merge_statement,
)
from delta_contracts.plan.fence import fence_statement
from delta_contracts.plan.ops import (
    Backfill,
    CopyRows,
    CreateTable,
    CreateView,
    DropTable,
    LastCatchUp,
    Op,
    RenameTable,
    SetNotNull,
)
from delta_contracts.plan.render import render
from delta_contracts.plan.unity import REFUSED as UNITY_OSS_REFUSED
from delta_contracts.plan.versioned import CopyConvertedPartitions
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import SET_NOT_NULL_REFUSAL

if TYPE_CHECKING:
    from delta_contracts.engine.spark.engine import SparkEngine

Statement = Callable[["SparkEngine", Any, int], "str | None"]  # (engine, op, attempt from 0)


def rendered(engine: SparkEngine, op: Op, attempt: int) -> str | None:
    return render(op)


def catch_up_statement(engine: SparkEngine, op: CatchUpRows, attempt: int) -> str | None:
    """A change-feed catch-up gets the source version to read changes from bound here (and has nothing to
    run when the source has no commit since). The cutover's fence first applies the old table's updates and
    deletes since the catch-up (`engine.fence`, each attempt: it finds them applied the second time), then
    inserts what the new table lacks; once it lost a commit race to a producer's append, it reads the new
    table as of its current version: a blind append, which no append can fail (`fence_statement`). The other
    strategies are their rendered MERGE."""
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        start = change_feed_start(engine.history(op.source), engine.history(op.table))
        return None if start is None else x.sql(merge_statement(op, start))
    if op.strategy is CatchUpStrategy.INSERT_MISSING:
        versions = fence_versions(engine, op)
        apply_old_changes(engine, op, versions)
        current = engine.table_version(op.table) if attempt > 0 else None
        statement = fence_statement(op, current, source_version=versions.source, stamp_version=versions.stamp)
        return x.sql(statement)
    return render(op)


def last_catch_up_statement(engine: SparkEngine, op: LastCatchUp, attempt: int) -> str | None:
    """An in-place rename's last catch-up run whole: the old column's updates first (`engine.fence`)."""
    carry_renamed_column(engine, op)
    return render(op)


def view_statement(engine: SparkEngine, op: CreateView, attempt: int) -> str | None:
    """A view in a Unity Catalog OSS catalog is swapped as DROP VIEW IF EXISTS, then CREATE VIEW: its
    connector refuses CREATE OR REPLACE VIEW whether the view exists or not (`plan.unity`). DROP VIEW fails on
    a table, so no table is dropped for a view; run again after a crash in between, it finds no view to drop
    and creates it. A table a producer created under the name since the cutover renamed the old table away
    gives way first (`name_taken`)."""
    take_back_name(engine, op.table, engine.renamed_away.get(op.table))
    if op.alter_existing or not engine.in_unity_catalog_oss(op.table):
        return render(op)
    engine.sql(x.sql(exp.Drop(tables=[x.table(op.table)], kind="VIEW", exists=True)))
    query = x.view_query(op.source, op.columns)
    return x.sql(exp.Create(this=x.table(op.table), kind="VIEW", expression=query))


def not_the_fence(op: CatchUpRows) -> bool:
    """The fence commits as a blind append after a lost race instead (`catch_up_statement`)."""
    return op.strategy is not CatchUpStrategy.INSERT_MISSING


def always(op: Op) -> bool:
    return True


def same_table(op: Op) -> TableId:
    return op.table


def renamed_table(op: RenameTable) -> TableId:
    return op.new_name


@dataclass(frozen=True, slots=True)
class SparkOp:
    # What OSS Delta refuses (Databricks runs every op); None: it runs.
    oss_refusal: str | None = None
    # Made again for each attempt: a change-feed start moves on.
    statement: Statement = rendered
    # Run again at once after another writer's commit won (`engine.retry`): not a catalog change (a rename,
    # a view, a new table). A destructive op never is: its pre-check must count again first.
    retried_on_conflict: bool = True
    creates_schema: bool = False  # CREATE SCHEMA IF NOT EXISTS first (a new table or view)
    table_left: Callable[[Any], TableId] = same_table  # the table the op leaves (a rename's new name)
    commits: bool = True  # the op ends with a commit to a Delta table whose version it reports
    rows: RowMover[Any] | None = None  # how it moves rows in batches; None: it runs whole
    # Once it lost a commit race, producers are held off its table until it ends (`spark.hold`).
    holds_producers: Callable[[Any], bool] = always

    def retried(self, op: Op) -> bool:
        return self.retried_on_conflict and not op.destructive

    def holds(self, op: Op) -> bool:
        return self.retried(op) and self.holds_producers(op)


SPARK_OPS: OpTable[SparkOp] = OpTable(
    {
        CreateTable: SparkOp(retried_on_conflict=False, creates_schema=True),
        CreateView: SparkOp(
            retried_on_conflict=False, creates_schema=True, commits=False, statement=view_statement
        ),
        RenameTable: SparkOp(retried_on_conflict=False, table_left=renamed_table),
        DropTable: SparkOp(commits=False),
        SetNotNull: SparkOp(oss_refusal=SET_NOT_NULL_REFUSAL),
        Backfill: SparkOp(rows=BACKFILL_ROWS),
        LastCatchUp: SparkOp(rows=LAST_CATCH_UP_ROWS, statement=last_catch_up_statement),
        CopyRows: SparkOp(rows=COPY_ROWS),
        CopyConvertedPartitions: SparkOp(rows=COPY_CONVERTED_PARTITIONS),
        CatchUpRows: SparkOp(statement=catch_up_statement, holds_producers=not_the_fence),
    },
    default=SparkOp(),
)

SQL = Capability(Route(How.SQL))
# The capability tables `unsupported_reason` reads, by kind, made from the op table.
SPARK_OSS_DELTA = EngineCapabilities(
    "spark",
    {
        cls.kind: Capability(Route(How.REFUSED, entry.oss_refusal))
        for cls, entry in SPARK_OPS.items()
        if entry.oss_refusal is not None
    },
    otherwise=SQL,
)
SPARK_DATABRICKS = EngineCapabilities("spark", {}, otherwise=SQL)
# A table in a catalog of a Unity Catalog OSS server (`plan.unity`: measured there, with the way out).
UNITY_CATALOG_OSS = EngineCapabilities(
    "unitycatalog",
    {kind: Capability(Route(How.REFUSED, f"{why}: {way}")) for kind, (why, way) in UNITY_OSS_REFUSED.items()},
    otherwise=SQL,
)
