"""The in-memory engine's tables: what the Delta log would say of each (columns, properties, CHECKs, the
protocol's features, its commits) as Python values, and its rows in an in-process DuckDB database.

Each table's rows are the DuckDB table `__data.t<uid>`, and every commit keeps a copy, `__data.t<uid>_v<n>`,
which `VERSION AS OF n` reads: small test tables make a copy per commit cheaper than keeping a log of files.
The uid, not the name, names the data, so a rename moves nothing. Delta's rules that the runner's semantics
rest on are kept: NOT NULL and CHECK constraints refuse a write that breaks them (the whole statement, nothing
committed), ADD CONSTRAINT and SET NOT NULL refuse a table whose rows break them, and DROP or RENAME COLUMN
need column mapping.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from delta_contracts.engine.base import EngineError
from delta_contracts.live import LEGACY_WRITER_FEATURES, Commit, LiveColumn, LiveTable
from delta_contracts.plan.conditions import FEATURE_PREFIX
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

DATA_SCHEMA = "__data"
ENGINE_INFO = "delta-contracts-memory"
COLUMN_MAPPING = "delta.columnMapping.mode"
MIN_READER, MIN_WRITER = "delta.minReaderVersion", "delta.minWriterVersion"
# Table features a property or a column's shape turns on (Delta adds them to the protocol and keeps them).
FEATURE_PROPERTIES = {
    "delta.appendOnly": "appendOnly",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableTypeWidening": "typeWidening",
}

READER_FEATURES = frozenset({"columnMapping", "deletionVectors", "typeWidening", "timestampNtz"})


def key_of(table: TableId) -> tuple[str, ...]:
    """A table's catalog key: Spark's names are case-insensitive."""
    return tuple(part.casefold() for part in TableId(table))


def duckdb_type(type_text: str) -> exp.DataType:
    return x.data_type(type_text)


@dataclass
class MemoryTable:
    uid: int
    name: TableId
    columns: list[LiveColumn]
    properties: dict[str, str] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    partition_columns: tuple[str, ...] = ()
    clustering_columns: tuple[str, ...] = ()
    comment: str | None = None
    features: set[str] = field(default_factory=set)
    reader_version: int = 1
    writer_version: int = 2
    commits: list[Commit] = field(default_factory=list)

    @property
    def data(self) -> exp.Table:
        return exp.Table(this=x.ident(f"t{self.uid}"), db=x.ident(DATA_SCHEMA))

    def snapshot(self, version: int) -> exp.Table:
        return exp.Table(this=x.ident(f"t{self.uid}_v{version}"), db=x.ident(DATA_SCHEMA))

    @property
    def version(self) -> int:
        return self.commits[-1].version

    def column(self, name: str) -> LiveColumn | None:
        folded = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == folded), None)

    def check_named(self, name: str) -> str | None:
        folded = name.casefold()
        return next((e for n, e in self.checks.items() if n.casefold() == folded), None)

    def set_properties(self, given: Mapping[str, str]) -> None:
        """As Delta keeps them: protocol versions and `delta.feature.*` go to the protocol (never lowered),
        the rest to the configuration."""
        for key, value in given.items():
            if key == MIN_READER:
                self.reader_version = max(self.reader_version, int(value))
            elif key == MIN_WRITER:
                self.writer_version = max(self.writer_version, int(value))
            elif key.startswith(FEATURE_PREFIX):
                self.features.add(key.removeprefix(FEATURE_PREFIX))
            else:
                self.properties[key] = value

    def column_mapped(self) -> bool:
        return self.properties.get(COLUMN_MAPPING, "none") != "none"

    def note_features(self) -> None:
        """The features today's properties, CHECKs and columns need, added for good (as Delta does)."""
        for key, feature in FEATURE_PROPERTIES.items():
            if self.properties.get(key, "").casefold() == "true":
                self.features.add(feature)
        if self.checks:
            self.features.add("checkConstraints")
        if self.column_mapped():
            self.features.add("columnMapping")
        if any(c.default is not None for c in self.columns):
            self.features.add("allowColumnDefaults")

    def live(self, with_version: bool = True) -> LiveTable:
        """As Delta describes it: legacy protocol versions while they imply every feature the table uses,
        else reader 3 / writer 7 with the features listed."""
        reader, writer = self.reader_version, self.writer_version
        if not self.features <= LEGACY_WRITER_FEATURES.get(writer, LEGACY_WRITER_FEATURES[2]):
            reader, writer = max(reader, 3), 7
        listed = writer == 7
        return LiveTable(
            name=str(self.name),
            location=f"memory:///t{self.uid}",
            columns=tuple(self.columns),
            properties=dict(self.properties),
            checks=dict(self.checks),
            partition_columns=self.partition_columns,
            clustering_columns=self.clustering_columns,
            min_reader_version=reader,
            min_writer_version=writer,
            reader_features=tuple(sorted(self.features & READER_FEATURES)) if listed else (),
            writer_features=tuple(sorted(self.features)) if listed else (),
            version=self.version if with_version else None,
            comment=self.comment,
        )

    def version_at(self, timestamp_ms: int) -> int:
        """The newest version committed at or before the instant (`TIMESTAMP AS OF`)."""
        found = [c.version for c in self.commits if c.timestamp_ms <= timestamp_ms]
        if not found:
            raise EngineError(f"{self.name}: no version of the table is as old as the timestamp asked for")
        return found[-1]


