"""One canonical name per object, at the time of each read: the ledger's history of views, tables and
renames replayed (`telemetry.names`), and the log, the report and the gate agreeing on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.state.ledger import Ledger, LedgerEntry, Status
from delta_contracts.telemetry.gate import readers_gate
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, read_rows, record_watermark
from delta_contracts.telemetry.names import Names
from delta_contracts.telemetry.report import build_report, canonical_input

T0 = datetime(2026, 10, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=40)


def _op(kind: str, table: str, sql: str, day: int, *, renamed_from: str = "", index: int = 1) -> LedgerEntry:
    return LedgerEntry(
        "logistics.shipments", f"000{day}", table, "cutover", index, kind, Status.SUCCEEDED.value,
        sql=sql, ended_at=T0 + timedelta(days=day), renamed_from=renamed_from,
    )  # fmt: skip


def _view(source: str, columns: str) -> str:
    listed = ", ".join(f"`{c}` AS `{c}`" for c in columns.split())
    return f"CREATE OR REPLACE VIEW `logistics`.`shipments` AS SELECT {listed} FROM `logistics`.`{source}`"


# A table that was in place, renamed to __v1 behind the alias view on day 2, then copied to __v2 (dest_zip
# dropped) on day 5; on day 9 the retired __v1 became a compatibility view over __v2.
ALIAS = "logistics.shipments"
LEDGER = [
    _op("create_table", ALIAS, "CREATE TABLE …", 0),
    _op("rename_table", "logistics.shipments__v1", "ALTER TABLE … RENAME", 2, renamed_from=ALIAS),
    _op("create_view", ALIAS, _view("shipments__v1", "shipment_id dest_zip notes"), 2, index=2),
    _op("create_table", "logistics.shipments__v2", "CREATE TABLE …", 5),
    _op("create_view", ALIAS, _view("shipments__v2", "shipment_id notes"), 5, index=2),
    _op("drop_table", "logistics.shipments__v1", "DROP TABLE …", 9),
    _op(
        "create_view", "logistics.shipments__v1",
        "CREATE OR REPLACE VIEW `logistics`.`shipments__v1` AS SELECT `shipment_id` AS `shipment_id`, "
        "CAST(NULL AS STRING) AS `dest_zip`, upper(`notes`) AS `notes` FROM `logistics`.`shipments__v2`", 9,
    ),
]  # fmt: skip


def _names() -> Names:
    return Names.from_ledger(LEDGER)


def test_a_read_through_the_alias_is_a_read_of_the_table_it_served_then() -> None:
    names = _names()

    def day(n: int) -> datetime:
        return T0 + timedelta(days=n, hours=12)

    assert names.canonical("logistics.shipments.notes", day(1)) == ("logistics.shipments__v1.notes",)
    assert names.canonical("logistics.shipments.notes", day(3)) == ("logistics.shipments__v1.notes",)
    assert names.canonical("logistics.shipments.notes", day(6)) == ("logistics.shipments__v2.notes",)
    assert names.canonical("Logistics.Shipments.DEST_ZIP", day(3)) == ("logistics.shipments__v1.dest_zip",)
    assert names.canonical("logistics.shipments.dest_zip", day(6)) == ()  # the view had no such column then
    assert names.canonical("logistics.shipments", day(6)) == ("logistics.shipments__v2",)
    # The compatibility view over __v2: its columns are computed from __v2's.
    assert names.canonical("logistics.shipments__v1.notes", day(10)) == ("logistics.shipments__v2.notes",)
    assert names.canonical("logistics.shipments__v1.dest_zip", day(10)) == ()  # a constant reads nothing
    assert names.canonical("logistics.shipments__v1.notes", day(7)) == ("logistics.shipments__v1.notes",)
    assert names.canonical("other.table.col", day(7)) == ("other.table.col",)  # unknown: as written


def test_the_names_a_deprecated_object_was_read_under() -> None:
    names = _names()
    assert set(names.via("logistics.shipments__v1.notes")) == {"logistics.shipments.notes"}
    assert set(names.via("logistics.shipments__v2.notes")) == {
        "logistics.shipments.notes",
        "logistics.shipments__v1.notes",
    }
    assert names.served_columns("logistics.shipments") == ("shipment_id", "dest_zip", "notes")


def test_the_log_the_report_and_the_gate_use_one_name(tmp_path: Path) -> None:
    """The gate asks by the contract's id (`logistics.shipments.notes`), the log holds the physical table's
    name: the same object, named the same way in all three."""
    Ledger(tmp_path).append(LEDGER)
    record_watermark(tmp_path, Watermark("history", NOW - timedelta(hours=2), NOW, T0, 30, 0))

    def read(obj: str, user: str, sid: str, days: int) -> ReaderRow:
        return ReaderRow(obj, "read", user, "sql", sid, NOW - timedelta(days=days), "history")

    rows = [read(f"{ALIAS}.notes", "dispatch", f"d{n}", n) for n in range(1, 4)]
    rows.append(read(f"{ALIAS}.dest_zip", "bi", "z", 2))
    assert append_readers(tmp_path, rows, NOW) == 3  # dest_zip: not served by the view then, read nothing
    assert {r["object"] for r in read_rows(tmp_path)} == {"logistics.shipments__v2.notes"}
    verdict = readers_gate(tmp_path, ["logistics.shipments.notes"], timedelta(days=14), NOW)
    assert not verdict.open
    assert verdict.reasons == (
        "logistics.shipments__v2.notes (logistics.shipments.notes): 1 reader(s) since 2026-10-27 00:00 UTC: "
        "dispatch (sql)",
    )
    logged, objects, consumers = canonical_input(
        read_rows(tmp_path), ["logistics.shipments.notes"], {"logistics.shipments.notes": ["dispatch"]},
        Names.load(tmp_path), NOW,
    )  # fmt: skip
    (report,) = build_report(logged, objects, consumers)
    assert report.name == "logistics.shipments__v2.notes"
    assert [(r.user, r.reads, r.declared) for r in report.readers] == [("dispatch", 3, True)]


def test_without_a_ledger_names_stay_as_written(tmp_path: Path) -> None:
    names = Names.load(tmp_path / "nowhere")
    assert names.canonical("Sales.Orders.Legacy", NOW) == ("sales.orders.legacy",)
    assert names.via("sales.orders") == ()
