"""Every op class registers itself under its kind when it is defined: no hand-kept list of ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from delta_contracts.plan import ops
from delta_contracts.plan.catch_up import CatchUpRows
from delta_contracts.plan.ops import AddColumn, DuplicateOpKindError, Op, Phase, UnknownOpKindError, op_class
from delta_contracts.plan.serialize import known_ops, op_from_data, op_to_data


@pytest.fixture(autouse=True)
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops defined by these tests register into a copy, so that no other test sees them."""
    monkeypatch.setattr(ops, "_OPS_BY_KIND", dict(ops._OPS_BY_KIND))


def test_an_op_defined_anywhere_registers_and_round_trips() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class RenamePartitionColumn(Op):
        kind: ClassVar[str] = "test_rename_partition_column"
        column: str
        new_name: str
        others: tuple[str, ...] = ()

    assert op_class("test_rename_partition_column") is RenamePartitionColumn
    assert known_ops()["test_rename_partition_column"] is RenamePartitionColumn

    op = RenamePartitionColumn(
        table=("main", "sales", "orders"),
        phase=Phase.EXPAND,
        column="day",
        new_name="order_day",
        others=("a",),
    )
    data = op_to_data(op)
    assert data["kind"] == "test_rename_partition_column"
    back = op_from_data(data)
    assert type(back) is RenamePartitionColumn
    assert back == op


def test_a_second_op_of_a_known_kind_is_refused() -> None:
    with pytest.raises(
        DuplicateOpKindError,
        match=r"^op kind 'add_column' of tests\.test_op_registry\..*\.AddColumnAgain is already the kind of "
        r"delta_contracts\.plan\.ops\.AddColumn$",
    ):

        @dataclass(frozen=True, slots=True, kw_only=True)
        class AddColumnAgain(Op):
            kind: ClassVar[str] = "add_column"
            column: str

    assert op_class("add_column") is AddColumn


def test_a_base_without_a_kind_of_its_own_is_not_registered() -> None:
    before = dict(known_ops())

    @dataclass(frozen=True, slots=True, kw_only=True)
    class ColumnOp(Op):
        column: str

    assert dict(known_ops()) == before

    @dataclass(frozen=True, slots=True, kw_only=True)
    class ColumnLeaf(ColumnOp):
        kind: ClassVar[str] = "test_column_leaf"

    assert dict(known_ops()) == {**before, "test_column_leaf": ColumnLeaf}


def test_ops_defined_beside_plan_ops_are_known() -> None:
    assert known_ops()[CatchUpRows.kind] is CatchUpRows
    assert "op" not in known_ops()  # the base names no op


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(UnknownOpKindError, match=r"^unknown op kind 'rename_galaxy'$"):
        op_from_data({"kind": "rename_galaxy", "table": ["t"], "phase": "expand"})
    assert issubclass(UnknownOpKindError, ValueError)  # a migration loader reports it as an unreadable file
