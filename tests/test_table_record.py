"""The governed table's record (`state/record.py`): one value, opened once per contract and environment,
answers what was planned, what ran and where the table lives now; nothing else reads the migrations folder or
folds the ledger. Read from the source (who reads the history, who builds a ledger, who imports the ledger and
the migrations folder), then what the record answers, over the committed sales.orders history and ledger rows
built here as the runner builds them."""

from __future__ import annotations

import ast
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from delta_contracts.contract.environments import NameMapping
from delta_contracts.contract.load import load_contract
from delta_contracts.plan.migrations import IntegrityError
from delta_contracts.state.ledger import LedgerEntry, Status, event_row, op_row
from delta_contracts.state.record import Records, TableRecord
from delta_contracts.tableid import TableId

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "delta_contracts"
CONTRACT = "sales.orders"


def _index() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Every call by the name called (a plain name or an attribute) -> where, and every module imported (at
    any place: inside functions and under TYPE_CHECKING too) -> the package's files importing it."""
    calls: dict[str, list[str]] = {}
    imports: dict[str, set[str]] = {}
    for file in PACKAGE.rglob("*.py"):
        path = file.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called:
                    calls.setdefault(called, []).append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                imports.setdefault(node.module, set()).add(path)
                for alias in node.names:  # `from a.b import c`: module a.b.c when there is one
                    imports.setdefault(f"{node.module}.{alias.name}", set()).add(path)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    imports.setdefault(alias.name, set()).add(path)
    return calls, imports


CALLS, IMPORTS = _index()


def _calls(name: str) -> list[str]:
    return CALLS.get(name, [])


def _importers(module: str) -> set[str]:
    """The package's files importing `module`, itself left out."""
    return IMPORTS.get(module, set()) - {module.removeprefix("delta_contracts.").replace(".", "/") + ".py"}


def test_only_the_record_and_planning_read_the_migrations_history() -> None:
    readers = _calls("load_history")
    assert len(readers) <= 2, readers
    assert {r.split(":")[0] for r in readers} <= {"state/record.py", "cli/plan.py"}, readers


def test_no_stage_outside_state_builds_a_ledger() -> None:
    built = [c for c in _calls("Ledger") + _calls("of_contract") if not c.startswith("state/")]
    assert len(built) <= 1, built


def test_the_ledger_and_the_migrations_folder_are_no_hub() -> None:
    ledger = _importers("delta_contracts.state.ledger")
    migrations = _importers("delta_contracts.plan.migrations")
    assert len(ledger) <= 8, sorted(ledger)
    assert len(migrations) <= 10, sorted(migrations)


def test_the_checkers_see_what_they_count() -> None:
    assert "state/record.py" in _importers("delta_contracts.state.ledger")
    assert "state/record.py" in _importers("delta_contracts.plan.migrations")
    assert any(c.startswith("state/record.py") for c in _calls("load_history"))


# -- what the record answers ---------------------------------------------------------------------------------
AT = datetime(2026, 11, 1, tzinfo=UTC)


def _orders(tmp_path: Path) -> Path:
    root = tmp_path / "migrations"
    shutil.copytree(REPO / "migrations" / CONTRACT, root / CONTRACT)
    return root


def _ran(record: TableRecord, migration: int, status: Status = Status.SUCCEEDED, **values: object) -> list:
    """A row per op of the migration (its number from 1), as the runner records them."""
    stored = record.history[migration - 1]
    return [
        op_row(CONTRACT, stored.migration_id, i, op, status, ended_at=AT, **values)
        for i, op in enumerate(stored.migration.ops, start=1)
    ]


def test_done_pending_and_the_baseline(tmp_path: Path) -> None:
    root = _orders(tmp_path)
    plain = TableRecord.open(root, CONTRACT)
    assert [p.migration_id[:4] for p in plain.pending()] == ["0001", "0002", "0003", "0004"]
    rows = _ran(plain, 1) + _ran(plain, 2)
    drop = plain.history[2].migration.ops[11]
    rows += [r for r in _ran(plain, 3) if r.op_index != 12]  # 0003's first drop not run
    record = TableRecord(CONTRACT, plain.history, rows)
    pending = record.pending()
    assert [(p.migration_id[:4], p.phases) for p in pending] == [
        ("0003", (drop.phase.value,)),
        ("0004", ("expand", "populate", "cutover", "contract")),
    ]
    assert 12 not in record.done_ops(plain.history[2]) and 11 in record.done_ops(plain.history[2])
    # `create` made it at 3.0.0: nothing before is pending, and 0004 (to 3.0.0) neither
    created = TableRecord(
        CONTRACT, plain.history, [replace(_ran(plain, 4)[0], status=Status.CREATED.value, to_version="3.0.0")]
    )
    assert created.baseline == "3.0.0" and created.pending() == []


def test_an_op_is_done_by_its_content_not_its_index(tmp_path: Path) -> None:
    root = _orders(tmp_path)
    record = TableRecord.open(root, CONTRACT)
    stored = record.history[1]
    first = _ran(record, 2)[0]
    moved = replace(first, op_index=first.op_index + 1)  # the same op, recorded at another index
    assert 1 in TableRecord(CONTRACT, record.history, [moved]).done_ops(stored)
    other = replace(first, op_checksum="sha256:another op")
    assert 1 not in TableRecord(CONTRACT, record.history, [other]).done_ops(stored)


