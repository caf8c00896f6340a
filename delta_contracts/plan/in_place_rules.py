"""The in-place recipes' CHECKs, planned so that no rule of the table is ever absent between two statements.

- A widened column's CHECKs stand through its ALTER COLUMN … TYPE (`WidenType.checks_kept`): a widening keeps
  every value, so each rule still holds; a rule the new contract rewrites is swapped like any other.
- A rewritten rule is swapped add-before-drop: the new expression under a bridge name first, then the old
  rule dropped and the new one added under its own name, then the bridge dropped. Delta names a CHECK once
  (DELTA_CONSTRAINT_ALREADY_EXISTS), so a swap in place under one name would leave a gap.
- A rule over a renamed column reads both shapes of a row until the contract phase: a bridge over
  `COALESCE(new, old)` is added at cutover before the old rule is dropped, so an old producer's row that
  satisfied the old rule is accepted and one that breaks it is refused; the rule's final form is added in
  the contract phase once the old column is closed (`CloseColumn`), and the bridge dropped after it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from delta_contracts.contract.model import Column, Contract
from delta_contracts.plan.building import Builder, add_check
from delta_contracts.plan.change_set import ChangeSet
from delta_contracts.plan.ops import AddCheck, DropCheck, DropNotNull, Op, Phase, SetNotNull
from delta_contracts.plan.rules import CheckRule, contract_rules, not_null_rule
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import NO_SET_NOT_NULL, Target


@dataclass
class RulePlan:
    """What the rules leave to the rest of the in-place plan: the old rules dropped at cutover once their
    replacements stand (`relax`, added after every cutover add), and per renamed column (the old name,
    folded) the contract-phase ops that put each rule over it in its final form once the old column is
    closed."""

    relax: list[Op] = field(default_factory=list)
    final: dict[str, list[Op]] = field(default_factory=dict)


def bridge_name(rule: str) -> str:
    return f"dc_{rule}_next"


def both_shapes_name(rule: str) -> str:
    return f"dc_{rule}_both"


def renamed_values(changes: ChangeSet, copies: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """New column name (folded) → the old column's value as the new type, for each column renamed."""
    return {after.name.casefold(): copies[before.name.casefold()][1] for before, after in changes.renamed}


def checks_reading(old: Contract, target: Target) -> dict[str, tuple[str, ...]]:
    """Folded column → the CHECKs of the table as the old contract left it that read the column: those a
    retype keeps standing (a NOT NULL of OSS Delta is one too, where a tightening added it)."""
    found: dict[str, list[str]] = {}
    for rule in contract_rules(old).values():
        for column in sorted(rule.columns | x.referenced_roots(rule.expression)):
            found.setdefault(column, []).append(rule.name)
    if not target.supports_set_not_null:
        for kept in old.columns:
            if not kept.nullable:
                found.setdefault(kept.name.casefold(), []).append(not_null_rule(kept.name).name)
    return {column: tuple(names) for column, names in found.items()}


def swap(b: Builder, t: TableId, phase: Phase, old: CheckRule, new: CheckRule, why: str) -> None:
    """`old` becomes `new` under the same name, never absent: bridge, drop, add, drop the bridge."""
    bridge = bridge_name(new.name)
    b.add(
        AddCheck(
            table=t,
            phase=phase,
            name=bridge,
            expression=new.expression,
            stands_in_for=new.name,
            final_expression=new.expression,
            reason=f"{why}: the new rule stands before the old one goes",
        )
    )
    b.add(DropCheck(table=t, phase=phase, name=old.name, replaced_by=new.expression, reason=why))
    b.add(add_check(t, phase, new, reason=why))
    b.add(DropCheck(table=t, phase=phase, name=bridge, reason=f"the bridge of {new.name}, which stands"))


