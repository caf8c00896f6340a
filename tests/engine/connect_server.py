"""A Spark Connect server with Delta Lake on loopback, for running the conformance suite through `connect`.

The server is PySpark's own (`spark-connect` ships in the wheel) started with spark-submit, with delta-spark's
jars and SQL extension. Delta's Connect server plugin (`delta-connect-server`) is not on Maven Central, so
the Python DeltaTable API is not available over this server; the engine reads tables through SQL only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def event_log_dir(warehouse: Path) -> Path:
    """Where the server started for `warehouse` writes its event log."""
    return warehouse.parent / f"{warehouse.name}-eventlog"


def server_command(warehouse: Path, port: int) -> list[str]:
    import pyspark

    from delta_contracts.engine.jars import TARGETS, delta_jars
    from delta_contracts.engine.spark.session import DELTA_EXTENSIONS, LOCAL_SESSION_CONF
    from tests.engine.session_conf import FAST_SMALL_QUERIES

    spark_home = Path(pyspark.__file__).parent
    jars = delta_jars("delta-4")
    command = [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
    if jars is not None:
        command += ["--jars", ",".join(str(p) for p in jars)]
    else:
        command += ["--packages", TARGETS["delta-4"].coordinates]
    conf = {
        **LOCAL_SESSION_CONF,
        **DELTA_EXTENSIONS,
        **FAST_SMALL_QUERIES,
        "spark.app.name": "delta-contracts-connect-tests",
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        # Telemetry tests read the server's own event log (Spark Connect operations and their plans).
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(event_log_dir(warehouse)),
    }
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


@contextmanager
def connect_server(warehouse: Path, log: Path, startup_timeout: float = 300.0) -> Iterator[str]:
    """Run the server while the block runs; yields its `sc://` URL and stops it (and only it) afterwards."""
    import pyspark

    port = free_port()
    event_log_dir(warehouse).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    with log.open("wb") as out:
        server = subprocess.Popen(
            server_command(warehouse, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopping it stops nothing else
        )
    try:
        deadline = time.monotonic() + startup_timeout
        while not _listening(port):
            if server.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited ({server.returncode}): {_tail(log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Spark Connect server did not listen within {startup_timeout}s: {_tail(log)}"
                )
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        _stop(server)


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def _tail(log: Path, lines: int = 15) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:]) or "no output"
