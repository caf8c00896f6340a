"""Every read of a deprecated column is logged with its user and application, whatever its spelling: {by
name, through a view, `load(path)`, ``delta.`path` ``} × {plain, column-mapped, renamed in place, versioned}
tables, from a real Spark 4.2 event log (rolling zstd, generated once for the module by
eventlog_matrix_app.py) and from a query-history export of the same statements. A read answered from the
Delta log's statistics names no column: a possible read, never none."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.session import delta_jars_available
from delta_contracts.sql.extract import Catalog
from delta_contracts.telemetry.delta_schema import logical_name
from delta_contracts.telemetry.log import read_rows
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.pipeline import collect
from delta_contracts.telemetry.sources import parse_source, read_source
from tests.engine.eventlog_matrix_app import APP, SPELLINGS, TABLES

pytestmark = [pytest.mark.engine, pytest.mark.exhaustive]
ROOT = Path(__file__).parent.parent.parent
CELLS = [(t, s) for t in TABLES for s in (*SPELLINGS, "metadata")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    available, why = delta_jars_available()
    if not available:
        pytest.fail(f"delta-spark cannot start: {why}")
    out = tmp_path_factory.mktemp("matrix")
    run = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "eventlog_matrix_app.py"), str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=1800,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return out


def _cells(generated: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["table"], c["spelling"]): c for c in json.loads((generated / "cells.json").read_text())}


def _watched(generated: Path) -> Watched:
    """What `watched_on` builds from the contracts and the engine: the deprecated columns, the tables'
    columns, the views' SQL and the tables' locations."""
    schemas = {t: ("id", "grade", "seniority_no") for t in TABLES} | {
        "crew.renamed": ("id", "grade_old", "grade")
    }
    locations = {c["location"]: c["table"] for c in _cells(generated).values()}
    return Watched(
        objects=tuple(f"{t}.{column}" for t, (column, _) in TABLES.items()),
        catalog=Catalog({view: f"SELECT * FROM {t}" for t, (_, view) in TABLES.items()}, schemas),
        locations=locations,
    )


def _collected(engine: Engine, source: str, watched: Watched, state: Path) -> list[dict[str, object]]:
    spark = engine.spark  # type: ignore[attr-defined]
    spec = parse_source(source)
    collect(spark, read_source(spark, spec), spec.name, watched, state)
    return read_rows(state)


@pytest.fixture(scope="module")
def from_event_log(
    local_engine: Engine, generated: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, object]]:
    state = tmp_path_factory.mktemp("matrix-log")
    return _collected(local_engine, f"eventlog:{generated / 'logs'}", _watched(generated), state)


def _export(generated: Path, path: Path) -> Path:
    """A Databricks query-history export of the same reads, each by its own user: the SQL the job ran, and
    for a `load(path)` the ``delta.`path` `` statement that reads the same."""
    with path.open("w", encoding="utf-8") as out:
        for (table, spelling), cell in _cells(generated).items():
            text = cell["sql"] or f"SELECT id, {cell['column']} FROM delta.`{cell['path']}` WHERE id > 0"
            row = {
                "statement_id": f"{table}/{spelling}",
                "statement_text": text,
                "executed_by": f"{spelling}@{table}",
                "start_time": datetime.fromtimestamp(cell["start"], UTC).isoformat(),
                "client_application": "Databricks SQL",
            }
            out.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def from_history(
    local_engine: Engine, generated: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, object]]:
    state = tmp_path_factory.mktemp("matrix-history")
    export = _export(generated, state / "history.jsonl")
    return _collected(local_engine, f"query-history:{export}", _watched(generated), state / "warehouse")


def _kind(spelling: str) -> str:
    return "possible" if spelling == "metadata" else "read"


@pytest.mark.parametrize(("table", "spelling"), CELLS)
def test_every_spelling_in_the_event_log_is_logged(
    from_event_log: list[dict[str, object]], generated: Path, table: str, spelling: str
) -> None:
    cell = _cells(generated)[(table, spelling)]
    column = f"{table}.{cell['column']}"
    start, end = (datetime.fromtimestamp(cell[k], UTC) for k in ("start", "end"))
    mine = [r for r in from_event_log if start <= r["statement_time"] <= end]  # type: ignore[operator]
    assert {(r["object"], r["kind"]) for r in mine} == {(column, _kind(spelling))}, mine
    assert {(r["user"], r["client"]) for r in mine} == {(getpass.getuser(), f"spark:{APP}")}


@pytest.mark.parametrize(("table", "spelling"), [c for c in CELLS if c[1] != "metadata"])
def test_every_spelling_in_a_query_history_export_is_logged(
    from_history: list[dict[str, object]], generated: Path, table: str, spelling: str
) -> None:
    cell = _cells(generated)[(table, spelling)]
    mine = [r for r in from_history if r["statement_id"] == f"{table}/{spelling}"]
    assert {(r["object"], r["kind"]) for r in mine} == {(f"{table}.{cell['column']}", "read")}
    assert {(r["user"], r["client"]) for r in mine} == {(f"{spelling}@{table}", "Databricks SQL")}


def test_a_real_log_maps_physical_names_to_the_name_of_the_time(generated: Path) -> None:
    """crew.mapped's `grade` renamed to `grade_new` by RENAME COLUMN: the same physical column (as delta-rs
    reads the schema) is `grade` before the rename and `grade_new` after."""
    from deltalake import DeltaTable

    location = _cells(generated)[("crew.mapped", "name")]["location"]
    renamed = json.loads((generated / "renamed.json").read_text())
    field = next(f for f in DeltaTable(location).schema().fields if f.name == "grade_new")
    physical = field.metadata["delta.columnMapping.physicalName"]
    assert physical.startswith("col-")
    assert logical_name(location, physical, int(renamed["before"] * 1000)) == "grade"
    assert logical_name(location, physical, int(renamed["after"] * 1000) + 1) == "grade_new"
