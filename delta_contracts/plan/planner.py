"""From the contract a table is at to the contract it must reach: the phased ops that get it there.

`plan` picks a strategy — in place (expand → populate → cutover → contract on the same table) or versioned
(a new `<table>__v<major>` behind the alias view) — and says why when a change forces the versioned one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from delta_contracts.contract.model import Column, Contract, Versioning, semver_tuple
from delta_contracts.contract.pairing import ColumnPairing, pair_columns
from delta_contracts.contract.types import canonical, parse_type, widens_to
from delta_contracts.plan import expressions as x
from delta_contracts.plan.ops import (
    STAMP_ID,
    STAMP_SCHEMA_HASH,
    STAMP_VERSION,
    AddCheck,
    AddColumn,
    Backfill,
    ColumnSpec,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropNotNull,
    DropTable,
    Gate,
    MarkDeprecated,
    Migration,
    Op,
    Phase,
    RenameTable,
    SetClustering,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    StampContract,
    WidenType,
    table_name,
)
from delta_contracts.plan.rules import CheckRule, column_rules, contract_rules, not_null_rule, schema_hash
from delta_contracts.target import Target

TableId = tuple[str, ...]
Enable = Callable[[tuple[str, str], str], None]

COLUMN_MAPPING = ("delta.columnMapping.mode", "name")
TYPE_WIDENING = ("delta.enableTypeWidening", "true")
COLUMN_DEFAULTS = ("delta.feature.allowColumnDefaults", "supported")
# Column mapping needs reader 2 / writer 5 (DESIGN.md, "Delta facts").
MAPPING_PROTOCOL = (("delta.minReaderVersion", "2"), ("delta.minWriterVersion", "5"))


class PlanError(ValueError):
    """The change cannot be planned as declared (e.g. a versioned rewrite without a major bump)."""


@dataclass(frozen=True, slots=True)
class TableState:
    """Where the table stands before the migration: its physical table and the features already on."""

    physical: TableId
    properties: tuple[tuple[str, str], ...] = ()

    def has(self, prop: tuple[str, str]) -> bool:
        return prop in self.properties


def versioned_name(contract: Contract, major: int | None = None) -> TableId:
    parts = contract.table_parts
    number = semver_tuple(contract.version)[0] if major is None else major
    return (*parts[:-1], f"{parts[-1]}__v{number}")


def initial_state(contract: Contract) -> TableState:
    physical = (
        versioned_name(contract)
        if contract.table.versioning is Versioning.VERSIONED
        else contract.table_parts
    )
    return TableState(physical, tuple(sorted(contract.table.properties.items())))


def column_spec(column: Column) -> ColumnSpec:
    default = x.sql(x.literal(column.default)) if column.default is not None else None
    return ColumnSpec(column.name, canonical(column.type), column.nullable, column.description, default)


@dataclass
class _Builder:
    """Collects ops per phase while the recipes run; phase order is fixed when the migration is built."""

    table: TableId
    ops: dict[Phase, list[Op]] = field(default_factory=lambda: {p: [] for p in Phase})
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, op: Op) -> None:
        if op not in self.ops[op.phase]:
            self.ops[op.phase].append(op)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def all_ops(self) -> tuple[Op, ...]:
        return tuple(op for phase in Phase for op in self.ops[phase])


def plan(
    old: Contract | None, new: Contract, target: Target, *, state: TableState | None = None
) -> tuple[Migration, TableState]:
    """The migration from `old` (None: the table does not exist yet) to `new`, and the state after it."""
    if old is None:
        return _plan_create(new, target)
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
        return _plan_versioned(old, new, target, state, reasons)
    return _plan_in_place(old, new, target, state)


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


def _stamp(table: TableId, contract: Contract) -> StampContract:
    props = (
        (STAMP_ID, contract.id),
        (STAMP_VERSION, contract.version),
        (STAMP_SCHEMA_HASH, schema_hash(contract)),
    )
    return StampContract(
        table=table, phase=Phase.CUTOVER, properties=props, reason="record the contract version"
    )


def _gate(contract: Contract, objects: list[str], deprecated_by: str) -> Gate:
    return Gate(
        contract.evolution.deprecation_window,
        contract.evolution.reader_lookback,
        deprecated_by,
        tuple(objects),
    )


def _create_properties(contract: Contract) -> tuple[tuple[str, str], ...]:
    props = dict(contract.table.properties)
    if any(c.default is not None for c in contract.columns):
        props.setdefault(*COLUMN_DEFAULTS)
    return tuple(sorted(props.items()))


def _create_ops(contract: Contract, table: TableId, phase: Phase) -> list[Op]:
    ops: list[Op] = [
        CreateTable(
            table=table,
            phase=phase,
            columns=tuple(column_spec(c) for c in contract.columns),
            partitioned_by=contract.table.partitioned_by,
            clustered_by=contract.table.clustered_by,
            comment=contract.description,
            properties=_create_properties(contract),
            reason=f"create {table_name(table)} from contract {contract.id} {contract.version}",
        )
    ]
    for rule in contract_rules(contract).values():
        ops.append(
            AddCheck(
                table=table, phase=phase, name=rule.name, expression=rule.expression, reason="contract rule"
            )
        )
    return ops


def _plan_create(new: Contract, target: Target) -> tuple[Migration, TableState]:
    b = _Builder(new.table_parts)
    state = initial_state(new)
    for op in _create_ops(new, state.physical, Phase.EXPAND):
        b.add(op)
    if new.table.versioning is Versioning.VERSIONED:
        b.add(
            CreateView(table=new.table_parts, phase=Phase.CUTOVER, source=state.physical, reason="alias view")
        )
        b.notes.append(f"versioned: data in {table_name(state.physical)}, read through the view {new.id}")
    b.add(_stamp(state.physical, new))
    state = TableState(state.physical, _create_properties(new))
    migration = Migration(
        new.table_parts, None, new.version, new.table.versioning.value, b.all_ops(), (), tuple(b.notes)
    )
    return migration, state


def _plan_in_place(
    old: Contract, new: Contract, target: Target, state: TableState
) -> tuple[Migration, TableState]:
    t = state.physical
    b = _Builder(new.table_parts)
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
            expression=_converted(before.name, before.type, after.type),
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
            b.add(
                AddCheck(
                    table=t,
                    phase=Phase.CUTOVER,
                    name=rule.name,
                    expression=rule.expression,
                    reason="contract rule",
                )
            )

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
    b.add(_stamp(t, new))

    if going:
        names = [c.name for c in going]
        objects = [f"{new.id}.{n}" for n in names]
        b.add(
            DropColumns(
                table=t,
                phase=Phase.CONTRACT,
                columns=tuple(names),
                gate=_gate(new, objects, "delta_contracts.deprecated.columns"),
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


def _tighten_not_null(b: _Builder, t: TableId, column: str, target: Target) -> None:
    if target.supports_set_not_null:
        b.add(SetNotNull(table=t, phase=Phase.CUTOVER, column=column, reason="nullable: false"))
        return
    rule = not_null_rule(column)
    b.add(
        AddCheck(
            table=t,
            phase=Phase.CUTOVER,
            name=rule.name,
            expression=rule.expression,
            reason="nullable: false (OSS Delta has no SET NOT NULL)",
        )
    )


def _kept_column(
    b: _Builder, t: TableId, before: Column, after: Column, target: Target, enable: Enable
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


def _set_default(b: _Builder, t: TableId, column: Column, enable: Enable) -> None:
    enable(COLUMN_DEFAULTS, "column defaults")
    default = column_spec(column).default or ""
    b.add(
        SetColumnDefault(table=t, phase=Phase.EXPAND, column=column.name, default=default, reason="default")
    )


def _added_column(b: _Builder, t: TableId, column: Column, target: Target, enable: Enable) -> None:
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


def _plan_versioned(
    old: Contract, new: Contract, target: Target, state: TableState, reasons: list[str]
) -> tuple[Migration, TableState]:
    alias = new.table_parts
    old_physical = state.physical
    new_physical = versioned_name(new)
    b = _Builder(alias)
    for reason in reasons:
        b.notes.append(f"versioned table {table_name(new_physical)}: {reason}")
    for op in _create_ops(new, new_physical, Phase.EXPAND):
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
    b.add(_stamp(new_physical, new))
    b.add(
        DropTable(
            table=retired,
            phase=Phase.CONTRACT,
            gate=_gate(new, [table_name(retired)], "delta_contracts.deprecated.table"),
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
    after_state = TableState(new_physical, _create_properties(new))
    migration = Migration(
        alias, old.version, new.version, "versioned", b.all_ops(), tuple(b.warnings), tuple(b.notes)
    )
    return migration, after_state


def _converted(source: str, from_type: str, to_type: str) -> str:
    """`source` as `to_type`: the column itself when the types agree, else a CAST."""
    value = x.column(source)
    return x.sql(value if parse_type(from_type) == parse_type(to_type) else x.cast(value, canonical(to_type)))


def _copy_mapping(pairing: ColumnPairing, new: Contract) -> tuple[tuple[str, str], ...]:
    sources = {after.name: before for before, after in pairing.matched}
    mapping = []
    for column in new.columns:
        before = sources.get(column.name)
        if before is None:
            value = x.literal(column.default) if column.default is not None else x.literal(None)
            mapping.append((column.name, x.sql(x.cast(value, canonical(column.type)))))
            continue
        mapping.append((column.name, _converted(before.name, before.type, column.type)))
    return tuple(mapping)


def _compat_columns(pairing: ColumnPairing, old: Contract) -> tuple[tuple[str, str], ...] | None:
    """The old shape computed from the new table, or None when an old column has no source any more."""
    targets = {before.name: after for before, after in pairing.matched}
    columns = []
    for column in old.columns:
        after = targets.get(column.name)
        if after is None:
            return None
        columns.append((column.name, _converted(after.name, after.type, column.type)))
    return tuple(columns)


__all__ = ["CheckRule", "PlanError", "TableState", "column_rules", "initial_state", "plan", "versioned_name"]
