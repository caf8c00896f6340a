"""Which live object a feature reads or writes once migrations have moved the data: `write` after a versioned
cutover of a contract declared in place. On the embedded engine (what is checked is the object chosen)."""

from __future__ import annotations

import pytest

from delta_contracts.contract.model import Contract, Versioning
from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import Phase
from delta_contracts.plan.planner import plan
from delta_contracts.quality.write import write
from delta_contracts.sql import expressions as x
from delta_contracts.target import DEFAULT_TARGET
from tests.engine.quality_helpers import example
from tests.engine.test_enforce import BATCH

pytestmark = pytest.mark.engine


def _in_place(contract: Contract, version: str, partitioned_by: tuple[str, ...]) -> Contract:
    table = contract.table.model_copy(
        update={"versioning": Versioning.IN_PLACE, "partitioned_by": partitioned_by}
    )
    return contract.model_copy(update={"version": version, "table": table})


def test_write_after_a_versioned_cutover_goes_to_the_new_table(local_engine: Engine) -> None:
    """A contract declared in place whose partitioning changed: the planner moves it to `orders__v4` behind
    an alias view `orders`, which cannot be written to; `write` finds the table the view reads."""
    base = example("sales/orders.yaml")
    old = _in_place(base, "3.0.0", ("order_date",))
    new = _in_place(base, "4.0.0", ())
    local_engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.ident(old.table_parts[0]))}")
    created, _ = plan(None, old, DEFAULT_TARGET)
    moved, after = plan(old, new, DEFAULT_TARGET)
    assert after.physical == (*new.table_parts[:-1], "orders__v4"), moved.strategy
    for op in (*created.ops, *moved.ops):
        if op.phase is not Phase.CONTRACT:
            local_engine.apply_op(op)
    batch = local_engine.spark.range(1, 4).selectExpr(*BATCH)  # type: ignore[attr-defined]
    result = write(batch, new, engine=local_engine, merge=False)
    assert result.table == ".".join(after.physical)
    counted = local_engine.sql(f"SELECT count(*) AS n FROM {x.sql(x.table(new.table_parts))}")
    assert counted == [{"n": 3}]  # what readers of the contract's name see
