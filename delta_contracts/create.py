"""`create_table`: the notebook entry point. Creates a table from its contract, or verifies an existing one.

from delta_contracts import create_table
create_table(spark, "contracts/sales/orders.yaml")          # a SparkSession with delta-spark
create_table(LocalEngine("warehouse"), contract)           # or any engine
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.contract.model import Contract
from delta_contracts.drift import DriftItem, alias_drift, table_drift
from delta_contracts.plan.planner import initial_state, plan
from delta_contracts.target import DEFAULT_TARGET, Target

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine, OpOutcome


class ContractMismatchError(Exception):
    """The table exists and differs from its contract; `differences` lists every difference."""

    def __init__(self, table: str, differences: list[DriftItem]) -> None:
        self.table = table
        self.differences = differences
        lines = "\n".join(f"  - {d.message}" for d in differences)
        super().__init__(f"{table} exists but does not match its contract:\n{lines}")


@dataclass(frozen=True)
class CreateResult:
    table: str
    created: bool  # False: it existed and matches
    outcomes: tuple[OpOutcome, ...]
    notes: tuple[DriftItem, ...] = ()


def as_engine(spark_or_engine: Any) -> Engine:
    from delta_contracts.engine.base import Engine

    if isinstance(spark_or_engine, Engine):
        return spark_or_engine
    from delta_contracts.engine.spark import SparkEngine

    return SparkEngine(spark_or_engine)


def as_contract(contract: Contract | str | Path) -> Contract:
    if isinstance(contract, Contract):
        return contract
    from delta_contracts.contract.errors import ContractError, Problem
    from delta_contracts.contract.lint import lint
    from delta_contracts.contract.load import load_contract

    loaded = load_contract(Path(contract))
    findings: list[Problem] = lint(loaded)
    if findings:
        raise ContractError(findings)
    return loaded.contract


def create_table(
    spark_or_engine: Any, contract: Contract | str | Path, *, target: Target = DEFAULT_TARGET
) -> CreateResult:
    engine = as_engine(spark_or_engine)
    model = as_contract(contract)
    physical = initial_state(model).physical
    name = ".".join(physical)
    live = engine.describe(physical)
    if live is not None:
        found = table_drift(model, live, physical) + alias_drift(model, physical, engine.views())
        differences = [d for d in found if d.is_drift]
        if differences:
            raise ContractMismatchError(name, differences)
        return CreateResult(name, False, (), tuple(found))
    migration, _ = plan(None, model, target)
    engine.check_supported(migration.ops)  # refuse up front rather than leave a half-created table
    tag = f"delta-contracts create {model.id} {model.version}"
    outcomes = tuple(engine.apply_op(op, tag=f"{tag} op {i + 1}") for i, op in enumerate(migration.ops))
    return CreateResult(name, True, outcomes)
