"""Event-log decoding: codec framings, torn files, Spark Connect operations (events in Spark's JSON form)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import cramjam
import lz4.block
import pytest
import zstandard

from delta_contracts.telemetry.eventlog import (
    CONNECT_STARTED,
    SQL_START,
    decompress,
    log_files,
    read_statements,
)

PLAN = """== Physical Plan ==
* Project (2)
+- Scan parquet spark_catalog.sales.orders (1)


(1) Scan parquet spark_catalog.sales.orders
Output [2]: [id#1, legacy_code#2]
Batched: true
Location: PreparedDeltaFileIndex [file:/data/orders]
ReadSchema: struct<id:int,legacy_code:string,nested:struct<a:int,b:int>>

(2) Project [codegen id : 1]
"""


def _events(*extra: dict[str, object]) -> bytes:
    events = [
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": "nightly",
            "App ID": "app-1",
            "User": "svc-etl",
        },
        {
            "Event": SQL_START,
            "executionId": 4,
            "rootExecutionId": 4,
            "description": "collect at job.py:12",
            "physicalPlanDescription": PLAN,
            "time": 1_790_000_000_000,
        },
        *extra,
    ]
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def _lz4_java(data: bytes) -> bytes:
    """lz4-java's LZ4BlockOutputStream framing (what Spark's lz4 codec writes)."""
    block = lz4.block.compress(data, store_size=False)
    header = b"LZ4Block" + bytes([0x20 | 4]) + struct.pack("<iii", len(block), len(data), 0)
    end = b"LZ4Block" + bytes([0x10 | 4]) + struct.pack("<iii", 0, 0, 0)
    return bytes(header + block + end)


def _snappy_java(data: bytes) -> bytes:
    """snappy-java's SnappyOutputStream framing (what Spark's snappy codec writes)."""
    block = bytes(cramjam.snappy.compress_raw(data))
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block


def _statements(path: Path) -> list[tuple[str, str | None, tuple[str, ...] | None]]:
    return [(s.statement_id, s.user, s.tables_read) for s in read_statements(path)]


def test_every_codec_decodes_to_the_same_statements(tmp_path: Path) -> None:
    data = _events()
    (tmp_path / "app-1").write_bytes(data)
    (tmp_path / "app-1.zstd").write_bytes(zstandard.ZstdCompressor().compress(data))
    (tmp_path / "app-1.lz4").write_bytes(_lz4_java(data))
    (tmp_path / "app-1.snappy").write_bytes(_snappy_java(data))
    for name in ("app-1", "app-1.zstd", "app-1.lz4", "app-1.snappy"):
        assert decompress(tmp_path / name) == data, name
        assert _statements(tmp_path / name) == [("app-1:4", "svc-etl", ("spark_catalog.sales.orders",))]


def test_columns_come_from_the_read_schema(tmp_path: Path) -> None:
    (tmp_path / "app").write_bytes(_events())
    [statement] = read_statements(tmp_path / "app")
    assert statement.columns_read == (
        "spark_catalog.sales.orders.id",
        "spark_catalog.sales.orders.legacy_code",
        "spark_catalog.sales.orders.nested",
    )
    assert statement.text is None  # a call site is not SQL


def test_a_torn_log_yields_what_came_before(tmp_path: Path) -> None:
    data = _events()
    whole = zstandard.ZstdCompressor().compress(data)
    (tmp_path / "torn.zstd.inprogress").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "garbage.lz4").write_bytes(b"LZ4Block\x20" + b"\xff" * 40)
    (tmp_path / "noise").write_bytes(b'\x00\x01 not json\n{"Event": 3}\n[1, 2]\n' + data + data[:40])
    for name in ("torn.zstd.inprogress", "garbage.lz4", "noise"):
        list(read_statements(tmp_path / name))  # never raises
    assert _statements(tmp_path / "noise")[0][1] == "svc-etl"


def test_rolling_folders_are_read_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir()
    lines = _events().splitlines(keepends=True)
    (folder / "events_10_app-1").write_bytes(b"".join(lines[1:]))
    (folder / "events_2_app-1").write_bytes(lines[0])
    (folder / "appstatus_app-1").write_bytes(b"")
    assert log_files(tmp_path) == [[folder / "events_2_app-1", folder / "events_10_app-1"]]
    assert _statements(tmp_path) == [("app-1:4", "svc-etl", ("spark_catalog.sales.orders",))]


def test_connect_operations_carry_text_and_user(tmp_path: Path) -> None:
    tag = "SparkConnect_OperationTag_User_ann_Session_s1_Operation_op-9"
    operation = {
        "Event": CONNECT_STARTED,
        "jobTag": tag,
        "operationId": "op-9",
        "eventTime": 1_790_000_001_000,
        "sessionId": "s1",
        "userId": "ann",
        "userName": "ann",
        "statementText": 'sql {\n  query: "SELECT legacy_code FROM sales.orders WHERE note = \\"x\\""\n}\n',
    }
    execution = {
        "Event": SQL_START,
        "executionId": 7,
        "rootExecutionId": 7,
        "description": "",
        "physicalPlanDescription": PLAN,
        "time": 1_790_000_001_500,
        "jobTags": [tag],
    }
    (tmp_path / "app").write_bytes(_events(operation, execution))
    statements = {s.statement_id: s for s in read_statements(tmp_path / "app")}
    connect = statements["app-1:op-9"]
    assert connect.user == "ann" and connect.client == "spark-connect"
    assert connect.text == 'SELECT legacy_code FROM sales.orders WHERE note = "x"'
    assert connect.tables_read == ("spark_catalog.sales.orders",)
    # the columns its executions' plans read are the operation's (else a possible read of every column)
    assert "spark_catalog.sales.orders.legacy_code" in (connect.columns_read or ())
    assert "app-1:7" not in statements  # the operation's execution is not a second statement


# A real delta-spark 4 event log (tests/engine/eventlog_writes_app.py made it): execution id -> the
# statement the application ran, what it reads and what it writes (from the SQL, by hand).
WRITES_LOG = Path(__file__).parent.parent / "data" / "eventlog" / "delta-writes.zstd"
DELTA_WRITES = {
    5: ("INSERT INTO customers VALUES", set(), {"sales.customers"}),
    7: ("INSERT INTO orders SELECT FROM customers", {"sales.customers"}, {"sales.orders"}),
    12: ("MERGE INTO orders USING customers", {"sales.customers"}, {"sales.orders"}),
    23: ("UPDATE orders", set(), {"sales.orders"}),
    32: ("DELETE FROM orders", set(), {"sales.orders"}),
    41: ("INSERT OVERWRITE orders SELECT FROM customers", {"sales.customers"}, {"sales.orders"}),
    47: ("CTAS orders_copy FROM orders", {"sales.orders"}, {"sales.orders_copy"}),
    54: ("RTAS orders_copy FROM customers", {"sales.customers"}, {"sales.orders_copy"}),
    61: ("saveAsTable customers_copy FROM customers", {"sales.customers"}, {"sales.customers_copy"}),
}


@pytest.mark.parametrize("execution", sorted(DELTA_WRITES))
def test_delta_writes_are_writes_and_never_reads_of_their_target(execution: int) -> None:
    statements = {s.statement_id.rsplit(":", 1)[1]: s for s in read_statements(WRITES_LOG)}
    got = statements[str(execution)]
    what, reads, writes = DELTA_WRITES[execution]
    unqualified = {n.removeprefix("spark_catalog.") for n in got.tables_written or ()}
    assert unqualified == writes, what
    assert {n.removeprefix("spark_catalog.") for n in got.tables_read or ()} == reads, what
