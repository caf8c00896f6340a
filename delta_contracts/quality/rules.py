"""A contract's row rules as violation predicates, built from the same expressions as its Delta CHECKs.

`validate`, `enforce` and the table's CHECK constraints must mean exactly the same thing, so every rule here
is the planner's CHECK expression (`plan.rules`) wrapped the way Delta evaluates a CHECK: a row violates it
unless the expression is TRUE (`NOT COALESCE((rule), FALSE)`), which keeps NULL-safe rules NULL-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta_contracts.contract.model import Contract
from delta_contracts.contract.model import duration as duration  # one ISO-8601 parser for every stage
from delta_contracts.contract.types import canonical
from delta_contracts.plan.rules import column_rules, not_null_rule
from delta_contracts.sql import expressions as x


@dataclass(frozen=True, slots=True)
class RowRule:
    name: str  # the CHECK constraint's name (`<column>_<kind>` or the table constraint's name)
    kind: str  # not_null | min | max | enum | regex | constraint
    check: str  # the CHECK expression (Spark SQL)
    violation: str  # TRUE exactly for the rows Delta would refuse
    columns: frozenset[str]  # casefolded columns the rule reads


def row_rules(contract: Contract) -> list[RowRule]:
    """Every per-row rule of the contract: NOT NULL, column checks, then table constraints."""
    rules: list[RowRule] = []
    for column in contract.columns:
        if not column.nullable:
            rule = not_null_rule(column.name)
            rules.append(_row_rule(rule.name, "not_null", rule.expression, rule.columns))
        for rule in column_rules(column):
            kind = rule.name[len(column.name) + 1 :]
            rules.append(_row_rule(rule.name, kind, rule.expression, rule.columns))
    for constraint in contract.constraints:
        expression = x.canonical_expression(constraint.expression)
        rules.append(_row_rule(constraint.name, "constraint", expression, x.referenced_columns(expression)))
    return rules


def _row_rule(name: str, kind: str, check: str, columns: frozenset[str]) -> RowRule:
    return RowRule(name, kind, check, x.not_true(check), columns)


def contract_types(contract: Contract) -> dict[str, str]:
    """Column name -> canonical Spark type, as the contract declares it."""
    return {c.name: canonical(c.type) for c in contract.columns}
