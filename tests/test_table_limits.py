"""Issue 46: what a table's properties and generated columns forbid Delta's statements is known to the plan.

Over every planning recipe, in place and versioned, with `delta.appendOnly=true` declared: a plan either
never runs a statement that updates or replaces rows on a table while it is append-only, and leaves the table
append-only, or it is refused at `plan` (exit 2) naming the table, the op and the way out. The copy of a
versioned migration creates the new table without the property and sets it at cutover, after the fence.
A widening of a column a generated column reads is not planned in place (Delta refuses it).
"""

from __future__ import annotations

import copy

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.errors import ExitCode
from delta_contracts.plan.building import initial_state
from delta_contracts.plan.catch_up import CatchUpRows
from delta_contracts.plan.ops import Backfill, CopyRows, CreateTable, Phase, SetProperties
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.recipes import BASE, RECIPES, pair

APPEND_ONLY = ("delta.appendOnly", "true")
STRATEGIES = ("in_place", "versioned")


def with_property(contract: Contract, key: str, value: str) -> Contract:
    doc = contract.model_dump(by_alias=True, exclude_none=True, mode="json")
    doc.setdefault("table", {}).setdefault("properties", {})[key] = value
    return Contract.model_validate(doc)


def cases() -> list[tuple[str, str]]:
    return [(recipe, strategy) for recipe in RECIPES for strategy in STRATEGIES]


@pytest.mark.parametrize(("recipe", "strategy"), cases())
def test_an_append_only_table_is_never_rewritten_and_stays_append_only(recipe: str, strategy: str) -> None:
    old, new = (with_property(c, *APPEND_ONLY) for c in pair(recipe, strategy))
    try:
        migration, after = plan(old, new, Target.DELTA_4)
    except PlanError as err:
        message = str(err)
        assert err.exit_code is ExitCode.BAD_INPUT
        assert "is append-only (delta.appendOnly=true)" in message, message
        assert "Set delta.appendOnly to false in a contract version applied before this one" in message
        # refused only where the plan (without the property) rewrites rows of the table it keeps
        plain, _ = plan(*pair(recipe, strategy), Target.DELTA_4)
        rewriting = [op for op in plain.ops if isinstance(op, Backfill | CopyRows | CatchUpRows)]
        assert rewriting and all(op.summary() in message for op in rewriting), message
        return
    # Which tables are append-only as the ops run, followed from the ops' own fields (not the planner's).
    start = initial_state(old).physical
    append_only = {start: True}
    for op in migration.ops:
        if isinstance(op, CreateTable):
            append_only[op.table] = APPEND_ONLY in op.properties
        elif isinstance(op, SetProperties) and APPEND_ONLY in op.properties:
            append_only[op.table] = True
        if isinstance(op, Backfill | CopyRows | CatchUpRows):
            assert not append_only.get(op.table, False), f"{op.summary()} on an append-only table"
    assert append_only.get(after.physical, after.physical == start), "the table must end append-only"


def test_the_versioned_copy_sets_append_only_at_cutover_after_the_fence() -> None:
    old, new = (with_property(c, *APPEND_ONLY) for c in pair("change_partitioning", "versioned"))
    migration, after = plan(old, new, Target.DELTA_4)
    ops = list(migration.ops)
    (create,) = [op for op in ops if isinstance(op, CreateTable)]
    assert create.table == after.physical and "delta.appendOnly" not in dict(create.properties)
    (setting,) = [
        i for i, op in enumerate(ops) if isinstance(op, SetProperties) and APPEND_ONLY in op.properties
    ]
    assert ops[setting].phase is Phase.CUTOVER and ops[setting].table == after.physical
    movers = [i for i, op in enumerate(ops) if isinstance(op, CopyRows | CatchUpRows)]
    assert len(movers) >= 3 and max(movers) < setting  # copy, catch-up and the fence all run before it


def test_an_append_only_property_turned_off_first_lets_the_backfill_run() -> None:
    old, new = pair("add_not_null_with_default")
    migration, _ = plan(
        with_property(old, "delta.appendOnly", "true"),
        with_property(new, "delta.appendOnly", "false"),
        Target.DELTA_4,
    )
    ops = list(migration.ops)
    off = next(
        i
        for i, op in enumerate(ops)
        if isinstance(op, SetProperties) and ("delta.appendOnly", "false") in op.properties
    )
    backfill = next(i for i, op in enumerate(ops) if isinstance(op, Backfill))
    assert off < backfill


def generated_over(reads: str, level: str) -> tuple[Contract, Contract]:
    """A table whose generated column reads `reads`; the new version widens attempts (smallint -> int)."""
    doc = copy.deepcopy(BASE)
    doc["columns"].insert(-1, {"name": "attempts_next", "type": "bigint", "generated": f"{reads} + 1"})
    attempts = next(c for c in doc["columns"] if c["name"] == "attempts")
    attempts.pop("checks")
    attempts["type"] = "smallint"
    old = Contract.model_validate(doc)
    attempts["type"] = "int"
    doc["version"] = "3.0.0" if level == "major" else "2.5.0"
    return old, Contract.model_validate(doc)


def test_a_widening_under_a_generated_column_is_refused_in_place() -> None:
    old, new = generated_over("attempts", "minor")
    with pytest.raises(PlanError) as refused:
        plan(old, new, Target.DELTA_4)
    message = str(refused.value)
    assert "generated column attempts_next reads it" in message and "major version bump" in message, message


def test_a_widening_under_a_generated_column_is_a_versioned_copy_with_a_major_bump() -> None:
    old, new = generated_over("attempts", "major")
    migration, _ = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "versioned"
    assert any(isinstance(op, CopyRows) for op in migration.ops)
    assert any("generated column attempts_next reads it" in note for note in migration.notes)


def test_a_widening_no_generated_column_reads_stays_in_place() -> None:
    old, new = generated_over("txn_amt_paise", "minor")
    migration, _ = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "in_place"
