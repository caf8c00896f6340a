"""validate, enforce and the table's CHECKs read one set of rules: the planner's CHECK expressions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from delta_contracts.contract.load import contract_files, load_contract
from delta_contracts.plan.rules import contract_rules, not_null_rule
from delta_contracts.quality.rules import duration, row_rules

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = contract_files([REPO / "contracts"])


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_row_rules_are_the_planned_checks(path: Path) -> None:
    contract = load_contract(path).contract
    rules = {r.name: r for r in row_rules(contract)}
    planned = {r.name: r.expression for r in contract_rules(contract).values()}
    planned |= {
        f"{c.name}_not_null": not_null_rule(c.name).expression for c in contract.columns if not c.nullable
    }
    assert {name: r.check for name, r in rules.items()} == planned
    for rule in rules.values():  # a row breaks a rule unless the CHECK is TRUE, as Delta decides
        assert rule.violation == f"NOT COALESCE(({rule.check}), FALSE)"


def test_nullable_rules_let_null_pass() -> None:
    contract = load_contract(REPO / "contracts" / "sales" / "customers.yaml").contract
    rules = {r.name: r for r in row_rules(contract)}
    assert rules["email_regex"].check.startswith("`email` IS NULL OR ")
    assert rules["country_code_enum"].check.startswith("`country_code` IN (")  # NOT NULL: no escape hatch


def test_durations() -> None:
    assert duration("PT30M") == timedelta(minutes=30)
    assert duration("P1DT12H") == timedelta(days=1, hours=12)
    assert duration("P1W") == timedelta(days=7)
    with pytest.raises(ValueError, match="not an ISO-8601 duration"):
        duration("30m")
