"""`<table> VERSION AS OF <n>` on the embedded engine: Sail 0.7.2 reads a table as of a version older than its
last checkpoint with `Missing commit file: expected version 0, found <checkpoint - 4>` (measured: a table of
12 commits, delta-rs checkpointing at 10, reads versions 10 and 11 and refuses 3, 7 and 9). delta-rs reads
every version its log keeps, so each such reference is replaced by a temporary view of the table as delta-rs
reads it at that version (its Arrow data, types kept): the statements that read an older version (the
versioned cutover's fence, the drop's comparison with it) are small reads of old versions' tables. A version
Sail can read (from the last checkpoint on) is left to Sail: delta-rs 1.6 refuses some reader features Sail
reads (`typeWidening`: "not yet supported by the deltalake reader").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

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
            from deltalake import DeltaTable

            name = f"{VIEW_PREFIX}{len(views)}"
            _frame(session, DeltaTable(path, version=version).to_pyarrow_table()).createOrReplaceTempView(
                name
            )
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
