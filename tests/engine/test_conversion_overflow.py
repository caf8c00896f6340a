"""A `convert.expression` that overflows its new type, on delta-spark with ANSI mode off and on.

ANSI off, `bigint * 10` wraps (1844674407370955162 * 10 -> 4) and a CAST to int wraps too: the copy's
pre-check must still count the row, and the copy statement itself (run by hand, without its pre-check) must
fail rather than write 4. ANSI on, the product fails the query: the pre-check must count the row all the same
instead of dying with an ArithmeticException.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine, PreconditionFailedError
from delta_contracts.plan.ops import CopyRows, Phase
from delta_contracts.plan.planner import plan
from delta_contracts.plan.render import render
from delta_contracts.target import Target
from tests.engine.recipe_run import ROWS, create_schema, drop_schema, write_rows
from tests.recipes import BASE

pytestmark = pytest.mark.engine

WRAPS = 1844674407370955162  # * 10 overflows bigint and wraps to 4
ANSI = "spark.sql.ansi.enabled"


def _contracts(schema: str) -> tuple[Contract, Contract]:
    old = copy.deepcopy(BASE)
    old["id"] = f"{schema}.transactions"
    old["table"]["versioning"] = "versioned"
    new = copy.deepcopy(old)
    new["version"] = "3.0.0"
    amount = next(c for c in new["columns"] if c["name"] == "txn_amt_paise")
    amount.update(type="int", convert={"expression": "txn_amt_paise * 10"})
    return Contract.model_validate(old), Contract.model_validate(new)


@pytest.fixture(scope="module")
def copy_op(spark_engine: Engine) -> Iterator[CopyRows]:
    """The populate copy of the conversion, its new table made, over an old table holding a row that wraps."""
    schema = "overflow"
    create_schema(spark_engine, schema)
    old, new = _contracts(schema)
    created, state = plan(None, old, Target.DELTA_4)
    for op in created.ops:
        spark_engine.apply_op(op)
    write_rows(spark_engine, state.physical, [ROWS[0], {**ROWS[1], "txn_amt_paise": WRAPS}])
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    for op in migration.phase(Phase.EXPAND):
        spark_engine.apply_op(op)
    (populate,) = (op for op in migration.phase(Phase.POPULATE) if isinstance(op, CopyRows))
    yield populate
    drop_schema(spark_engine, schema)


@pytest.fixture(params=["false", "true"], ids=["ansi-off", "ansi-on"])
def ansi(spark_engine: Engine, request: pytest.FixtureRequest) -> Iterator[str]:
    session: Any = spark_engine.spark  # type: ignore[attr-defined]
    before = session.conf.get(ANSI)
    session.conf.set(ANSI, request.param)
    yield request.param
    session.conf.set(ANSI, before)


def test_precheck_counts_the_rows_a_conversion_overflows(
    spark_engine: Engine, copy_op: CopyRows, ansi: str
) -> None:
    with pytest.raises(PreconditionFailedError) as refused:
        spark_engine.apply_op(copy_op)
    assert refused.value.count == 1, f"ANSI {ansi}: {refused.value}"
    assert [row.get("txn_amt_paise") for row in refused.value.samples] == [WRAPS]
    assert spark_engine.count_where(copy_op.table, "TRUE") == 0, "nothing was copied"


def test_copy_run_without_its_precheck_refuses_instead_of_wrapping(
    spark_engine: Engine, copy_op: CopyRows, ansi: str
) -> None:
    with pytest.raises(Exception, match="loses a value") as failed:
        spark_engine.sql(render(copy_op))
    assert "ARITHMETIC_OVERFLOW" not in str(failed.value)
    assert spark_engine.count_where(copy_op.table, "TRUE") == 0, f"ANSI {ansi}: the copy wrote rows"
