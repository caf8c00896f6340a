"""The readers report from log rows: text, JSON, Markdown, and HTML rendered by headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.telemetry.coverage import coverage
from delta_contracts.telemetry.log import Watermark
from delta_contracts.telemetry.report import build_report, render_json, render_markdown, render_text
from delta_contracts.telemetry.report_html import render_html

DAY = datetime(2026, 11, 1, 9, tzinfo=UTC)


def _row(obj: str, user: str, client: str, sid: str, day: int, kind: str = "read") -> dict[str, object]:
    return {
        "object": obj,
        "kind": kind,
        "user": user,
        "client": client,
        "statement_id": sid,
        "statement_time": DAY + timedelta(days=day),
        "source": "history",
        "collected_at": DAY + timedelta(days=30),
    }


ROWS = [
    _row("sales.orders.legacy_code", "alice", "notebook", "a1", 0),
    _row("sales.orders.legacy_code", "alice", "notebook", "a2", 1),
    _row("sales.orders.legacy_code", "alice", "notebook", "a3", 1),
    _row("sales.orders.legacy_code", "bi-service", "dashboard", "b1", 2),
    _row("sales.orders.legacy_code", "<script>x</script>", "evil|pipe", "e1", 2, kind="possible"),
    _row("sales.orders__v1", "etl", "job", "j1", 0),
]
CONSUMERS = {"sales.orders.legacy_code": ("bi-service",), "sales.orders__v1": ()}


# One source that covers the window (the 30 days before it was collected).
COVERED = coverage(
    {"history": Watermark("history", DAY + timedelta(days=30), DAY + timedelta(days=30), DAY, 6, 0)},
    DAY,
    DAY + timedelta(days=29),
)


def _reports() -> list:  # type: ignore[type-arg]
    return build_report(
        ROWS,
        ["sales.orders.legacy_code", "sales.orders__v1", "sales.orders.amount"],
        CONSUMERS,
        None,
        COVERED,
    )


def test_readers_counts_and_unknown_readers() -> None:
    legacy, v1, amount = _reports()
    assert [(r.user, r.reads, r.possible) for r in legacy.readers] == [
        ("alice", 3, 0),
        ("<script>x</script>", 1, 1),
        ("bi-service", 1, 0),
    ]
    assert [r.user for r in legacy.unknown] == ["alice", "<script>x</script>"]
    assert legacy.first == DAY and legacy.last == DAY + timedelta(days=2)
    assert legacy.daily["2026-11-02"] == {"alice (notebook)": 2}
    assert v1.reads == 1 and amount.readers == ()


def test_since_filters_reads() -> None:
    [legacy] = build_report(ROWS, ["sales.orders.legacy_code"], CONSUMERS, since=DAY + timedelta(days=2))
    assert {r.user for r in legacy.readers} == {"bi-service", "<script>x</script>"}


def test_a_table_report_counts_reads_of_its_columns() -> None:
    [orders] = build_report(ROWS, ["sales.orders"], {})
    assert orders.reads == 5


def test_text_json_markdown() -> None:
    reports = _reports()
    text = render_text(reports)
    assert (
        "alice (notebook): 3 read(s)" in text
        and "UNKNOWN" in text
        and "sales.orders.amount: no readers since 2026-11-01 09:00 UTC" in text
    )
    data = json.loads(render_json(reports))
    legacy = data["objects"][0]
    assert legacy["reads"] == 5 and legacy["possible_reads"] == 1
    assert legacy["unknown_readers"] == ["alice (notebook)", "<script>x</script> (evil|pipe)"]
    # the reader's latest statements first (a2 and a3 on day 1, in natural order), then a1 of day 0
    assert legacy["readers"][0]["sample_statement_ids"] == ["a2", "a3", "a1"]
    markdown = render_markdown(reports)
    assert "| alice | notebook | 3 | 0 |" in markdown and "evil\\|pipe" in markdown


def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is needed: apt-get install -y chromium (make test installs it)"
    page = tmp_path / "report.html"
    html = render_html(_reports())
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    page.write_text(html, encoding="utf-8")
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    dom = subprocess.run(
        [*flags, "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # the chart: one bar per (day, reader), with the counts
    bars = re.findall(
        r'<rect class="bar"[^>]*data-day="([^"]+)" data-reader="([^"]+)" data-reads="(\d+)"', dom
    )
    assert ("2026-11-02", "alice (notebook)", "2") in bars
    assert ("2026-11-03", "bi-service (dashboard)", "1") in bars
    assert len([b for b in bars if b[1] != "etl (job)"]) == 4
    # the table: a row per reader, unknown readers marked, hostile names escaped (no script injected)
    assert dom.count('<tr class="unknown">') == 3  # alice, the hostile one, etl
    assert "&lt;script&gt;x&lt;/script&gt;" in dom and "<script>x</script>" not in dom
    assert dom.count('aria-sort="none"') == 16  # two sortable tables, 8 columns each
    shot = tmp_path / "report.png"
    subprocess.run(
        [*flags, "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000
    artifacts = Path(__file__).parent.parent.parent / "build"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shot, artifacts / "telemetry-report.png")
