"""Planner properties over random contract pairs: it never crashes, every op renders to exactly one statement
sqlglot parses back, destructive ops stay in the contract phase, and planning is deterministic."""

from __future__ import annotations

import sqlglot
from hypothesis import given, settings

from delta_contracts.contract.model import Contract
from delta_contracts.plan.ops import Phase, StampContract
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.render import render
from delta_contracts.target import Target
from tests.spark_parser import SQLGLOT_CANNOT_PARSE
from tests.test_diff_properties import contracts


@settings(max_examples=150, deadline=None)
@given(contracts(), contracts())
def test_plan_between_any_two_contracts(old: Contract, new: Contract) -> None:
    new = new.model_copy(update={"version": "3.0.0"})
    for target in Target:
        try:
            migration, _ = plan(old, new, target)
        except PlanError:
            continue
        assert migration == plan(old, new, target)[0]
        for op in migration.ops:
            if SQLGLOT_CANNOT_PARSE.match(render(op)):  # Spark's parser reads it (test_render_spark)
                continue
            statements = [s for s in sqlglot.parse(render(op), read="databricks") if s is not None]
            assert len(statements) == 1
            assert not isinstance(statements[0], sqlglot.exp.Command)
            if op.destructive:
                assert op.phase is Phase.CONTRACT
        cutover = migration.phase(Phase.CUTOVER)
        stamps = [i for i, op in enumerate(cutover) if isinstance(op, StampContract)]
        assert len(stamps) == 1
        # In place the stamp is last; a versioned cutover then closes the old table and fences its rows.
        last = 0 if migration.strategy == "in_place" else 4
        assert len(cutover) - 1 - stamps[0] <= last


@settings(max_examples=100, deadline=None)
@given(contracts())
def test_planning_a_contract_against_itself_only_restamps(contract: Contract) -> None:
    bumped = contract.model_copy(update={"version": "1.0.1"})
    migration, _ = plan(contract, bumped, Target.DELTA_4)
    assert [op.kind for op in migration.ops] == ["stamp_contract"]