class Catalog:
    """The tables and views, and the DuckDB database holding the rows."""

    def __init__(self) -> None:
        import duckdb

        self.db = duckdb.connect(":memory:")
        self.db.execute("SET TimeZone = 'UTC'")  # as the toolkit's Spark sessions run
        self.db.execute(x.sql(exp.Create(this=x.ident(DATA_SCHEMA), kind="SCHEMA", exists=True)))
        self.tables: dict[tuple[str, ...], MemoryTable] = {}
        self.views: dict[tuple[str, ...], tuple[TableId, str]] = {}
        self._next_uid = 0
        self._last_ms = 0

    # -- lookup ---------------------------------------------------------------------------------------------
    def table(self, name: TableId) -> MemoryTable | None:
        return self.tables.get(key_of(name))

    def existing(self, name: TableId) -> MemoryTable:
        found = self.table(name)
        if found is None:
            why = "is a view" if key_of(name) in self.views else "does not exist"
            raise EngineError(f"[TABLE_OR_VIEW_NOT_FOUND] table {name} {why}")
        return found

    def taken(self, name: TableId) -> bool:
        return key_of(name) in self.tables or key_of(name) in self.views

    # -- DuckDB ----------------------------------------------------------------------------------------------
    def run(self, statement: exp.Expr) -> list[dict[str, Any]]:
        import duckdb

        text = statement.sql(dialect="duckdb")
        try:
            cursor = self.db.execute(text)
        except duckdb.Error as err:
            raise EngineError(str(err).splitlines()[0]) from err
        if cursor.description is None:
            return []
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # -- commits ---------------------------------------------------------------------------------------------
    def commit(
        self, table: MemoryTable, operation: str, parameters: Mapping[str, Any], user_metadata: str | None
    ) -> int:
        """One Delta commit: the table's next version, its operation as DESCRIBE HISTORY names it, and a copy
        of its rows for time travel."""
        version = len(table.commits)
        stamp = max(int(time.time() * 1000), self._last_ms + 1)  # strictly increasing, as versions are
        self._last_ms = stamp
        shown = {k: v if isinstance(v, str) else json.dumps(v) for k, v in parameters.items()}
        table.commits.append(Commit(version, operation, stamp, user_metadata, ENGINE_INFO, shown))
        table.note_features()
        copy = exp.Create(
            this=table.snapshot(version),
            kind="TABLE",
            expression=exp.select(exp.Star()).from_(table.data),
        )
        self.run(copy)
        return version

    def new_table(
        self,
        name: TableId,
        columns: list[LiveColumn],
        *,
        partitioned_by: tuple[str, ...] = (),
        clustered_by: tuple[str, ...] = (),
        comment: str | None = None,
    ) -> MemoryTable:
        if len({c.name.casefold() for c in columns}) != len(columns):
            raise EngineError(f"[COLUMN_ALREADY_EXISTS] {name}: a column name is given twice")
        for wanted in (*partitioned_by, *clustered_by):
            if not any(c.name.casefold() == wanted.casefold() for c in columns):
                raise EngineError(f"{name}: {wanted} is not a column of the table")
        self._next_uid += 1
        table = MemoryTable(
            uid=self._next_uid,
            name=TableId(name),
            columns=list(columns),
            partition_columns=partitioned_by,
            clustering_columns=clustered_by,
            comment=comment,
        )
        self.run(
            exp.Create(
                kind="TABLE",
                this=exp.Schema(
                    this=table.data,
                    expressions=[
                        exp.ColumnDef(this=x.ident(c.name), kind=duckdb_type(c.type)) for c in columns
                    ],
                ),
            )
        )
        self.tables[key_of(name)] = table
        return table

    def drop(self, table: MemoryTable) -> None:
        del self.tables[key_of(table.name)]
        for commit in table.commits:
            self.run(exp.Drop(tables=[table.snapshot(commit.version)], kind="TABLE", exists=True))
        self.run(exp.Drop(tables=[table.data], kind="TABLE", exists=True))

    def rename(self, table: MemoryTable, new_name: TableId) -> None:
        if self.taken(new_name):
            raise EngineError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] {new_name} already exists")
        del self.tables[key_of(table.name)]
        table.name = TableId(new_name)
        self.tables[key_of(new_name)] = table

    # -- Delta's rules ---------------------------------------------------------------------------------------
    def broken_rows(self, table: MemoryTable, predicate: exp.Expr) -> int:
        """Rows of the table's data for which `predicate` is not true (NULL breaks it, as in Delta)."""
        counted = (
            exp.select(exp.Count(this=exp.Star()).as_("n"))
            .from_(table.data)
            .where(exp.Not(this=exp.Coalesce(this=exp.Paren(this=predicate), expressions=[exp.false()])))
        )
        return int(self.run(counted)[0]["n"])

    def check_rows(self, table: MemoryTable) -> None:
        """Delta's write-time checks: every NOT NULL column and every CHECK holds on every row."""
        for column in table.columns:
            if not column.nullable:
                rule = exp.Not(this=exp.Is(this=x.column(column.name), expression=exp.Null()))
                if self.broken_rows(table, rule):
                    raise EngineError(
                        f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: "
                        f"{column.name}"
                    )
        for name, expression in table.checks.items():
            if self.broken_rows(table, x.parse(expression)):
                raise EngineError(
                    f"[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint {name} ({expression}) violated "
                    f"by a row of {table.name}"
                )

    def replace_column(self, table: MemoryTable, named: str, **changes: Any) -> LiveColumn:
        column = table.column(named)
        if column is None:
            raise EngineError(f"[DELTA_COLUMN_NOT_FOUND] {table.name} has no column {named}")
        changed = replace(column, **changes)
        table.columns = [changed if c is column else c for c in table.columns]
        return changed

    def set_duckdb_default(self, table: MemoryTable, column: LiveColumn) -> None:
        """A column default as DuckDB's too, so that an INSERT leaving the column out gets it."""
        action = exp.AlterColumn(
            this=x.ident(column.name),
            **({"default": x.parse(column.default)} if column.default is not None else {"drop": True}),
        )
        self.run(exp.Alter(this=table.data, kind="TABLE", actions=[action]))

    def retype_in_duckdb(self, table: MemoryTable, column: str, wanted: str) -> None:
        action = exp.AlterColumn(this=x.ident(column), dtype=duckdb_type(wanted))
        self.run(exp.Alter(this=table.data, kind="TABLE", actions=[action]))
