"""No statement stops a collection: pathological texts and a public history through the CLI, on `local`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from delta_contracts.telemetry.log import read_rows, watermarks
from tests.telemetry.public_history import history_rows

pytestmark = pytest.mark.engine
ROOT = Path(__file__).parent.parent.parent
BASE = datetime(2026, 11, 1, tzinfo=UTC)
WATCHED = "sales.orders"

# (id, text) in time order; the last statement is a plain read, after every bad one.
PATHOLOGICAL: list[tuple[str, str]] = [
    ("collation", "select map('a' COLLATE UTF8_LCASE, 'b', 'c')"),  # sqlglot raises IndexError
    ("nested", "SELECT " + "(" * 5000 + "1" + ")" * 5000 + " FROM sales.orders"),
    ("huge", "SELECT legacy_code FROM sales.orders WHERE id IN (" + "12345, " * 150_000 + "1)"),
    ("nul", "SELECT legacy_code FROM sales.orders\x00 WHERE id = 1"),
    ("prose", "please send the quarterly numbers"),
    ("utf8", "SELECT legacy_code FROM sales.orders WHERE note = 'INVALID'"),  # bytes made invalid below
    ("good", "SELECT legacy_code FROM sales.orders WHERE id = 2"),
]
PUBLIC_SAMPLE = 600  # public statements, each its own shape: enough to go through the worker pool


def _history(path: Path) -> Path:
    lines: list[bytes] = []
    for index, (sid, text) in enumerate(PATHOLOGICAL):
        row = {
            "statement_id": sid,
            "executed_by": "erin",
            "statement_text": text,
            "client_application": "notebook",
            "start_time": (BASE + timedelta(hours=index)).isoformat(),
        }
        line = json.dumps(row, ensure_ascii=False).encode("utf-8")
        lines.append(line.replace(b"INVALID", b"\xff\xfe\xc3("))  # not UTF-8: the source file is damaged
    for public in history_rows(PUBLIC_SAMPLE, commented=0.0):
        public["start_time"] = (BASE - timedelta(days=1)).isoformat()  # older: the watermark is "good"
        lines.append(json.dumps(public, ensure_ascii=False).encode("utf-8"))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "delta_contracts", "telemetry", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_no_statement_stops_a_collection(tmp_path: Path) -> None:
    history = _history(tmp_path / "history.jsonl")
    warehouse = tmp_path / "warehouse"
    source = f"query-history:{history}"
    total = len(PATHOLOGICAL) + PUBLIC_SAMPLE

    extracted = _cli(tmp_path, "extract", "--source", source, "--warehouse", str(warehouse))
    assert extracted.returncode == 0, extracted.stderr
    assert "Traceback" not in extracted.stderr
    answers = {line["statement_id"]: line for line in map(json.loads, extracted.stdout.splitlines())}
    assert len(answers) == total  # every statement answered: a result or an error
    assert answers["collation"]["error"].startswith("IndexError")
    assert answers["nested"]["error"] is not None
    assert answers["huge"]["error"].startswith("not parsed")
    assert answers["prose"]["error"] is not None
    assert answers["good"] == {
        "statement_id": "good",
        "tables_read": ["sales.orders"],
        "tables_written": [],
        "columns_read": [],
        "error": None,
    }

    collected = _cli(
        tmp_path, "collect", "--source", source, "--warehouse", str(warehouse), "--object", WATCHED
    )
    assert collected.returncode == 0, collected.stderr
    assert "Traceback" not in collected.stderr
    assert f"{total} statement(s)" in collected.stdout
    assert "IndexError: 1" in collected.stdout  # extraction's own kind: what sqlglot raised
    assert "too_long: 1" in collected.stdout
    state = warehouse / "_delta_contracts"
    mark = watermarks(state)[source]
    assert mark.watermark == BASE + timedelta(hours=len(PATHOLOGICAL) - 1)  # moved past every bad statement
    assert mark.statements == total
    logged = {(r["statement_id"], r["kind"]) for r in read_rows(state)}
    assert {("good", "read"), ("nul", "read"), ("utf8", "read")} <= logged
    assert ("huge", "possible") in logged  # not parsed, but it names the table: the gate stays shut
