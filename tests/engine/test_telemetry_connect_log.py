"""The event log of a real Spark Connect server (the suite's own, with event logging on): SQL text, reads
and writes of Connect operations are found, a write's target is no read."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.telemetry.eventlog import read_statements

pytestmark = pytest.mark.engine


def test_connect_operations_are_read_from_the_servers_event_log(
    connect_engine: Engine, connect_event_logs: Path
) -> None:
    spark = connect_engine.spark  # type: ignore[attr-defined]
    spark.sql("CREATE SCHEMA IF NOT EXISTS tele_connect")
    spark.sql("CREATE TABLE IF NOT EXISTS tele_connect.orders (id INT, legacy_code STRING) USING DELTA")
    spark.sql("CREATE TABLE IF NOT EXISTS tele_connect.staging (id INT, legacy_code STRING) USING DELTA")
    spark.sql("SELECT legacy_code FROM tele_connect.staging WHERE id = 1 /* connect-sql */").collect()
    spark.table("tele_connect.orders").select("id").collect()  # a DataFrame read: no SQL text
    spark.sql(
        "MERGE INTO tele_connect.orders AS t USING tele_connect.staging AS s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, legacy_code) VALUES (s.id, s.legacy_code) /* connect-merge */"
    )
    statements = [s for s in read_statements(connect_event_logs) if s.client == "spark-connect"]
    by_text = {s.text: s for s in statements if s.text}
    [select] = [s for t, s in by_text.items() if "connect-sql" in t]
    assert _names(select.tables_read) == {"tele_connect.staging"}
    assert select.user  # the Connect operation's user
    [merge] = [s for t, s in by_text.items() if "connect-merge" in t]
    assert _names(merge.tables_written) == {"tele_connect.orders"}
    assert _names(merge.tables_read) == {"tele_connect.staging"}  # the target is written, not read
    frames = [s for s in statements if not s.text and "tele_connect.orders" in _names(s.tables_read)]
    assert frames, [(s.text, s.tables_read) for s in statements]


def _names(names: tuple[str, ...] | None) -> set[str]:
    return {n.removeprefix("spark_catalog.") for n in names or ()}
