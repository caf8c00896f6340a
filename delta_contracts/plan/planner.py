"""From the contract a table is at to the contract it must reach: the phased ops that get it there.

`plan` picks a strategy — in place (expand → populate → cutover → contract on the same table) or versioned
(a new `<table>__v<major>` behind the alias view) — and says why when a change forces the versioned one.
"""

from __future__ import annotations

from dataclasses import replace

from delta_contracts.contract.model import Contract, Versioning, semver_tuple
from delta_contracts.contract.pairing import pair_columns
from delta_contracts.contract.types import canonical, parse_type, widens_to
from delta_contracts.diff.compare import diff
from delta_contracts.diff.policy import refusals, verdict
from delta_contracts.plan.building import (
    PlanError,
    TableState,
    alias_view,
    column_spec,
    initial_state,
    versioned_name,
)
from delta_contracts.plan.in_place import plan_in_place
from delta_contracts.plan.ops import Migration, Phase, RenameTable, table_name
from delta_contracts.plan.versioned import plan_create, plan_versioned
from delta_contracts.target import Target


def plan(
    old: Contract | None, new: Contract, target: Target, *, state: TableState | None = None
) -> tuple[Migration, TableState]:
    """The migration from `old` (None: the table does not exist yet) to `new`, and the state after it."""
    if old is None:
        return plan_create(new, target)
    refused = refusals(verdict(old, new, diff(old, new, target)), old.version, new.version)
    if refused:
        # One classification for diff and plan: a change diff refuses is never planned.
        raise PlanError(f"{new.id}: " + "; ".join(refused))
    state = state or initial_state(old)
    reasons = _versioned_reasons(old, new, target)
    major_bumped = semver_tuple(new.version)[0] > semver_tuple(old.version)[0]
    wants_versioned = new.table.versioning is Versioning.VERSIONED and major_bumped
    if reasons or wants_versioned:
        if not major_bumped:
            raise PlanError(
                f"{new.id}: {'; '.join(reasons)} — this needs a new versioned table, which needs a major "
                f"version bump (declared {new.version}, was {old.version})"
            )
        if not _needs_copy(old, new, target):
            return _versioned_without_copy(old, new, target, state)
        return plan_versioned(old, new, target, state, reasons)
    return plan_in_place(old, new, target, state)


def _needs_copy(old: Contract, new: Contract, target: Target) -> bool:
    """Whether the rows must be copied into a new table: the physical shape changes in a way Delta cannot
    do in place (a column going or coming, a non-widening type, partitioning)."""
    pairing = pair_columns(old, new)
    if pairing.added or pairing.removed or pairing.renamed:
        return True
    if any(parse_type(a.type) != parse_type(b.type) for a, b in pairing.kept):
        return True
    return [c.casefold() for c in old.table.partitioned_by] != [
        c.casefold() for c in new.table.partitioned_by
    ]


def _versioned_without_copy(
    old: Contract, new: Contract, target: Target, state: TableState
) -> tuple[Migration, TableState]:
    """A major bump of a versioned contract whose table shape stays: no copy into a new `__vN`. A table still
    under the contract's name is renamed to `__v<major>` and served through the alias view."""
    migration, after = plan_in_place(old, new, target, state)
    alias = new.table_parts
    if state.physical != alias:
        note = f"{table_name(state.physical)} keeps serving {new.id}: the table's shape is unchanged, no copy"
        return replace(migration, notes=(*migration.notes, note)), after
    physical = versioned_name(new)
    swap = (
        RenameTable(table=alias, phase=Phase.CUTOVER, new_name=physical, reason="free the name for the view"),
        alias_view(new, physical, Phase.CUTOVER, reason="alias view"),
    )
    warnings = (
        f"{table_name(alias)}: between the rename and the view the name is briefly missing",
        f"{table_name(alias)}: after cutover the name is a view: producers must write to "
        f"{table_name(physical)}",
    )
    return (
        replace(
            migration,
            strategy="versioned",
            ops=(*migration.ops, *swap),
            warnings=(*migration.warnings, *warnings),
            notes=(
                *migration.notes,
                f"versioned without a copy: {table_name(alias)} becomes "
                f"{table_name(physical)}, its shape unchanged",
            ),
        ),
        replace(after, physical=physical),
    )


def _versioned_reasons(old: Contract, new: Contract, target: Target) -> list[str]:
    reasons = []
    if tuple(c.casefold() for c in old.table.partitioned_by) != tuple(
        c.casefold() for c in new.table.partitioned_by
    ):
        reasons.append("partitioning changes rewrite the table")
    pairing = pair_columns(old, new)
    for before, after in pairing.matched:
        old_type, new_type = parse_type(before.type), parse_type(after.type)
        if old_type != new_type and not widens_to(old_type, new_type, target.widening_rules):
            reasons.append(
                f"{after.name}: {canonical(before.type)} -> {canonical(after.type)} is not a type widening "
                f"Delta {target.widening_rules}.x allows in place"
            )
    if old.table.versioning is Versioning.IN_PLACE and new.table.versioning is Versioning.VERSIONED:
        reasons.append("the contract switches to versioned tables")
    return reasons


__all__ = ["PlanError", "TableState", "column_spec", "initial_state", "plan", "versioned_name"]
