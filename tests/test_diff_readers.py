"""`diff --base REF --readers`: the readers of each object a pull request breaks, from a real readers log
(written with the log's own append functions, as `telemetry collect` writes it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.load import parse_contract
from delta_contracts.diff import diff
from delta_contracts.diff.affected import affected_objects
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, record_watermark

REPO = Path(__file__).resolve().parents[1]
NOW = datetime.now(UTC).replace(microsecond=0)
AMOUNT = """  - name: amount
    type: decimal(12,2)
    description: Order total in the order currency (the 2.0.0 name).
    deprecated: {since: 2.0.0, replaced_by: order_total}
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _drop_column(path: Path, column: str, version: str) -> None:
    text = path.read_text(encoding="utf-8")
    text = re.sub(rf"  - name: {column}\n(?:    .*\n)+?(?=  - name)", "", text)
    path.write_text(re.sub(r"(?m)^version: .*$", f"version: {version}", text), encoding="utf-8")


@pytest.fixture
def pull_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example project with `sales.orders.amount` (deprecated) committed; the pull request drops it,
    and drops `sales.customers.lifetime_value`, a table no telemetry has seen."""
    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    orders = tmp_path / "contracts/sales/orders.yaml"
    text = orders.read_text(encoding="utf-8")
    orders.write_text(text.replace("  - name: status\n", AMOUNT + "  - name: status\n", 1), encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    _drop_column(orders, "amount", "4.0.0")
    _drop_column(tmp_path / "contracts/sales/customers.yaml", "lifetime_value", "2.0.0")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _row(obj: str, user: str, sid: str, days_ago: float, client: str = "Databricks SQL") -> ReaderRow:
    return ReaderRow(obj, "read", user, client, sid, NOW - timedelta(days=days_ago), "query-history:h.jsonl")


def _log(warehouse: Path, rows: list[ReaderRow], covered_from: datetime, watermark: datetime) -> None:
    """A readers log as `telemetry collect` leaves it: the rows and the source's watermark."""
    state = warehouse / "_delta_contracts"
    append_readers(state, rows, NOW)
    record_watermark(state, Watermark("query-history:h.jsonl", watermark, NOW, covered_from, 100, 0))


def _entry(markdown: str, name: str) -> str:
    """The Markdown section of one object: from its heading to the next one."""
    start = markdown.index(f"### `{name}`")
    end = markdown.find("\n### ", start + 1)
    return markdown[start : end if end >= 0 else None]


def _diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["diff", "--base", "HEAD", "--readers", *args])
    return result.exit_code, result.output


def test_the_objects_a_change_breaks_readers_of() -> None:
    old = parse_contract(
        "apiVersion: delta-contracts/v1\nid: s.t\nversion: 1.0.0\nowner: {team: t}\n"
        "consumers: [{name: bi}]\ncolumns:\n"
        "  - {name: a, type: int}\n  - {name: b, type: string}\n  - {name: c, type: int}\n"
        "  - {name: d, type: string, checks: {enum: [x, y]}}\n  - {name: e, type: int}\n"
        "  - {name: f, type: string}\n  - {name: g, type: int}\n",
        Path("old.yaml"),
    ).contract
    new = parse_contract(
        "apiVersion: delta-contracts/v1\nid: s.t\nversion: 2.0.0\nowner: {team: t}\ncolumns:\n"
        "  - {name: b2, type: string, renamed_from: b, nullable: false}\n"  # renamed and tightened
        "  - {name: c, type: string}\n"  # retyped
        "  - {name: d, type: string, checks: {enum: [x]}}\n"  # narrowed
        "  - {name: e, type: bigint, description: wider}\n"  # widened
        "  - {name: f, type: string, deprecated: {since: 2.0.0}}\n"
        "  - {name: g, type: int, checks: {min: 0}}\n"  # a new CHECK
        "  - {name: h, type: int}\n",  # an addition breaks no reader
        Path("new.yaml"),
    ).contract
    found = {a.object: sorted(c.code for c in a.changes) for a in affected_objects(old, new, diff(old, new))}
    assert found == {
        "s.t.a": ["DC-DS103"],
        "s.t.b": ["DC-BC102", "DC-MF104"],  # by the name readers use before the rename
        "s.t.c": ["DC-MF107"],
        "s.t.d": ["DC-CK306"],
        "s.t.e": ["DC-MF106"],
        "s.t.f": ["DC-LC701"],
        "s.t.g": ["DC-CK301"],
    }
    assert [a.object for a in affected_objects(old, None, [])] == []


