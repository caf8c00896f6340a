"""What the readers log can know: every readers view says "unknown before …" where a source is younger than
the window, and "no readers" only where the log covers it (one wording, from telemetry.coverage)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.telemetry.coverage import coverage
from delta_contracts.telemetry.gate import readers_gate
from delta_contracts.telemetry.log import ReaderRow, Retirement, Watermark, append_readers, record_watermark
from delta_contracts.telemetry.report import build_report, render_json, render_markdown, render_text
from delta_contracts.telemetry.report_html import render_html

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
SINCE = NOW - timedelta(days=14)


def _mark(source: str, start: datetime | None, end: datetime | None) -> Watermark:
    return Watermark(source, end, NOW, start, 10 if end else 0, 0)


def test_a_source_younger_than_the_window_leaves_reads_before_it_unknown() -> None:
    young = NOW - timedelta(minutes=20)
    covered = coverage(
        {"eventlog:/logs": _mark("eventlog:/logs", young, NOW)}, SINCE, NOW - timedelta(days=1)
    )
    assert not covered.complete and covered.unknown_before == young
    assert covered.no_readers() == "no reads recorded; readers unknown before 2026-11-28 11:40 UTC"
    assert any("earlier reads are unknown" in p for p in covered.problems)
    assert covered.lines()[0] == (
        "source eventlog:/logs: statements from 2026-11-28 11:40 UTC to 2026-11-28 12:00 UTC "
        "(collected 2026-11-28 12:00 UTC)"
    )


def test_the_latest_start_and_the_stalest_watermark_bound_what_is_known() -> None:
    marks = {
        "a": _mark("a", SINCE - timedelta(days=1), NOW - timedelta(days=3)),  # stale
        "b": _mark("b", NOW - timedelta(days=2), NOW),  # young
        "c": _mark("c", SINCE - timedelta(days=9), NOW),  # covers
    }
    covered = coverage(marks, SINCE, NOW - timedelta(days=1))
    assert covered.unknown_before == NOW - timedelta(days=2)
    assert covered.unknown_after == NOW - timedelta(days=3)
    assert covered.no_readers() == (
        "no reads recorded; readers unknown before 2026-11-26 12:00 UTC "
        "and unknown after 2026-11-25 12:00 UTC"
    )


def test_no_readers_only_when_every_source_covers_the_window() -> None:
    old = {"h": _mark("h", SINCE - timedelta(days=1), NOW)}
    assert (
        coverage(old, SINCE, NOW - timedelta(days=1)).no_readers() == "no readers since 2026-11-14 12:00 UTC"
    )
    assert coverage({}, SINCE, NOW).no_readers() == "readers unknown: no telemetry collected"
    empty = {"h": _mark("h", None, None)}
    assert coverage(empty, SINCE, NOW).no_readers() == "no reads recorded; readers unknown"
    retired = {"h": Retirement("h", NOW, "audit", "ann")}
    assert coverage(old, SINCE, NOW, retired).gap() == "readers unknown"


ROWS = [
    {
        "object": "crew.members.grade",
        "kind": "read",
        "user": "ann",
        "client": "spark:nightly",
        "statement_id": "s1",
        "statement_time": NOW - timedelta(minutes=5),
        "source": "eventlog:/logs",
    }
]


def test_every_view_of_the_report_says_what_it_cannot_know() -> None:
    young = NOW - timedelta(minutes=20)
    covered = coverage(
        {"eventlog:/logs": _mark("eventlog:/logs", young, NOW)}, SINCE, NOW - timedelta(days=1)
    )
    reports = build_report(ROWS, ["crew.members.seniority_no", "crew.members.grade"], {}, None, covered)
    unknown = "readers unknown before 2026-11-28 11:40 UTC"
    text = render_text(reports)
    assert "No readers" not in text and "no readers" not in text
    assert f"crew.members.seniority_no: no reads recorded; {unknown}" in text
    assert re.search(rf"crew.members.grade: 1 reader\(s\).*; {unknown}", text)
    assert "source eventlog:/logs: statements from 2026-11-28 11:40 UTC" in text
    data = json.loads(render_json(reports))
    assert data["coverage"]["unknown_before"] == young.isoformat() and not data["coverage"]["complete"]
    assert data["objects"][0]["verdict"] == f"no reads recorded; {unknown}"
    markdown = render_markdown(reports)
    assert "No readers" not in markdown and f"No reads recorded; {unknown}." in markdown
    html = render_html(reports)
    assert "No readers" not in html and f"No reads recorded; {unknown}." in html
    assert "Telemetry coverage" in html


def _log(warehouse: Path, start: datetime, end: datetime) -> None:
    state = warehouse / "_delta_contracts"
    append_readers(
        state, [ReaderRow("crew.members.grade", "read", "ann", "spark:x", "s1", end, "eventlog:/l")], end
    )
    record_watermark(state, Watermark("eventlog:/l", end, end, start, 3, 0))


def test_telemetry_report_text_and_html_for_a_young_source(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    warehouse = tmp_path / "warehouse"
    _log(warehouse, now - timedelta(minutes=7), now - timedelta(minutes=1))
    runner = CliRunner()
    common = ["--warehouse", str(warehouse), "--objects", "crew.members.seniority_no"]
    text = runner.invoke(app, ["telemetry", "report", *common])
    assert text.exit_code == 0, text.output
    start = f"{now - timedelta(minutes=7):%Y-%m-%d %H:%M} UTC"
    assert f"crew.members.seniority_no: no reads recorded; readers unknown before {start}" in text.stdout
    assert "no readers" not in text.stdout.casefold()
    page = tmp_path / "readers.html"
    html = runner.invoke(app, ["telemetry", "report", *common, "--format", "html", "-o", str(page)])
    assert html.exit_code == 0, html.output
    body = page.read_text(encoding="utf-8")
    assert f"No reads recorded; readers unknown before {start}." in body and "No readers" not in body
    # The same log, asked about the last 5 minutes only: it covers them, and says so.
    since = runner.invoke(
        app, ["telemetry", "report", *common, "--since", (now - timedelta(minutes=5)).isoformat()]
    )
    assert "crew.members.seniority_no: no readers since" in since.stdout, since.output


def test_the_gate_and_the_report_name_the_same_gap(tmp_path: Path) -> None:
    state = tmp_path / "_delta_contracts"
    young = NOW - timedelta(minutes=20)
    _log(tmp_path, young, NOW)
    verdict = readers_gate(state, ["crew.members.seniority_no"], timedelta(days=14), NOW)
    marks = {"eventlog:/l": Watermark("eventlog:/l", NOW, NOW, young, 3, 0)}
    assert not verdict.open
    assert list(verdict.reasons) == list(coverage(marks, SINCE, NOW - timedelta(days=1)).problems)
