"""The versioned recipes: a new `<table>__v<major>` behind the alias view, and table creation."""

from __future__ import annotations

from delta_contracts.contract.model import Contract, Versioning
from delta_contracts.contract.pairing import ColumnPairing, pair_columns
from delta_contracts.contract.types import canonical
from delta_contracts.plan import expressions as x
from delta_contracts.plan.building import (
    Builder,
    TableState,
    converted,
    create_ops,
    create_properties,
    gate_for,
    initial_state,
    stamp_op,
    versioned_name,
)
from delta_contracts.plan.ops import (
    CopyRows,
    CreateView,
    DropTable,
    MarkDeprecated,
    Migration,
    Phase,
    RenameTable,
    table_name,
)
from delta_contracts.target import Target


def plan_create(new: Contract, target: Target) -> tuple[Migration, TableState]:
    b = Builder(new.table_parts)
    state = initial_state(new)
    for op in create_ops(new, state.physical, Phase.EXPAND):
        b.add(op)
    if new.table.versioning is Versioning.VERSIONED:
        b.add(
            CreateView(table=new.table_parts, phase=Phase.CUTOVER, source=state.physical, reason="alias view")
        )
        b.notes.append(f"versioned: data in {table_name(state.physical)}, read through the view {new.id}")
    b.add(stamp_op(state.physical, new))
    state = TableState(state.physical, create_properties(new))
    migration = Migration(
        new.table_parts, None, new.version, new.table.versioning.value, b.all_ops(), (), tuple(b.notes)
    )
    return migration, state


def plan_versioned(
    old: Contract, new: Contract, target: Target, state: TableState, reasons: list[str]
) -> tuple[Migration, TableState]:
    alias = new.table_parts
    old_physical = state.physical
    new_physical = versioned_name(new)
    b = Builder(alias)
    for reason in reasons:
        b.notes.append(f"versioned table {table_name(new_physical)}: {reason}")
    for op in create_ops(new, new_physical, Phase.EXPAND):
        b.add(op)
    pairing = pair_columns(old, new)
    mapping = _copy_mapping(pairing, new)
    b.add(
        CopyRows(
            table=new_physical, phase=Phase.POPULATE, source=old_physical, mapping=mapping, reason="copy rows"
        )
    )
    b.add(
        CopyRows(
            table=new_physical,
            phase=Phase.CUTOVER,
            source=old_physical,
            mapping=mapping,
            reason="catch rows written since populate",
        )
    )
    b.warn(f"{table_name(new_physical)}: the copy reads and writes the whole table: O(table)")
    retired = old_physical
    if old_physical == alias:
        retired = versioned_name(old)
        b.add(
            RenameTable(
                table=alias, phase=Phase.CUTOVER, new_name=retired, reason="free the name for the alias view"
            )
        )
        b.warn(f"{table_name(alias)}: between the rename and the view swap the name is briefly missing")
    alter = target.supports_alter_view_as and old_physical != alias
    b.add(
        CreateView(
            table=alias,
            phase=Phase.CUTOVER,
            source=new_physical,
            alter_existing=alter,
            reason="swap the alias view",
        )
    )
    if not alter:
        b.warn(
            f"{table_name(alias)}: CREATE OR REPLACE VIEW drops the view's grants on Unity Catalog; re-grant"
        )
    b.add(
        MarkDeprecated.of(retired, whole_table=True, since=new.version, reason="old version on its way out")
    )
    b.add(stamp_op(new_physical, new))
    b.add(
        DropTable(
            table=retired,
            phase=Phase.CONTRACT,
            gate=gate_for(new, [table_name(retired)], "delta_contracts.deprecated.table"),
            reason="old version, after the window",
        )
    )
    compat = _compat_columns(pairing, old)
    if compat is not None:
        b.add(
            CreateView(
                table=retired,
                phase=Phase.CONTRACT,
                source=new_physical,
                columns=compat,
                reason="old shape over the new table",
            )
        )
        b.notes.append(
            f"{table_name(retired)} becomes a compatibility view in the {old.version} shape after the drop"
        )
    after_state = TableState(new_physical, create_properties(new))
    migration = Migration(
        alias, old.version, new.version, "versioned", b.all_ops(), tuple(b.warnings), tuple(b.notes)
    )
    return migration, after_state


def _copy_mapping(pairing: ColumnPairing, new: Contract) -> tuple[tuple[str, str], ...]:
    sources = {after.name: before for before, after in pairing.matched}
    mapping = []
    for column in new.columns:
        before = sources.get(column.name)
        if before is None:
            value = x.literal(column.default) if column.default is not None else x.literal(None)
            mapping.append((column.name, x.sql(x.cast(value, canonical(column.type)))))
            continue
        mapping.append((column.name, converted(before.name, before.type, column.type)))
    return tuple(mapping)


def _compat_columns(pairing: ColumnPairing, old: Contract) -> tuple[tuple[str, str], ...] | None:
    """The old shape computed from the new table, or None when an old column has no source any more."""
    targets = {before.name: after for before, after in pairing.matched}
    columns = []
    for column in old.columns:
        after = targets.get(column.name)
        if after is None:
            return None
        columns.append((column.name, converted(after.name, after.type, column.type)))
    return tuple(columns)
