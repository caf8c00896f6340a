"""Every golden migration executed on real Delta, and the embedded engine held against it.

`test_recipe_executes_on_delta`: each recipe × {in_place, versioned}, planned for delta-4, applied on
delta-spark to a table holding rows (`tests/engine/recipe_run.py` says what is checked). The delta-3 target
runs the same cases in its own virtualenv (`test_delta3.py`).

`test_committed_history_executes_on_delta` and `test_local_ends_where_spark_ends_on_the_committed_history`:
the same for the migrations committed under `migrations/` (each table's whole history, one migration after
another, rows written before each and between its populate and cutover).

`test_local_ends_where_spark_ends`: the same migrations applied on `local` end in the same table state as on
delta-spark — columns, types, nullability, comments, defaults, CHECKs, properties (stamp included),
partitioning, clustering, table comment and a checksum of the rows — read back from the Delta log with
delta-rs, not through either engine; or `local` refuses them before changing anything, for a documented
reason.

Each case runs once on delta-spark, and both tests read that run. Under pytest-xdist (`make test`) the
delta-spark run is made by the worker holding the suite's Spark session, which publishes it (`Published`);
the differential test runs `local` on the other worker and reads it from there, so the Spark worker does not
also run the embedded engine's half (tests/xdist_lanes.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.base import Engine, EngineError
from delta_contracts.plan.planner import PlanError
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.recipe_run import CaseRun, checksum, execute_case, execute_history, table_state
from tests.recipes import pair
from tests.tiers import EXHAUSTIVE, matrix
from tests.xdist_lanes import shared_folder

pytestmark = pytest.mark.engine

# every case of the matrix; those outside the cover of every (op kind, phase) only in the exhaustive tier
CASES = matrix(Target.DELTA_4)


_spark_runs: dict[str, CaseRun | BaseException] = {}


@dataclass(frozen=True)
class Published:
    """A delta-spark run as the other xdist worker reads it: what the name serves, and where the table is
    (its state is read from the Delta log by the reader)."""

    served_types: dict[str, str]
    served: str
    location: str
    schema: str

    def state(self) -> dict[str, Any]:
        return table_state(self.location, self.schema)


def _shared(config: pytest.Config) -> Path | None:
    """Where the runs are published under pytest-xdist: in the folder the workers share."""
    folder = shared_folder(config)
    return folder / "spark-runs" if folder is not None else None


Run = Callable[[Engine], CaseRun]


def spark_run(engine: Engine, key: str, run: Run, config: pytest.Config) -> CaseRun:
    """Each case runs once on delta-spark; the executed test and the differential test share the run, and it
    is published for the other worker, failure included."""
    if key not in _spark_runs:
        try:
            _spark_runs[key] = run(engine)
        except BaseException as err:  # kept so that the second test reports the same failure
            _spark_runs[key] = err
        folder = _shared(config)
        if folder is not None:
            result = _spark_runs[key]
            if isinstance(result, BaseException):
                record: dict[str, Any] = {"error": f"{type(result).__name__}: {result}"}
            else:
                record = {"served_types": result.served_types, "served": result.served}
                record |= {"location": result.location, "schema": result.schema}
            folder.mkdir(parents=True, exist_ok=True)
            written = folder / f".{key}.json"
            written.write_text(json.dumps(record), encoding="utf-8")
            written.replace(folder / f"{key}.json")  # whole, or not there yet
    result = _spark_runs[key]
    if isinstance(result, BaseException):
        raise result
    return result


def spark_reference(request: pytest.FixtureRequest, key: str, run: Run) -> CaseRun | Published:
    """The delta-spark run of `key`: made here, or under pytest-xdist awaited from the worker that holds the
    suite's Spark session (it runs the executed tests first, tests/xdist_lanes.py)."""
    folder = _shared(request.config)
    if folder is None:
        return spark_run(request.getfixturevalue("spark_engine"), key, run, request.config)
    published = folder / f"{key}.json"
    deadline = time.monotonic() + 3600
    while not published.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"no delta-spark run of {key} was published in an hour: was its executed test run?")
        time.sleep(1)
    record = json.loads(published.read_text(encoding="utf-8"))
    if "error" in record:
        pytest.fail(f"the delta-spark run of {key} failed: {record['error']}")
    return Published(**record)


def _case(recipe: str, versioning: str) -> Run:
    return lambda engine: execute_case(engine, recipe, versioning, clone_old=True, sql_files=True)


@pytest.mark.lane_first  # the differential tests, in another lane, await its runs
@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_recipe_executes_on_delta(
    spark_engine: Engine, recipe: str, versioning: str, request: pytest.FixtureRequest
) -> None:
    try:
        run = spark_run(spark_engine, f"{recipe}-{versioning}", _case(recipe, versioning), request.config)
    except PlanError as err:
        pytest.fail(f"{recipe}/{versioning} refused by the planner: {err}")
    _old, new = pair(recipe, versioning)
    assert sorted(run.served_columns) == sorted(c.name for c in new.columns), "the name serves the contract"
    assert run.served_types == run.wanted_types, f"{recipe}/{versioning}: types served differ"
    assert run.served == run.expected, f"{recipe}/{versioning}: rows served differ from the contract's"


