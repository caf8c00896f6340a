"""A contract's rules as named Delta CHECK constraints, and its schema hash.

Names are derived (`<column>_<rule>`) so that re-planning never renames a constraint; rules on nullable
columns are NULL-safe because Delta counts a NULL CHECK result as a violation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.types import canonical
from delta_contracts.sql import expressions as x

RULE_KINDS = ("min", "max", "enum", "regex")


@dataclass(frozen=True, slots=True)
class CheckRule:
    name: str
    expression: str
    columns: frozenset[str]  # casefolded columns the expression reads

    @property
    def key(self) -> str:
        return self.name.casefold()


def column_rules(column: Column) -> list[CheckRule]:
    rules: list[CheckRule] = []
    checks = column.checks
    built = {
        "min": x.rule_min(column.name, checks.min) if checks.min is not None else None,
        "max": x.rule_max(column.name, checks.max) if checks.max is not None else None,
        "enum": x.rule_enum(column.name, checks.enum) if checks.enum is not None else None,
        "regex": x.rule_regex(column.name, checks.regex) if checks.regex is not None else None,
    }
    for kind in RULE_KINDS:
        rule = built[kind]
        if rule is not None:
            expression = x.null_safe(column.name, rule, column.nullable)
            rules.append(CheckRule(f"{column.name}_{kind}", expression, frozenset({column.name.casefold()})))
    return rules


def not_null_rule(column: str) -> CheckRule:
    return CheckRule(f"{column}_not_null", x.not_null_rule(column), frozenset({column.casefold()}))


def contract_rules(contract: Contract) -> dict[str, CheckRule]:
    """Every CHECK the contract asks for (column rules, then table constraints), keyed by folded name."""
    rules: dict[str, CheckRule] = {}
    for column in contract.columns:
        for rule in column_rules(column):
            rules[rule.key] = rule
    for constraint in contract.constraints:
        expression = x.canonical_expression(constraint.expression)
        rule = CheckRule(constraint.name, expression, x.referenced_columns(expression))
        rules[rule.key] = rule
    return rules


def schema_hash(contract: Contract) -> str:
    """A short digest of what readers depend on: columns, types, nullability, partitioning."""
    shape = {
        "columns": [[c.name, canonical(c.type), c.nullable] for c in contract.columns],
        "partitioned_by": list(contract.table.partitioned_by),
        "clustered_by": list(contract.table.clustered_by),
    }
    digest = hashlib.sha256(json.dumps(shape, ensure_ascii=False, separators=(",", ":")).encode())
    return digest.hexdigest()[:16]
