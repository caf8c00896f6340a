"""Issue 46: a table property that makes Delta refuse a migration's statements is known before anything runs.

An append-only table (`delta.appendOnly=true`) refuses UPDATE, MERGE updates and INSERT OVERWRITE
(DELTA_CANNOT_MODIFY_APPEND_ONLY). A versioned copy into an append-only contract creates the new table
without the property and sets it once the fence has written it: rows kept, the table append-only after. A
property set on the live table by hand, which the plan cannot know, makes `apply` refuse an in-place backfill
before its first op (exit 2), naming the table and the way out; nothing changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.apply import apply
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.plan.ops import Phase, SetProperties
from delta_contracts.plan.render import render
from delta_contracts.sql import expressions as x
from tests.engine.conftest import JVM
from tests.engine.recipe_run import ROWS, create_schema, renamed, write_rows
from tests.engine.test_live_writers import plan_folder
from tests.recipes import pair
from tests.tiers import EXHAUSTIVE

pytestmark = pytest.mark.engine

APPEND_ONLY = "delta.appendOnly"


def append_only(contract: Contract) -> Contract:
    doc = contract.model_dump(by_alias=True, exclude_none=True, mode="json")
    doc.setdefault("table", {}).setdefault("properties", {})[APPEND_ONLY] = "true"
    return Contract.model_validate(doc)


def rows_by_key(engine: Engine, table: Any, columns: tuple[str, ...]) -> dict[str, tuple[Any, ...]]:
    query = exp.select(*(x.column(c) for c in columns)).from_(x.table(table))
    return {r["txn_id"]: tuple(r[c] for c in columns) for r in engine.sql(x.sql(query))}


def refuses_an_update(engine: Engine, table: Any) -> bool:
    update = exp.Update(
        this=x.table(table),
        expressions=[exp.EQ(this=x.column("status"), expression=exp.Literal.string("OK"))],
    )
    try:
        engine.sql(x.sql(update))
    except Exception as err:  # the engine's own error type: what matters is that Delta said no
        return "append" in str(err).lower()
    return False


@pytest.mark.parametrize(
    "engine_name", ["local_engine", pytest.param("spark_engine", marks=[JVM, EXHAUSTIVE])]
)
def test_a_versioned_copy_into_an_append_only_contract_keeps_rows_and_the_property(
    engine_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    engine: Engine = request.getfixturevalue(engine_name)
    schema = f"append_only_copy_{engine_name}"
    create_schema(engine, schema)
    base, wanted = pair("change_partitioning", "versioned")
    old, new = append_only(renamed(base, schema)), append_only(renamed(wanted, schema))
    root = plan_folder(tmp_path / "migrations", old, new)
    created = apply(engine, root, tables=[old.id], to_version=old.version)
    assert created.exit_code == 0, [r.detail for r in created.reports]
    table = load_history(root / old.id)[0].state.physical
    write_rows(engine, table, ROWS)
    assert refuses_an_update(engine, table)
    columns = ("txn_id", "txn_amt_paise", "status", "txn_date")
    before = rows_by_key(engine, table, columns)

    result = apply(engine, root, tables=[old.id])
    assert int(result.exit_code) == 0, [r.detail for r in result.reports]
    new_table = load_history(root / old.id)[1].state.physical
    assert new_table != table
    assert rows_by_key(engine, new.table_parts, columns) == before  # read through the alias view
    live = engine.describe(new_table, with_version=False)
    assert live is not None and live.properties.get(APPEND_ONLY) == "true"
    assert refuses_an_update(engine, new_table)


@pytest.mark.parametrize(
    "engine_name", ["local_engine", pytest.param("spark_engine", marks=[JVM, EXHAUSTIVE])]
)
def test_an_append_only_property_set_by_hand_refuses_a_backfill_before_it_runs(
    engine_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    engine: Engine = request.getfixturevalue(engine_name)
    schema = f"append_only_live_{engine_name}"
    create_schema(engine, schema)
    base, wanted = pair("add_not_null_with_default")
    old, new = renamed(base, schema), renamed(wanted, schema)
    root = plan_folder(tmp_path / "migrations", old, new)
    created = apply(engine, root, tables=[old.id], to_version=old.version)
    assert created.exit_code == 0, [r.detail for r in created.reports]
    table = load_history(root / old.id)[0].state.physical
    write_rows(engine, table, ROWS)
    by_hand = SetProperties(table=table, phase=Phase.EXPAND, properties=((APPEND_ONLY, "true"),))
    engine.sql(render(by_hand))
    before = engine.table_version(table)

    result = apply(engine, root, tables=[old.id])
    assert int(result.exit_code) == 2, [r.detail for r in result.reports]
    ((_, why),) = result.refused
    assert f"{table} is append-only" in why and "backfill" in why, why
    assert "Set delta.appendOnly to false" in why, why
    assert not result.reports  # refused before its first op: nothing ran
    assert engine.table_version(table) == before
