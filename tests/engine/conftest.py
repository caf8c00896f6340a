"""Engines under test. The conformance suite is written once and runs on every engine: `local` (Sail),
`spark` (delta-spark, the reference) and `connect` (the same delta-spark behind a Spark Connect server).
Missing jars fail the run; only DELTA_CONTRACTS_SKIP_SPARK=1 skips `spark` and `connect`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.session import delta_jars_available
from tests.engine.session_conf import FAST_SMALL_QUERIES, long_lived_jvm
from tests.tiers import EXHAUSTIVE
from tests.unity import UnityServer
from tests.unity import unity_server as unity_server_running

SKIP_SPARK = os.environ.get("DELTA_CONTRACTS_SKIP_SPARK") == "1"
# Lines a JVM prints at start-up and while it runs, which a command's output must not carry (measured on
# stderr before the JVM's output went to its log, engine/spark/session.py `jvm_output_to`): "WARNING: Using
# incubator modules", "Using Spark's default log4j profile", "WARN NativeCodeLoader", "Setting default log
# level", and PySpark's JSON lines of SQLQueryContextLogger.
JVM_NOISE = re.compile(r"WARN|log4j|log level|setLogLevel|SLF4J|^\{\"ts\"", re.MULTILINE)


@pytest.fixture(scope="session")
def local_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from delta_contracts.engine.local.engine import LocalEngine

    engine = LocalEngine(tmp_path_factory.mktemp("warehouse"))
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def spark_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session
    from delta_contracts.engine.spark.unity import connector_jar_settings

    available, why = delta_jars_available()
    if not available:
        pytest.fail(f"the spark engine cannot start: {why} (DELTA_CONTRACTS_SKIP_SPARK=1 opts out)")
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    # Unity Catalog's connector is on the one session of the process: `unity_catalog` registers its catalogs
    with long_lived_jvm():
        session = local_delta_session(
            warehouse=warehouse, extra={**FAST_SMALL_QUERIES, **connector_jar_settings()}
        )
    yield SparkEngine(session, warehouse / "_delta_contracts")
    session.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server with delta-spark on loopback (started once per run): its sc:// URL."""
    from tests.engine.connect_server import connect_server

    available, why = delta_jars_available()
    if not available:
        pytest.fail(f"the connect engine cannot start: {why} (DELTA_CONTRACTS_SKIP_SPARK=1 opts out)")
    warehouse = tmp_path_factory.mktemp("connect-warehouse", numbered=False)  # connect_event_logs finds it
    with connect_server(warehouse, warehouse.parent / "connect-server.log") as url:
        yield url


@pytest.fixture(scope="session")
def connect_event_logs(connect_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The event log folder of the Connect server behind `connect_url`."""
    from tests.engine.connect_server import event_log_dir

    return event_log_dir(tmp_path_factory.getbasetemp() / "connect-warehouse")


@pytest.fixture(scope="session")
def connect_engine(connect_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """The same delta-spark, reached through the Spark Connect server."""
    from delta_contracts.engine.spark.connect import connect_engine as open_connect

    engine = open_connect(connect_url, tmp_path_factory.mktemp("connect-state") / "_delta_contracts")
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def unity_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnityServer]:
    """A Unity Catalog OSS server (tests/unity.py), once per test process, in a fresh folder of the run."""
    with unity_server_running(tmp_path_factory.mktemp("unity-catalog")) as server:
        yield server


@pytest.fixture
def unity_catalog(unity_server: UnityServer, spark_engine: Engine, request: pytest.FixtureRequest) -> str:
    """A new catalog of the server (its storage root allows managed tables), registered on the process's
    delta-spark session: its name."""
    from delta_contracts.contract.unity import UnityCatalogSettings
    from delta_contracts.engine.spark.unity import catalog_settings, register_on

    name = unity_server.fresh_catalog(request.node.name)
    settings = UnityCatalogSettings(uri=unity_server.uri, token="", catalogs=(name,))
    register_on(spark_engine.spark, catalog_settings(settings))  # type: ignore[attr-defined]
    return name


JVM = pytest.mark.skipif(SKIP_SPARK, reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user")


# The features built on the engine interface (the runner, the gates, catch-up, reads, create and drift…) run
# on the embedded engine in `make test` and on delta-spark too in the exhaustive tier; delta-spark itself is
# held by `make test` to the recipes (executed) and to the conformance suite (`every_engine`).
ENGINE_PARAMS = ["local", pytest.param("spark", marks=[JVM, EXHAUSTIVE])]


@pytest.fixture
def memory_engine(tmp_path: Path) -> Engine:
    """The in-memory engine, fresh for each test (it starts in milliseconds): for what the runner, the gates
    and the schedule decide, which is the engine's business nowhere."""
    from delta_contracts.engine.memory.engine import MemoryEngine

    return MemoryEngine(tmp_path / "memory-state")


@pytest.fixture(params=["memory", pytest.param("spark", marks=[JVM, EXHAUSTIVE])])
def runner_engine(request: pytest.FixtureRequest) -> Engine:
    """The runner's own tests: the in-memory engine, and delta-spark (the reference) when exhaustive."""
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


@pytest.fixture(params=ENGINE_PARAMS)
def engine(request: pytest.FixtureRequest) -> Engine:
    """The embedded engine and the reference. The conformance suite adds `connect` (`every_engine`)."""
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


# The conformance suite holds delta-spark to the engine interface in the exhaustive tier, on the classic
# session and through the Spark Connect server; `make test` holds the embedded engine to it, and executes
# every op kind in every phase on delta-spark in the recipe cases, where the embedded engine is held against
# delta-spark's end state (tests/engine/test_recipes_executed.py).
@pytest.fixture(
    params=[
        "local",
        pytest.param("spark", marks=[JVM, EXHAUSTIVE]),
        pytest.param("connect", marks=[JVM, EXHAUSTIVE]),
    ]
)
def every_engine(request: pytest.FixtureRequest) -> Engine:
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


@pytest.fixture(params=ENGINE_PARAMS)
def local_or_spark(request: pytest.FixtureRequest) -> Engine:
    """The embedded engine and the reference, for tests whose Connect run would add nothing new."""
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


def log_state(location: str) -> dict[str, Any]:
    """The table as its Delta log says, read with delta-rs directly (not through the engine under test)."""
    from deltalake import DeltaTable

    table = DeltaTable(location)
    schema = json.loads(table.schema().to_json())
    return {
        "fields": {f["name"]: f for f in schema["fields"]},
        "configuration": dict(table.metadata().configuration or {}),
        "description": table.metadata().description,
        "partitions": list(table.metadata().partition_columns or []),
        "version": table.version(),
        "protocol": table.protocol(),
    }


def log_row_count(location: str) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(location).to_pyarrow_table().num_rows)


def location_of(engine: Engine, table: tuple[str, ...]) -> str:
    live = engine.describe(table)
    assert live is not None, f"{table} should exist"
    return live.location.removeprefix("file:")
