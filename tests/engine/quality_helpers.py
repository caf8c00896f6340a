"""Shared by the quality tests: example contracts under a fresh schema, tables created without their CHECKs
(so rows breaking the rules can be loaded, as in a table filled before its constraints existed)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from delta_contracts.contract.load import load_contract
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine, OpOutcome
from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan.ops import AddCheck, Op
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
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


def with_max(contract: Contract, name: str, bound: Any) -> Contract:
    """The contract with a `max` check added to one column (the examples declare only `min`)."""
    column = contract.column(name)
    assert column is not None, name
    return with_column(contract, name, checks=column.checks.model_copy(update={"max": bound}))


class RecordingEngine(Engine):
    """Passes every call to an engine and records each SQL statement sent through `sql` (and so through
    `count_where`/`sample_where`, which go through it): what a feature actually runs, not what it plans."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name = inner.name
        self.state_dir = inner.state_dir
        self.statements: list[str] = []

    @property
    def spark(self) -> Any:
        return self.inner.spark  # type: ignore[attr-defined]

    def sql(self, statement: str) -> list[dict[str, Any]]:
        self.statements.append(statement)
        return self.inner.sql(statement)

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        return self.inner.run(op, tag=tag)

    def describe(self, table: tuple[str, ...], *, with_version: bool = True) -> LiveTable | None:
        return self.inner.describe(table, with_version=with_version)

    def views(self) -> Mapping[tuple[str, ...], str]:
        return self.inner.views()

    def history(self, table: tuple[str, ...]) -> list[Commit]:
        return self.inner.history(table)
