"""Telemetry collection on a real engine: query-history exports, Spark event logs, the readers log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.sql.extract import Catalog
from delta_contracts.telemetry.gate import readers_gate
from delta_contracts.telemetry.log import read_rows
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.pipeline import collect, extracted_statements
from delta_contracts.telemetry.sources import parse_source, read_source

pytestmark = pytest.mark.engine
ROOT = Path(__file__).parent.parent.parent

WATCHED = Watched(
    objects=("sales.orders.legacy_code", "sales.orders__v1"),
    catalog=Catalog(
        views={"sales.orders_compat": "SELECT id, legacy_code FROM sales.orders__v1"},
        schemas={"sales.orders": ("id", "legacy_code", "amount")},
    ),
)
BASE = datetime(2026, 11, 1, tzinfo=UTC)

# (id, text, user, hours after BASE); the hostile texts must not stop anything
HISTORY: list[tuple[str, str | None, str, int]] = [
    ("q1", "SELECT legacy_code FROM sales.orders WHERE id = 1", "alice", 1),
    ("q2", "SELECT legacy_code FROM sales.orders WHERE id = 2", "alice", 2),
    ("q3", "SELECT id, amount FROM sales.orders", "bob", 3),
    ("q4", "SELECT * FROM sales.orders_compat", "carol", 4),
    ("q5", "SELECT legacy_code FROM sales.orders WHERE", "dan", 5),  # truncated: a possible reader
    ("q6", "", "erin", 6),
    ("q7", None, "erin", 7),
    ("q8", "\x00\x01\x02\udcff binary", "erin", 8),
    ("q9", "please send the quarterly numbers", "erin", 9),
    ("q10", "SELECT " + "(" * 3000, "erin", 10),
    ("q11", "INSERT INTO sales.orders__v1 SELECT 1, 'x'", "frank", 11),  # a writer, not a reader
    ("q12", "WITH sales AS (SELECT 1) SELECT * FROM sales.orders__v1 VERSION AS OF 3", "gina", 12),
]
EXPECTED = {
    ("sales.orders.legacy_code", "read", "alice", "q1"),
    ("sales.orders.legacy_code", "read", "alice", "q2"),
    ("sales.orders__v1", "read", "carol", "q4"),
    ("sales.orders.legacy_code", "possible", "dan", "q5"),
    ("sales.orders__v1", "read", "gina", "q12"),
}


def _history_rows() -> list[dict[str, Any]]:
    return [
        {
            "statement_id": sid,
            "statement_text": None if text is None else text.encode("utf-8", "replace").decode("utf-8"),
            "executed_by": user,
            "start_time": BASE + timedelta(hours=hours),
            "client_application": "notebook",
            "execution_status": "FINISHED",
        }
        for sid, text, user, hours in HISTORY
    ]


def write_history(folder: Path, fmt: str) -> Path:
    table = pa.Table.from_pylist(_history_rows())
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        pq.write_table(table, folder / "history.parquet")
        return folder / "history.parquet"
    if fmt == "csv":
        pacsv.write_csv(table, folder / "history.csv")
        return folder / "history.csv"
    path = folder / "history.jsonl"
    rows = [{**r, "start_time": r["start_time"].isoformat()} for r in _history_rows()]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _logged(state: Path) -> list[tuple[str, str, str, str]]:
    return sorted((r["object"], r["kind"], r["user"], r["statement_id"]) for r in read_rows(state))  # type: ignore[misc]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv"])
def test_a_query_history_export_is_collected_once(local_engine: Engine, tmp_path: Path, fmt: str) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"query-history:{write_history(tmp_path / 'export', fmt)}")
    state = tmp_path / "state"
    first = collect(spark, read_source(spark, spec), spec.name, WATCHED, state)
    assert first.statements == len(HISTORY)
    assert first.unparsed >= 5  # empty, missing, binary, prose, too deep, truncated
    assert set(_logged(state)) == EXPECTED
    assert len(_logged(state)) == len(EXPECTED)
    assert first.watermark == BASE + timedelta(hours=12)
    again = collect(spark, read_source(spark, spec), spec.name, WATCHED, state)
    assert again.appended == 0
    assert len(_logged(state)) == len(EXPECTED)


def test_collection_runs_on_every_engine(engine: Engine, tmp_path: Path) -> None:
    spark = engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"query-history:{write_history(tmp_path / 'export', 'parquet')}")
    collect(spark, read_source(spark, spec), spec.name, WATCHED, tmp_path / "state")
    assert set(_logged(tmp_path / "state")) == EXPECTED


def test_lineage_tables_are_structured_reads(local_engine: Engine, tmp_path: Path) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    common = {"created_by": "bi@corp", "entity_type": "DASHBOARD", "entity_id": "d1", "event_time": BASE}
    table = pa.Table.from_pylist(
        [
            {**common, "source_table_full_name": "main.sales.orders__v1",
             "source_column_name": "id"},
            {**common, "source_table_full_name": "main.sales.orders",
             "source_column_name": "legacy_code"},
            {**common, "source_table_full_name": None, "source_column_name": None},
        ]
    )  # fmt: skip
    pq.write_table(table, tmp_path / "lineage.parquet")
    for kind in ("table-lineage", "column-lineage"):
        spec = parse_source(f"{kind}:{tmp_path / 'lineage.parquet'}")
        collect(spark, read_source(spark, spec), spec.name, WATCHED, tmp_path / kind)
        # no id column: the row's content is its id, so a second collection adds nothing
        assert collect(spark, read_source(spark, spec), spec.name, WATCHED, tmp_path / kind).appended == 0
        found = {(r["object"], r["kind"], r["user"], r["client"]) for r in read_rows(tmp_path / kind)}
        expected = {("sales.orders__v1", "read", "bi@corp", "DASHBOARD:d1")}
        # A table-lineage row names the table, not its columns: a possible read of its deprecated one.
        legacy = "read" if kind == "column-lineage" else "possible"
        expected.add(("sales.orders.legacy_code", legacy, "bi@corp", "DASHBOARD:d1"))
        assert found == expected, kind


def test_any_statement_file_with_named_columns(local_engine: Engine, tmp_path: Path) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    multiline, quoted = "SELECT legacy_code\nFROM sales.orders", 'ann, "the" analyst'
    rows = [
        {"sql": multiline, "who": quoted, "at": "2026-11-02 10:00"},
        {"sql": "SELECT 1", "who": "bob", "at": "2026-11-02 11:00"},
    ]
    pacsv.write_csv(pa.Table.from_pylist(rows), tmp_path / "log.csv")
    spec = parse_source(f"statements:{tmp_path / 'log.csv'}", {"text": "sql", "user": "who", "time": "at"})
    result = collect(spark, read_source(spark, spec), spec.name, WATCHED, tmp_path / "state")
    assert result.statements == 2
    [row] = read_rows(tmp_path / "state")
    assert (row["object"], row["user"]) == ("sales.orders.legacy_code", quoted)
    assert row["statement_time"] == datetime(2026, 11, 2, 10, tzinfo=UTC)
    with pytest.raises(ValueError, match="no column 'nope'"):
        read_source(spark, parse_source(f"statements:{tmp_path / 'log.csv'}", {"text": "nope"}))


def test_new_statements_are_collected_incrementally(local_engine: Engine, tmp_path: Path) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    state = tmp_path / "state"
    export = tmp_path / "day"
    export.mkdir()
    rows = _history_rows()
    for day, part in enumerate((rows[:6], rows[6:])):
        (export / "history.jsonl").write_text(
            "\n".join(json.dumps({**r, "start_time": r["start_time"].isoformat()}) for r in part),
            encoding="utf-8",
        )
        spec = parse_source(f"query-history:{export / 'history.jsonl'}")
        collect(spark, read_source(spark, spec), "history", WATCHED, state, overlap=timedelta(hours=2))
        if day == 0:
            assert set(_logged(state)) == {e for e in EXPECTED if e[3] in {"q1", "q2", "q4", "q5"}}
    assert set(_logged(state)) == EXPECTED
    assert len(_logged(state)) == len(EXPECTED)
    now = BASE + timedelta(hours=13)
    verdict = readers_gate(state, ["sales.orders.legacy_code"], timedelta(hours=12), now)
    assert not verdict.open and "alice (notebook)" in verdict.readers["sales.orders.legacy_code"]
    assert readers_gate(state, ["sales.orders.amount"], timedelta(hours=12), now).open


def test_extract_per_statement(local_engine: Engine, tmp_path: Path) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"query-history:{write_history(tmp_path, 'jsonl')}")
    rows = {r["statement_id"]: r for r in extracted_statements(read_source(spark, spec), WATCHED).collect()}
    assert set(rows) == {h[0] for h in HISTORY}
    assert rows["q1"]["tables_read"] == ["sales.orders"] and rows["q1"]["error"] is None
    assert rows["q1"]["columns_read"] == ["sales.orders.id", "sales.orders.legacy_code"]
    assert rows["q11"]["tables_written"] == ["sales.orders__v1"] and rows["q11"]["tables_read"] == []
    assert rows["q4"]["tables_read"] == ["sales.orders__v1", "sales.orders_compat"]
    for sid in ("q5", "q6", "q7", "q8", "q9", "q10"):
        assert rows[sid]["error"], sid


def _cli(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "delta_contracts", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_killed_collection_loses_nothing_when_run_again(tmp_path: Path) -> None:
    export = write_history(tmp_path / "export", "jsonl")
    warehouse = tmp_path / "warehouse"
    args = (
        "telemetry", "collect", "--source", f"query-history:{export}", "--warehouse", str(warehouse),
        "--object", "sales.orders__v1", "--object", "sales.orders",
    )  # fmt: skip
    # SIGKILL one run after 1 s, the next after 2 s, ... until a run ends by itself: kills land all along
    # the collection, before, between and after its commits.
    delay = 1.0
    while delay < 60:
        proc = _cli(*args, cwd=tmp_path)
        try:
            proc.communicate(timeout=delay)
            break
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        delay += 1.0
    done = _cli(*args, cwd=tmp_path)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err.decode()
    rows = _logged(warehouse / "_delta_contracts")
    expected = {
        ("sales.orders", "read", "alice", "q1"),
        ("sales.orders", "read", "alice", "q2"),
        ("sales.orders", "read", "bob", "q3"),
        ("sales.orders", "possible", "dan", "q5"),
        ("sales.orders__v1", "read", "gina", "q12"),
    }
    assert set(rows) == expected
    assert len(rows) == len(expected)


def test_the_cli_reports_and_extracts(tmp_path: Path) -> None:
    export = write_history(tmp_path / "export", "parquet")
    warehouse = tmp_path / "warehouse"
    common = ("--warehouse", str(warehouse))
    collect_run = _cli(
        "telemetry", "collect", "--source", f"query-history:{export}",
        "--object", "sales.orders__v1", *common, cwd=tmp_path,
    )  # fmt: skip
    out, err = collect_run.communicate(timeout=300)
    assert collect_run.returncode == 0, err.decode()
    assert b"12 statement(s)" in out
    report = _cli("telemetry", "report", "--format", "json", *common, cwd=tmp_path)
    out, err = report.communicate(timeout=120)
    assert report.returncode == 0, err.decode()
    [entry] = json.loads(out)["objects"]
    assert entry["object"] == "sales.orders__v1"
    assert [r["user"] for r in entry["readers"]] == ["gina"]
    assert entry["unknown_readers"] == ["gina (notebook)"]
    extract = _cli("telemetry", "extract", "--source", f"query-history:{export}", *common, cwd=tmp_path)
    out, err = extract.communicate(timeout=300)
    assert extract.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert len(lines) == len(HISTORY)
    assert all(
        set(line) == {"statement_id", "tables_read", "tables_written", "columns_read", "error"}
        for line in lines
    )
    bad = _cli("telemetry", "collect", "--source", "nonsense", *common, cwd=tmp_path)
    _, err = bad.communicate(timeout=60)
    assert bad.returncode == 2 and b"KIND:LOCATION" in err and b"Traceback" not in err
    missing = _cli("telemetry", "collect", "--source", "query-history:no_such.history", *common, cwd=tmp_path)
    _, err = missing.communicate(timeout=120)
    assert missing.returncode == 2 and b"query-history:no_such.history" in err and b"Traceback" not in err


def test_live_deprecation_marks_are_watched(local_engine: Engine, tmp_path: Path) -> None:
    from delta_contracts.contract.load import parse_contract
    from delta_contracts.plan.ops import ColumnSpec, CreateTable, MarkDeprecated, Phase
    from delta_contracts.telemetry.objects import watched_on

    text = (
        "apiVersion: delta-contracts/v1\nid: telemetry_marks.payments\nversion: 1.0.0\nowner: {team: t}\n"
        "columns:\n  - {name: id, type: bigint}\n  - {name: old_code, type: string}\n"
    )
    contract = parse_contract(text, tmp_path / "payments.yaml").contract
    table = ("telemetry_marks", "payments")
    columns = (ColumnSpec("id", "bigint"), ColumnSpec("old_code", "string"))
    local_engine.apply_op(CreateTable(table=table, phase=Phase.EXPAND, columns=columns))
    local_engine.apply_op(MarkDeprecated.of(table, columns=("old_code",), since="2026-11-01", reason="test"))
    found = watched_on(local_engine, [contract])
    assert found.objects == ("telemetry_marks.payments.old_code",)
    assert "telemetry_marks.payments" in found.locations.values()
