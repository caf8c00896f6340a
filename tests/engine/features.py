"""The feature × change matrix of issue 36: a Delta table carrying one table feature, moved by one kind of
change, executed on a real engine with rows in the table.

Each cell creates the old table from its contract, writes rows, plans the change and applies every op of
every phase (gates are the runner's business, not the ops'), then reads what Delta itself stores — the Delta
log's column metadata and domain metadata (with delta-rs, not through the engine under test), DESCRIBE
DETAIL and the table properties — and has a writer use the feature on the table readers are served.
A cell whose change would lose the feature must be refused by `plan` before anything changes.
(No pytest here: the cells are parametrised in test_table_features.py.)
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.live import LiveTable
from delta_contracts.plan.ops import Migration
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.engine.recipe_run import create_schema

_schemas = itertools.count()

BASE: dict[str, Any] = {
    "apiVersion": "delta-contracts/v1",
    "id": "features.orders",
    "version": "1.0.0",
    "owner": {"team": "orders"},
    "description": "One row per order.",
    "table": {"partitioned_by": ["txn_date"]},
    "columns": [
        {"name": "txn_id", "type": "string", "nullable": False},
        {"name": "amount", "type": "bigint", "nullable": False},
        {"name": "attempts", "type": "int"},
        {"name": "status", "type": "string", "description": "Order status."},
        {"name": "note", "type": "string"},
        {"name": "txn_date", "type": "date", "nullable": False},
    ],
    "quality": {"unique": [["txn_id"]]},
}
ROWS = (
    {
        "txn_id": "a1",
        "amount": 1250,
        "attempts": 1,
        "status": "open",
        "note": "x",
        "txn_date": date(2026, 1, 1),
    },
    {
        "txn_id": "a2",
        "amount": 99,
        "attempts": None,
        "status": None,
        "note": None,
        "txn_date": date(2026, 1, 2),
    },
    {"txn_id": "a3", "amount": 7, "attempts": 3, "status": "shut", "note": "y", "txn_date": date(2026, 1, 2)},
)
NEW_ROW = {"txn_id": "z9", "amount": 5, "txn_date": date(2026, 2, 1)}

Mutation = Callable[[dict[str, Any]], None]


def _column(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["columns"] if c["name"] == name)


def _add_column(column: dict[str, Any]) -> Mutation:
    return lambda d: d["columns"].insert(-1, column)


def _properties(**props: str) -> Mutation:
    return lambda d: (
        d["table"].setdefault("properties", {}).update({k.replace("_", "."): v for k, v in props.items()})
    )


def _clustered(d: dict[str, Any]) -> None:
    d["table"].update(partitioned_by=[], clustered_by=["status"])


def _check(d: dict[str, Any]) -> None:
    d["constraints"] = [{"name": "status_known", "expression": "status IS NULL OR length(status) > 0"}]


def _row_tracking(d: dict[str, Any]) -> None:
    d["table"].setdefault("properties", {}).update(
        {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}
    )


FEATURES: dict[str, Mutation] = {
    "identity_by_default": _add_column(
        {"name": "seq", "type": "bigint", "identity": {"generated": "by_default", "start": 100, "step": 10}}
    ),
    "identity_always": _add_column({"name": "seq", "type": "bigint", "identity": {"generated": "always"}}),
    "generated_column": _add_column({"name": "status_code", "type": "string", "generated": "upper(status)"}),
    "expression_default": _add_column(
        {"name": "created_at", "type": "timestamp", "default_expression": "current_timestamp()"}
    ),
    "literal_default": lambda d: _column(d, "status").update(default="new"),
    "liquid_clustering": _clustered,
    "change_data_feed": lambda d: (
        d["table"].setdefault("properties", {}).update({"delta.enableChangeDataFeed": "true"})
    ),
    "row_tracking_deletion_vectors": _row_tracking,
    "column_mapping": lambda d: (
        d["table"].setdefault("properties", {}).update({"delta.columnMapping.mode": "name"})
    ),
    "check_constraint": _check,
    "comments": lambda d: _column(d, "note").update(description="Free text from the clerk."),
}


def _rename_status(d: dict[str, Any]) -> None:
    """status -> state, and everything that names it (a generated column, a CHECK, the clustering keys)."""
    _column(d, "status").update(name="state", renamed_from="status")
    for column in d["columns"]:
        if "generated" in column:
            column["generated"] = column["generated"].replace("status", "state")
    for constraint in d.get("constraints", []):
        constraint["expression"] = constraint["expression"].replace("status", "state")
    if d["table"].get("clustered_by"):
        d["table"]["clustered_by"] = ["state"]


def _narrow(d: dict[str, Any]) -> None:
    _column(d, "amount").update(
        type="int", convert={"expression": "CAST(amount AS INT)", "inverse": "CAST(amount AS BIGINT)"}
    )


def _widen(d: dict[str, Any]) -> None:
    _column(d, "attempts").update(type="bigint")
    d["table"].setdefault("properties", {})["delta.enableTypeWidening"] = "true"


# change: (version bump, mutation)
CHANGES: dict[str, tuple[str, Mutation]] = {
    "add_column": ("1.1.0", _add_column({"name": "extra", "type": "string"})),
    "rename_column": ("2.0.0", _rename_status),
    "drop_column": ("2.0.0", lambda d: d["columns"].remove(_column(d, "note"))),
    "type_change": ("1.1.0", _widen),
    "versioned_change": ("2.0.0", _narrow),
}


def contracts(feature: str, change: str, schema: str) -> tuple[Contract, Contract]:
    old = copy.deepcopy(BASE)
    old["id"] = f"{schema}.orders"
    FEATURES[feature](old)
    new = copy.deepcopy(old)
    version, mutate = CHANGES[change]
    mutate(new)
    new["version"] = version
    return Contract.model_validate(old), Contract.model_validate(new)


def fresh_schema(engine: Engine) -> str:
    schema = f"features{next(_schemas)}"
    create_schema(engine, schema)
    return schema


def apply_all(engine: Engine, migration: Migration) -> None:
    for op in migration.ops:
        engine.apply_op(op)


def insert(engine: Engine, table: TableId, row: dict[str, Any]) -> None:
    """A producer's INSERT naming the columns it gives, NULL for the other plain ones; the columns Delta
    fills itself (identity, generated, a default) are left out. (Sail refuses an INSERT that leaves out a
    plain column: "INSERT is missing value for non-generated column".)"""
    live = engine.describe(table, with_version=False)
    assert live is not None, f"{table} should exist"
    row = dict(row)
    for column in live.columns:
        computed = column.identity is not None or column.generated is not None or column.default is not None
        if column.name not in row and not computed:
            row[column.name] = None
    names = list(row)
    values = exp.Tuple(expressions=[x.literal(row[n]) for n in names])
    statement = exp.insert(
        exp.Values(expressions=[values]), x.table(table), columns=[x.ident(n) for n in names]
    )
    engine.sql(x.sql(statement))


def rows_of(engine: Engine, table: TableId) -> dict[str, dict[str, Any]]:
    found = engine.sql(x.sql(exp.select("*").from_(x.table(table))))
    return {str(r["txn_id"]): dict(r) for r in found}


def log_fields(location: str) -> dict[str, dict[str, Any]]:
    """The Delta log's schema fields (with their metadata), read with delta-rs."""
    from deltalake import DeltaTable

    schema = json.loads(DeltaTable(location.removeprefix("file:")).schema().to_json())
    return {f["name"]: f for f in schema["fields"]}


