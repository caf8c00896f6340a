"""The `spark` and `connect` engines: any SparkSession with delta-spark runs the migration SQL as written.

Databricks notebooks, clusters, a local session built with `configure_spark_with_delta_pip`, or — for
air-gapped sites — a local session whose Delta jars come from the folder named by DELTA_CONTRACTS_DELTA_JARS.
Table state is read through delta-spark's DeltaTable API (detail, history) and the table schema.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from delta_contracts.engine.base import CommitLog, Engine, EngineError, OpOutcome
from delta_contracts.engine.deltalog import CONSTRAINT_PREFIX
from delta_contracts.engine.schema_json import columns_from_schema
from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan import expressions as x
from delta_contracts.plan.ops import CreateView, DropTable, Op, RenameTable
from delta_contracts.plan.render import render

TableId = tuple[str, ...]
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
JARS_ENV = "DELTA_CONTRACTS_DELTA_JARS"
DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def delta_jars_available() -> tuple[bool, str]:
    """Whether a local delta-spark session can start here, and why not when it cannot."""
    folder = os.environ.get(JARS_ENV)
    if folder:
        jars = list(Path(folder).glob("delta-spark*.jar"))
        if jars:
            return True, ""
        return False, f"{JARS_ENV}={folder} holds no delta-spark*.jar"
    cached = list((Path.home() / ".ivy2.5.2" / "jars").glob("io.delta_delta-spark*.jar"))
    cached += list((Path.home() / ".ivy2" / "jars").glob("io.delta_delta-spark*.jar"))
    if cached:
        return True, ""
    return False, (
        f"delta-spark's jars are not on this machine (Maven is unreachable); set {JARS_ENV} to a folder "
        "holding delta-spark and delta-storage jars"
    )


def local_delta_session(app_name: str = "delta-contracts", warehouse: Path | None = None) -> Any:
    """A local classic SparkSession with Delta: jars from DELTA_CONTRACTS_DELTA_JARS, else from Maven."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(app_name).config("spark.ui.enabled", "false")
    for key, value in DELTA_EXTENSIONS.items():
        builder = builder.config(key, value)
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(warehouse))
    folder = os.environ.get(JARS_ENV)
    if folder:
        jars = sorted(str(p) for p in Path(folder).glob("*.jar"))
        return builder.config("spark.jars", ",".join(jars)).getOrCreate()
    from delta import configure_spark_with_delta_pip

    return configure_spark_with_delta_pip(builder).getOrCreate()


class SparkEngine(Engine):
    name = "spark"

    def __init__(self, spark: Any, state_dir: Path | str = ".delta-contracts") -> None:
        self.spark = spark
        self._commits = CommitLog(Path(state_dir))

    @property
    def commit_log(self) -> CommitLog:
        return self._commits

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.spark.sql(statement).collect()]

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        if tag:
            self.spark.conf.set(USER_METADATA_CONF, tag)
        try:
            self.sql(render(op))
        except Exception as err:
            raise EngineError(f"{op.summary()} on {'.'.join(op.table)}: {str(err).splitlines()[0]}") from err
        finally:
            if tag:
                self.spark.conf.unset(USER_METADATA_CONF)
        target = op.new_name if isinstance(op, RenameTable) else op.table
        version = None if isinstance(op, CreateView | DropTable) else self._version(target)
        return OpOutcome(op.kind, ".".join(target), version, "sql")

    def _delta_table(self, table: TableId) -> Any:
        """delta-spark's handle on the table, or None when it is missing or not a Delta table (a view)."""
        from delta.tables import DeltaTable

        try:
            return DeltaTable.forName(self.spark, x.sql(x.table(table)))
        except Exception:  # AnalysisException: no such table, or not Delta
            return None

    def _version(self, table: TableId) -> int | None:
        delta = self._delta_table(table)
        if delta is None:
            return None
        return int(delta.history(1).collect()[0]["version"])

    def describe(self, table: TableId) -> LiveTable | None:
        delta = self._delta_table(table)
        if delta is None:
            return None
        detail = delta.detail().collect()[0].asDict(recursive=True)
        configuration: dict[str, str] = dict(detail.get("properties") or {})
        checks = {
            k[len(CONSTRAINT_PREFIX) :]: v
            for k, v in configuration.items()
            if k.startswith(CONSTRAINT_PREFIX)
        }
        features = tuple(detail.get("tableFeatures") or ())
        return LiveTable(
            name=".".join(table),
            location=str(detail.get("location", "")),
            columns=columns_from_schema(delta.toDF().schema.json()),
            properties={k: v for k, v in configuration.items() if not k.startswith(CONSTRAINT_PREFIX)},
            checks=checks,
            partition_columns=tuple(detail.get("partitionColumns") or ()),
            clustering_columns=tuple(detail.get("clusteringColumns") or ()),
            min_reader_version=int(detail.get("minReaderVersion") or 1),
            min_writer_version=int(detail.get("minWriterVersion") or 2),
            reader_features=features,
            writer_features=features,
            version=int(delta.history(1).collect()[0]["version"]),
            comment=detail.get("description"),
        )

    def views(self) -> Mapping[TableId, str]:
        found: dict[TableId, str] = {}
        for database in self.spark.catalog.listDatabases():
            for table in self.spark.catalog.listTables(database.name):
                if table.tableType != "VIEW" or table.isTemporary:
                    continue
                view: TableId = (database.name, table.name)
                rows = self.sql(x.sql(_describe_extended(view)))
                text = next((r.get("data_type") for r in rows if r.get("col_name") == "View Text"), None)
                if text:
                    found[view] = str(text)
        return found

    def history(self, table: TableId) -> list[Commit]:
        delta = self._delta_table(table)
        if delta is None:
            return []
        commits = []
        for row in delta.history().collect():
            entry = row.asDict(recursive=True)
            stamp = entry.get("timestamp")
            commits.append(
                Commit(
                    version=int(entry["version"]),
                    operation=str(entry.get("operation", "")),
                    timestamp_ms=int(stamp.timestamp() * 1000) if stamp is not None else 0,
                    user_metadata=entry.get("userMetadata"),
                    engine_info=entry.get("engineInfo"),
                )
            )
        return sorted(commits, key=lambda c: c.version)


def _describe_extended(view: TableId) -> Any:
    from sqlglot import exp

    return exp.Describe(this=x.table(view), style="EXTENDED")


def connect_engine(url: str, state_dir: Path | str = ".delta-contracts") -> SparkEngine:
    """Spark Connect or Databricks Connect at `url` (sc://host:port/…)."""
    from pyspark.sql import SparkSession

    _check_reachable(url)
    engine = SparkEngine(SparkSession.builder.remote(url).getOrCreate(), state_dir)
    engine.name = "connect"
    return engine


def _check_reachable(url: str, timeout: float = 5.0) -> None:
    """Fail fast: the Connect client otherwise retries an unreachable server for minutes."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url.split(";", 1)[0])
    if parsed.scheme != "sc" or not parsed.hostname:
        raise EngineError(f"'{url}' is not a Spark Connect URL (sc://host:port)")
    port = parsed.port or 15002
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return
    except OSError as err:
        raise EngineError(f"cannot reach Spark Connect at {parsed.hostname}:{port}: {err}") from None
