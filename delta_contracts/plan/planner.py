"""From the contract a table is at to the contract it must reach: the phased ops that get it there.

`plan` compares the two contracts once (`diff.compare`), refuses what `diff` refuses, and picks a strategy
from the comparison's changes — in place (expand → populate → cutover → contract on the same table) or
versioned (a new `<table>__v<major>` behind the alias view) — saying why when a change forces the versioned
one. The recipes take the same comparison: nothing pairs the contracts' columns a second time.
"""

from __future__ import annotations

from dataclasses import replace

from delta_contracts.contract.model import Column, Contract, Versioning, semver_tuple
from delta_contracts.contract.types import canonical
from delta_contracts.diff.compare import Comparison, compare
from delta_contracts.diff.policy import refusals, verdict
from delta_contracts.plan.building import (
    FieldChangeError,
    PlanError,
    TableLimitError,
    TableState,
    alias_view,
    column_spec,
    initial_state,
    versioned_name,
)
from delta_contracts.plan.in_place import plan_in_place
from delta_contracts.plan.ops import Migration, Phase, RenameTable
from delta_contracts.plan.table_limits import refused_statements
from delta_contracts.plan.versioned import plan_create, plan_versioned
from delta_contracts.sql.expressions import referenced_roots
from delta_contracts.target import Target

# The changes of a table's physical shape: a column added, removed, renamed or retyped, the partitioning.
SHAPE_CHANGES = (
    "DC-AD201",
    "DC-AD202",
    "DC-AD203",
    "DC-AD204",
    "DC-DS103",
    "DC-BC102",
    "DC-MF106",
    "DC-MF107",
    "DC-TB401",
    "DC-AD205",
    "DC-DS111",
    "DC-BC112",
    "DC-MF113",
)


def plan(
    old: Contract | None, new: Contract, target: Target, *, state: TableState | None = None
) -> tuple[Migration, TableState]:
    """The migration from `old` (None: the table does not exist yet) to `new`, and the state after it."""
    if old is None:
        return plan_create(new, target)
    return plan_changes(compare(old, new, target), state=state)


def plan_changes(comparison: Comparison, *, state: TableState | None = None) -> tuple[Migration, TableState]:
    """The migration for the changes `diff` found between two contracts: what is refused, the strategy and
    the ops all follow from `comparison.changes`."""
    old, new = comparison.old, comparison.new
    refused = refusals(verdict(old, new, comparison.changes), old.version, new.version)
    if refused:
        # One classification for diff and plan: a change diff refuses is never planned.
        nested = any("not field by field in place" in reason for reason in refused)
        raise (FieldChangeError if nested else PlanError)(f"{new.id}: " + "; ".join(refused))
    state = state or initial_state(old)
    reasons = _versioned_reasons(comparison)
    major_bumped = semver_tuple(new.version)[0] > semver_tuple(old.version)[0]
    wants_versioned = new.table.versioning is Versioning.VERSIONED and major_bumped
    if reasons or wants_versioned:
        if not major_bumped:
            raise PlanError(
                f"{new.id}: {'; '.join(reasons)} — this needs a new versioned table, which needs a major "
                f"version bump (declared {new.version}, was {old.version})"
            )
        if not _needs_copy(comparison):
            planned = _versioned_without_copy(comparison, state)
        else:
            planned = plan_versioned(comparison, state, reasons)
    else:
        planned = plan_in_place(comparison, state)
    refused_by_table = refused_statements(planned[0].ops, {state.physical: dict(state.properties)})
    if refused_by_table:
        raise TableLimitError(f"{new.id}: " + "; ".join(refused_by_table))
    return planned


def _needs_copy(comparison: Comparison) -> bool:
    """Whether the rows must be copied into a new table: the physical shape changes (a column going or
    coming, a type changing, partitioning)."""
    return bool(comparison.having(*SHAPE_CHANGES))


def _versioned_without_copy(comparison: Comparison, state: TableState) -> tuple[Migration, TableState]:
    """A major bump of a versioned contract whose table shape stays: no copy into a new `__vN`. A table still
    under the contract's name is renamed to `__v<major>` and served through the alias view."""
    migration, after = plan_in_place(comparison, state)
    new = comparison.new
    alias = new.table_parts
    if state.physical != alias:
        note = f"{state.physical} keeps serving {new.id}: the table's shape is unchanged, no copy"
        return replace(migration, notes=(*migration.notes, note)), after
    physical = versioned_name(new)
    swap = (
        RenameTable(table=alias, phase=Phase.CUTOVER, new_name=physical, reason="free the name for the view"),
        alias_view(new, physical, Phase.CUTOVER, reason="alias view"),
    )
    warnings = (
        f"{alias}: between the rename and the view the name is briefly missing",
        f"{alias}: after cutover the name is a view: producers must write to {physical}",
    )
    return (
        replace(
            migration,
            strategy="versioned",
            ops=(*migration.ops, *swap),
            warnings=(*migration.warnings, *warnings),
            notes=(
                *migration.notes,
                f"versioned without a copy: {alias} becomes {physical}, its shape unchanged",
            ),
        ),
        replace(after, physical=physical),
    )


def _versioned_reasons(comparison: Comparison) -> list[str]:
    """The changes that rule out an in-place migration: DC-TB401, DC-MF107 and DC-TB405."""
    reasons = []
    if comparison.partitioning_changed:
        reasons.append("partitioning changes rewrite the table")
    rules = comparison.target.widening_rules
    for before, after in comparison.non_widening_retypes:
        reasons.append(
            f"{after.name}: {canonical(before.type)} -> {canonical(after.type)} is not a type widening "
            f"Delta {rules}.x allows in place"
        )
    if comparison.switches_to_versioned:
        reasons.append("the contract switches to versioned tables")
    # Delta's ALTER TABLE neither adds an identity or generated column nor changes one.
    for found in comparison.having("DC-AD204", "DC-MF109", "DC-MF110"):
        column = found.after if isinstance(found.after, Column) else None
        name = column.name if column is not None else found.field
        reasons.append(f"{name}: Delta cannot add or alter an identity or generated column in place")
    reasons.extend(_retyped_under_generated(comparison))
    for _, after in (c.columns() for c in comparison.having("DC-BC102")):
        if after.identity is not None or after.generated is not None:
            # a rename in place adds the new column, which Delta cannot add as an identity or generated one
            reasons.append(f"{after.name}: a renamed identity or generated column needs a new table")
    return reasons


def _retyped_under_generated(comparison: Comparison) -> list[str]:
    """Widenings of a column (or of a field inside it) that a generated column reads. Delta refuses to change
    the type of such a column (DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE); with its expression check
    off, which the widening's statement sets so that CHECKs stand through it, it refuses a generation
    expression whose type then differs from its column's (DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH), after
    the table feature was enabled: either way not in place."""
    generated = [(c.name, referenced_roots(c.generated)) for c in comparison.new.columns if c.generated]
    reasons = []
    for found in comparison.having("DC-MF106", "DC-MF113"):
        _, after = found.columns()
        readers = [name for name, roots in generated if after.name.casefold() in roots]
        if readers:
            reasons.append(
                f"{after.name}: its type changes and generated column {', '.join(readers)} reads it, which "
                "Delta refuses in place"
            )
    return reasons


__all__ = [
    "PlanError",
    "TableState",
    "column_spec",
    "initial_state",
    "plan",
    "plan_changes",
    "versioned_name",
]
