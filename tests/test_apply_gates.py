"""A drop's gate follows the table it drops from through the renames the ledger records."""

from __future__ import annotations

from delta_contracts.state.ledger import LedgerEntry, Status
from delta_contracts.state.record import TableRecord


def under_later_names(objects: list[str], entries: list[LedgerEntry]) -> tuple[str, ...]:
    return TableRecord("sales.orders", (), entries).under_later_names(objects)


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


def test_the_mark_is_found_in_the_tables_own_history_when_the_ledger_lost_it() -> None:
    """The commit the toolkit tagged with the mark op (its userMetadata) dates the mark."""
    import json
    from datetime import UTC, datetime
    from pathlib import Path

    from delta_contracts.apply.gates import mark_in_commits
    from delta_contracts.live import Commit
    from delta_contracts.plan.migrations import load_history

    history = load_history(Path(__file__).parents[1] / "migrations" / "sales.orders")
    stored = history[2]  # 0003: op 7 marks coupon_code deprecated, op 12 drops it
    drop = stored.migration.ops[11]
    assert drop.kind == "drop_columns"

    def tagged(version: int, op: int, kind: str) -> Commit:
        meta = {"delta_contracts": {"migration": stored.migration_id, "op": op, "kind": kind}}
        return Commit(
            version, "SET TBLPROPERTIES", 1_790_000_000_000 + version * 1000, json.dumps(meta), None
        )

    commits = [
        Commit(1, "WRITE", 1_789_000_000_000, None, None),
        tagged(4, 6, "set_properties"),
        tagged(5, 7, "mark_deprecated"),
    ]
    mark = mark_in_commits(history, drop.gate, commits)  # type: ignore[attr-defined]
    assert mark is not None
    assert mark.at == datetime.fromtimestamp(1_790_000_005, tz=UTC)
    assert mark.where == f"{stored.migration_id} op 7 (table history v5)"
    assert mark_in_commits(history, drop.gate, commits[:2]) is None  # type: ignore[attr-defined]
