"""Engines under test. The conformance suite is written once and runs on every engine available here:
`local` always; `spark` where delta-spark's jars are (not on these machines: Maven is unreachable)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark import delta_jars_available

SPARK_AVAILABLE, SPARK_REASON = delta_jars_available()


@pytest.fixture(scope="session")
def local_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from delta_contracts.engine.local import LocalEngine

    engine = LocalEngine(tmp_path_factory.mktemp("warehouse"))
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def spark_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from delta_contracts.engine.spark import SparkEngine, local_delta_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = local_delta_session(warehouse=warehouse)
    yield SparkEngine(session, warehouse / "_delta_contracts")
    session.stop()


@pytest.fixture(
    params=[
        "local",
        pytest.param(
            "spark", marks=pytest.mark.skipif(not SPARK_AVAILABLE, reason=f"spark not run: {SPARK_REASON}")
        ),
    ]
)
def engine(request: pytest.FixtureRequest) -> Engine:
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
