"""The readers gate over real Delta tables written by delta-rs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.telemetry.gate import readers_gate
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, record_watermark

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LOOKBACK = timedelta(days=14)


def _collected(state: Path, *, watermark: datetime, covered_from: datetime, source: str = "history") -> None:
    record_watermark(state, Watermark(source, watermark, NOW, covered_from, 10, 0))


def _read(obj: str, when: datetime, *, kind: str = "read", user: str = "alice", sid: str = "s1") -> ReaderRow:
    return ReaderRow(obj, kind, user, "notebook", sid, when, "history")


def test_no_log_keeps_the_gate_shut(tmp_path: Path) -> None:
    verdict = readers_gate(tmp_path / "state", ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert "no telemetry collected" in verdict.reasons[0]


def test_no_objects_keeps_it_shut(tmp_path: Path) -> None:
    assert not readers_gate(tmp_path, [], LOOKBACK, NOW).open


def test_a_covered_window_without_readers_opens(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW - timedelta(hours=1), covered_from=NOW - timedelta(days=60))
    append_readers(tmp_path, [_read("sales.orders.legacy", NOW - timedelta(days=20))], NOW)
    verdict = readers_gate(tmp_path, ["sales.orders.legacy"], LOOKBACK, NOW)
    assert verdict.open, verdict.reasons
    assert verdict.readers == {}


def test_a_read_in_the_window_shuts_it_and_names_the_reader(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW - timedelta(hours=1), covered_from=NOW - timedelta(days=60))
    append_readers(tmp_path, [_read("Sales.Orders.Legacy", NOW - timedelta(days=2), user="bob")], NOW)
    verdict = readers_gate(tmp_path, ["sales.orders.LEGACY"], LOOKBACK, NOW)
    assert not verdict.open
    assert verdict.readers == {"sales.orders.legacy": ("bob (notebook)",)}


def test_a_column_read_counts_for_its_table_not_for_another_column(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=60))
    append_readers(tmp_path, [_read("sales.orders.legacy", NOW - timedelta(days=1))], NOW)
    assert not readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW).open
    assert readers_gate(tmp_path, ["sales.orders.amount"], LOOKBACK, NOW).open
    assert readers_gate(tmp_path, ["sales.orders_v2"], LOOKBACK, NOW).open


def test_a_possible_reader_counts_as_a_reader(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=60))
    append_readers(tmp_path, [_read("sales.orders", NOW - timedelta(days=1), kind="possible")], NOW)
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert verdict.readers["sales.orders"] == ("alice (notebook) [possible]",)


def test_a_stale_watermark_keeps_it_shut(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW - timedelta(days=15), covered_from=NOW - timedelta(days=60))
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert any("stale readers log" in r for r in verdict.reasons)


def test_a_log_last_collected_inside_the_window_but_not_lately_keeps_it_shut(tmp_path: Path) -> None:
    """Collected up to 13 days ago: inside a 14-day window, but the reads of the last 13 days are unknown."""
    _collected(tmp_path, watermark=NOW - timedelta(days=13), covered_from=NOW - timedelta(days=60))
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    (reason,) = verdict.reasons
    assert "stale readers log: source history was collected up to 2026-11-10 12:00 UTC" in reason
    assert "before 2026-11-22 12:00 UTC (telemetry.freshness)" in reason


def test_freshness_is_a_setting(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW - timedelta(hours=30), covered_from=NOW - timedelta(days=60))
    assert not readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW).open  # default: one day
    assert readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW, freshness=timedelta(days=2)).open
    assert not readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW, freshness=timedelta(hours=6)).open


def test_a_log_from_the_windows_start_to_within_the_allowance_opens(tmp_path: Path) -> None:
    """The edges of coverage are inclusive: first statement at `now - lookback`, watermark `now - 1 day`."""
    _collected(tmp_path / "a", watermark=NOW - timedelta(days=1), covered_from=NOW - LOOKBACK)
    verdict = readers_gate(tmp_path / "a", ["sales.orders"], LOOKBACK, NOW)
    assert verdict.open, verdict.reasons
    late = NOW - LOOKBACK + timedelta(minutes=1)
    _collected(tmp_path / "b", watermark=NOW - timedelta(days=1), covered_from=late)
    assert not readers_gate(tmp_path / "b", ["sales.orders"], LOOKBACK, NOW).open


def test_a_source_added_after_the_windows_start_keeps_it_shut_beside_a_full_one(tmp_path: Path) -> None:
    """Every source must cover the window: reads on a new source's system before it was added are unknown."""
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=60))
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=2), source="eventlog")
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert verdict.reasons == (
        "source eventlog starts at 2026-11-21 12:00 UTC, after the window's start 2026-11-09 12:00 UTC: "
        "earlier reads are unknown",
    )


def test_one_stale_source_among_fresh_ones_keeps_it_shut(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=60))
    _collected(
        tmp_path, watermark=NOW - timedelta(days=30), covered_from=NOW - timedelta(days=60), source="ev"
    )
    assert not readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW).open


def test_a_log_younger_than_the_window_keeps_it_shut(tmp_path: Path) -> None:
    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=3))
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert any("earlier reads are unknown" in r for r in verdict.reasons)


def test_the_newest_watermark_of_a_source_counts(tmp_path: Path) -> None:
    record_watermark(
        tmp_path,
        Watermark("h", NOW - timedelta(days=20), NOW - timedelta(days=20), NOW - timedelta(days=90), 1, 0),
    )
    assert not readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW).open
    record_watermark(tmp_path, Watermark("h", NOW, NOW, NOW - timedelta(days=90), 1, 0))
    assert readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW).open


def test_appending_the_same_rows_twice_adds_nothing(tmp_path: Path) -> None:
    rows = [_read("sales.orders", NOW, sid="a"), _read("sales.orders", NOW, sid="b")]
    assert append_readers(tmp_path, rows, NOW) == 2
    assert append_readers(tmp_path, rows, NOW) == 0
