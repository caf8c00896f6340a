"""Issue 37 ("Writers that never pause"), the plan side: what each op checks, and on which table."""

from __future__ import annotations

from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.conditions import AllOf, Condition, NoRowsWhere
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.recipes import pair


def _keyed(old: Contract, new: Contract) -> tuple[Contract, Contract]:
    quality = new.quality.model_copy(update={"unique": (("txn_id",),)})
    return old.model_copy(update={"quality": quality}), new.model_copy(update={"quality": quality})


def _row_checks(condition: Condition | None) -> list[NoRowsWhere]:
    if condition is None:
        return []
    parts = condition.conditions if isinstance(condition, AllOf) else (condition,)
    return [c for c in parts if isinstance(c, NoRowsWhere)]


def _tables_read(predicate: str) -> set[TableId]:
    return {TableId(tuple(p.name for p in t.parts)) for t in x.parse(predicate).find_all(exp.Table) if t.name}


def test_fence_prechecks_read_the_old_physical_table_not_the_alias_view() -> None:
    """After the rename the alias view serves `__v2`: a duplicate-key check reading it would let two old rows
    sharing a key pass, and both land in `__v2`. Every pre-check of the fence reads the old table by its
    physical name."""
    old, new = _keyed(*pair("change_partitioning", "in_place"))  # the first versioned migration
    migration, _ = plan(old, new, Target.DELTA_4)
    catch_ups = [o for o in migration.ops if isinstance(o, CatchUpRows)]
    fence = next(o for o in catch_ups if o.strategy is CatchUpStrategy.INSERT_MISSING)
    assert fence.source != migration.table  # the first versioned migration: the old table was renamed
    checks = _row_checks(fence.precondition())
    assert checks, "the fence checks the old rows it copies"
    read = set().union(*(_tables_read(c.predicate) for c in checks))
    assert migration.table not in read, f"a pre-check reads the alias view {migration.table}"
    assert read <= {fence.source, fence.table}
    assert any(_tables_read(c.predicate) == {fence.source} for c in checks if c.table == fence.source)
    for _, predicate in fence.reasons:
        assert migration.table not in _tables_read(predicate)
