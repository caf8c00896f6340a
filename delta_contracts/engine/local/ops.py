"""What each op is on the embedded `local` engine, keyed by op class: its route (Sail's SQL, delta-rs,
delta-spark on the table's path, the warehouse's directories, or refused, and why), how it runs on each of
those, its table's shape for a rewrite, what it leaves of the table's facts, and how it moves rows. Every op
class has its entry: a new op must say how it runs here, or why it cannot.

Facts measured with pysail 0.7.2, deltalake 1.6.6, delta-spark 4.4:

- delta-rs refuses every commit on a table whose writer features include one it lacks (measured:
  `typeWidening`, `allowColumnDefaults`), and ADD COLUMN on column-mapped tables.
- Sail has no DROP COLUMNS; enabling column mapping through its SET TBLPROPERTIES leaves fields without
  physical names.
- Sail's ALTER COLUMN (TYPE, SET/DROP DEFAULT) on a table its catalog knows only by location (registered
  in another session, or again after a delta-rs change) commits to the Delta log and then fails
  ("column … does not exist"); registering a partitioned table with its schema is refused by Sail, so such
  ops go to delta-spark unless this engine created the table itself.
- Neither drops a table feature (delta-rs's `alter` has `add_feature` only).
- Sail 0.7.2 has no `table_changes`, no CLUSTER BY, cannot write Change Data Feed tables, and stores CHECK
  expressions without identifier quotes.
- Sail 0.7.2 cannot write a table with row tracking (it lacks the rowTracking and domainMetadata features).
- Sail 0.7.2 creates and writes identity and generated columns (`GENERATED … AS IDENTITY`, `GENERATED ALWAYS
  AS (…)`) and, unlike delta-spark, moves an identity's high-water mark past values a writer gives; it has no
  `ALTER COLUMN … SYNC IDENTITY`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.engine.base import EngineError, OpOutcome
from delta_contracts.engine.capabilities import (
    CATALOG,
    SQL,
    Capability,
    Case,
    EngineCapabilities,
    How,
    Route,
    by_delta_spark,
    refused,
)
from delta_contracts.engine.deltalog import CONSTRAINT_PREFIX
from delta_contracts.engine.fence import apply_old_changes, carry_renamed_column, fence_versions
from delta_contracts.engine.local.delta_rs import delta_type
from delta_contracts.engine.local.delta_spark import path_table, table_features_protocol
from delta_contracts.engine.local.rewrite import INTERNAL_PROPERTIES, TableShape
from delta_contracts.engine.local.routes import (
    TableFacts,
    check_reads_names_needing_quotes,
    converts_map_values,
    creates_clustered_table,
    enables_change_data_feed,
    enables_column_mapping,
    features_of,
    has_row_tracking,
    is_column_mapped,
    is_placed,
    known_to_sail_by_location_only,
    lacks_delta_rs_writer_features,
    merges_into_identity_columns,
    names_needing_quotes,
    reads_change_data_feed,
    writer_features_delta_rs_lacks,
)
from delta_contracts.engine.op_table import OpTable
from delta_contracts.engine.row_moves import (
    BACKFILL_ROWS,
    COPY_CONVERTED_PARTITIONS,
    COPY_ROWS,
    LAST_CATCH_UP_ROWS,
    RowMover,
)
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.fence import fence_statement
from delta_contracts.plan.fields import AddField, DropField, RenameField, WidenField, column_type_after
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    Backfill,
    CloseColumn,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropFeature,
    DropNotNull,
    DropTable,
    LastCatchUp,
    MarkDeprecated,
    Op,
    RenameTable,
    SetClustering,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    StampContract,
    SyncIdentity,
    UnlistDeprecated,
    WidenType,
)
from delta_contracts.plan.purge import PurgeDroppedColumns, ReorgPurge
from delta_contracts.plan.recluster import ReclusterRows
from delta_contracts.plan.render import build, render
from delta_contracts.plan.versioned import CopyConvertedPartitions
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import SET_NOT_NULL_REFUSAL

if TYPE_CHECKING:
    from delta_contracts.engine.local.engine import LocalEngine

NO_CLUSTER_BY = refused("Sail 0.7.2 has no CLUSTER BY; use --engine spark for liquid clustering")
NO_CHANGE_DATA_FEED_WRITES = refused(
    "Sail 0.7.2 cannot write Change Data Feed tables "
    "('Unsupported table features required: [ChangeDataFeed]'); use --engine spark"
)
NO_CHANGE_DATA_FEED_READS = refused(
    "Sail 0.7.2 has no table_changes to read a Change Data Feed; use --engine spark"
)
UNQUOTED_CHECK = refused(
    "Sail 0.7.2 stores CHECK expressions without identifier quotes, so a rule on {} would leave a constraint "
    "no writer can parse; use --engine spark"
)
DELTA_RS_LACKS_FEATURES = by_delta_spark("delta-rs cannot commit to a table with the writer features {}")
DELTA_RS_NO_MAPPED_ADD = by_delta_spark("delta-rs cannot add columns to a column-mapped table")
DELTA_RS_ADDS_LAST = by_delta_spark(
    "delta-rs adds columns only at the end and Sail has no ADD COLUMNS: a column placed before others "
    "(the contract's order) needs ADD COLUMNS … AFTER/FIRST"
)
SAIL_ALTER_BY_LOCATION = by_delta_spark(
    "Sail's ALTER COLUMN fails after committing on a table it knows only by location (not created by this "
    "engine in this process)"
)
SAIL_MAPPING = by_delta_spark(
    "Sail enables column mapping without giving fields physical names, and delta-rs cannot enable it"
)
NO_DROP_COLUMNS = by_delta_spark("Sail and delta-rs have no DROP COLUMNS")
NO_FIELD_CHANGES = by_delta_spark(
    "Sail and delta-rs add, widen, rename and drop no field inside a column's type (ALTER TABLE on a nested "
    "path)"
)
NO_ROW_TRACKING = refused(
    "Sail 0.7.2 cannot write a table with row tracking ('Unsupported table features required: "
    "[RowTracking, DomainMetadata]'); use --engine spark"
)
NO_TRANSFORM_VALUES = refused(
    "Sail 0.7.2 has no transform_values, which converts a map's values in a versioned copy "
    "('UnsupportedOperationException: function: transform_values'); use --engine spark"
)
NO_IDENTITY_MERGE = refused(
    "Sail 0.7.2 has no MERGE INTO a table with identity columns ('not yet supported'); use --engine spark"
)
NO_SYNC_IDENTITY = by_delta_spark("Sail 0.7.2 has no ALTER COLUMN … SYNC IDENTITY")
NO_REORG = by_delta_spark("Sail and delta-rs have no REORG TABLE … APPLY (PURGE)")
NO_DROP_FEATURE = refused(
    "Sail 0.7.2 has no DROP FEATURE and delta-rs can only add table features; use --engine spark"
)

UNLESS_ROW_TRACKING = Case(has_row_tracking, NO_ROW_TRACKING)
UNLESS_DELTA_RS_LACKS_FEATURES = Case(
    lacks_delta_rs_writer_features,
    DELTA_RS_LACKS_FEATURES,
    detail=writer_features_delta_rs_lacks,
)
BY_DELTA_RS = Capability(Route(How.DELTA_RS), unless=(UNLESS_DELTA_RS_LACKS_FEATURES,))
SAIL_ALTER_COLUMN = Capability(
    SQL, unless=(UNLESS_ROW_TRACKING, Case(known_to_sail_by_location_only, SAIL_ALTER_BY_LOCATION))
)
SAIL_WRITE = Capability(SQL, unless=(UNLESS_ROW_TRACKING,))
SAIL_PROPERTIES = Capability(
    SQL,
    unless=(
        UNLESS_ROW_TRACKING,
        Case(enables_change_data_feed, NO_CHANGE_DATA_FEED_WRITES),
        Case(enables_column_mapping, SAIL_MAPPING),
    ),
)


# -- Sail: the op's SQL on the engine's own session --------------------------------------------------------
def run_rendered(engine: LocalEngine, op: Op, tag: str | None) -> OpOutcome:
    engine.sql(render(op))
    return engine.outcome(op, "sql")


def create_statement(op: CreateTable, location: Path) -> exp.Expr:
    """CREATE TABLE … LOCATION: the warehouse's directory of the table (or a rewrite's staging copy)."""
    statement = build(op)
    properties = statement.args["properties"]
    properties.append("expressions", exp.LocationProperty(this=exp.Literal.string(str(location))))
    return statement


def create_on_sail(engine: LocalEngine, op: CreateTable, tag: str | None) -> OpOutcome:
    location = engine.location(op.table)
    if location.exists() and any(location.iterdir()):
        raise EngineError(f"{location} already holds files: refusing to create {op.table} over them")
    engine.execute(exp.Create(this=x.ident(op.table[0]), kind="SCHEMA", exists=True))
    engine.execute(create_statement(op, location))
    engine.declare(op.table)
    return engine.outcome(op, "sql")


def copy_on_sail(engine: LocalEngine, op: CopyRows, tag: str | None) -> OpOutcome:
    engine.sql(render(replace(op, source=engine.local_id(op.source))))
    return engine.outcome(op, "sql")


def catch_up_on_sail(engine: LocalEngine, op: CatchUpRows, tag: str | None) -> OpOutcome:
    local = replace(op, source=engine.local_id(op.source))
    if op.strategy is CatchUpStrategy.INSERT_MISSING:
        # The fence: the old table's updates and deletes since the catch-up first (`engine.fence`).
        versions = fence_versions(engine, local, tag)
        apply_old_changes(engine, local, versions, tag)
        insert = fence_statement(local, source_version=versions.source, stamp_version=versions.stamp)
        engine.sql(x.sql(insert))
        return engine.outcome(op, "sql", catch_up_detail(op))
    engine.sql(render(local))
    return engine.outcome(op, "sql", catch_up_detail(op))


def catch_up_detail(op: CatchUpRows) -> str:
    """How the catch-up matched rows, as its report says: by key, by partition, or (a fence without a unique
    key) by whole rows."""
    if op.strategy is CatchUpStrategy.INSERT_MISSING:
        if op.key:
            return f"carried the old table's inserts, updates and deletes by key ({', '.join(op.key)})"
        return "inserted the old rows the new table lacks, compared as whole rows (no unique key)"
    if op.strategy is CatchUpStrategy.PARTITIONS:
        return f"replaced the partitions ({', '.join(op.partition_by)}) that differ"
    return f"merged on {', '.join(op.key)}"


def last_catch_up_on_sail(engine: LocalEngine, op: LastCatchUp, tag: str | None) -> OpOutcome:
    carry_renamed_column(engine, op, tag)  # the old column's updates first (`engine.fence`)
    return run_rendered(engine, op, tag)


def view_on_sail(engine: LocalEngine, op: CreateView, tag: str | None) -> OpOutcome:
    # Sail has no ALTER VIEW … AS: the alias is swapped with CREATE OR REPLACE VIEW.
    from delta_contracts.plan.render import view_query_sql

    local = replace(op, source=engine.local_id(op.source), alter_existing=False)
    engine.store_view(op.table, view_query_sql(local))
    return OpOutcome(op.kind, op.table, None, "sql", "view stored in views.json")


# -- the warehouse's directories ----------------------------------------------------------------------------
def move_directory(engine: LocalEngine, op: RenameTable) -> OpOutcome:
    target = engine.local_id(op.new_name)
    source, destination = engine.location(op.table), engine.location(target)
    if destination.exists():
        raise EngineError(f"cannot rename {op.table}: {destination} already exists")
    destination.parent.mkdir(parents=True, exist_ok=True)
    engine.execute(exp.Drop(tables=[x.table(op.table)], kind="TABLE", exists=True))
    os.rename(source, destination)  # one directory move: atomic on one filesystem
    engine.register(target)
    return OpOutcome(
        op.kind, target, engine.table_version(target), "catalog", f"moved {source} -> {destination}"
    )


def delete_directory(engine: LocalEngine, op: DropTable) -> OpOutcome:
    engine.execute(exp.Drop(tables=[x.table(op.table)], kind="TABLE", exists=True))
    location = engine.location(op.table)
    if location.exists():
        shutil.rmtree(location)
    return OpOutcome(op.kind, op.table, None, "sql", f"deleted {location}")


# -- delta-rs: a metadata commit through `DeltaTable.alter`; `configuration`: the table's, as its log says --
def add_column_by_delta_rs(
    op: AddColumn, alter: Any, properties: Any, configuration: Mapping[str, str]
) -> None:
    from deltalake.schema import Field

    spec = op.column
    metadata = {"comment": spec.comment} if spec.comment is not None else {}
    field = Field(spec.name, delta_type(spec.type), nullable=True, metadata=metadata)
    alter.add_columns([field], commit_properties=properties)


def comment_column_by_delta_rs(
    op: SetColumnComment, alter: Any, properties: Any, configuration: Mapping[str, str]
) -> None:
    alter.set_column_metadata(op.column, {"comment": op.comment}, commit_properties=properties)


def comment_table_by_delta_rs(
    op: SetTableComment, alter: Any, properties: Any, configuration: Mapping[str, str]
) -> None:
    alter.set_table_description(op.comment, commit_properties=properties)


def drop_check_by_delta_rs(
    op: DropCheck, alter: Any, properties: Any, configuration: Mapping[str, str]
) -> None:
    # delta-rs matches constraint names exactly; the contract's name may differ in case.
    names = [k.removeprefix(CONSTRAINT_PREFIX) for k in configuration if k.startswith(CONSTRAINT_PREFIX)]
    name = next((n for n in names if n.casefold() == op.name.casefold()), op.name)
    alter.drop_constraint(name, raise_if_not_exists=False, commit_properties=properties)


def drop_not_null_by_delta_rs(
    op: DropNotNull, alter: Any, properties: Any, configuration: Mapping[str, str]
) -> None:
    alter.drop_column_not_null(op.column, commit_properties=properties)


# -- delta-spark: the op's statement addressed to the table's location (``delta.`/path```) ------------------
def altered_at(op: Op, location: Path) -> exp.Expr:
    statement = build(op)
    if not isinstance(statement, exp.Alter):
        raise TypeError(f"{op.kind} is not a metadata statement delta-spark runs on a path")
    statement.set("this", path_table(location))
    return statement


def table_comment_at(op: SetTableComment, location: Path) -> exp.Expr:
    # COMMENT ON TABLE needs a catalog table; Delta keeps the 'comment' property as the table description.
    comment = exp.Property(this=exp.Literal.string("comment"), value=exp.Literal.string(op.comment))
    pairs = exp.Properties(expressions=[comment])
    return exp.Alter(this=path_table(location), kind="TABLE", actions=[exp.AlterSet(expressions=[pairs])])


def properties_at(op: SetProperties, location: Path) -> exp.Expr:
    return altered_at(
        replace(op, properties=tuple(table_features_protocol(dict(op.properties)).items())), location
    )


def purge_at(op: PurgeDroppedColumns, location: Path) -> exp.Expr:
    return ReorgPurge(this=path_table(location))


def column_mapped_first(engine: LocalEngine, op: DropColumns | DropField | RenameField) -> None:
    if not engine.facts(op.table).mapped:
        raise EngineError(
            f"{op.summary()} on {op.table}: Delta drops or renames columns and fields only on a "
            "column-mapped table; "
            "enable column mapping first (the plan does so in its expand phase: apply that first)"
        )


# -- rewrite (allow_rewrite only): the table's shape once the op is done ------------------------------------
def unchanged_shape(op: Op, shape: TableShape) -> TableShape:
    # SyncIdentity: the rebuild re-inserts every row through Sail, which moves the high-water mark past
    # given values. PurgeDroppedColumns: the rebuilt files hold only the table's columns.
    return shape


def added_shape(op: AddColumn, shape: TableShape) -> TableShape:
    column = replace(op.column, nullable=True, default=None)
    if op.first:
        return replace(shape, columns=(column, *shape.columns))
    names = [c.name.casefold() for c in shape.columns]
    at = names.index(op.after.casefold()) + 1 if op.after.casefold() in names else len(names)
    return replace(shape, columns=(*shape.columns[:at], column, *shape.columns[at:]))


def dropped_shape(op: DropColumns, shape: TableShape) -> TableShape:
    dropped = {c.casefold() for c in op.columns}
    if dropped & {c.casefold() for c in shape.partition_columns}:
        raise EngineError(f"{op.summary()}: partition columns cannot be dropped")
    return replace(
        shape,
        columns=tuple(c for c in shape.columns if c.name.casefold() not in dropped),
        checks={n: e for n, e in shape.checks.items() if not (x.referenced_columns(e) & dropped)},
    )


def field_shape(op: AddField | WidenField | RenameField | DropField, shape: TableShape) -> TableShape:
    column = next((c for c in shape.columns if c.name.casefold() == op.path[0].casefold()), None)
    if column is None:
        raise EngineError(f"{op.summary()}: {op.table} has no column {op.path[0]}")
    return shape.with_column(column.name, type=column_type_after(op, column.type))


def without_check(op: DropCheck, shape: TableShape) -> TableShape:
    kept = {k: v for k, v in shape.checks.items() if k.casefold() != op.name.casefold()}
    return replace(shape, checks=kept)


def with_properties(op: SetProperties, shape: TableShape) -> TableShape:
    wanted = {k: v for k, v in op.properties if k not in INTERNAL_PROPERTIES}
    return replace(shape, properties={**shape.properties, **wanted})


# -- what an op leaves of the facts of the tables it touches (a whole migration checked before it runs) -----
def same_facts(op: Op, facts: TableFacts) -> dict[TableId, TableFacts]:
    return {op.table: facts}


def created_facts(op: CreateTable, facts: TableFacts) -> dict[TableId, TableFacts]:
    features = features_of(dict(op.properties))
    if any(c.default is not None for c in op.columns):
        features.add("allowColumnDefaults")
    if any(c.identity is not None for c in op.columns):
        features.add("identityColumns")
    if any(c.generated is not None for c in op.columns):
        features.add("generatedColumns")
    after = TableFacts(
        exists=True,
        writer_features=frozenset(features),
        mapped="columnMapping" in features,
        sail_knows_schema=True,
    )
    return {op.table: after}


def dropped_facts(op: DropTable, facts: TableFacts) -> dict[TableId, TableFacts]:
    return {op.table: TableFacts()}


def renamed_facts(op: RenameTable, facts: TableFacts) -> dict[TableId, TableFacts]:
    return {op.table: TableFacts(), op.new_name: replace(facts, sail_knows_schema=False)}


def properties_facts(op: SetProperties, facts: TableFacts) -> dict[TableId, TableFacts]:
    features = features_of(dict(op.properties))
    after = replace(
        facts,
        writer_features=facts.writer_features | features,
        mapped=facts.mapped or "columnMapping" in features,
    )
    return {op.table: after}


SailRun = Callable[["LocalEngine", Any, "str | None"], OpOutcome]
CatalogRun = Callable[["LocalEngine", Any], OpOutcome]
DeltaRsChange = Callable[[Any, Any, Any, Mapping[str, str]], None]
AtLocation = Callable[[Any, Path], exp.Expr]
Guard = Callable[["LocalEngine", Any], None]
Reshape = Callable[[Any, TableShape], TableShape]
Project = Callable[[Any, TableFacts], dict[TableId, TableFacts]]


@dataclass(frozen=True, slots=True)
class LocalOp:
    """One op class on the local engine. Each `How` its capability may take needs its part: SQL `sail`,
    DELTA_RS `delta_rs`, DELTA_SPARK `at_location` (and `reshape`, for a rewrite where delta-spark cannot
    start), CATALOG `catalog`."""

    capability: Capability
    sail: SailRun = run_rendered
    delta_rs: DeltaRsChange | None = None
    at_location: AtLocation = altered_at
    before_delta_spark: Guard | None = None  # what must hold of the table before delta-spark runs the op
    reshape: Reshape | None = None
    catalog: CatalogRun | None = None
    project: Project = same_facts
    rows: RowMover[Any] | None = None  # how it moves rows in batches; None: it runs whole


SAIL_PROPERTIES_OP = LocalOp(
    SAIL_PROPERTIES, at_location=properties_at, reshape=with_properties, project=properties_facts
)
COPY_CAPABILITY = Capability(
    SQL, unless=(UNLESS_ROW_TRACKING, Case(converts_map_values, NO_TRANSFORM_VALUES))
)
CHECK_CASES = (Case(check_reads_names_needing_quotes, UNQUOTED_CHECK, detail=names_needing_quotes),)

LOCAL_OPS: OpTable[LocalOp] = OpTable(
    {
        CreateTable: LocalOp(
            Capability(
                SQL,
                unless=(
                    UNLESS_ROW_TRACKING,
                    Case(creates_clustered_table, NO_CLUSTER_BY),
                    Case(enables_change_data_feed, NO_CHANGE_DATA_FEED_WRITES),
                ),
            ),
            sail=create_on_sail,
            project=created_facts,
        ),
        AddColumn: LocalOp(
            Capability(
                Route(How.DELTA_RS),
                unless=(
                    Case(is_column_mapped, DELTA_RS_NO_MAPPED_ADD),
                    Case(is_placed, DELTA_RS_ADDS_LAST),
                    UNLESS_DELTA_RS_LACKS_FEATURES,
                ),
            ),
            delta_rs=add_column_by_delta_rs,
            reshape=added_shape,
        ),
        SetColumnDefault: LocalOp(
            SAIL_ALTER_COLUMN, reshape=lambda op, shape: shape.with_column(op.column, default=op.default)
        ),
        DropColumnDefault: LocalOp(
            SAIL_ALTER_COLUMN, reshape=lambda op, shape: shape.with_column(op.column, default=None)
        ),
        SetColumnComment: LocalOp(
            BY_DELTA_RS,
            delta_rs=comment_column_by_delta_rs,
            reshape=lambda op, shape: shape.with_column(op.column, comment=op.comment),
        ),
        SetTableComment: LocalOp(
            BY_DELTA_RS,
            delta_rs=comment_table_by_delta_rs,
            at_location=table_comment_at,
            reshape=lambda op, shape: replace(shape, comment=op.comment),
        ),
        WidenType: LocalOp(
            SAIL_ALTER_COLUMN, reshape=lambda op, shape: shape.with_column(op.column, type=op.to_type)
        ),
        SetProperties: SAIL_PROPERTIES_OP,
        MarkDeprecated: SAIL_PROPERTIES_OP,
        UnlistDeprecated: SAIL_PROPERTIES_OP,
        StampContract: SAIL_PROPERTIES_OP,
        DropFeature: LocalOp(Capability(NO_DROP_FEATURE)),
        SyncIdentity: LocalOp(Capability(NO_SYNC_IDENTITY), reshape=unchanged_shape),
        SetClustering: LocalOp(Capability(NO_CLUSTER_BY)),
        AddCheck: LocalOp(Capability(SQL, unless=(UNLESS_ROW_TRACKING, *CHECK_CASES))),
        # The closing CHECK before a renamed column's drop: a CHECK as any other.
        CloseColumn: LocalOp(Capability(SQL, unless=CHECK_CASES)),
        DropCheck: LocalOp(BY_DELTA_RS, delta_rs=drop_check_by_delta_rs, reshape=without_check),
        SetNotNull: LocalOp(Capability(refused(SET_NOT_NULL_REFUSAL))),
        DropNotNull: LocalOp(
            BY_DELTA_RS,
            delta_rs=drop_not_null_by_delta_rs,
            reshape=lambda op, shape: shape.with_column(op.column, nullable=True),
        ),
        Backfill: LocalOp(SAIL_WRITE, rows=BACKFILL_ROWS),
        LastCatchUp: LocalOp(SAIL_WRITE, sail=last_catch_up_on_sail, rows=LAST_CATCH_UP_ROWS),
        CopyRows: LocalOp(COPY_CAPABILITY, sail=copy_on_sail, rows=COPY_ROWS),
        CopyConvertedPartitions: LocalOp(COPY_CAPABILITY, sail=copy_on_sail, rows=COPY_CONVERTED_PARTITIONS),
        CatchUpRows: LocalOp(
            Capability(
                SQL,
                unless=(
                    UNLESS_ROW_TRACKING,
                    Case(reads_change_data_feed, NO_CHANGE_DATA_FEED_READS),
                    Case(merges_into_identity_columns, NO_IDENTITY_MERGE),
                    Case(converts_map_values, NO_TRANSFORM_VALUES),
                ),
            ),
            sail=catch_up_on_sail,
        ),
        RenameTable: LocalOp(Capability(CATALOG), catalog=move_directory, project=renamed_facts),
        CreateView: LocalOp(Capability(SQL), sail=view_on_sail),  # CREATE OR REPLACE VIEW
        DropColumns: LocalOp(
            Capability(NO_DROP_COLUMNS), before_delta_spark=column_mapped_first, reshape=dropped_shape
        ),
        DropTable: LocalOp(Capability(CATALOG), catalog=delete_directory, project=dropped_facts),
        # Fields inside a column's type: delta-spark on the table's path, as for DROP COLUMNS.
        AddField: LocalOp(Capability(NO_FIELD_CHANGES), reshape=field_shape),
        WidenField: LocalOp(Capability(NO_FIELD_CHANGES), reshape=field_shape),
        RenameField: LocalOp(
            Capability(NO_FIELD_CHANGES), before_delta_spark=column_mapped_first, reshape=field_shape
        ),
        DropField: LocalOp(
            Capability(NO_FIELD_CHANGES), before_delta_spark=column_mapped_first, reshape=field_shape
        ),
        PurgeDroppedColumns: LocalOp(Capability(NO_REORG), at_location=purge_at, reshape=unchanged_shape),
        ReclusterRows: LocalOp(Capability(NO_CLUSTER_BY)),
    }
)

# The same by kind: what `check_supported` and the tests read.
LOCAL = EngineCapabilities("local", {cls.kind: entry.capability for cls, entry in LOCAL_OPS.items()})
