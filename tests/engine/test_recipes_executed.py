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
"""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine, EngineError
from delta_contracts.plan.planner import PlanError
from tests.engine.recipe_run import CaseRun, execute_case, execute_history
from tests.recipes import RECIPES, pair

pytestmark = pytest.mark.engine

CASES = [(recipe, versioning) for recipe in RECIPES for versioning in ("in_place", "versioned")]


_spark_runs: dict[tuple[str, str], CaseRun | BaseException] = {}


def spark_run(engine: Engine, recipe: str, versioning: str) -> CaseRun:
    """Each case runs once on delta-spark; the executed test and the differential test share the run."""
    key = (recipe, versioning)
    if key not in _spark_runs:
        try:
            _spark_runs[key] = execute_case(engine, recipe, versioning)
        except BaseException as err:  # kept so that the second test reports the same failure
            _spark_runs[key] = err
    result = _spark_runs[key]
    if isinstance(result, BaseException):
        raise result
    return result


@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_recipe_executes_on_delta(spark_engine: Engine, recipe: str, versioning: str) -> None:
    try:
        run = spark_run(spark_engine, recipe, versioning)
    except PlanError as err:
        pytest.fail(f"{recipe}/{versioning} refused by the planner: {err}")
    _old, new = pair(recipe, versioning)
    assert sorted(run.served_columns) == sorted(c.name for c in new.columns), "the name serves the contract"
    assert run.served_types == run.wanted_types, f"{recipe}/{versioning}: types served differ"
    assert run.served == run.expected, f"{recipe}/{versioning}: rows served differ from the contract's"


# What `local` refuses, before changing anything, because Sail 0.7.2 cannot do it faithfully (its `--help`
# and docs/engines.md say so): recipe/versioning -> the words of the refusal.
LOCAL_REFUSALS: dict[tuple[str, str], str] = {
    ("change_clustering", "in_place"): "CLUSTER BY",
    ("change_clustering", "versioned"): "CLUSTER BY",
    ("set_property", "in_place"): "change data feed",
    ("set_property", "versioned"): "change data feed",
}


@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_local_ends_where_spark_ends(
    local_engine: Engine, spark_engine: Engine, recipe: str, versioning: str
) -> None:
    reference = spark_run(spark_engine, recipe, versioning)
    refusal = LOCAL_REFUSALS.get((recipe, versioning))
    try:
        run = execute_case(local_engine, recipe, versioning)
    except EngineError as err:
        assert refusal is not None, f"local failed where spark succeeded: {err}"
        assert refusal.casefold() in str(err).casefold(), str(err)
        assert "cannot run this migration" in str(err), "refused before anything ran"
        return
    assert refusal is None, f"local was expected to refuse ({refusal}) and ran"
    assert run.served_types == reference.served_types
    assert run.served == reference.served
    assert run.state() == reference.state()


MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
# The committed tables whose history goes beyond their creation (creates are the `create` recipe's case);
# their rows are written by hand in recipe_run.HISTORY_ROWS.
HISTORIES = sorted(p.name for p in MIGRATIONS.iterdir() if len(list(p.glob("0*.json"))) > 1)
_history_runs: dict[str, CaseRun] = {}


def spark_history(engine: Engine, table: str) -> CaseRun:
    if table not in _history_runs:
        _history_runs[table] = execute_history(
            engine, Path(__file__).resolve().parents[2] / "migrations" / table
        )
    return _history_runs[table]


def test_every_committed_history_has_rows_to_execute_with() -> None:
    assert HISTORIES == ["sales.orders"], "write rows for the new history in recipe_run.HISTORY_ROWS"


@pytest.mark.parametrize("table", HISTORIES)
def test_committed_history_executes_on_delta(spark_engine: Engine, table: str) -> None:
    run = spark_history(spark_engine, table)
    assert run.served_types == run.wanted_types
    assert run.served == run.expected


@pytest.mark.parametrize("table", HISTORIES)
def test_local_ends_where_spark_ends_on_the_committed_history(
    local_engine: Engine, spark_engine: Engine, table: str
) -> None:
    reference = spark_history(spark_engine, table)
    run = execute_history(local_engine, MIGRATIONS / table)
    assert run.served_types == reference.served_types
    assert run.served == reference.served
    assert run.state() == reference.state()
