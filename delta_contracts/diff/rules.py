"""A contract's rules as named Delta CHECK constraints, and which of them a change touches.

Names are derived (`<column>_<rule>`) so that re-planning never renames a constraint; rules on nullable
columns are NULL-safe because Delta counts a NULL CHECK result as a violation. Building a rule generates its
SQL with sqlglot, which is imported when a rule is first built: `diff` of two equal contracts never needs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract, TableConstraint

RULE_KINDS = ("min", "max", "enum", "regex")


@dataclass(frozen=True, slots=True)
class CheckRule:
    name: str
    expression: str
    columns: frozenset[str]  # casefolded columns the expression reads

    @property
    def key(self) -> str:
        return self.name.casefold()


@dataclass(frozen=True, slots=True)
class RulePair:
    """One CHECK a change adds, drops or rewrites, as the old and the new contract declare it (None: that
    contract lacks it). Both sides have the same folded name, or one side is None."""

    before: CheckRule | None
    after: CheckRule | None


def column_rule(column: Column, kind: str) -> CheckRule | None:
    """The column's rule of one kind (min, max, enum, regex), if its checks declare that kind."""
    checks = column.checks
    value = getattr(checks, kind)
    if value is None:
        return None
    from delta_contracts.sql import expressions as x

    builders = {"min": x.rule_min, "max": x.rule_max, "enum": x.rule_enum, "regex": x.rule_regex}
    expression = x.null_safe(column.name, builders[kind](column.name, value), column.nullable)
    return CheckRule(f"{column.name}_{kind}", expression, frozenset({column.name.casefold()}))


def column_rules(column: Column) -> list[CheckRule]:
    return [rule for kind in RULE_KINDS if (rule := column_rule(column, kind)) is not None]


def constraint_rule(constraint: TableConstraint) -> CheckRule:
    from delta_contracts.sql import expressions as x

    expression = x.canonical_expression(constraint.expression)
    return CheckRule(constraint.name, expression, x.referenced_columns(expression))


def not_null_rule(column: str) -> CheckRule:
    from delta_contracts.sql import expressions as x

    return CheckRule(f"{column}_not_null", x.not_null_rule(column), frozenset({column.casefold()}))


def contract_rules(contract: Contract) -> dict[str, CheckRule]:
    """Every CHECK the contract asks for (column rules, then table constraints), keyed by folded name."""
    rules: dict[str, CheckRule] = {}
    for column in contract.columns:
        for rule in column_rules(column):
            rules[rule.key] = rule
    for constraint in contract.constraints:
        rule = constraint_rule(constraint)
        rules[rule.key] = rule
    return rules


def paired(
    before: Iterable[CheckRule], after: Iterable[CheckRule], *, changed_only: bool = True
) -> tuple[RulePair, ...]:
    """Rules of the old and the new side paired by folded name; with `changed_only`, a rule whose expression
    is the same on both sides is left out."""
    old = {rule.key: rule for rule in before}
    new = {rule.key: rule for rule in after}
    pairs = []
    for key in [*old, *(k for k in new if k not in old)]:
        a, b = old.get(key), new.get(key)
        if changed_only and a is not None and b is not None and a.expression == b.expression:
            continue
        pairs.append(RulePair(a, b))
    return tuple(pairs)


def kind_rules(before: Column, after: Column, kind: str) -> tuple[RulePair, ...]:
    """A change of one check (min, max, enum, regex) of a column: that rule as it was and as it is."""
    a, b = column_rule(before, kind), column_rule(after, kind)
    return paired([a] if a else [], [b] if b else [])


def column_change_rules(before: Column | None, after: Column | None) -> tuple[RulePair, ...]:
    """The column's rules whose text a change of the column rewrites: all of them for a column added, removed
    or renamed, those whose NULL-safety or name case changed for a column made (not) nullable or recased."""
    return paired(column_rules(before) if before else [], column_rules(after) if after else [])


def constraint_rules(before: TableConstraint | None, after: TableConstraint | None) -> tuple[RulePair, ...]:
    return paired([constraint_rule(before)] if before else [], [constraint_rule(after)] if after else [])


def retyped_rules(
    before: Column,
    after: Column,
    old_constraints: tuple[TableConstraint, ...],
    new_constraints: tuple[TableConstraint, ...],
) -> tuple[RulePair, ...]:
    """Every rule that reads a column whose type changes, on either side: Delta refuses to retype a column a
    CHECK reads, so each goes before the retype and comes back after it, changed or not."""

    def reading(column: Column, constraints: tuple[TableConstraint, ...]) -> list[CheckRule]:
        folded = column.name.casefold()
        found = [constraint_rule(c) for c in constraints]
        return [*column_rules(column), *(rule for rule in found if folded in rule.columns)]

    return paired(reading(before, old_constraints), reading(after, new_constraints), changed_only=False)
