"""A real Spark event log: delta-spark applications with event logging on read Delta tables with
`spark.sql` and DataFrames (in a subprocess: one JVM session per process); collected, the reads are found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.session import delta_jars_available
from delta_contracts.sql.extract import Catalog
from delta_contracts.telemetry.log import read_rows
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.pipeline import collect
from delta_contracts.telemetry.sources import parse_source, read_source

pytestmark = pytest.mark.engine
ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def event_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    available, why = delta_jars_available()
    if not available:
        pytest.fail(f"delta-spark cannot start: {why}")
    out = tmp_path_factory.mktemp("eventlogs")
    run = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "eventlog_app.py"), str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return out


def test_the_logs_are_rolling_zstd_lz4_and_plain(event_logs: Path) -> None:
    logs = event_logs / "logs"
    rolling = [p for p in logs.iterdir() if p.name.startswith("eventlog_v2_")]
    assert len(rolling) == 1 and any(p.suffix == ".zstd" for p in rolling[0].iterdir())
    assert any(p.suffix == ".lz4" for p in logs.iterdir())
    assert any(p.is_file() and "." not in p.name for p in logs.iterdir())


def test_spark_sql_and_dataframe_reads_are_found(
    local_engine: Engine, event_logs: Path, tmp_path: Path
) -> None:
    warehouse = event_logs / "warehouse"
    watched = Watched(
        objects=("sales.orders.legacy_code", "sales.orders.amount", "sales.customers"),
        catalog=Catalog(
            schemas={"sales.orders": ("id", "legacy_code", "amount"), "sales.customers": ("id", "name")}
        ),
        locations={
            str(warehouse / "orders"): "sales.orders",
            str(warehouse / "customers"): "sales.customers",
        },
    )
    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"eventlog:{event_logs / 'logs'}")
    result = collect(spark, read_source(spark, spec), spec.name, watched, tmp_path)
    assert result.statements > 0
    found = {(r["object"], r["client"], r["kind"], r["user"]) for r in read_rows(tmp_path)}
    user = found and next(iter(found))[3]
    assert user  # the application's user
    for codec in ("zstd", "lz4", "none"):
        client = f"spark:reader-{codec}"
        assert ("sales.orders.legacy_code", client, "read", user) in found, codec  # spark.sql
        assert ("sales.customers", client, "read", user) in found, codec  # spark.table
        assert ("sales.orders.amount", client, "read", user) in found, codec  # read by path
    again = collect(spark, read_source(spark, spec), spec.name, watched, tmp_path)
    assert again.appended == 0


def test_a_column_mapped_table_read_by_path_only(
    local_engine: Engine, event_logs: Path, tmp_path: Path
) -> None:
    """The application never names the table: its reads are tied to it by location alone, whatever the
    spelling (`file://`, `///`, `file:` with a trailing slash); the read answered from the Delta log's
    statistics names no column, so it is a possible read of each deprecated column, never none."""
    location = event_logs / "warehouse" / "crew"
    watched = Watched(
        objects=("crew.members.seniority_no", "crew.members.grade"),
        catalog=Catalog(schemas={"crew.members": ("id", "grade", "seniority_no")}),
        locations={f"file:{location}/": "crew.members"},
    )
    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"eventlog:{event_logs / 'logs'}")
    result = collect(spark, read_source(spark, spec), spec.name, watched, tmp_path)
    rows = [r for r in read_rows(tmp_path) if r["client"] == "spark:reader-zstd"]
    assert result.possible == len([r for r in read_rows(tmp_path) if r["kind"] == "possible"]) > 0
    kinds: dict[str, set[str]] = {}
    for row in rows:
        kinds.setdefault(str(row["object"]), set()).add(str(row["kind"]))
        assert row["user"]  # the application's user
    assert kinds == {
        "crew.members.seniority_no": {"read", "possible"},
        "crew.members.grade": {"read", "possible"},
    }
    statements = {(r["object"], r["kind"]): r["statement_id"] for r in rows}
    # the metadata-only read is the same statement for both columns
    assert (
        statements[("crew.members.seniority_no", "possible")]
        == statements[("crew.members.grade", "possible")]
    )
