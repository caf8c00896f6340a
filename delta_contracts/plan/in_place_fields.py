"""The in-place recipe of fields inside columns' types: a nullable field added and a field widened in expand,
a field renamed at cutover (column mapping: metadata only, the values kept), a field dropped in the contract
phase behind its deprecation gate, a field marked deprecated. Every op follows from a change `diff` reported
(DC-AD205, DC-MF113, DC-BC112, DC-DS111, DC-LC704)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from delta_contracts.contract.model import Contract
from delta_contracts.contract.nested import FieldChange, FieldChangeKind, dotted, parse_path
from delta_contracts.diff.changes import Change
from delta_contracts.marks import column_mark_key
from delta_contracts.plan.building import COLUMN_MAPPING, TYPE_WIDENING, Builder, FieldChangeError, gate_for
from delta_contracts.plan.fields import AddField, DropField, RenameField, WidenField
from delta_contracts.plan.in_place_columns import enable_timestamp_ntz
from delta_contracts.plan.ops import Phase
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

Enable = Callable[[tuple[str, str], str], None]


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """What the recipe leaves to the rest of the in-place plan: the fields to mark deprecated (their names,
    `addr.zip`: newly, and every one the new contract lists) and the drops of the contract phase."""

    newly_marked: tuple[str, ...]
    listed: tuple[str, ...]
    drops: tuple[tuple[str, DropField], ...]  # (the field's name, its drop)


def _nested(found: Change) -> FieldChange:
    if found.nested is None:
        raise TypeError(f"{found.code} at {found.field} carries no field change")
    return found.nested


def plan_fields(
    b: Builder,
    t: TableId,
    new: Contract,
    found: tuple[Change, ...],
    renamed_columns: frozenset[str],
    target: Target,
    enable: Enable,
    checks: Mapping[str, tuple[str, ...]],
) -> FieldPlan:
    """The fields' ops; `checks`: folded column → the CHECKs that read it, which stand through a widening of
    a field inside it (`WidenField.checks_kept`)."""
    changes = [(f.columns()[0].name, _nested(f)) for f in found]
    for column, _ in changes:
        if column.casefold() in renamed_columns:
            raise FieldChangeError(
                f"{new.id}: column {column} is renamed and the fields inside it change in the same version: "
                "rename the column in one version and change its fields in the next"
            )
    kinds = {nested.kind for _, nested in changes}
    if kinds & {FieldChangeKind.RENAMED, FieldChangeKind.DROPPED}:
        enable(COLUMN_MAPPING, "RENAME COLUMN and DROP COLUMN of a field need column mapping")
    if FieldChangeKind.WIDENED in kinds:
        enable(TYPE_WIDENING, "type widening")
        b.warn(f"{t}: {target.type_widening_note}")
    for _, nested in changes:
        if nested.kind in (FieldChangeKind.ADDED, FieldChangeKind.WIDENED):
            enable_timestamp_ntz(nested.old_type or None, nested.new_type, enable)
    for column, nested in changes:
        path = (column, *nested.path)
        if nested.kind is FieldChangeKind.ADDED and nested.new is not None:
            b.add(
                AddField(
                    table=t,
                    phase=Phase.EXPAND,
                    path=path,
                    type=nested.new_type,
                    comment=nested.new.comment,
                    after=None if nested.last else nested.after,
                    first=not nested.last and nested.after is None,
                    reason="new field",
                )
            )
        elif nested.kind is FieldChangeKind.WIDENED:
            b.add(
                WidenField(
                    table=t,
                    phase=Phase.EXPAND,
                    path=path,
                    from_type=nested.old_type,
                    to_type=nested.new_type,
                    checks_kept=checks.get(column.casefold(), ()),
                    reason="widen field type",
                )
            )
    # deepest first: a field's path names its parents as they are before their own rename
    renames = sorted(
        ((c, n) for c, n in changes if n.kind is FieldChangeKind.RENAMED), key=lambda p: -len(p[1].path)
    )
    for column, nested in renames:
        if nested.new is None:
            continue
        b.add(
            RenameField(
                table=t,
                phase=Phase.CUTOVER,
                path=(column, *nested.path),
                new_name=nested.new.name,
                reason=f"field renamed to {dotted(column, nested.new_path)}",
            )
        )
    if renames:
        b.warn(
            f"{t}: a field's rename is metadata only and takes effect at cutover: producers write the new "
            "field name from then on (a write with the old name is refused, or adds the old field back under "
            "mergeSchema)"
        )
    drops: list[tuple[str, DropField]] = []
    going: list[str] = []
    for column, nested in changes:
        if nested.kind is not FieldChangeKind.DROPPED:
            continue
        name = dotted(column, nested.new_path)  # as the old contract and its readers name it
        going.append(name)
        gate = gate_for(new, [f"{new.id}.{name}"], column_mark_key(name))
        drop = DropField(
            table=t,
            phase=Phase.CONTRACT,
            path=(column, *nested.path),
            gate=gate,
            reason="field removed from the contract",
        )
        drops.append((name, drop))
    if drops:
        b.warn(
            f"{t}: a dropped field's values stay in the data files until they are rewritten "
            "(REORG TABLE … APPLY (PURGE))"
        )
    deprecated = [dotted(c, n.path) for c, n in changes if n.kind is FieldChangeKind.DEPRECATED]
    listed = [dotted(c.name, parse_path(p)) for c in new.columns for p in c.deprecated_fields]
    return FieldPlan(tuple(going + deprecated), tuple(going + listed), tuple(drops))
