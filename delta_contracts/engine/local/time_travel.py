"""`<table> VERSION AS OF <n>` on the embedded engine: Sail 0.7.2 reads a table as of a version older than its
last checkpoint with `Missing commit file: expected version 0, found <checkpoint - 4>` (measured: a table of
12 commits, delta-rs checkpointing at 10, reads versions 10 and 11 and refuses 3, 7 and 9). delta-rs reads
every version its log keeps, so each such reference is replaced by a temporary view of the table as delta-rs
reads it at that version (its Arrow data, types kept): the statements that read an older version (the
versioned cutover's fence, the drop's comparison with it, an in-place rename's last catch-up) are small
reads of old versions' tables. A version Sail can read (from the last checkpoint on) is left to Sail:
delta-rs 1.6 refuses some reader features Sail reads (`typeWidening`: "not yet supported by the deltalake
reader").

delta-rs 1.6.6 refuses to read a table with the `columnMapping` reader feature ("not yet supported by the
deltalake reader"), and reads one of the legacy protocol (reader version 2) without the mapping: every
column added or renamed since the mapping was turned on comes back NULL, silently (measured in
tests/engine/test_write_phases.py, an in-place rename's contract phase). A column-mapped version is read from
the data files delta-rs lists for it instead, each physical column under its logical name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from delta_contracts.engine.base import EngineError
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

VIEW_PREFIX = "__delta_contracts_as_of_"


def without_time_travel(statement: str, location: Callable[[TableId], str], session: Any) -> str:
    """`statement` with each versioned table reference read from a temporary view of that version,
    registered in `session` anew for each statement (a table dropped and made again has other versions)."""
    if "VERSION AS OF" not in statement.upper():
        return statement
    try:
        tree = x.parse(statement)
    except SqlglotError:
        return statement
    views: dict[tuple[str, int], str] = {}
    found = [t for t in tree.find_all(exp.Table) if isinstance(t.args.get("version"), exp.Version)]
    for table in found:
        version = int(table.args["version"].expression.name)
        path = location(TableId(tuple(p.name for p in table.parts)))
        if version >= _last_checkpoint(path):
            continue  # Sail reads it; delta-rs 1.6 cannot read every table Sail can (type widening)
        name = views.get((path, version))
        if name is None:
            name = f"{VIEW_PREFIX}{len(views)}"
            _frame(session, version_rows(path, version)).createOrReplaceTempView(name)
            views[(path, version)] = name
        replacement = exp.Table(this=x.ident(name))
        if table.alias:
            replacement.set("alias", table.args["alias"])
        table.replace(replacement)
    return x.sql(tree) if views else statement


def _frame(session: Any, rows: Any) -> Any:
    """A DataFrame of an Arrow table; an empty one (an old table with no rows at that version, the fence's
    usual case) gets its schema: Spark Connect infers none from no rows (CANNOT_INFER_EMPTY_SCHEMA)."""
    if rows.num_rows:
        return session.createDataFrame(rows)
    from pyspark.sql.pandas.types import from_arrow_schema

    return session.createDataFrame([], schema=from_arrow_schema(rows.schema))


def _last_checkpoint(location: str) -> int:
    """The version of the table's last checkpoint (0 without one): Sail reads every version from it on."""
    marker = Path(location.removeprefix("file://")) / "_delta_log" / "_last_checkpoint"
    try:
        return int(json.loads(marker.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


class UnreadableVersionError(EngineError):
    """A table version the embedded engine cannot read (its files carry deletion vectors)."""


def version_rows(path: str, version: int) -> Any:
    """The table at `path` as of `version`, as an Arrow table under its logical column names."""
    from deltalake import DeltaTable

    table = DeltaTable(path, version=version)
    if (table.metadata().configuration or {}).get("delta.columnMapping.mode", "none") == "none":
        return table.to_pyarrow_table()
    return _mapped_rows(table, path)


def _mapped_rows(table: Any, path: str) -> Any:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = json.loads(table.schema().to_json())["fields"]
    logical = pa.schema(table.schema().to_arrow())
    partitions = set(table.metadata().partition_columns or ())
    pieces = []
    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        if action.get("deletionVector.storageType"):
            raise UnreadableVersionError(
                f"{path} as of version {table.version()} has deletion vectors, which the embedded engine "
                "cannot read in a column-mapped table's past versions: run this on --engine spark"
            )
        data = pq.read_table(f"{path.rstrip('/')}/{action['path']}")
        columns = []
        for field, target in zip(fields, logical, strict=True):
            physical = _physical(field)
            if field["name"] in partitions:
                value = action.get(f"partition.{field['name']}", action.get(f"partition.{physical}"))
                column = pa.array([value] * data.num_rows, type=target.type)  # delta-rs gives it typed
            elif physical not in data.column_names:  # added after this file was written
                column = pa.nulls(data.num_rows, type=target.type)
            elif pa.types.is_nested(target.type):
                values = [_logical(v, field["type"]) for v in data.column(physical).to_pylist()]
                column = pa.array(values, type=target.type)
            else:
                column = data.column(physical).cast(target.type)  # a widened type reads in its new one
            columns.append(column)
        pieces.append(pa.table(columns, schema=logical))
    return pa.concat_tables(pieces) if pieces else logical.empty_table()


def _physical(field: Mapping[str, Any]) -> str:
    return str((field.get("metadata") or {}).get("delta.columnMapping.physicalName", field["name"]))


def _logical(value: Any, field_type: Any) -> Any:
    """A nested value of a data file under its logical field names (column mapping stores each struct field
    under its physical name): fields the file predates NULL, map entries as (key, value) pairs."""
    if value is None or not isinstance(field_type, dict):
        return value
    if field_type["type"] == "struct":
        return {f["name"]: _logical(value.get(_physical(f)), f["type"]) for f in field_type["fields"]}
    if field_type["type"] == "array":
        return [_logical(v, field_type["elementType"]) for v in value]
    if field_type["type"] == "map":
        pairs = value.items() if isinstance(value, dict) else value
        return [(_logical(k, field_type["keyType"]), _logical(v, field_type["valueType"])) for k, v in pairs]
    return value
