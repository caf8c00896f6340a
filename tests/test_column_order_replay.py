"""The column order a table's migrations made (`plan.column_order`): drift holds a table to it. A migration
planned before ADD COLUMNS took a position appended its column, and that table is no drift."""

from __future__ import annotations

import dataclasses

from delta_contracts.plan.column_order import replayed_order
from delta_contracts.plan.ops import Op
from delta_contracts.plan.planner import plan
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.recipes import base_contract, pair


def _ops(recipe: str, versioning: str = "in_place") -> tuple[list[Op], list[str], TableId]:
    old, new = pair(recipe, versioning)
    created, _ = plan(None, old, Target.DELTA_4)
    moved, after = plan(old, new, Target.DELTA_4)
    return [*created.ops, *moved.ops], [c.name for c in new.columns], after.physical


def test_an_added_column_takes_its_contract_place() -> None:
    ops, contract_order, physical = _ops("add_nullable_column")
    assert "note" in contract_order and contract_order[-1] != "note"  # added in the middle
    assert replayed_order(ops, physical) == tuple(contract_order)


def test_a_column_added_without_a_position_is_last() -> None:
    ops, contract_order, physical = _ops("add_nullable_column")
    unplaced = [dataclasses.replace(op, after="") if op.kind == "add_column" else op for op in ops]  # type: ignore[call-arg]
    expected = (*[c for c in contract_order if c != "note"], "note")
    assert replayed_order(unplaced, physical) == expected


def test_a_dropped_column_leaves_the_order() -> None:
    ops, contract_order, physical = _ops("drop_column")
    assert replayed_order(ops, physical) == tuple(contract_order)
    assert "legacy_channel" in [c.name for c in base_contract().columns]


def test_a_versioned_copy_has_the_new_contract_order_and_the_old_table_goes() -> None:
    old, new = pair("drop_column", "versioned")
    created, before = plan(None, old, Target.DELTA_4)
    moved, after = plan(old, new, Target.DELTA_4)
    assert after.physical != before.physical
    assert replayed_order(created.ops, before.physical) == tuple(c.name for c in old.columns)
    ops = [*created.ops, *moved.ops]
    assert replayed_order(ops, after.physical) == tuple(c.name for c in new.columns)
    assert replayed_order(ops, before.physical) is None  # its drop ran


def test_a_table_the_ops_never_made_has_no_order() -> None:
    ops, _, _ = _ops("add_nullable_column")
    assert replayed_order(ops, TableId(("elsewhere", "other"))) is None
