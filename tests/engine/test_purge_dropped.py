"""REORG TABLE … APPLY (PURGE) after an in-place drop, on a real table: the dropped column's values leave the
data files (read back with pyarrow, by the column's physical name), Delta's history shows the rewrite, and
the rows are those before it. On delta-spark as the `spark` engine runs it, and on the local engine, which
sends it to delta-spark on the table's path (Sail and delta-rs have no REORG)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.engine.base import Engine, OpOutcome
from delta_contracts.plan.building import COLUMN_MAPPING, MAPPING_PROTOCOL
from delta_contracts.plan.ops import ColumnSpec, CreateTable, DropColumns, Gate, Phase, SetProperties
from delta_contracts.plan.purge import PurgeDroppedColumns
from delta_contracts.sql import expressions as x
from tests.engine.conftest import JVM, location_of

pytestmark = [pytest.mark.engine, JVM]

ROWS = [(1, "a-secret", "kept-1"), (2, "b-secret", "kept-2"), (3, None, "kept-3")]


def _physical_names_in_files(location: str) -> set[str]:
    """Every column name the table's current data files hold (physical names under column mapping)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    names: set[str] = set()
    for uri in DeltaTable(location).file_uris():
        names |= set(pq.read_schema(uri.removeprefix("file://")).names)
    return names


def _physical_name(location: str, column: str) -> str:
    from deltalake import DeltaTable

    schema = json.loads(DeltaTable(location).schema().to_json())
    field = next(f for f in schema["fields"] if f["name"] == column)
    return str(field["metadata"]["delta.columnMapping.physicalName"])


def _rows(engine: Engine, table: tuple[str, str]) -> list[dict[str, Any]]:
    query = exp.select(exp.Star()).from_(x.table(table)).order_by(x.column("id"))
    return engine.sql(x.sql(query))


def _purge_after_drop(engine: Engine, schema: str) -> OpOutcome:
    table = (schema, "cards")
    columns = (ColumnSpec("id", "bigint"), ColumnSpec("pan", "string"), ColumnSpec("holder", "string"))
    engine.apply_op(CreateTable(table=table, phase=Phase.EXPAND, columns=columns))
    values = exp.values([tuple(x.literal(v) for v in row) for row in ROWS])
    engine.sql(x.sql(exp.insert(values, x.table(table))))
    mapping = SetProperties(table=table, phase=Phase.EXPAND, properties=(*MAPPING_PROTOCOL, COLUMN_MAPPING))
    engine.apply_op(mapping)
    location = location_of(engine, table)
    pan = _physical_name(location, "pan")
    gate = Gate("P0D", "P0D", "", (f"{schema}.cards.pan",))
    engine.apply_op(DropColumns(table=table, phase=Phase.CONTRACT, columns=("pan",), gate=gate))
    before = _rows(engine, table)
    assert pan in _physical_names_in_files(location)  # the drop left the values in the files

    outcome = engine.apply_op(PurgeDroppedColumns(table=table, phase=Phase.CONTRACT, columns=("pan",)))

    assert pan not in _physical_names_in_files(location)
    assert _rows(engine, table) == before == [{"id": i, "holder": h} for i, _, h in ROWS]
    last = engine.history(table)[-1]
    assert last.operation in ("REORG", "OPTIMIZE")  # Delta 4 names it REORG; older lines OPTIMIZE
    assert outcome.version == last.version
    again = engine.apply_op(PurgeDroppedColumns(table=table, phase=Phase.CONTRACT, columns=("pan",)))
    assert again.path == "skipped"  # the history shows the rewrite after the drop
    return outcome


def test_purge_after_a_drop_on_delta_spark(spark_engine: Engine) -> None:
    assert _purge_after_drop(spark_engine, "purge_spark").path == "sql"


def test_purge_after_a_drop_on_the_local_engine(local_engine: Engine) -> None:
    assert _purge_after_drop(local_engine, "purge_local").path == "delta-spark"


def test_a_purge_where_no_column_was_dropped_is_skipped(local_engine: Engine) -> None:
    # No commit of the table's history drops a column: no file holds a dropped column's values.
    table = ("purge_nothing", "t")
    local_engine.apply_op(CreateTable(table=table, phase=Phase.EXPAND, columns=(ColumnSpec("a", "int"),)))
    purge = PurgeDroppedColumns(table=table, phase=Phase.CONTRACT, columns=())
    assert local_engine.apply_op(purge).path == "skipped"