def detail(engine: Engine, table: TableId) -> dict[str, Any]:
    """DESCRIBE DETAIL of the table: its clustering columns, table features and properties."""
    (row,) = engine.sql(x.sql(exp.Describe(this=x.table(table), style="DETAIL")))
    return dict(row)


@dataclass
class Cell:
    feature: str
    change: str
    old: Contract
    new: Contract
    old_physical: TableId
    served: TableId  # the physical table readers are served after the migration
    before: dict[str, dict[str, Any]]
    before_live: LiveTable
    after: dict[str, dict[str, Any]]
    after_live: LiveTable


@dataclass
class Refused:
    """The engine refused the migration before any op ran: the table's version before and after."""

    reason: str
    version_before: int | None
    version_after: int | None


def run_cell(engine: Engine, feature: str, change: str) -> Cell | Refused | str:
    """The cell executed; the plan's refusal (a string: planning is pure, nothing can have changed); or the
    engine's refusal before anything ran."""
    from delta_contracts.engine.base import EngineError
    from delta_contracts.plan.building import FeatureLossError

    schema = fresh_schema(engine)
    old, new = contracts(feature, change, schema)
    created, state = plan(None, old, Target.DELTA_4)
    try:
        engine.check_supported(created.ops)
    except EngineError as refusal:
        return Refused(str(refusal), None, engine.table_version(state.physical))
    apply_all(engine, created)
    for row in ROWS:
        insert(engine, state.physical, {k: v for k, v in row.items() if old.column(k) is not None})
    before = rows_of(engine, state.physical)
    before_live = engine.describe(state.physical)
    assert before_live is not None
    try:
        migration, after_state = plan(old, new, Target.DELTA_4, state=state)
    except FeatureLossError as refusal:
        return str(refusal)
    try:
        engine.check_supported(migration.ops)
    except EngineError as refusal:
        return Refused(str(refusal), before_live.version, engine.table_version(state.physical))
    apply_all(engine, migration)
    served = after_state.physical
    after_live = engine.describe(served)
    assert after_live is not None
    return Cell(
        feature,
        change,
        old,
        new,
        state.physical,
        served,
        before,
        before_live,
        rows_of(engine, served),
        after_live,
    )
