"""`delta-contracts site`: the static site from a git repository of contracts, its migrations, a real apply
ledger and readers log (written with their own append functions) and a recorded validate result; every page
loaded in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.plan.migrations import load_history, table_folder
from delta_contracts.state.ledger import Ledger, LedgerEntry, Status
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, record_watermark
from tests.browser import load_pages

REPO = Path(__file__).resolve().parents[1]
NOW = datetime.now(UTC).replace(microsecond=0)
HOSTILE = '<script>alert(1)</script><img src="http://example.com/x.png">'


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _ledger(project: Path) -> None:
    """sales.orders applied up to 3.0.0 except the drops, whose deprecation marks were set two days ago."""
    rows = []
    for stored in load_history(table_folder(project / "migrations", "sales.orders")):
        ops = list(enumerate(stored.migration.ops, start=1))
        first_drop = next((i for i, op in ops if op.kind in ("drop_columns", "drop_table")), len(ops) + 1)
        for index, op in ops[: first_drop - 1]:  # everything before the first drop ran
            # a rename is recorded under the table's new name, as the runner records it
            renamed = ".".join(op.new_name) if op.kind == "rename_table" else ""  # type: ignore[attr-defined]
            rows.append(
                LedgerEntry(
                    "sales.orders",
                    stored.migration_id,
                    renamed or ".".join(op.table),
                    op.phase.value,
                    index,
                    op.kind,
                    Status.SUCCEEDED,
                    ended_at=NOW - timedelta(days=2),
                    to_version=stored.migration.to_version,
                    renamed_from=".".join(op.table) if renamed else "",
                )
            )
    Ledger(project / "warehouse" / "_delta_contracts").append(rows)


def _readers(project: Path) -> None:
    state = project / "warehouse" / "_delta_contracts"
    rows = [
        ReaderRow(
            "sales.orders__v2.coupon_code",
            "read",
            "finance-recon",
            "Databricks SQL",
            f"q{d}",
            NOW - timedelta(days=d),
            "query-history:h.jsonl",
        )
        for d in range(1, 6)
    ]
    append_readers(state, rows, NOW)
    record_watermark(state, Watermark("query-history:h.jsonl", NOW, NOW, NOW - timedelta(days=40), 50, 0))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / "contracts", root / "contracts")
    shutil.copytree(REPO / "migrations", root / "migrations")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the contracts")
    customers = root / "contracts/sales/customers.yaml"
    text = customers.read_text(encoding="utf-8").replace("version: 1.2.0", "version: 1.2.1")
    text = re.sub(
        r"(?m)^description: .*$", f"description: {json.dumps(HOSTILE + ' One row per customer.')}", text
    )
    customers.write_text(text, encoding="utf-8")
    _git(root, "commit", "-qam", "customers: a new description <b>bold?</b>")
    _ledger(root)
    _readers(root)
    (root / "validate.json").write_text(
        json.dumps(
            {
                "tables": [
                    {
                        "contract": "sales.orders",
                        "version": "3.0.0",
                        "table": "sales.orders__v3",
                        "rows": 3,
                        "passed": False,
                        "error": None,
                        "rules": [
                            {
                                "rule": "order_total_min",
                                "kind": "check",
                                "passed": False,
                                "failing": 1,
                                "detail": "order_total >= 0",
                                "samples": [],
                            }
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(root)
    return root


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [v for k, v in attrs if k in ("href", "src") and v]


def test_the_site_shows_each_table_and_loads_cleanly_in_chromium(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = CliRunner().invoke(app, ["site", "-o", str(out), "--validation", "validate.json"])
    assert result.exit_code == 0, result.output
    pages = sorted(out.rglob("*.html"))
    ids = ["payments.transactions", "sales.customers", "sales.orders"]
    assert [p.relative_to(out).as_posix() for p in pages] == ["index.html"] + [
        f"tables/{i}.html" for i in ids
    ]

    index = (out / "index.html").read_text(encoding="utf-8")
    for contract in ids:  # the index lists every contract
        assert f'<a href="tables/{contract}.html">{contract}</a>' in index
    for page in pages:  # every link resolves, inside the folder
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            assert not urlparse(link).scheme, f"{page.name}: {link} leaves the folder"
            target = (page.parent / unquote(link.split("#")[0])).resolve()
            assert target.is_file() and out.resolve() in target.parents, (
                f"{page.name}: {link} does not resolve"
            )

    orders = (out / "tables/sales.orders.html").read_text(encoding="utf-8")
    section = orders[orders.index("<h3>0003_1.1.0_to_2.0.0") : orders.index("<h3>0002_")]
    drop = re.search(r"<tr><td>\d+</td><td>contract</td><td>drop columns coupon_code</td>(.*?)</tr>", section)
    assert drop and "waiting at its gate" in drop.group(1)
    ends = f"{NOW - timedelta(days=2) + timedelta(days=30):%Y-%m-%d %H:%M}"
    assert (
        f"deprecation window P30D since {NOW - timedelta(days=2):%Y-%m-%d %H:%M} UTC ends {ends}"
        in drop.group(1)
    )
    assert "finance-recon (Databricks SQL)" in drop.group(1)  # the readers gate names the reader
    assert re.search(r"<td>\d+</td><td>expand</td><td>set delta\.columnMapping.*?applied", section)
    assert 'contract <span class="state waiting">waiting at its gate</span>' in section
    readers = orders[orders.index("Readers of deprecated objects") : orders.index("<h2>Drift")]
    column = readers[readers.index("<code>sales.orders__v2.coupon_code</code>") :]
    assert column.count('data-reader="finance-recon (Databricks SQL)"') == 5  # a bar per day read
    # a read of the retired table's column is a read of that table too
    table = readers[readers.index("<code>sales.orders__v2</code>") : readers.index("<code>sales.orders__v2.")]
    assert table.count('data-reader="finance-recon (Databricks SQL)"') == 5
    assert "no (unknown reader)" in readers
    assert '<span class="state failed">failed</span> on 3 row(s)' in orders and "order_total_min" in orders
    assert "Not checked: live state needs <code>--engine</code>" in orders

    customers = (out / "tables/sales.customers.html").read_text(encoding="utf-8")
    assert '<span class="patch">DC-DC601</span> table description changed' in customers
    assert "customers: a new description &lt;b&gt;bold?&lt;/b&gt;" in customers
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in customers
    assert all("<script" not in p.read_text(encoding="utf-8") for p in pages)
    assert '<span class="tag pii">PII</span>' in customers  # email matches the project's pii rule

    urls = [p.as_uri() for p in pages]
    shots = {
        urls[0]: tmp_path / "index.png",
        (out / "tables/sales.orders.html").as_uri(): tmp_path / "orders.png",
    }
    # The check can fail: a page that calls out and logs an error, loaded by the same browser, is caught.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<img src="http://127.0.0.1:9/x.png"><script>console.error("boom")</script>', encoding="utf-8"
    )
    loaded = load_pages([bad.as_uri(), *urls], shots)
    caught = loaded.pop(bad.as_uri())
    assert "http://127.0.0.1:9/x.png" in caught.requests and any("boom" in e for e in caught.errors)
    folder = out.resolve().as_uri() + "/"
    for url, load in loaded.items():
        assert load.errors == [], f"{url}: {load.errors}"
        assert load.requests and all(r.startswith(folder) for r in load.requests), load.requests
    for shot in shots.values():
        assert shot.stat().st_size > 20_000
    artifacts = REPO / "build"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shots[urls[0]], artifacts / "site-index.png")
    shutil.copy(tmp_path / "orders.png", artifacts / "site-sales.orders.png")


def test_a_validation_file_that_is_not_json_is_exit_2(project: Path, tmp_path: Path) -> None:
    (project / "bad.json").write_text("{", encoding="utf-8")
    result = CliRunner().invoke(app, ["site", "-o", str(tmp_path / "s"), "--validation", "bad.json"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--validation bad.json: not the JSON `validate --format json` writes" in result.output
    assert "line 1 column 2" in result.output


def test_one_pii_badge_per_column_and_no_absolute_paths(project: Path, tmp_path: Path) -> None:
    """Issue 47 item 7: a column `pii: true` and tagged `pii` by a column rule showed `PII pii`; the index
    named the building machine's absolute paths (the ledger's, the readers log's, the validate file's)."""
    out = tmp_path / "site"
    result = CliRunner().invoke(app, ["site", "-o", str(out), "--validation", "validate.json"])
    assert result.exit_code == 0, result.output
    customers = (out / "tables/sales.customers.html").read_text(encoding="utf-8")
    badges = re.findall(r'<span class="tag[^"]*">([^<]*)</span>', customers)
    assert badges.count("PII") >= 1 and "pii" not in badges, badges
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text, page.name
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "validate.json" in index and "readers log" in index
