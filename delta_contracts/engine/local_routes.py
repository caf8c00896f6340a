"""Which tool the local engine runs an op with, decided before it runs from what the table is.

Sail runs SQL, delta-rs commits metadata changes, delta-spark (started only when needed) runs what neither can
do on the table itself. The choice follows the table's protocol and properties as the Delta log states them,
never an error message. Facts measured with pysail 0.7.2, deltalake 1.6.6, delta-spark 4.4 (DESIGN.md):

- delta-rs refuses every commit on a table whose writer features include one it lacks (measured:
  `typeWidening`, `allowColumnDefaults`), and ADD COLUMN on column-mapped tables.
- Sail has no DROP COLUMNS; enabling column mapping through its SET TBLPROPERTIES leaves fields without
  physical names.
- Sail's ALTER COLUMN (TYPE, SET/DROP DEFAULT) on a table its catalog knows only by location (registered
  in another session, or again after a delta-rs change) commits to the Delta log and then fails
  ("column … does not exist"); registering a partitioned table with its schema is refused by Sail, so such
  ops go to delta-spark unless this engine created the table itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from functools import singledispatch

from delta_contracts.live import LEGACY_WRITER_FEATURES, LiveTable
from delta_contracts.plan.ops import (
    AddColumn,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropNotNull,
    DropTable,
    Op,
    RenameTable,
    SetColumnComment,
    SetColumnDefault,
    SetProperties,
    SetTableComment,
    WidenType,
)

COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
# Writer features delta-rs 1.6.6 commits metadata changes under (measured: comment, constraint, NOT NULL).
DELTA_RS_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "columnMapping"})
_FEATURE_PROPERTIES = {
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableDeletionVectors": "deletionVectors",
}


class Tool(StrEnum):
    SAIL = "sql"
    DELTA_RS = "delta-rs"
    DELTA_SPARK = "delta-spark"
    CATALOG = "catalog"  # directory moves and deletes under the warehouse


@dataclass(frozen=True, slots=True)
class Route:
    tool: Tool
    why: str = ""  # why the op cannot stay on Sail / delta-rs (said when delta-spark is needed)


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What decides an op's route: the table's writer features and mapping, and what Sail's catalog knows."""

    exists: bool = False
    writer_features: frozenset[str] = frozenset()
    mapped: bool = False
    sail_knows_schema: bool = False  # created by this engine in this process and not registered again since

    @classmethod
    def of(cls, live: LiveTable | None, *, sail_knows_schema: bool) -> TableFacts:
        if live is None:
            return cls()
        legacy = LEGACY_WRITER_FEATURES.get(live.min_writer_version, frozenset())
        features = set(live.writer_features) or legacy
        return cls(
            exists=True,
            writer_features=frozenset(features),
            mapped=live.properties.get(COLUMN_MAPPING_MODE, "none") != "none",
            sail_knows_schema=sail_knows_schema,
        )

    @property
    def delta_rs_commits(self) -> bool:
        return self.writer_features <= DELTA_RS_WRITER_FEATURES

    def delta_rs_refusal(self) -> str:
        lacking = sorted(self.writer_features - DELTA_RS_WRITER_FEATURES)
        return f"delta-rs cannot commit to a table with the writer features {lacking}"


def features_of(properties: dict[str, str]) -> set[str]:
    """Writer features a set of table properties turns on."""
    found = {k.removeprefix("delta.feature.") for k in properties if k.startswith("delta.feature.")}
    found |= {f for k, f in _FEATURE_PROPERTIES.items() if properties.get(k, "false").lower() == "true"}
    if properties.get(COLUMN_MAPPING_MODE, "none") != "none":
        found.add("columnMapping")
    return found


@singledispatch
def route(op: Op, facts: TableFacts) -> Route:
    """Sail's SQL, unless a registered rule below says otherwise."""
    return Route(Tool.SAIL)


def _delta_rs_or_spark(op: Op, facts: TableFacts) -> Route:
    if facts.delta_rs_commits:
        return Route(Tool.DELTA_RS)
    return Route(Tool.DELTA_SPARK, facts.delta_rs_refusal())


route.register(SetColumnComment, _delta_rs_or_spark)
route.register(SetTableComment, _delta_rs_or_spark)
route.register(DropCheck, _delta_rs_or_spark)
route.register(DropNotNull, _delta_rs_or_spark)


@route.register
def _(op: AddColumn, facts: TableFacts) -> Route:
    if facts.mapped:
        return Route(Tool.DELTA_SPARK, "delta-rs cannot add columns to a column-mapped table")
    return _delta_rs_or_spark(op, facts)


def _sail_alter_column(op: Op, facts: TableFacts) -> Route:
    if facts.sail_knows_schema:
        return Route(Tool.SAIL)
    return Route(
        Tool.DELTA_SPARK,
        "Sail's ALTER COLUMN fails after committing on a table it knows only by location (not created by "
        "this engine in this process)",
    )


route.register(WidenType, _sail_alter_column)
route.register(SetColumnDefault, _sail_alter_column)
route.register(DropColumnDefault, _sail_alter_column)


@route.register
def _(op: SetProperties, facts: TableFacts) -> Route:
    if dict(op.properties).get(COLUMN_MAPPING_MODE, "none") != "none" and not facts.mapped:
        return Route(
            Tool.DELTA_SPARK,
            "Sail enables column mapping without giving fields physical names, and delta-rs cannot enable it",
        )
    return Route(Tool.SAIL)


@route.register
def _(op: DropColumns, facts: TableFacts) -> Route:
    return Route(Tool.DELTA_SPARK, "Sail and delta-rs have no DROP COLUMNS")


@route.register
def _(op: RenameTable, facts: TableFacts) -> Route:
    return Route(Tool.CATALOG)


@route.register
def _(op: DropTable, facts: TableFacts) -> Route:
    return Route(Tool.CATALOG)


@route.register
def _(op: CreateView, facts: TableFacts) -> Route:
    return Route(Tool.SAIL)


def project(op: Op, facts: TableFacts, tool: Tool) -> TableFacts:
    """The facts of `op.table` once `op` has run (to check a whole migration before any op runs)."""
    if isinstance(op, CreateTable):
        properties = dict(op.properties)
        features = features_of(properties)
        if any(c.default is not None for c in op.columns):
            features.add("allowColumnDefaults")
        return TableFacts(
            exists=True,
            writer_features=frozenset(features),
            mapped="columnMapping" in features,
            sail_knows_schema=True,
        )
    if isinstance(op, DropTable | RenameTable):
        return TableFacts()
    if isinstance(op, SetProperties):
        features = features_of(dict(op.properties))
        facts = replace(
            facts,
            writer_features=facts.writer_features | features,
            mapped=facts.mapped or "columnMapping" in features,
        )
    if tool in (Tool.DELTA_RS, Tool.DELTA_SPARK):  # the table is registered again, by location only
        facts = replace(facts, sail_knows_schema=False)
    return facts
