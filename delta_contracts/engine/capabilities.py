"""What each engine can do with each op kind, as data: how the op runs, or why it is refused, in one sentence.

One table per engine and target. An entry is the op kind's usual route, and the cases that send it another
way, checked in order. A case's condition is a named function of the op and of the table as its Delta log
states it (`local_routes.TableFacts`); the sentences are here, once. Engines read their table to refuse a
migration before anything runs (`unsupported_reason`, `check_supported`) and, for the local engine, to pick
the tool each op runs with. Facts measured with pysail 0.7.2, deltalake 1.6.6, delta-spark 4.4:

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from delta_contracts.engine.local_routes import (
    TableFacts,
    check_reads_names_needing_quotes,
    creates_clustered_table,
    enables_change_data_feed,
    enables_column_mapping,
    has_row_tracking,
    is_column_mapped,
    known_to_sail_by_location_only,
    lacks_delta_rs_writer_features,
    merges_into_identity_columns,
    names_needing_quotes,
    reads_change_data_feed,
    writer_features_delta_rs_lacks,
)
from delta_contracts.plan.ops import Op
from delta_contracts.target import SET_NOT_NULL_REFUSAL


class How(StrEnum):
    """The tool an op runs with; the values are the `path` an apply reports."""

    SQL = "sql"  # one statement: Spark's SQL, or Sail's on the local engine
    DELTA_RS = "delta-rs"  # a metadata commit through delta-rs (`delta_rs_path`)
    DELTA_SPARK = "delta-spark"  # the local engine's delta-spark session, on the table's path
    CATALOG = "catalog"  # directory moves and deletes under the local warehouse
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Route:
    how: How
    why: str = ""  # one sentence: why it is refused, or why it cannot stay on SQL / delta-rs ("{}": detail)


Condition = Callable[[Op, TableFacts], bool]
Detail = Callable[[Op, TableFacts], str]


@dataclass(frozen=True, slots=True)
class Case:
    """When `when` holds of the op and its table, the op takes `route` (its `{}` filled by `detail`)."""

    when: Condition
    route: Route
    detail: Detail | None = None

    def applied(self, op: Op, facts: TableFacts) -> Route:
        if self.detail is None:
            return self.route
        return Route(self.route.how, self.route.why.format(self.detail(op, facts)))


@dataclass(frozen=True, slots=True)
class Capability:
    usual: Route
    unless: tuple[Case, ...] = ()  # checked in order: the first that holds decides

    def route(self, op: Op, facts: TableFacts) -> Route:
        for case in self.unless:
            if case.when(op, facts):
                return case.applied(op, facts)
        return self.usual

    def hows(self) -> frozenset[How]:
        """Every tool this kind of op may run with (refused included), whatever the op and the table."""
        return frozenset({self.usual.how, *(case.route.how for case in self.unless)})


@dataclass(frozen=True, slots=True)
class EngineCapabilities:
    engine: str
    kinds: Mapping[str, Capability]
    # Kinds not listed: none, when every kind must be listed; else what the engine does with any op.
    otherwise: Capability | None = None

    def capability(self, kind: str) -> Capability | None:
        return self.kinds.get(kind, self.otherwise)

    def route(self, op: Op, facts: TableFacts | None = None) -> Route:
        """How `op` runs on this engine. `facts`: the table as its Delta log states it, needed where the op's
        entry has cases (an engine whose table has none, as Spark's, passes none)."""
        capability = self.capability(op.kind)
        if capability is None:
            return Route(How.REFUSED, f"the {self.engine} engine has no way to run a {op.kind} op")
        if facts is None:
            if capability.unless:
                raise TypeError(f"{self.engine} engine: a {op.kind} op is routed on its table's facts")
            facts = TableFacts()
        return capability.route(op, facts)

    def refusal(self, op: Op, facts: TableFacts | None = None) -> str | None:
        route = self.route(op, facts)
        return route.why if route.how is How.REFUSED else None


SQL = Route(How.SQL)
CATALOG = Route(How.CATALOG)


def _refused(why: str) -> Route:
    return Route(How.REFUSED, why)


def _delta_spark(why: str) -> Route:
    return Route(How.DELTA_SPARK, why)


# -- the local engine: Sail, delta-rs, delta-spark (lazily), the warehouse's directories --------------------
NO_CLUSTER_BY = _refused("Sail 0.7.2 has no CLUSTER BY; use --engine spark for liquid clustering")
NO_CHANGE_DATA_FEED_WRITES = _refused(
    "Sail 0.7.2 cannot write Change Data Feed tables "
    "('Unsupported table features required: [ChangeDataFeed]'); use --engine spark"
)
NO_CHANGE_DATA_FEED_READS = _refused(
    "Sail 0.7.2 has no table_changes to read a Change Data Feed; use --engine spark"
)
UNQUOTED_CHECK = _refused(
    "Sail 0.7.2 stores CHECK expressions without identifier quotes, so a rule on {} would leave a constraint "
    "no writer can parse; use --engine spark"
)
DELTA_RS_LACKS_FEATURES = _delta_spark("delta-rs cannot commit to a table with the writer features {}")
DELTA_RS_NO_MAPPED_ADD = _delta_spark("delta-rs cannot add columns to a column-mapped table")
SAIL_ALTER_BY_LOCATION = _delta_spark(
    "Sail's ALTER COLUMN fails after committing on a table it knows only by location (not created by this "
    "engine in this process)"
)
SAIL_MAPPING = _delta_spark(
    "Sail enables column mapping without giving fields physical names, and delta-rs cannot enable it"
)
NO_DROP_COLUMNS = _delta_spark("Sail and delta-rs have no DROP COLUMNS")
NO_ROW_TRACKING = _refused(
    "Sail 0.7.2 cannot write a table with row tracking ('Unsupported table features required: "
    "[RowTracking, DomainMetadata]'); use --engine spark"
)
NO_IDENTITY_MERGE = _refused(
    "Sail 0.7.2 has no MERGE INTO a table with identity columns ('not yet supported'); use --engine spark"
)
NO_SYNC_IDENTITY = _delta_spark("Sail 0.7.2 has no ALTER COLUMN … SYNC IDENTITY")
NO_DROP_FEATURE = _refused(
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

LOCAL = EngineCapabilities(
    "local",
    {
        "create_table": Capability(
            SQL,
            unless=(
                UNLESS_ROW_TRACKING,
                Case(creates_clustered_table, NO_CLUSTER_BY),
                Case(enables_change_data_feed, NO_CHANGE_DATA_FEED_WRITES),
            ),
        ),
        "add_column": Capability(
            Route(How.DELTA_RS),
            unless=(Case(is_column_mapped, DELTA_RS_NO_MAPPED_ADD), UNLESS_DELTA_RS_LACKS_FEATURES),
        ),
        "set_column_default": SAIL_ALTER_COLUMN,
        "drop_column_default": SAIL_ALTER_COLUMN,
        "set_column_comment": BY_DELTA_RS,
        "set_table_comment": BY_DELTA_RS,
        "widen_type": SAIL_ALTER_COLUMN,
        "set_properties": SAIL_PROPERTIES,
        "drop_feature": Capability(NO_DROP_FEATURE),
        "sync_identity": Capability(NO_SYNC_IDENTITY),
        "mark_deprecated": SAIL_PROPERTIES,
        "unlist_deprecated": SAIL_PROPERTIES,
        "stamp_contract": SAIL_PROPERTIES,
        "set_clustering": Capability(NO_CLUSTER_BY),
        "add_check": Capability(
            SQL,
            unless=(
                UNLESS_ROW_TRACKING,
                Case(check_reads_names_needing_quotes, UNQUOTED_CHECK, detail=names_needing_quotes),
            ),
        ),
        # The closing CHECK before a renamed column's drop: a CHECK as any other.
        "close_column": Capability(
            SQL, unless=(Case(check_reads_names_needing_quotes, UNQUOTED_CHECK, detail=names_needing_quotes),)
        ),
        "drop_check": BY_DELTA_RS,
        "set_not_null": Capability(_refused(SET_NOT_NULL_REFUSAL)),
        "drop_not_null": BY_DELTA_RS,
        "backfill": SAIL_WRITE,
        "last_catch_up": SAIL_WRITE,
        "copy_rows": SAIL_WRITE,
        "catch_up_rows": Capability(
            SQL,
            unless=(
                UNLESS_ROW_TRACKING,
                Case(reads_change_data_feed, NO_CHANGE_DATA_FEED_READS),
                Case(merges_into_identity_columns, NO_IDENTITY_MERGE),
            ),
        ),
        "rename_table": Capability(CATALOG),
        "create_view": Capability(SQL),  # CREATE OR REPLACE VIEW: Sail has no ALTER VIEW … AS
        "drop_columns": Capability(NO_DROP_COLUMNS),
        "drop_table": Capability(CATALOG),
    },
)

# -- Spark: every op is one SQL statement (`plan.render`); the runtime decides what Delta allows ------------
SPARK_OSS_DELTA = EngineCapabilities(
    "spark", {"set_not_null": Capability(_refused(SET_NOT_NULL_REFUSAL))}, otherwise=Capability(SQL)
)
SPARK_DATABRICKS = EngineCapabilities("spark", {}, otherwise=Capability(SQL))
