"""The pull-request check and the planner agree (issue 38 item 3): for every change of a column's type between
representative Spark types, on every target, `diff` refuses exactly when `plan` refuses — with or without a
`convert` — and says why in the same words."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.diff.compare import diff
from delta_contracts.diff.policy import refusals, verdict
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target

TYPES = (
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal(5,2)",
    "decimal(10,0)",
    "decimal(20,0)",
    "string",
    "date",
    "timestamp",
    "timestamp_ntz",
    "boolean",
    "binary",
)
PAIRS = [(a, b) for a, b in product(TYPES, TYPES) if a != b]


def contracts(
    old_type: str, new_type: str, *, version: str = "2.0.0", convert: bool = False
) -> tuple[Contract, Contract]:
    def doc(kind: str, at: str) -> dict[str, Any]:
        value: dict[str, Any] = {"name": "value", "type": kind}
        if convert and kind == new_type:
            value["convert"] = {"expression": f"CAST(value AS {new_type.upper()})"}
        return {
            "apiVersion": "delta-contracts/v1",
            "id": "iot.sensor_readings",
            "version": at,
            "owner": {"team": "iot"},
            "columns": [{"name": "reading_id", "type": "bigint", "nullable": False}, value],
        }

    return Contract.model_validate(doc(old_type, "1.0.0")), Contract.model_validate(doc(new_type, version))


def diff_refuses(old: Contract, new: Contract, target: Target) -> list[str]:
    return refusals(verdict(old, new, diff(old, new, target)), old.version, new.version)


def plan_refuses(old: Contract, new: Contract, target: Target) -> str | None:
    try:
        plan(old, new, target)
    except PlanError as err:
        return str(err)
    return None


@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
@pytest.mark.parametrize("convert", [False, True], ids=["bare", "convert"])
def test_diff_refuses_exactly_when_plan_refuses(target: Target, convert: bool) -> None:
    disagree = []
    for old_type, new_type in PAIRS:
        old, new = contracts(old_type, new_type, convert=convert)
        by_diff, by_plan = diff_refuses(old, new, target), plan_refuses(old, new, target)
        if bool(by_diff) != (by_plan is not None):
            disagree.append(f"{old_type} -> {new_type}: diff {by_diff or 'ok'}; plan {by_plan or 'ok'}")
    assert not disagree, "\n".join(disagree)


def test_a_lossy_type_change_without_convert_is_refused_by_both_in_the_same_words() -> None:
    old, new = contracts("double", "decimal(5,2)")
    (why,) = diff_refuses(old, new, Target.DELTA_4)
    assert "value type changed: double -> decimal(5,2): a CAST" in why and "declare `convert" in why, why
    with pytest.raises(PlanError) as refused:
        plan(old, new, Target.DELTA_4)
    assert why in str(refused.value)


def test_the_refusals_are_the_lossy_pairs_only() -> None:
    """Not everything is refused: a widening, or a CAST that keeps every value, needs no convert."""
    refused = {p for p in PAIRS if diff_refuses(*contracts(*p), Target.DELTA_4)}
    assert ("double", "decimal(5,2)") in refused
    assert ("int", "bigint") not in refused  # a widening, in place
    assert ("decimal(5,2)", "decimal(20,0)") in refused  # the scale drops
    assert ("int", "decimal(20,0)") not in refused  # widens on Delta 4
    assert ("bigint", "string") in refused
    # with a convert, every pair is planned
    assert not [p for p in PAIRS if diff_refuses(*contracts(*p, convert=True), Target.DELTA_4)]
