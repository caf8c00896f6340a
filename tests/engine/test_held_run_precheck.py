"""A pre-check inside a held run (`apply.schedule.held_runs`) that fails on rows a producer wrote after the
run's catch-up: `apply` says so, and that running it again completes (it runs the catch-up again first).

The producer that does not wait for the hold is played by the test itself, deterministically: right after the
catch-up of an added NOT NULL column is recorded, it appends a row in the old shape (the column NULL), as an
old producer ignoring `delta_contracts.hold` would between the catch-up and the NOT NULL's pre-check.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.apply.schedule import held_runs
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.sql import expressions as x
from tests.engine.live_run import plan_folder
from tests.engine.recipe_run import create_schema

pytestmark = pytest.mark.engine


def contracts(schema: str) -> tuple[Contract, Contract]:
    doc: dict[str, Any] = {
        "apiVersion": "delta-contracts/v1",
        "id": f"{schema}.events",
        "version": "1.0.0",
        "owner": {"team": "payments"},
        "columns": [
            {"name": "txn_id", "type": "string", "nullable": False},
            {"name": "status", "type": "string"},
        ],
    }
    old = Contract.model_validate(copy.deepcopy(doc))
    doc["version"] = "2.0.0"
    doc["columns"].append({"name": "region", "type": "string", "nullable": False, "fill": "'unknown'"})
    return old, Contract.model_validate(doc)


def test_rows_written_after_the_catch_up_are_named_and_a_second_run_completes(
    memory_engine: Engine, tmp_path: Path
) -> None:
    old, new = contracts("held_precheck")
    create_schema(memory_engine, "held_precheck")
    root = plan_folder(tmp_path / "migrations", old, new)
    assert apply(memory_engine, root, tables=[old.id], to_version=old.version).exit_code == 0
    table = x.sql(x.table(old.table_parts))
    memory_engine.sql(f"INSERT INTO {table} VALUES ('a', 'OK'), ('b', 'OK')")
    stored = load_history(root / old.id)[-1]
    runs = held_runs(stored.migration.ops)
    assert len(runs) == 1, runs  # the cutover's catch-up of `region`, its NOT NULL, through the stamp
    catch_up = f"{stored.migration_id} op {next(iter(runs))} recorded"
    written: list[str] = []

    def old_producer(boundary: str) -> None:
        if boundary == catch_up and not written:
            memory_engine.sql(
                f"INSERT INTO {table} (`txn_id`, `status`, `region`) VALUES ('late', 'OK', NULL)"
            )
            written.append(boundary)

    first = apply(memory_engine, root, tables=[old.id], on_boundary=old_producer)
    assert written, "the catch-up's boundary never came"
    assert first.exit_code == 1 and first.failure is not None, [r.detail for r in first.reports]
    detail = first.failure.detail
    assert "1 row(s)" in detail and '"late"' in detail, detail
    assert "None of them was in the table at version" in detail, detail
    assert "nothing to fix by hand: run `apply` again" in detail, detail

    second = apply(memory_engine, root, tables=[old.id])
    assert second.exit_code == 0, second.failure and second.failure.detail
    rows = {r["txn_id"]: r["region"] for r in memory_engine.sql(f"SELECT * FROM {table}")}
    assert rows == {"a": "unknown", "b": "unknown", "late": "unknown"}


def test_rows_there_before_the_catch_up_get_no_such_words(memory_engine: Engine, tmp_path: Path) -> None:
    """A pre-check failing outside a held run says nothing of producers: here the NOT NULL of an existing
    column, whose NULL rows were there all along."""
    old, _ = contracts("held_precheck_no")
    create_schema(memory_engine, "held_precheck_no")
    doc = old.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["version"] = "2.0.0"
    doc["columns"][1]["nullable"] = False
    new = Contract.model_validate(doc)
    root = plan_folder(tmp_path / "migrations", old, new)
    assert apply(memory_engine, root, tables=[old.id], to_version=old.version).exit_code == 0
    table = x.sql(x.table(old.table_parts))
    memory_engine.sql(f"INSERT INTO {table} VALUES ('a', NULL)")
    outcome = apply(memory_engine, root, tables=[old.id])
    assert outcome.exit_code == 1 and outcome.failure is not None
    assert "fix them first" in outcome.failure.detail
    assert "None of them was there" not in outcome.failure.detail
