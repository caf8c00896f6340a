"""Issue 46, item 1: a versioned migration never leaves behind what the live table has and its contract does
not. A producer's `mergeSchema` append adds a column with values outside the contract; the next versioned
migration copies only the contract's columns and drops the old table in its contract phase, so `apply`
refuses it before its first op (exit 2), naming the column and the way out, and nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.apply import apply
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.sql import expressions as x
from tests.engine.conftest import JVM
from tests.engine.recipe_run import ROWS, create_schema, renamed, write_rows
from tests.engine.test_live_writers import plan_folder
from tests.recipes import pair

pytestmark = pytest.mark.engine

ADDED = "SalesChannel"  # mixed case: Delta keeps the case, and matches names without it


def merge_schema_append(engine: Engine, table: tuple[str, ...], row: dict[str, Any]) -> None:
    """Append one row with a column the table lacks, as a producer's DataFrame write with schema merging does
    (delta-rs `schema_mode="merge"` on the embedded engine's folder, `mergeSchema` on Spark)."""
    if hasattr(engine, "location"):
        import pyarrow as pa
        from deltalake import write_deltalake

        live = engine.describe(table, with_version=False)
        assert live is not None
        data = pa.Table.from_pylist([row])
        arrow = pa.schema(
            [pa.field(c.name, data.schema.field(c.name).type) for c in live.columns]
            + [data.schema.field(ADDED)]
        )
        write_deltalake(
            str(engine.location(table)), data.select(arrow.names), mode="append", schema_mode="merge"
        )
        return
    spark = engine.spark  # type: ignore[attr-defined]
    name = x.sql(x.table(table))
    shape = spark.table(name).schema.add(ADDED, "string")
    frame = spark.createDataFrame([tuple(row.get(f.name) for f in shape.fields)], shape)
    frame.write.format("delta").option("mergeSchema", "true").mode("append").saveAsTable(
        x.sql(x.table(table))
    )


@pytest.mark.parametrize("engine_name", ["local_engine", pytest.param("spark_engine", marks=JVM)])
def test_a_column_outside_the_contract_refuses_the_versioned_copy(
    engine_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    engine: Engine = request.getfixturevalue(engine_name)
    schema = f"kept_{engine_name}"
    create_schema(engine, schema)
    base, wanted = pair("change_partitioning", "versioned")
    old, new = renamed(base, schema), renamed(wanted, schema)
    root = plan_folder(tmp_path / "migrations", old, new)
    created = apply(engine, root, tables=[old.id], to_version=old.version)
    assert created.exit_code == 0, [r.detail for r in created.reports]
    table = load_history(root / old.id)[0].state.physical
    write_rows(engine, table, ROWS)
    merge_schema_append(engine, table, {**ROWS[0], "txn_id": "t7", ADDED: "kiosk"})
    live = engine.describe(table, with_version=False)
    assert live is not None and live.column(ADDED) is not None
    before = engine.table_version(table)

    result = apply(engine, root, tables=[old.id], force_reason="the drop too")
    assert int(result.exit_code) == 2, [r.detail for r in result.reports]
    ((_, why),) = result.refused
    assert f"column {ADDED} (string)" in why, why
    assert "Add it to the contract" in why and "or drop it from" in why, why
    assert not result.reports  # refused before its first op: nothing ran
    assert engine.table_version(table) == before
    (_, migration) = load_history(root / old.id)
    assert engine.describe(migration.state.physical, with_version=False) is None  # no new table
    query = (
        exp.select(x.column(ADDED))
        .from_(x.table(table))
        .where(exp.EQ(this=x.column("txn_id"), expression=exp.Literal.string("t7")))
    )
    assert engine.sql(x.sql(query)) == [{ADDED: "kiosk"}]
