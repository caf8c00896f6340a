"""The local engine's way to the ops Sail and delta-rs cannot do on a table itself: delta-spark, in place.

A classic local SparkSession with Delta Lake is started lazily, the first time such an op comes, and runs the
op's statement against the table's location (``ALTER TABLE delta.`/path` …``), so the table's Delta history
continues (time travel, streaming readers, CDF). Whether it can start (Java, jars) is known before anything
runs, so a migration that needs it is refused up front where it cannot.

Starting that JVM costs each command 10-30 s. A Spark Connect server with delta-spark that is already running
on the same machine (it must see the warehouse's paths) can take its place: `DELTA_CONTRACTS_DELTA_SPARK_URL`
(or `LocalEngine(delta_spark_url=…)`) names it, and the ops are sent there, as the same statements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlglot import exp

from delta_contracts.engine.base import USER_METADATA_CONF
from delta_contracts.plan.ops import Op
from delta_contracts.sql import expressions as x

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"


def path_table(location: Path) -> exp.Table:
    """``delta.`/path```: Delta's name for a table by its location."""
    return exp.Table(this=exp.to_identifier(str(location), quoted=True), db=exp.to_identifier("delta"))


TABLE_FEATURES_WRITER = 7
_WRITER_VERSION = "delta.minWriterVersion"


def table_features_protocol(properties: dict[str, str]) -> dict[str, str]:
    """A requested legacy writer version raised to table features (7).

    Legacy writer versions imply every feature of their version: writer 5 (column mapping) also means Change
    Data Feed and generated columns, which Sail 0.7.2 then refuses to commit to ("Unsupported table features
    required: [ChangeDataFeed]") and delta-rs too. Writer 7 lists only the features actually in use.
    """
    wanted = properties.get(_WRITER_VERSION)
    if wanted is not None and wanted.isdigit() and 2 < int(wanted) < TABLE_FEATURES_WRITER:
        return {**properties, _WRITER_VERSION: str(TABLE_FEATURES_WRITER)}
    return properties


# A running Spark Connect server with delta-spark the local engine sends these ops to (no JVM of its own).
DELTA_SPARK_URL_ENV = "DELTA_CONTRACTS_DELTA_SPARK_URL"


class DeltaSparkPath:
    """A lazily started local delta-spark session (or a session of the Connect server at `url`), shared by
    every op of one engine that needs it."""

    def __init__(self, state_dir: Path, url: str | None = None) -> None:
        self.state_dir = state_dir
        self.url = url
        self._session: Any = None
        self._owned = False
        self._unavailable: str | None = None
        self._checked = False

    def unavailable_reason(self) -> str | None:
        """Why delta-spark cannot start here (no Java, no jars), or the server named cannot be reached; None
        when it can. Checked once, without starting anything."""
        if not self._checked and self.url is not None:
            from delta_contracts.engine.base import EngineError
            from delta_contracts.engine.spark.connect import check_reachable

            try:
                check_reachable(self.url)
            except EngineError as err:
                self._unavailable = f"{DELTA_SPARK_URL_ENV}: {err}"
            self._checked = True
        if not self._checked:
            from delta_contracts.engine.spark.session import delta_jars_available

            available, why = delta_jars_available()
            self._unavailable = None if available else why
            self._checked = True
        return self._unavailable

    @property
    def started(self) -> bool:
        return self._session is not None

    def session(self) -> Any:
        if self._session is None and self.url is not None:
            from delta_contracts.engine.spark.connect import connect_session

            self._session, self._owned = connect_session(self.url), True
            self._check_delta(self._session)
        if self._session is None:
            from pyspark.sql import SparkSession

            from delta_contracts.engine.spark.session import JVM_LOG, local_delta_session

            existing = SparkSession.getActiveSession()
            # A JVM session is one per process: an existing classic one is reused (and left running).
            self._owned = existing is None or type(existing).__module__.startswith("pyspark.sql.connect")
            session = local_delta_session(
                app_name="delta-contracts-local",
                warehouse=self.state_dir / "spark-warehouse",
                jvm_log=self.state_dir / JVM_LOG,
            )
            self._check_delta(session)
            self._session = session
        return self._session

    def _check_delta(self, session: Any) -> None:
        if DELTA_EXTENSION not in str(session.conf.get("spark.sql.extensions", "")):
            where = (
                f"the Spark Connect server at {self.url}" if self.url else "the session already running here"
            )
            raise RuntimeError(
                f"{where} has no Delta Lake extension ({DELTA_EXTENSION}); start it with delta-spark"
            )

    def run(self, op: Op, statement: exp.Expr, tag: str | None) -> None:
        """Run `statement`, the op's addressed to its table's location (`local.ops`, `at_location`)."""
        session = self.session()
        settings = op.session_settings()
        if tag:
            session.conf.set(USER_METADATA_CONF, tag)
        for key, value, _ in settings:
            session.conf.set(key, value)
        try:
            session.sql(x.sql(statement)).collect()
        finally:
            if tag:
                session.conf.unset(USER_METADATA_CONF)
            for key, _, _ in settings:
                session.conf.unset(key)

    def close(self) -> None:
        if self._session is not None and self._owned:
            self._session.stop()
        self._session = None
