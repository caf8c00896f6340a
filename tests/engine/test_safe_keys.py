"""The cutover catch-up's duplicate-key pre-check names its key columns as quoted identifiers (issue 29,
item 6): a key column `a-b` was parsed as the SQL `a - b` and the pre-check died with an AnalysisException."""

from __future__ import annotations

import itertools

import pytest
from sqlglot import exp

from delta_contracts.engine.base import Engine, PreconditionFailedError
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import Phase
from delta_contracts.sql import expressions as x
from tests.engine.recipe_run import create_schema, drop_schema, write_rows

pytestmark = pytest.mark.engine

_schemas = itertools.count()
KEY = "a-b"


def test_a_key_column_that_is_not_a_plain_name_is_checked_for_twins(spark_engine: Engine) -> None:
    schema = f"safekeys{next(_schemas)}"
    create_schema(spark_engine, schema)
    old, new = (schema, "old"), (schema, "new")
    for table in (old, new):
        columns = [
            exp.ColumnDef(this=x.ident(KEY), kind=exp.DataType.build("bigint")),
            exp.ColumnDef(this=x.ident("a"), kind=exp.DataType.build("bigint")),
            exp.ColumnDef(this=x.ident("b"), kind=exp.DataType.build("bigint")),
        ]
        create = exp.Create(
            this=exp.Schema(this=x.table(table), expressions=columns),
            kind="TABLE",
            properties=exp.Properties(expressions=[exp.FileFormatProperty(this=exp.var("DELTA"))]),
        )
        spark_engine.sql(x.sql(create))
    # Distinct in `a-b`, twins in `a - b` (3 - 1 = 4 - 2): only the quoted column is the key.
    write_rows(spark_engine, new, [{KEY: 1, "a": 3, "b": 1}, {KEY: 2, "a": 4, "b": 2}])
    op = CatchUpRows(
        table=new,
        phase=Phase.CUTOVER,
        source=old,
        mapping=((KEY, x.sql(x.column(KEY))), ("a", x.sql(x.column("a"))), ("b", x.sql(x.column("b")))),
        key=(KEY,),
        strategy=CatchUpStrategy.MERGE_ON_KEY,
    )
    try:
        spark_engine.check_precondition(op)  # no twins: it holds
        write_rows(spark_engine, new, [{KEY: 1, "a": 0, "b": 0}])
        with pytest.raises(PreconditionFailedError) as twins:
            spark_engine.check_precondition(op)
        assert twins.value.count == 2
        assert sorted(r[KEY] for r in twins.value.samples) == [1, 1]
    finally:
        drop_schema(spark_engine, schema)
