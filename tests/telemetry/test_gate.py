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


def test_a_retired_one_off_source_stops_holding_the_gate_and_its_reads_still_count(tmp_path: Path) -> None:
    """A one-off export collected once keeps every gate shut (stale forever) until it is retired on purpose;
    the reads it logged still count, and collecting it again brings it back."""
    from delta_contracts.telemetry.log import retire_source, retirements

    _collected(tmp_path, watermark=NOW - timedelta(hours=1), covered_from=NOW - timedelta(days=60))
    oneoff = Watermark(
        "oneoff", NOW - timedelta(days=5), NOW - timedelta(days=5), NOW - timedelta(days=6), 3, 0
    )
    record_watermark(tmp_path, oneoff)
    shut = readers_gate(tmp_path, ["sales.orders.legacy"], LOOKBACK, NOW)
    assert not shut.open and any(r.startswith("stale readers log: source oneoff") for r in shut.reasons)
    retire_source(tmp_path, "oneoff", "a one-off export for the audit", "ann", NOW - timedelta(hours=1))
    assert retirements(tmp_path)["oneoff"].reason == "a one-off export for the audit"
    assert readers_gate(tmp_path, ["sales.orders.legacy"], LOOKBACK, NOW).open
    read = ReaderRow("sales.orders.legacy", "read", "auditor", "csv", "x1", NOW - timedelta(days=5), "oneoff")
    append_readers(tmp_path, [read], NOW)
    counted = readers_gate(tmp_path, ["sales.orders.legacy"], LOOKBACK, NOW)
    assert not counted.open and counted.readers == {"sales.orders.legacy": ("auditor (csv)",)}
    record_watermark(
        tmp_path, Watermark("oneoff", NOW - timedelta(days=4), NOW, NOW - timedelta(days=6), 1, 0)
    )
    again = readers_gate(tmp_path, ["sales.orders.amount"], LOOKBACK, NOW)
    assert any(r.startswith("stale readers log: source oneoff") for r in again.reasons)


def test_retiring_needs_a_known_source_and_a_reason_and_every_source_retired_keeps_it_shut(
    tmp_path: Path,
) -> None:
    import pytest

    from delta_contracts.telemetry.log import retire_source

    _collected(tmp_path, watermark=NOW, covered_from=NOW - timedelta(days=60))
    with pytest.raises(ValueError, match=r"no source 'histroy' was ever collected \(collected: history\)"):
        retire_source(tmp_path, "histroy", "typo", "ann", NOW)
    with pytest.raises(ValueError, match="needs a reason"):
        retire_source(tmp_path, "history", "  ", "ann", NOW)
    retire_source(tmp_path, "history", "moved to lineage", "ann", NOW + timedelta(seconds=1))
    verdict = readers_gate(tmp_path, ["sales.orders"], LOOKBACK, NOW)
    assert not verdict.open
    assert verdict.reasons[0].startswith("every telemetry source is retired")


def test_the_retire_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from delta_contracts.cli import app

    _collected(tmp_path / "wh" / "_delta_contracts", watermark=NOW, covered_from=NOW - timedelta(days=60))
    runner = CliRunner()
    base = ["telemetry", "retire", "--warehouse", str(tmp_path / "wh")]
    bad = runner.invoke(app, [*base, "--source", "nope", "--reason", "gone"])
    assert bad.exit_code == 2 and "no source 'nope' was ever collected" in bad.output
    assert bad.exception is None or isinstance(bad.exception, SystemExit)
    done = runner.invoke(app, [*base, "--source", "history", "--reason", "decommissioned cluster"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("retired history at ") and "decommissioned cluster" in done.output