def old_rules(b: Builder, t: TableId, changes: ChangeSet, going: list[Column]) -> RulePlan:
    """The old rules the changes touch that must go: a rule removed from the contract in expand; a rule of a
    column on its way out at cutover (producers may stop writing it), after its replacement if it has one.
    A rule that stays (retyped or not) is not dropped here: `new_rules` swaps it if it changes."""
    plan = RulePlan()
    new_rules = {rule.key: rule for rule in changes.new_rules}
    going_names = {before.name.casefold() for before in going}
    renamed_to = {after.name.casefold() for _, after in changes.renamed}
    for rule in changes.old_rules:
        new_rule = new_rules.get(rule.key)
        drop = DropCheck(table=t, phase=Phase.CUTOVER, name=rule.name, reason="rule of a deprecated column")
        if new_rule is not None and new_rule.columns & renamed_to:
            # its both-shapes bridge stands from the cutover on (`new_rules`); the final form comes later
            why = "rule over a renamed column: its bridge over both columns stands"
            plan.relax.append(replace(drop, replaced_by=new_rule.expression, reason=why))
        elif new_rule is None and rule.columns & going_names:
            plan.relax.append(drop)
        elif new_rule is None:
            b.add(replace(drop, phase=Phase.EXPAND, reason="rule removed from the contract"))
    for before in going:
        if not before.nullable:
            plan.relax.append(drop_not_null_check(t, before.name))
            plan.relax.append(
                DropNotNull(table=t, phase=Phase.CUTOVER, column=before.name, reason="deprecated column")
            )
    return plan


def drop_not_null_check(t: TableId, column: str) -> DropCheck:
    name = not_null_rule(column).name
    return DropCheck(table=t, phase=Phase.CUTOVER, name=name, reason="deprecated column")


def new_rules(b: Builder, t: TableId, changes: ChangeSet, renamed: Mapping[str, str], plan: RulePlan) -> None:
    """Add the new rules the changes touch: a new rule at cutover; a rewritten one swapped at cutover; one
    over a renamed column as a bridge over both shapes at cutover and in its final form in the contract
    phase. A rule the table already holds as written (its column only widened) stands as it is."""
    old = {rule.key: rule for rule in changes.old_rules}
    olds_of = {after.name.casefold(): before.name.casefold() for before, after in changes.renamed}
    for rule in changes.new_rules:
        old_rule = old.get(rule.key)
        over_renamed = sorted(c for c in rule.columns if c in renamed)
        if over_renamed:
            bridge_both(b, t, rule, {c: renamed[c] for c in over_renamed}, olds_of[over_renamed[-1]], plan)
        elif old_rule is None:
            b.add(add_check(t, Phase.CUTOVER, rule))
        elif old_rule.expression != rule.expression:
            swap(b, t, Phase.CUTOVER, old_rule, rule, "rule changed")


def bridge_both(
    b: Builder,
    t: TableId,
    rule: CheckRule,
    renamed: Mapping[str, str],
    placed_with: str,
    plan: RulePlan,
    final: Op | None = None,
) -> None:
    """`rule` over both shapes at cutover, and its final form (`final`, else the rule's CHECK) in the contract
    phase with the drop of `placed_with`, the old column, right after that column is closed."""
    bridge = both_shapes_name(rule.name)
    b.add(
        AddCheck(
            table=t,
            phase=Phase.CUTOVER,
            name=bridge,
            expression=x.either_shape(rule.expression, dict(renamed)),
            stands_in_for=rule.name,
            final_expression=rule.expression,
            reason="the rule over both shapes of a row until the old column is dropped",
        )
    )
    last = final or add_check(t, Phase.CONTRACT, rule, reason="the rule's final form, the old column closed")
    plan.final.setdefault(placed_with, []).extend(
        (
            last,
            DropCheck(
                table=t,
                phase=Phase.CONTRACT,
                name=bridge,
                reason=f"the bridge of {rule.name}, which stands in its final form",
            ),
        )
    )


def renamed_not_null(
    b: Builder, t: TableId, before: Column, after: Column, copy: str, target: Target, plan: RulePlan
) -> None:
    """A renamed column declared NOT NULL: over both shapes until the contract phase (an old producer sets
    only the old column), then NOT NULL itself (SET NOT NULL where the target has it, else the CHECK)."""
    rule = not_null_rule(after.name)
    final: Op
    if target.supports_set_not_null:
        final = SetNotNull(table=t, phase=Phase.CONTRACT, column=after.name, reason="nullable: false")
    else:
        final = add_check(t, Phase.CONTRACT, rule, f"nullable: false ({NO_SET_NOT_NULL})")
    bridge_both(b, t, rule, {after.name.casefold(): copy}, before.name.casefold(), plan, final)
