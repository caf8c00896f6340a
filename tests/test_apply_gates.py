"""A drop's gate follows the table it drops from through the renames the ledger records."""

from __future__ import annotations

from delta_contracts.apply.gates import under_later_names
from delta_contracts.apply.ledger import LedgerEntry, Status


def _rename(old: str, new: str, status: Status = Status.SUCCEEDED) -> LedgerEntry:
    return LedgerEntry("sales.orders", "0004", new, "cutover", 8, "rename_table", status, renamed_from=old)


def test_objects_are_watched_under_the_names_later_renames_gave_their_table() -> None:
    entries = [_rename("sales.orders", "sales.orders__v2"), _rename("sales.orders__v2", "archive.orders")]
    assert under_later_names(["sales.orders.Coupon_Code", "sales.orders_x"], entries) == (
        "sales.orders.Coupon_Code",
        "sales.orders_x",  # another table whose name merely starts the same: not moved
        "sales.orders__v2.coupon_code",
        "archive.orders.coupon_code",
    )


def test_a_rename_that_did_not_finish_moves_nothing() -> None:
    started = _rename("sales.orders", "sales.orders__v2", Status.STARTED)
    failed = _rename("sales.orders", "sales.orders__v3", Status.FAILED)
    assert under_later_names(["sales.orders.amount"], [started, failed]) == ("sales.orders.amount",)


def test_a_cycle_of_renames_ends() -> None:
    entries = [_rename("s.a", "s.b"), _rename("s.b", "s.a")]
    assert under_later_names(["s.a.c"], entries) == ("s.a.c", "s.b.c")
