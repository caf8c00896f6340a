"""The `connect` engine: the spark engine on a session of a Spark Connect (or Databricks Connect) server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from delta_contracts.engine.base import EngineError
from delta_contracts.engine.spark.engine import SparkEngine
from delta_contracts.tableid import TableId


def connect_engine(
    url: str, state_dir: Path | str | None = None, *, ledger: TableId | None = None
) -> SparkEngine:
    """Spark Connect or Databricks Connect at `url` (sc://host:port/…)."""
    engine = SparkEngine(connect_session(url), state_dir, owns_session=True, ledger=ledger)
    engine.name = "connect"
    return engine


def connect_session(url: str) -> Any:
    """A new session of the Spark Connect server at `url`, whose server is known to be reachable."""
    from pyspark.sql import SparkSession

    check_reachable(url)
    # PySpark flags the whole process as "Spark Connect mode" when a remote session is made, which would turn
    # a later classic SparkSession of the same process (a notebook, the spark engine) into a Connect one.
    flagged = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    # create(), not getOrCreate(): that would hand back another engine's session in the same process.
    session = SparkSession.builder.remote(url).create()
    if not flagged:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return session


def check_reachable(url: str, timeout: float = 5.0) -> None:
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
