"""What `diff` reported, read once for the in-place recipes: the columns added, removed, renamed and kept
with their changes, the CHECKs the changes touch, the table settings they change. The recipes plan from this
and from nothing else that compares the two contracts."""

from __future__ import annotations

from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract, TableSpec
from delta_contracts.contract.types import canonical
from delta_contracts.diff.changes import Change
from delta_contracts.diff.compare import Comparison
from delta_contracts.diff.rules import CheckRule, contract_rules

ADDED = ("DC-AD201", "DC-AD202", "DC-AD203", "DC-AD204")
# a field inside a column's type added, dropped, renamed, widened or marked deprecated
FIELDS = ("DC-AD205", "DC-DS111", "DC-BC112", "DC-MF113", "DC-LC704")
RETYPED = ("DC-MF106", "DC-MF107")


@dataclass(frozen=True, slots=True)
class KeptColumn:
    """A column both contracts have under the same name (but for case), and the changes diff found in it."""

    before: Column
    after: Column
    changes: tuple[Change, ...]

    def has(self, *codes: str, field_suffix: str = "") -> bool:
        return any(c.code in codes and c.field.endswith(field_suffix) for c in self.changes)


@dataclass(frozen=True, slots=True)
class ChangeSet:
    kept: tuple[KeptColumn, ...]  # in the new contract's order, only those with a change
    added: tuple[Column, ...]
    removed: tuple[Column, ...]
    renamed: tuple[tuple[Column, Column], ...]  # (old, new)
    newly_deprecated: tuple[Column, ...]  # marked deprecated by this change (the new column)
    fields: tuple[Change, ...]  # the changes of fields inside columns' types (FIELDS), each its `nested`
    # the table properties changed: (key, old value, new value), None where unset; sorted by key
    properties: tuple[tuple[str, str | None, str | None], ...]
    description: str | None  # the new table description, when the change sets one
    clustering: TableSpec | None  # the new table settings, when the clustering keys change
    # the CHECKs the changes touch, as the old and as the new contract declare them, in each one's order
    old_rules: tuple[CheckRule, ...]
    new_rules: tuple[CheckRule, ...]

    @property
    def going(self) -> tuple[Column, ...]:
        """The old columns on their way out: removed, or renamed (the old name is dropped later)."""
        return (*self.removed, *(before for before, _ in self.renamed))

    @property
    def widened(self) -> dict[str, str]:
        """Folded name → new type of each kept column whose type changes."""
        return {k.before.name.casefold(): canonical(k.after.type) for k in self.kept if k.has(*RETYPED)}

    def property_change(self, key: str) -> tuple[str | None, str | None] | None:
        found = [(a, b) for k, a, b in self.properties if k == key]
        return found[0] if found else None


def read_changes(comparison: Comparison) -> ChangeSet:
    """The comparison's changes sorted for the recipes. The contracts are read only for the order their
    rules are declared in, so that ops come out in the order the contracts name them."""
    changes = comparison.changes
    renamed = tuple(c.columns() for c in changes if c.code == "DC-BC102")
    renamed_to = {after.name.casefold() for _, after in renamed}
    kept: dict[str, KeptColumn] = {}
    for found in changes:
        before, after = found.before, found.after
        if not isinstance(before, Column) or not isinstance(after, Column):
            continue
        if after.name.casefold() in renamed_to:
            continue  # the rename plans the whole column
        folded = after.name.casefold()
        prior = kept.get(folded)
        kept[folded] = KeptColumn(before, after, (*(prior.changes if prior else ()), found))
    described = [c for c in changes if c.code == "DC-DC601" and c.field == "description"]
    clustering = [c.after for c in changes if c.code == "DC-TB402" and isinstance(c.after, TableSpec)]
    old_touched: dict[str, CheckRule] = {}
    new_touched: dict[str, CheckRule] = {}
    for found in changes:
        for pair in found.rules():
            if pair.before is not None:
                old_touched[pair.before.key] = pair.before
            if pair.after is not None:
                new_touched[pair.after.key] = pair.after
    return ChangeSet(
        kept=tuple(kept.values()),
        added=tuple(_column_after(c) for c in changes if c.code in ADDED),
        removed=tuple(_column_before(c) for c in changes if c.code == "DC-DS103"),
        renamed=renamed,
        newly_deprecated=tuple(_column_after(c) for c in changes if c.code == "DC-LC701"),
        fields=tuple(c for c in changes if c.code in FIELDS),
        properties=tuple(sorted(c.property_values() for c in changes if c.code == "DC-TB403")),
        description=_description(described[0].after) if described else None,
        clustering=clustering[0] if clustering else None,
        old_rules=_in_order(old_touched, comparison.old),
        new_rules=_in_order(new_touched, comparison.new),
    )


def _column_after(found: Change) -> Column:
    if not isinstance(found.after, Column):
        raise TypeError(f"{found.code} at {found.field} carries no new column")
    return found.after


def _column_before(found: Change) -> Column:
    if not isinstance(found.before, Column):
        raise TypeError(f"{found.code} at {found.field} carries no old column")
    return found.before


def _description(contract: object) -> str | None:
    return contract.description if isinstance(contract, Contract) else None


def _in_order(rules: dict[str, CheckRule], contract: Contract) -> tuple[CheckRule, ...]:
    if not rules:
        return ()
    order = {key: i for i, key in enumerate(contract_rules(contract))}
    return tuple(sorted(rules.values(), key=lambda rule: order.get(rule.key, len(order))))
