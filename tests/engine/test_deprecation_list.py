"""`delta_contracts.deprecated.columns` names only columns the table still has (issue 37): after an in-place
drop the list goes without the dropped column, on a real table; and when the drop was held while a later
migration's cutover marked another column, the later list is kept, not overwritten by the older plan's."""

from __future__ import annotations

import itertools
import json

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.marks import DEPRECATED_COLUMNS
from delta_contracts.plan.ops import Phase, UnlistDeprecated
from delta_contracts.plan.planner import plan
from delta_contracts.target import Target
from tests.engine.recipe_run import ROWS, create_schema, renamed, write_rows
from tests.recipes import pair

pytestmark = pytest.mark.engine
_schemas = itertools.count()


def listed(engine: Engine, table: tuple[str, ...]) -> list[str]:
    live = engine.describe(table)
    assert live is not None
    return list(json.loads(live.properties.get(DEPRECATED_COLUMNS, "[]")))


def test_a_dropped_column_leaves_the_list_and_a_later_list_is_kept(local_or_spark: Engine) -> None:
    engine = local_or_spark
    schema = f"deplist_{engine.name}_{next(_schemas)}"
    old, dropped = pair("drop_column")  # legacy_channel marked at the cutover, dropped in the contract phase
    old, dropped = renamed(old, schema), renamed(dropped, schema)
    columns = tuple(c for c in dropped.columns if c.name != "status")
    checks = tuple(c for c in dropped.constraints if "status" not in c.expression)
    later = dropped.model_copy(update={"version": "4.0.0", "columns": columns, "constraints": checks})
    create_schema(engine, schema)
    created, state = plan(None, old, Target.DELTA_4)
    second, state = plan(old, dropped, Target.DELTA_4, state=state)
    third, _ = plan(dropped, later, Target.DELTA_4, state=state)
    table = old.table_parts
    for op in created.ops:
        engine.apply_op(op)
    write_rows(engine, table, ROWS)

    # The second migration's drop is held at its gate while the third one's cutover marks status.
    for op in second.ops:
        if op.phase is not Phase.CONTRACT:
            engine.apply_op(op)
    assert listed(engine, table) == ["legacy_channel"]
    for op in third.ops:
        if op.phase is not Phase.CONTRACT:
            engine.apply_op(op)
    # Both await their drop: legacy_channel's is held, so the later mark keeps it listed (drift shows both).
    assert listed(engine, table) == ["legacy_channel", "status"]
    # Then the held drop runs: the older plan's list (`[]`) must not replace the later one, losing status.
    outcomes = [engine.apply_op(op) for op in second.phase(Phase.CONTRACT)]
    unlist = [
        o
        for op, o in zip(second.phase(Phase.CONTRACT), outcomes, strict=True)
        if isinstance(op, UnlistDeprecated)
    ]
    assert [o.path for o in unlist] == ["skipped"]
    assert "status" in listed(engine, table)
    # The third migration's drop: status leaves the list.
    for op in third.phase(Phase.CONTRACT):
        engine.apply_op(op)
    live = engine.describe(table)
    assert live is not None
    assert {c.name for c in live.columns}.isdisjoint({"legacy_channel", "status"})
    assert "status" not in listed(engine, table)