@pytest.mark.parametrize(("recipe", "versioning"), [c for c in CASES if c.values[0] == "type_widening_off"])  # type: ignore[attr-defined]
def test_type_widening_off_gives_readers_without_the_feature_the_table_back(
    spark_engine: Engine, recipe: str, versioning: str, request: pytest.FixtureRequest
) -> None:
    """The recipe's run (no statement more): after DROP FEATURE the protocol lists no typeWidening, the
    reader version is 1 again, and delta-rs, which refuses a table with the typeWidening reader feature,
    reads the table itself: the rows the contract's name serves, every value kept by the rewrite."""
    from deltalake import DeltaTable

    from delta_contracts.engine import deltalog

    run = spark_run(spark_engine, f"{recipe}-{versioning}", _case(recipe, versioning), request.config)
    live = deltalog.read_table(run.location, "t")
    features = (*live.reader_features, *live.writer_features)
    assert not [f for f in features if f.startswith("typeWidening")], features
    assert live.min_reader_version == 1
    attempts = live.column("attempts")
    assert attempts is not None and attempts.type == "int"
    assert checksum(DeltaTable(run.location).to_pyarrow_table().to_pylist()) == run.served


# What `local` refuses, before changing anything, because Sail 0.7.2 cannot do it faithfully (its `--help`
# and docs/engines.md say so): recipe/versioning -> the words of the refusal.
LOCAL_REFUSALS: dict[tuple[str, str], str] = {
    ("change_clustering", "in_place"): "CLUSTER BY",
    ("change_clustering", "versioned"): "CLUSTER BY",
    ("set_property", "in_place"): "change data feed",
    ("set_property", "versioned"): "change data feed",
    ("type_widening_off", "in_place"): "DROP FEATURE",
    ("type_widening_off", "versioned"): "DROP FEATURE",
    ("copy_identity", "in_place"): "MERGE INTO a table with identity columns",
    ("copy_identity", "versioned"): "MERGE INTO a table with identity columns",
    ("drop_map_value_field", "versioned"): "transform_values",
    ("rename_map_value_field", "versioned"): "transform_values",
    ("struct_fields", "versioned"): "transform_values",
}


@JVM
@pytest.mark.awaits_lane_first
@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_local_ends_where_spark_ends(
    local_engine: Engine, recipe: str, versioning: str, request: pytest.FixtureRequest
) -> None:
    refusal = LOCAL_REFUSALS.get((recipe, versioning))
    try:
        run = execute_case(local_engine, recipe, versioning)
    except EngineError as err:
        assert refusal is not None, f"local failed where spark succeeded: {err}"
        assert refusal.casefold() in str(err).casefold(), str(err)
        assert "cannot run this migration" in str(err), "refused before anything ran"
        return
    assert refusal is None, f"local was expected to refuse ({refusal}) and ran"
    reference = spark_reference(request, f"{recipe}-{versioning}", _case(recipe, versioning))
    assert run.served_types == reference.served_types
    assert run.served == reference.served
    assert run.state() == reference.state()


MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
# The committed tables whose history goes beyond their creation (creates are the `create` recipe's case);
# their rows are written by hand in recipe_run.HISTORY_ROWS.
HISTORIES = sorted(p.name for p in MIGRATIONS.iterdir() if len(list(p.glob("0*.json"))) > 1)
# The committed histories execute on delta-spark in the exhaustive tier: their op kinds are the recipe cases'
# (`make test` executes each in its cover on delta-spark), and `make test` applies the sales.orders history
# whole on the embedded engine and through the Connect server's delta-spark (the demo, the kill sweep).
HISTORY_PARAMS = [pytest.param(table, marks=EXHAUSTIVE) for table in HISTORIES]


def _history(table: str) -> Run:
    return lambda engine: execute_history(engine, MIGRATIONS / table, sql_files=True)


def test_every_committed_history_has_rows_to_execute_with() -> None:
    assert HISTORIES == ["sales.orders"], "write rows for the new history in recipe_run.HISTORY_ROWS"


@pytest.mark.lane_first
@pytest.mark.parametrize("table", HISTORY_PARAMS)
def test_committed_history_executes_on_delta(
    spark_engine: Engine, table: str, request: pytest.FixtureRequest
) -> None:
    run = spark_run(spark_engine, f"history-{table}", _history(table), request.config)
    assert run.served_types == run.wanted_types
    assert run.served == run.expected


@JVM
@pytest.mark.awaits_lane_first
@pytest.mark.parametrize("table", HISTORY_PARAMS)
def test_local_ends_where_spark_ends_on_the_committed_history(
    local_engine: Engine, table: str, request: pytest.FixtureRequest
) -> None:
    run = execute_history(local_engine, MIGRATIONS / table)
    reference = spark_reference(request, f"history-{table}", _history(table))
    assert run.served_types == reference.served_types
    assert run.served == reference.served
    assert run.state() == reference.state()
