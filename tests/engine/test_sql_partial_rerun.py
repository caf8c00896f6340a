"""Issue 37 item 3: a versioned migration's `.sql` file run by hand up to the stamp, a producer writing to the
new table as the stamp tells it, then the catch-up cell run again. Its MERGE's `WHEN NOT MATCHED BY SOURCE
THEN DELETE` would delete the producer's row. SQL cannot read a table property in a guard, so the cutover is
ordered for the guard it has: the stamp comes after the alias view reads the new table, and the catch-up
cell's guard fails once the alias reads another table than the old one (or the old name is no table)."""

from __future__ import annotations

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import Phase, StampContract
from delta_contracts.plan.planner import plan
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.recipe_run import LATE_ROW, ROWS, create_schema, renamed, run_migration, write_rows
from tests.engine.sql_rerun import first_pass_cells
from tests.recipes import pair

pytestmark = [pytest.mark.engine, JVM]


def test_catch_up_cell_run_again_after_the_stamp_keeps_producers_rows(spark_engine: Engine) -> None:
    from sqlglot import exp

    schema = "partial_sql"
    create_schema(spark_engine, schema)
    base, wanted = pair("change_partitioning", "in_place")  # the first versioned migration
    quality = wanted.quality.model_copy(update={"unique": (("txn_id",),)})
    base, wanted = (c.model_copy(update={"quality": quality}) for c in (base, wanted))
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(spark_engine, created, "create")
    write_rows(spark_engine, state.physical, ROWS)
    migration, after = plan(old, new, Target.DELTA_4, state=state)
    text = render_sql_file(migration, migration_id="0002_partial", target=Target.DELTA_4)
    ops = [op for phase in Phase for op in migration.phase(phase)]
    cells = first_pass_cells(migration, text)
    catch_up = next(
        i
        for i, op in enumerate(ops)
        if isinstance(op, CatchUpRows) and op.strategy is not CatchUpStrategy.INSERT_MISSING
    )
    stamp = next(i for i, op in enumerate(ops) if isinstance(op, StampContract))
    for cell in cells[: stamp + 1]:  # by hand, up to and including the stamp
        for statement in cell:
            spark_engine.sql(statement)
    write_rows(spark_engine, after.physical, [{**LATE_ROW, "txn_id": "p1"}])  # a producer that switched
    ran = []
    refused = "EXPECT_TABLE_NOT_VIEW|TABLE_OR_VIEW_NOT_FOUND|no longer reads"
    with pytest.raises(Exception, match=refused):  # the catch-up cell, run again: a guard refuses it
        for statement in cells[catch_up]:
            spark_engine.sql(statement)
            ran.append(statement)
    assert not any(s.startswith("MERGE") for s in ran), "the catch-up MERGE ran again"
    query = exp.select(x.column("txn_id")).from_(x.table(after.physical))
    assert "p1" in {r["txn_id"] for r in spark_engine.sql(x.sql(query))}
