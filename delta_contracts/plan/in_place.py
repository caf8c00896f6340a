"""The in-place recipes: expand → populate → cutover → contract on the same Delta table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.pairing import pair_columns
from delta_contracts.contract.types import canonical, parse_type
from delta_contracts.plan.building import (
    COLUMN_DEFAULTS,
    COLUMN_MAPPING,
    MAPPING_PROTOCOL,
    TYPE_WIDENING,
    Builder,
    TableId,
    TableState,
    add_check,
    column_spec,
    converted,
    gate_for,
    stamp_op,
)
from delta_contracts.plan.ops import (
    AddColumn,
    Backfill,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropNotNull,
    MarkDeprecated,
    Migration,
    Op,
    Phase,
    SetClustering,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    WidenType,
    table_name,
)
from delta_contracts.plan.rules import contract_rules, not_null_rule
from delta_contracts.target import Target

Enable = Callable[[tuple[str, str], str], None]


def plan_in_place(
    old: Contract, new: Contract, target: Target, state: TableState
) -> tuple[Migration, TableState]:
    t = state.physical
    b = Builder(new.table_parts)
    pairing = pair_columns(old, new)
    props = dict(state.properties)
    old_rules, new_rules = contract_rules(old), contract_rules(new)

    def enable(prop: tuple[str, str], why: str) -> None:
        if prop == COLUMN_DEFAULTS:
            b.warn(
                f"{table_name(t)}: column defaults need the allowColumnDefaults feature "
                "(an irreversible protocol upgrade)"
            )
        if props.get(prop[0]) != prop[1]:
            extra = MAPPING_PROTOCOL if prop == COLUMN_MAPPING else ()
            b.add(SetProperties(table=t, phase=Phase.EXPAND, properties=(prop, *extra), reason=why))
            props[prop[0]] = prop[1]

    going = [*pairing.removed, *(before for before, _ in pairing.renamed)]
    if going:
        enable(COLUMN_MAPPING, "DROP COLUMN needs column mapping")
        b.warn(
            f"{table_name(t)}: enabling column mapping upgrades the table protocol irreversibly "
            "(reader 2, writer 5); streaming readers then need schemaTrackingLocation to survive the drop"
        )

    changed_props = tuple(
        (k, v) for k, v in sorted(new.table.properties.items()) if old.table.properties.get(k) != v
    )
    if changed_props:
        b.add(
            SetProperties(table=t, phase=Phase.EXPAND, properties=changed_props, reason="contract properties")
        )
        props.update(changed_props)
    for key in sorted(set(old.table.properties) - set(new.table.properties)):
        b.warn(f"{table_name(t)}: property {key} left the contract but stays on the table (unset it by hand)")
    if (new.description or None) != (old.description or None) and new.description:
        b.add(
            SetTableComment(table=t, phase=Phase.EXPAND, comment=new.description, reason="table description")
        )
    if tuple(new.table.clustered_by) != tuple(old.table.clustered_by):
        b.add(
            SetClustering(
                table=t, phase=Phase.EXPAND, columns=new.table.clustered_by, reason="clustering keys"
            )
        )
        b.warn(
            f"{table_name(t)}: new clustering keys apply to new writes; OPTIMIZE reclusters existing files"
        )

    # Delta refuses to retype a column a CHECK reads: such rules go before ALTER TYPE and come back in
    # cutover. Rules of columns on their way out are relaxed at cutover, so producers may stop writing them.
    going_names = {before.name.casefold() for before in going}
    widened = {
        before.name.casefold()
        for before, after in pairing.kept
        if parse_type(before.type) != parse_type(after.type)
    }
    relax: list[Op] = []
    for rule in old_rules.values():
        new_rule = new_rules.get(rule.key)
        drop = DropCheck(table=t, phase=Phase.EXPAND, name=rule.name, reason="its column is retyped")
        if rule.columns & widened:
            b.add(drop)
        elif new_rule is None and rule.columns & going_names:
            relax.append(replace(drop, phase=Phase.CUTOVER, reason="rule of a deprecated column"))
        elif new_rule is None:
            b.add(replace(drop, reason="rule removed from the contract"))
        elif new_rule.expression != rule.expression:
            b.add(replace(drop, phase=Phase.CUTOVER, reason="rule changed: swapped where it is re-added"))
    for before in going:
        if not before.nullable:
            relax.append(
                DropCheck(
                    table=t,
                    phase=Phase.CUTOVER,
                    name=not_null_rule(before.name).name,
                    reason="deprecated column",
                )
            )
            relax.append(
                DropNotNull(table=t, phase=Phase.CUTOVER, column=before.name, reason="deprecated column")
            )

    for before, after in pairing.kept:
        _kept_column(b, t, before, after, target, enable)

    for column in pairing.added:
        _added_column(b, t, column, target, enable)

    for before, after in pairing.renamed:
        if after.default is not None:
            enable(COLUMN_DEFAULTS, "column defaults")
        b.add(
            AddColumn(table=t, phase=Phase.EXPAND, column=column_spec(after), reason=f"rename {before.name}")
        )
        if after.default is not None:
            _set_default(b, t, after, enable)
        fill = Backfill(
            table=t,
            phase=Phase.POPULATE,
            column=after.name,
            expression=converted(before.name, before.type, after.type),
            reason=f"copy {before.name}",
        )
        b.add(fill)
        b.add(
            replace(
                fill, phase=Phase.CUTOVER, reason=f"catch rows written to {before.name} only since populate"
            )
        )
        if not after.nullable:
            _tighten_not_null(b, t, after.name, target)

    for rule in new_rules.values():
        old_rule = old_rules.get(rule.key)
        if old_rule is None or old_rule.expression != rule.expression or old_rule.columns & widened:
            b.add(add_check(t, Phase.CUTOVER, rule))

    deprecated = sorted({c.name for c in going} | {c.name for c in new.columns if c.deprecated})
    previously = {c.name.casefold() for c in old.columns if c.deprecated}
    newly = {c.name for c in going} | {
        c.name for c in new.columns if c.deprecated and c.name.casefold() not in previously
    }
    if newly:
        b.add(
            MarkDeprecated.of(
                t, columns=tuple(deprecated), since=new.version, reason="deprecation mark starts the window"
            )
        )

    for op in relax:
        b.add(op)
    b.add(stamp_op(t, new))

    if going:
        names = [c.name for c in going]
        objects = [f"{new.id}.{n}" for n in names]
        b.add(
            DropColumns(
                table=t,
                phase=Phase.CONTRACT,
                columns=tuple(names),
                gate=gate_for(new, objects, "delta_contracts.deprecated.columns"),
                reason="columns removed or renamed in the contract",
            )
        )
    if any(isinstance(op, AddColumn | WidenType | DropColumns) for op in b.all_ops()):
        b.warn(f"{table_name(t)}: streaming readers stop at a schema change; restart them after apply")
    if any(isinstance(op, Backfill) for op in b.all_ops()):
        b.warn(f"{table_name(t)}: backfill UPDATEs rewrite every file holding a touched row: O(table)")
    after_state = TableState(t, tuple(sorted(props.items())))
    migration = Migration(
        new.table_parts, old.version, new.version, "in_place", b.all_ops(), tuple(b.warnings), tuple(b.notes)
    )
    return migration, after_state


def _tighten_not_null(b: Builder, t: TableId, column: str, target: Target) -> None:
    if target.supports_set_not_null:
        b.add(SetNotNull(table=t, phase=Phase.CUTOVER, column=column, reason="nullable: false"))
        return
    b.add(
        add_check(t, Phase.CUTOVER, not_null_rule(column), "nullable: false (OSS Delta has no SET NOT NULL)")
    )


def _kept_column(
    b: Builder, t: TableId, before: Column, after: Column, target: Target, enable: Enable
) -> None:
    old_type, new_type = parse_type(before.type), parse_type(after.type)
    if old_type != new_type:
        enable(TYPE_WIDENING, "type widening")
        b.add(
            WidenType(
                table=t,
                phase=Phase.EXPAND,
                column=after.name,
                from_type=canonical(before.type),
                to_type=canonical(after.type),
                reason="widen type",
            )
        )
        b.warn(f"{table_name(t)}: type widening is a table feature; readers need Delta 4.0+ (or DBR 15.4+)")
    if (after.description or None) != (before.description or None) and after.description is not None:
        b.add(
            SetColumnComment(
                table=t,
                phase=Phase.EXPAND,
                column=after.name,
                comment=after.description,
                reason="description",
            )
        )
    if after.default != before.default:
        if after.default is None:
            b.add(DropColumnDefault(table=t, phase=Phase.EXPAND, column=after.name, reason="default removed"))
        else:
            _set_default(b, t, after, enable)
    if before.nullable and not after.nullable:
        _tighten_not_null(b, t, after.name, target)
    elif not before.nullable and after.nullable:
        rule = not_null_rule(after.name)
        b.add(
            DropCheck(
                table=t, phase=Phase.EXPAND, name=rule.name, reason="nullable again (NOT NULL via CHECK)"
            )
        )
        b.add(DropNotNull(table=t, phase=Phase.EXPAND, column=after.name, reason="nullable again"))


def _set_default(b: Builder, t: TableId, column: Column, enable: Enable) -> None:
    enable(COLUMN_DEFAULTS, "column defaults")
    default = column_spec(column).default or ""
    b.add(
        SetColumnDefault(table=t, phase=Phase.EXPAND, column=column.name, default=default, reason="default")
    )


def _added_column(b: Builder, t: TableId, column: Column, target: Target, enable: Enable) -> None:
    spec = column_spec(column)
    if spec.default is not None:
        enable(COLUMN_DEFAULTS, "column defaults")
    b.add(AddColumn(table=t, phase=Phase.EXPAND, column=spec, reason="new column"))
    if spec.default is not None:
        _set_default(b, t, column, enable)
    if not column.nullable:
        if spec.default is not None:
            b.add(
                Backfill(
                    table=t,
                    phase=Phase.POPULATE,
                    column=column.name,
                    expression=spec.default,
                    reason="fill existing rows with the default",
                )
            )
        else:
            b.warn(
                f"{table_name(t)}: {column.name} is NOT NULL without a default: producers must fill existing "
                "rows before cutover, whose pre-check stops on any NULL"
            )
        _tighten_not_null(b, t, column.name, target)
