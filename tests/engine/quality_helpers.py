"""Shared by the quality tests: example contracts under a fresh schema, tables created without their CHECKs
(so rows breaking the rules can be loaded, as in a table filled before its constraints existed)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from delta_contracts.contract.load import load_contract
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan import expressions as x
from delta_contracts.plan.ops import AddCheck
from delta_contracts.plan.planner import plan
from delta_contracts.target import DEFAULT_TARGET

REPO = Path(__file__).resolve().parents[2]


def example(path: str, **changes: Any) -> Contract:
    """An example contract moved to a schema of its own (tests share one session per engine)."""
    contract = load_contract(REPO / "contracts" / path).contract
    schema = f"q_{uuid.uuid4().hex[:8]}"
    table = contract.id.split(".")[-1]
    return contract.model_copy(update={"id": f"{schema}.{table}", **changes})


def with_column(contract: Contract, name: str, **changes: Any) -> Contract:
    columns = tuple(c.model_copy(update=changes) if c.name == name else c for c in contract.columns)
    return contract.model_copy(update={"columns": columns})


def create_without_checks(engine: Engine, contract: Contract) -> None:
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.ident(contract.table_parts[0]))}")
    migration, _ = plan(None, contract, DEFAULT_TARGET)
    for op in migration.ops:
        if not isinstance(op, AddCheck):
            engine.apply_op(op)