def test_a_pull_request_names_the_readers_of_a_dropped_column(pull_request: Path) -> None:
    warehouse = pull_request / "warehouse"
    rows = [
        # the demo's history: finance-recon reads amount through the retired 2.0.0 table
        *(_row("sales.orders__v2.amount", "finance-recon", f"day0-{n}", n + 0.5) for n in range(3)),
        _row("sales.orders__v2.amount", "billing-service", "bill-7", 2, client="jobs"),  # a declared consumer
        _row("sales.orders__v2.amount", "old-job", "old-1", 40),  # before the 14-day reader_lookback
        _row("sales.orders__v2.coupon_code", "coupon-job", "cp-1", 1),  # another column
    ]
    _log(warehouse, rows, NOW - timedelta(days=60), NOW - timedelta(hours=2))
    code, out = _diff("--warehouse", str(warehouse), "--format", "markdown")
    assert code == 0, out
    section = out[out.index("## Readers of what changes") :]
    orders = _entry(section, "sales.orders.amount")
    unknown = orders[orders.index("**Unknown readers**") : orders.index("**Declared consumers**")]
    last = f"{NOW - timedelta(days=0.5):%Y-%m-%d %H:%M} UTC"
    assert f"| finance-recon | Databricks SQL | 3 | {last} | day0-0 |" in unknown
    declared = orders[orders.index("**Declared consumers**") :]
    assert "| billing-service | jobs | 1 |" in declared and "bill-7" in declared
    assert "old-job" not in section and "coupon-job" not in section
    assert "Read as `sales.orders__v2.amount`." in orders
    customers = _entry(section, "sales.customers.lifetime_value")
    assert "**No telemetry for this table**" in customers
    assert "| user |" not in customers  # never an empty table of readers that reads as "nobody"

    # JSON carries the same, one entry per object
    code, out = _diff("--warehouse", str(warehouse), "--format", "json")
    objects = {o["object"]: o for o in json.loads(out)["readers"]["objects"]}
    assert objects["sales.orders.amount"]["status"] == "read"
    readers = {r["user"]: r for r in objects["sales.orders.amount"]["readers"]}
    assert readers.keys() == {"finance-recon", "billing-service"}
    assert readers["finance-recon"]["statements"] == 3 and not readers["finance-recon"]["declared_consumer"]
    assert readers["billing-service"]["declared_consumer"] is True
    assert objects["sales.customers.lifetime_value"]["status"] == "no telemetry"
    assert objects["sales.customers.lifetime_value"]["readers"] == []


def test_without_any_telemetry_every_object_says_so(pull_request: Path) -> None:
    code, out = _diff("--warehouse", str(pull_request / "nowhere"))
    assert code == 0, out
    section = out[out.index("Readers of what changes") :]
    for name in ("sales.orders.amount", "sales.customers.lifetime_value"):
        entry = section[section.index(name) :].splitlines()
        assert entry[1].startswith("  no telemetry for this table: nothing collected at ")
    assert "no reads" not in section and "UNKNOWN reader" not in section and "consumer:" not in section


def test_a_watched_object_nobody_read_and_a_log_that_starts_late(pull_request: Path) -> None:
    warehouse = pull_request / "warehouse"
    # amount was deprecated, so collected: no row in the window is evidence, but the log starts 5 days ago
    _log(warehouse, [_row("sales.orders__v2.amount", "old-job", "old-1", 40)], NOW - timedelta(days=5), NOW)
    code, out = _diff("--warehouse", str(warehouse), "--format", "markdown")
    assert code == 0, out
    orders = _entry(out, "sales.orders.amount")
    # The same wording as `telemetry report` and the gate: no "no readers" where the log cannot know.
    started = f"{NOW - timedelta(days=5):%Y-%m-%d %H:%M} UTC"
    assert f"**No reads recorded; readers unknown before {started}.**" in orders
    assert "- source query-history:" in out and f"statements from {started}" in out
    assert "after the window's start" in orders and "earlier reads are unknown" in orders
    assert "old-job" not in orders


def test_a_source_that_cannot_be_read_is_exit_2(pull_request: Path) -> None:
    code, out = _diff("--source", "history.jsonl")
    assert code == 2 and "expected KIND:LOCATION" in out and "Traceback" not in out
