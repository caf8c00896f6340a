"""An op's result checked against the Delta log while producers keep writing.

`Engine.run_verified` checks, after an op ran, that the table shows the op's result (a backfill: no row left
with the new column NULL). Producers write on during a migration (docs/migrations.md, "Writers during a
migration"): a producer writing the old shape appends rows with the new column NULL right after the backfill
committed, so the table as it is now may not show the result although the op's own commit did. The result
is then looked for in the versions since the op began, newest first: a version that shows it is the op's own
commit (a producer's append never fills a column it does not write), and the rows written after it are the
next catch-up's. Only when none shows it did the op commit without doing what it says (`PartialOpError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from delta_contracts.plan.catch_up import as_of
from delta_contracts.plan.conditions import AllOf, AnyOf, Condition, NoRowsWhere
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine

# Versions looked at, newest first: the producers' commits made while the result was being checked, and
# the op's own (an op that lost races ran again on a newer version, so its commit is among the last).
VERSIONS_LOOKED_AT = 50


def held_since(engine: Engine, condition: Condition, table: TableId, before: int, after: int) -> bool:
    """Whether the rows of `table` met `condition` at some version after `before`, up to `after`."""
    first = max(before, after - VERSIONS_LOOKED_AT)
    return any(_holds_at(engine, condition, table, version) for version in range(after, first, -1))


def _holds_at(engine: Engine, condition: Condition, table: TableId, version: int) -> bool:
    """`condition` with its row conditions on `table` read as of `version`; the others as the table is."""
    if isinstance(condition, NoRowsWhere) and condition.table == table:
        read = as_of(x.table(table), version)
        return engine.count_rows(exp.select(exp.Star()).from_(read).where(x.parse(condition.predicate))) == 0
    if isinstance(condition, AllOf):
        return all(_holds_at(engine, c, table, version) for c in condition.conditions)
    if isinstance(condition, AnyOf):
        return any(_holds_at(engine, c, table, version) for c in condition.conditions)
    return engine.holds(condition)
