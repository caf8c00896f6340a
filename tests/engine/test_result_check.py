"""An op's result is checked against the Delta log (`Engine.run_verified`); while producers keep writing, at
the version the op committed (`engine.verify`). The live case — a producer appending old-shape rows right
after a backfill committed — is tests/engine/test_producers.py's; here the versions are made one by one."""

from __future__ import annotations

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.verify import held_since
from delta_contracts.plan.ops import Backfill, ColumnSpec, CreateTable, Phase
from delta_contracts.tableid import TableId
from tests.engine.recipe_run import create_schema, write_rows

pytestmark = pytest.mark.engine


def test_a_backfill_s_result_is_found_at_its_commit_though_rows_came_after(local_engine: Engine) -> None:
    create_schema(local_engine, "verified")
    table = TableId(("verified", "events"))
    columns = (ColumnSpec("txn_id", "string", False), ColumnSpec("region", "string"))
    local_engine.apply_op(CreateTable(table=table, phase=Phase.EXPAND, columns=columns))
    write_rows(local_engine, table, [{"txn_id": "a"}, {"txn_id": "b"}])
    written = local_engine.table_version(table)
    backfill = Backfill(table=table, phase=Phase.POPULATE, column="region", expression="'unknown'")
    local_engine.apply_op(backfill)
    filled = local_engine.table_version(table)
    write_rows(local_engine, table, [{"txn_id": "c"}])  # a producer still writing the old shape
    late = local_engine.table_version(table)
    assert written is not None and filled is not None and late is not None and written < filled < late

    result = backfill.result_condition()
    assert not local_engine.holds(result)  # the table as it is now has a row to fill
    assert held_since(local_engine, result, table, written, late)  # the backfill's own commit shows it
    assert not held_since(local_engine, result, table, filled, late)  # only the producer's append after it
    assert local_engine.count_where(table, "region IS NULL") == 1
