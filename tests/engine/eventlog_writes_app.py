"""How tests/data/eventlog/delta-writes.zstd was made: a delta-spark 4 application (event logging on,
uncompressed; the file then compressed with zstd, Spark's own event-log codec) writing Delta tables with
INSERT, MERGE, UPDATE, DELETE, INSERT OVERWRITE, CTAS, RTAS and saveAsTable.

Usage: python eventlog_writes_app.py OUT_DIR (the log lands in OUT_DIR/logs)."""

from __future__ import annotations

import sys
from pathlib import Path

from delta_contracts.engine.spark.session import local_delta_session

WRITES = [
    "INSERT INTO sales.orders SELECT id, name, 5 FROM sales.customers",
    "MERGE INTO sales.orders t USING sales.customers s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET legacy_code = s.name "
    "WHEN NOT MATCHED THEN INSERT (id, legacy_code, amount) VALUES (s.id, s.name, 0)",
    "UPDATE sales.orders SET amount = amount + 1 WHERE id = 1",
    "DELETE FROM sales.orders WHERE id = 3",
    "INSERT OVERWRITE sales.orders SELECT id, name, 1 FROM sales.customers",
    "CREATE TABLE sales.orders_copy USING DELTA AS SELECT * FROM sales.orders",
    "CREATE OR REPLACE TABLE sales.orders_copy USING DELTA AS SELECT id FROM sales.customers",
]


def main(out: Path) -> None:
    warehouse, logs = out / "warehouse", out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(logs),
        "spark.eventLog.compress": "false",
    }
    spark = local_delta_session("writer", warehouse=warehouse, extra=conf)
    spark.sql("CREATE SCHEMA IF NOT EXISTS sales")
    for name, columns in (
        ("orders", "id INT, legacy_code STRING, amount INT"),
        ("customers", "id INT, name STRING"),
    ):
        spark.sql(f"CREATE TABLE sales.{name} ({columns}) USING DELTA LOCATION '{warehouse / name}'")
    spark.sql("INSERT INTO sales.customers VALUES (1, 'x'), (3, 'z')")
    for statement in WRITES:
        spark.sql(statement)
    spark.table("sales.customers").write.format("delta").mode("append").saveAsTable("sales.customers_copy")
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
