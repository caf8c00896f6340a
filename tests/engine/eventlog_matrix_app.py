"""Run by test_telemetry_matrix in its own process (one JVM SparkSession per process): one delta-spark
application with Spark 4's default event log (rolling, zstd) that reads a deprecated column of four kinds of
table — plain, column-mapped, renamed in place (the old column kept beside the new one, column mapping on,
as the toolkit's rename leaves it), versioned (`__v2` behind its alias view) — in every spelling: by name,
through a view, `load(path)` and ``delta.`path` `` (slashes and `file:` prefixes varied). The path reads come
first, while the application knows the tables by path only (a reader job that never names them).

Writes `cells.json`: per cell, the table, the deprecated column, the spelling, the SQL text where there is
one, the table's location and the time span its job ran in; and `renamed.json`: `crew.mapped`'s `grade`
renamed to `grade_new` (a true RENAME COLUMN) and when. Usage: python eventlog_matrix_app.py OUT_DIR"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from delta_contracts.engine.spark.session import local_delta_session

APP = "telemetry-matrix"
MAPPING = (
    "'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5'"
)
# table -> (deprecated column, the view that serves it: a compatibility view, or the versioned alias)
TABLES = {
    "crew.plain": ("seniority_no", "crew.plain_compat"),
    "crew.mapped": ("seniority_no", "crew.mapped_compat"),
    "crew.renamed": ("grade_old", "crew.renamed_compat"),
    "crew.ver__v2": ("seniority_no", "crew.ver"),
}
SPELLINGS = ("name", "view", "load", "delta_path")


def path_spelling(location: Path, variant: int) -> str:
    """The table's location as users write it: plain, `file:`, `file://` + absolute, many slashes."""
    text = str(location)
    return [f"file:{text}", f"///{text.lstrip('/')}", f"file://{text}/", text, f"//{text}"][variant % 5]


def create_by_path(spark: Any, locations: dict[str, Path]) -> None:
    run = spark.sql
    columns = "(id INT, grade INT, seniority_no INT) USING DELTA"
    run(f"CREATE TABLE delta.`{locations['crew.plain']}` {columns}")
    run(f"CREATE TABLE delta.`{locations['crew.mapped']}` {columns} TBLPROPERTIES ({MAPPING})")
    run(f"CREATE TABLE delta.`{locations['crew.ver__v2']}` {columns} PARTITIONED BY (grade)")
    run(f"CREATE TABLE delta.`{locations['crew.renamed']}` (id INT, grade_old INT) USING DELTA")
    for table in ("crew.plain", "crew.mapped", "crew.ver__v2"):
        run(f"INSERT INTO delta.`{locations[table]}` VALUES (1, 7, 100), (2, 8, 200)")
    renamed = f"delta.`{locations['crew.renamed']}`"
    run(f"INSERT INTO {renamed} VALUES (1, 7), (2, 8)")
    # The rename in place: column mapping on (for the later drop), the new column added and filled.
    run(f"ALTER TABLE {renamed} SET TBLPROPERTIES ({MAPPING})")
    run(f"ALTER TABLE {renamed} ADD COLUMN (grade INT)")
    run(f"UPDATE {renamed} SET grade = grade_old")


def name_them(spark: Any, locations: dict[str, Path]) -> None:
    spark.sql("CREATE SCHEMA IF NOT EXISTS crew")
    for table, (_, view) in TABLES.items():
        spark.sql(f"CREATE TABLE {table} USING DELTA LOCATION '{locations[table]}'")
        spark.sql(f"CREATE VIEW {view} AS SELECT * FROM {table}")


def read(spark: Any, table: str, spelling: str, location: str) -> str | None:
    column, view = TABLES[table]
    if spelling == "load":
        spark.read.format("delta").load(location).where("id > 0").select("id", column).collect()
        return None
    if spelling == "metadata":  # answered from the Delta log's statistics: no column in the plan
        sql = f"SELECT max({column}) FROM delta.`{location}`"
    else:
        source = {"name": table, "view": view, "delta_path": f"delta.`{location}`"}[spelling]
        sql = f"SELECT id, {column} FROM {source} WHERE id > 0"
    spark.sql(sql).collect()
    return sql


def main(out: Path) -> None:
    warehouse, logs = out / "warehouse", out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs)}  # Spark 4.2: rolling zstd
    spark = local_delta_session(APP, warehouse=warehouse, extra=conf)
    locations = {t: warehouse / t.replace(".", "_") for t in TABLES}
    create_by_path(spark, locations)
    cells = []
    variant = 0
    order = [("load", "delta_path", "metadata"), ("name", "view")]  # by path first, then named
    for index, spellings in enumerate(order):
        if index == 1:
            name_them(spark, locations)
        for table in TABLES:
            for spelling in spellings:
                variant += 1
                location = path_spelling(locations[table], variant)
                start = time.time()
                sql = read(spark, table, spelling, location)
                cells.append(
                    {
                        "table": table,
                        "column": TABLES[table][0],
                        "spelling": spelling,
                        "sql": sql,
                        "path": location,
                        "location": str(locations[table]),
                        "start": start,
                        "end": time.time(),
                    }
                )
    before = time.time()
    spark.sql("ALTER TABLE crew.mapped RENAME COLUMN grade TO grade_new")
    (out / "renamed.json").write_text(json.dumps({"before": before, "after": time.time()}))
    spark.stop()
    (out / "cells.json").write_text(json.dumps(cells, indent=1))
    print("ok")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
