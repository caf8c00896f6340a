"""Run by test_telemetry_eventlog in its own process (one JVM SparkSession per process): real delta-spark
applications with event logging on, one per event-log codec, reading Delta tables with `spark.sql` and with
DataFrames. Usage: python eventlog_app.py OUT_DIR"""

from __future__ import annotations

import sys
from pathlib import Path

from delta_contracts.engine.spark.session import local_delta_session

# codec -> rolling: a rolling eventlog_v2_* folder with zstd (Spark 4's default), single lz4 and plain files.
APPS = {"zstd": True, "lz4": False, "none": False}


def crew_by_path(spark: object, location: Path) -> None:
    """A column-mapped table this application knows by path only (never by name): reads of its deprecated
    column by `load(file:///…)`, by ``delta.`///…` `` and one answered from the log's statistics alone."""
    run = spark.sql  # type: ignore[attr-defined]
    path = f"delta.`{location}`"
    run(
        f"CREATE TABLE {path} (id INT, grade INT, seniority_no INT) USING DELTA TBLPROPERTIES "
        "('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
        "'delta.minWriterVersion' = '5')"
    )
    run(f"INSERT INTO {path} VALUES (1, 7, 100)")
    reader = spark.read.format("delta")  # type: ignore[attr-defined]
    reader.load(f"file://{location}").select("id", "seniority_no").collect()
    run(f"SELECT id, grade FROM delta.`///{str(location).lstrip('/')}` WHERE id > 0").collect()
    run(f"SELECT max(seniority_no) FROM delta.`file:{location}/`").collect()


def main(out: Path) -> None:
    warehouse = out / "warehouse"
    for codec, rolling in APPS.items():
        logs = out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        conf = {
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(logs),
            "spark.eventLog.rolling.enabled": str(rolling).lower(),
            "spark.eventLog.compress": str(codec != "none").lower(),
        }
        if codec != "none":
            conf["spark.eventLog.compression.codec"] = codec
        spark = local_delta_session(f"reader-{codec}", warehouse=warehouse, extra=conf)
        spark.sql("CREATE SCHEMA IF NOT EXISTS sales")
        # Each application has a fresh in-memory catalog: register the same Delta tables by location.
        orders, customers = warehouse / "orders", warehouse / "customers"
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS sales.orders (id INT, legacy_code STRING, amount INT) USING DELTA "
            f"LOCATION '{orders}'"
        )
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS sales.customers (id INT, name STRING) USING DELTA "
            f"LOCATION '{customers}'"
        )
        if codec == "zstd":
            spark.sql("INSERT INTO sales.orders VALUES (1, 'a', 10), (2, 'b', 20)")
            spark.sql("INSERT INTO sales.customers VALUES (1, 'x')")
            crew_by_path(spark, warehouse / "crew")
        # spark.sql: the event records no SQL text, only the plan's scans
        spark.sql(f"SELECT legacy_code FROM sales.orders WHERE id = 1 /* {codec} */").collect()
        # DataFrame reads: by name, and by path
        spark.table("sales.customers").select("name").collect()
        spark.read.format("delta").load(str(orders)).select("amount").collect()
        spark.stop()
        # a new SparkContext per codec: stop() clears the active session so the next conf applies
    print("ok")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