def test_what_a_migration_waits_for_until_an_op_of_it_runs(tmp_path: Path) -> None:
    record = TableRecord.open(_orders(tmp_path), CONTRACT)
    stored = record.history[2]
    held = op_row(CONTRACT, stored.migration_id, 12, stored.migration.ops[11], Status.HELD, detail="window")
    assert TableRecord(CONTRACT, record.history, [held]).waiting_for(stored.migration_id) == "window"
    forced = replace(held, status=Status.FORCED.value, detail="")
    assert TableRecord(CONTRACT, record.history, [held, forced]).waiting_for(stored.migration_id) == ""


def test_commits_are_claimed_under_every_name_the_table_had(tmp_path: Path) -> None:
    old, new = TableId(("sales", "orders")), TableId(("sales", "orders__v2"))
    wrote = LedgerEntry(
        CONTRACT, "0001", str(old), "expand", 1, "create_table", "succeeded", version_before=None, version=0
    )
    added = replace(wrote, op_index=2, version_before=0, version=3)
    renamed = replace(wrote, op_index=3, table=str(new), renamed_from=str(old), version_before=5, version=6)
    record = TableRecord(CONTRACT, (), [wrote, added, renamed])
    assert [v for v in range(8) if record.claimed(new, v)] == [0, 1, 2, 3, 6]
    assert [v for v in range(8) if record.claimed(old, v)] == [0, 1, 2, 3]  # the rename is the new name's


def test_a_drop_follows_its_table_through_later_renames_and_finds_its_mark() -> None:
    rename = LedgerEntry(
        CONTRACT,
        "0004",
        "sales.orders__v3",
        "cutover",
        8,
        "rename_table",
        "succeeded",
        renamed_from="sales.orders",
    )
    record = TableRecord(CONTRACT, (), [rename])
    assert record.under_later_names(["sales.orders.coupon_code"]) == (
        "sales.orders.coupon_code",
        "sales.orders__v3.coupon_code",
    )
    assert record.earlier_names("sales.orders__v3") == ["sales.orders"]
    marked = replace(
        rename,
        op_index=7,
        op_kind="mark_deprecated",
        table="sales.orders",
        sql="SET TBLPROPERTIES ('delta_contracts.deprecated_columns' = '[]')",
        ended_at=AT,
    )
    record = TableRecord(CONTRACT, (), [marked])
    assert record.marked_at("0004", 7) == AT and record.marked_at("0004", 8) is None
    assert [m.at for m in record.property_set({"sales.orders"}, "delta_contracts.deprecated_columns")] == [AT]


def test_where_the_table_lives_now(tmp_path: Path) -> None:
    contract = load_contract(REPO / "contracts" / "sales" / "orders.yaml").contract
    record = TableRecord.open(_orders(tmp_path), CONTRACT)
    planned = record.history[-1].state.physical
    nothing = record.location(contract, {}, lambda t: False)
    assert nothing.read == TableId(("sales", "orders")) and nothing.current == planned == nothing.planned
    named = record.location(contract, {}, lambda t: t == TableId(("sales", "orders")))
    assert named.current == TableId(("sales", "orders"))
    behind = record.location(
        contract, {TableId(("sales", "orders")): "SELECT * FROM `sales`.`orders__v2`"}, lambda t: True
    )
    assert behind.current == TableId(("sales", "orders__v2")) and behind.read == TableId(("sales", "orders"))
    staged = TableRecord.open(_orders(tmp_path / "env"), CONTRACT, names=NameMapping(schema_prefix="stg_"))
    assert staged.location(contract, {}, lambda t: False).read == TableId(("stg_sales", "orders"))
    assert staged.planned_table(contract).schema == "stg_sales"


def test_a_tampered_folder_is_refused_by_apply_and_said_by_the_records(tmp_path: Path) -> None:
    root = _orders(tmp_path)
    sql = root / CONTRACT / "0001_create_1.0.0.sql"
    sql.write_text(sql.read_text(encoding="utf-8") + "-- edited\n", encoding="utf-8")
    with pytest.raises(IntegrityError, match=r"0001_create_1\.0\.0\.sql"):
        TableRecord.open(root, CONTRACT)
    record = Records(root, []).of(CONTRACT)
    assert (
        record.history == ()
        and record.unreadable is not None
        and "0001_create_1.0.0.sql" in record.unreadable
    )


def test_records_split_one_read_of_the_ledger_by_contract(tmp_path: Path) -> None:
    root = _orders(tmp_path)
    theirs = event_row("other.table", "rehash", migration_id="0001", reason="x")
    ours = event_row(CONTRACT.upper(), "discard", migration_id="0009", reason="y")  # ids compare case-folded
    records = Records(root, [theirs, ours])
    assert records.of(CONTRACT).rows == [ours] and records.of(CONTRACT).known
    assert not Records(root, None).of(CONTRACT).known  # a ledger that could not be read: states unknown
    assert ours.status == Status.DISCARDED and ours.table == CONTRACT.upper()


def test_an_event_row_says_its_kind_and_a_ledger_less_record_cannot_be_written() -> None:
    row = event_row(CONTRACT, "break_lease", reason="container deleted", detail="broke the lease of x")
    assert (row.op_kind, row.status, row.op_index, row.user) == ("break_lease", "lease_broken", 0, row.user)
    assert row.started_at is not None and row.started_at - datetime.now(UTC) < timedelta(seconds=5)
    with pytest.raises(ValueError, match="without a ledger"):
        TableRecord(CONTRACT, ()).append(row)
