"""A producer that writes a table by name with a create-if-missing write (`writeStream….toTable`,
`saveAsTable` in append mode) and starts again while a versioned cutover has renamed the old table aside and
not yet made the alias view creates a new table under the old name (measured: the streaming writer through
a versioned cutover, `rename table … partial`, exit 1). The cutover takes the name back: that table's rows
are carried to the new table with the old table's, and the alias view takes the name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.sql import expressions as x
from tests.engine.conftest import JVM
from tests.engine.live_run import plan_folder
from tests.engine.recipe_run import create_schema
from tests.tiers import EXHAUSTIVE

pytestmark = [pytest.mark.engine, JVM]


def contracts(schema: str) -> tuple[Contract, Contract]:
    doc: dict[str, Any] = {
        "apiVersion": "delta-contracts/v1",
        "id": f"{schema}.Events",
        "version": "1.0.0",
        "owner": {"team": "payments"},
        "table": {"versioning": "in_place"},
        "columns": [
            {"name": "value", "type": "bigint", "nullable": False},
            {"name": "amount", "type": "bigint"},
        ],
    }
    old = Contract.model_validate(dict(doc))
    return old, Contract.model_validate({**doc, "version": "2.0.0", "table": {"versioning": "versioned"}})


def insert(engine: Engine, table: tuple[str, ...], values: range) -> None:
    rows = ", ".join(f"({v}, {10 * v})" for v in values)
    engine.sql(f"INSERT INTO {x.sql(x.table(table))} VALUES {rows}")


def at_the_old_version(engine: Engine, tmp_path: Path, schema: str) -> tuple[Path, str, Any]:
    """The table at 1.0.0 with rows 0-2; the migrations' folder, the contract's id and the 2.0.0 one."""
    create_schema(engine, schema)
    old, new = contracts(schema)
    root = plan_folder(tmp_path / "migrations", old, new)
    assert apply(engine, root, tables=[old.id], to_version=old.version).exit_code == 0
    first, migration = load_history(root / old.id)
    insert(engine, first.state.physical, range(0, 3))
    return root, old.id, migration


def take_the_name(engine: Engine, name: tuple[str, ...]) -> None:
    """As `toTable` / `saveAsTable` do when the name is free: a new managed Delta table, rows 3-4 in it."""
    engine.sql(f"CREATE TABLE {x.sql(x.table(name))} (value BIGINT, amount BIGINT) USING delta")
    insert(engine, name, range(3, 5))


def assert_served_whole(engine: Engine, name: tuple[str, ...], outcome: Any) -> None:
    assert outcome.exit_code == 0, [r.detail for run in outcome.runs for r in run.reports if r.detail]
    served = engine.sql(f"SELECT value, amount FROM {x.sql(x.table(name))}")
    assert sorted((r["value"], r["amount"]) for r in served) == [(v, 10 * v) for v in range(5)]


# The same path from either moment: one in `make test`.
@pytest.mark.parametrize("when", [pytest.param("after the rename", marks=EXHAUSTIVE), "before the view"])
def test_a_table_created_under_the_old_name_during_the_cutover_is_carried_and_gives_way_to_the_view(
    spark_engine: Engine, tmp_path: Path, when: str
) -> None:
    root, contract, migration = at_the_old_version(spark_engine, tmp_path, f"name_taken_{len(when)}")
    ops = list(enumerate(migration.migration.ops, 1))
    name = next(op.table for op in migration.migration.ops if op.kind == "rename_table")
    rename = next(i for i, op in ops if op.kind == "rename_table")
    view = next(i for i, op in ops if op.kind == "create_view" and op.table == name)
    boundary_of = {"after the rename": f"op {rename} ran", "before the view": f"op {view} started"}
    taken = f"{migration.migration_id} {boundary_of[when]}"

    def intrude(boundary: str) -> None:
        if boundary == taken:
            take_the_name(spark_engine, name)

    outcome = apply(spark_engine, root, tables=[contract], force_reason="test", on_boundary=intrude)
    assert_served_whole(spark_engine, name, outcome)
    assert spark_engine.describe(name) is None  # the name is the alias view again, not a table


class CrashedError(Exception):
    """apply's process ends here (the kill tests do it with SIGKILL: tests/engine/test_apply_processes.py)."""


@EXHAUSTIVE
def test_a_run_again_after_a_crash_between_the_rename_and_the_view_takes_the_name_back(
    spark_engine: Engine, tmp_path: Path
) -> None:
    """The second run did not rename the old table: it finds it under its new name (the rename's op is
    skipped) and carries the taken name's rows there all the same."""
    from delta_contracts.engine.spark.engine import SparkEngine

    root, contract, migration = at_the_old_version(spark_engine, tmp_path, "name_taken_crash")
    rename, op = next((i, op) for i, op in enumerate(migration.migration.ops, 1) if op.kind == "rename_table")

    def crash_after_the_rename(boundary: str) -> None:
        if boundary == f"{migration.migration_id} op {rename} recorded":
            take_the_name(spark_engine, op.table)
            raise CrashedError

    with pytest.raises(CrashedError):
        apply(spark_engine, root, tables=[contract], force_reason="test", on_boundary=crash_after_the_rename)
    again = SparkEngine(spark_engine.spark, spark_engine.state_dir)  # another process's: no rename seen
    assert_served_whole(spark_engine, op.table, apply(again, root, tables=[contract], force_reason="test"))
