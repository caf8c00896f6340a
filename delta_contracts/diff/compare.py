"""`compare(old, new, target)`: every change between two contracts of one table, classified, with the column
pairing it was found through — the one comparison `diff` prints and `plan` turns into ops. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from delta_contracts.contract.errors import plain
from delta_contracts.contract.model import (
    Bound,
    Column,
    Contract,
    LifecycleStatus,
    Quality,
    TableConstraint,
    TableSpec,
    Versioning,
    duration_seconds,
)
from delta_contracts.contract.nested import (
    FieldChange,
    FieldChangeKind,
    dotted,
    field_changes,
    is_nested,
    not_fieldwise_reason,
    parse_path,
)
from delta_contracts.contract.pairing import ColumnPairing, pair_columns
from delta_contracts.contract.types import TypeParseError, canonical_or_text, parse_type, widens_to
from delta_contracts.diff.changes import Change, change
from delta_contracts.diff.rules import (
    column_change_rules,
    constraint_rules,
    kind_rules,
    retyped_rules,
)
from delta_contracts.target import DEFAULT_TARGET, Target


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two contracts of one table compared once: which column became which, and every change with the old
    and new column, rule or table setting it is about. The planner reads its facts from here."""

    old: Contract
    new: Contract
    target: Target
    pairing: ColumnPairing
    changes: tuple[Change, ...]

    def having(self, *codes: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.code in codes)

    @property
    def partitioning_changed(self) -> bool:
        return bool(self.having("DC-TB401"))

    @property
    def retypes_columns(self) -> bool:
        """Whether a column both contracts have changes its type, widened or not."""
        return bool(self.having("DC-MF106", "DC-MF107"))

    @property
    def non_widening_retypes(self) -> tuple[tuple[Column, Column], ...]:
        """(old, new) columns whose type changes in a way the target's Delta cannot widen in place."""
        return tuple(c.columns() for c in self.having("DC-MF107"))

    @property
    def switches_to_versioned(self) -> bool:
        return bool(self.having("DC-TB405"))


def compare(old: Contract, new: Contract, target: Target = DEFAULT_TARGET) -> Comparison:
    pairing = pair_columns(old, new)
    return Comparison(old, new, target, pairing, tuple(_diff(old, new, pairing, target)))


def diff(old: Contract, new: Contract, target: Target = DEFAULT_TARGET) -> list[Change]:
    return list(compare(old, new, target).changes)


def _diff(old: Contract, new: Contract, pairing: ColumnPairing, target: Target) -> Iterator[Change]:
    yield from _documentation(old, new)
    yield from _columns(old, new, pairing, target)
    yield from _constraints(old, new)
    yield from _table(old.table, new.table)
    yield from _quality(old.quality, new.quality)
    if old.lifecycle.status != new.lifecycle.status:
        code = "DC-LC703" if new.lifecycle.status is LifecycleStatus.RETIRED else "DC-LC702"
        message = f"lifecycle {old.lifecycle.status} -> {new.lifecycle.status}"
        yield change(code, message, "lifecycle.status", old, new)
    if old.lifecycle.successor != new.lifecycle.successor:
        message = f"successor is now {new.lifecycle.successor!r}"
        yield change("DC-LC702", message, "lifecycle.successor", old, new)


def _documentation(old: Contract, new: Contract) -> Iterator[Change]:
    if old.description != new.description:
        yield change("DC-DC601", "table description changed", "description", old, new)
    if old.owner != new.owner:
        yield change("DC-DC602", f"owner {old.owner.team} -> {new.owner.team}", "owner", old, new)
    if old.consumers != new.consumers:
        before = {c.name for c in old.consumers}
        after = {c.name for c in new.consumers}
        added, gone = sorted(after - before), sorted(before - after)
        detail = "; ".join(
            p for p in (f"added {added}" if added else "", f"removed {gone}" if gone else "") if p
        )
        message = f"consumers changed{': ' + detail if detail else ''}"
        yield change("DC-DC603", message, "consumers", old, new)
    if old.tags != new.tags:
        yield change("DC-DC604", f"tags {list(old.tags)} -> {list(new.tags)}", "tags", old, new)
    if old.evolution != new.evolution:
        yield change("DC-DC606", "evolution settings changed", "evolution", old, new)


def _rename_hint(column: Column, others: tuple[Column, ...]) -> str:
    for other in others:
        a, b = column.name.casefold(), other.name.casefold()
        similar = difflib.SequenceMatcher(None, a, b).ratio() >= 0.6 or a in b or b in a
        if similar and canonical_or_text(column.type) == canonical_or_text(other.type):
            return f"; looks like a rename of {other.name}: add `renamed_from: {other.name}` if it is"
    return ""


def _columns(old: Contract, new: Contract, pairing: ColumnPairing, target: Target) -> Iterator[Change]:
    new_index = {c.name.casefold(): i for i, c in enumerate(new.columns)}
    old_index = {c.name.casefold(): i for i, c in enumerate(old.columns)}
    for column in pairing.removed:
        hint = _rename_hint(column, pairing.added)
        field = f"columns[{old_index[column.name.casefold()]}]"
        rules = partial(column_change_rules, column, None)
        yield change("DC-DS103", f"column {column.name} removed{hint}", field, column, None, rules=rules)
    for column in pairing.added:
        field = f"columns[{new_index[column.name.casefold()]}]"
        hint = _rename_hint(column, pairing.removed).replace("a rename of", "a rename from")
        rules = partial(column_change_rules, None, column)
        if column.identity is not None or column.generated is not None:
            what = "identity" if column.identity is not None else "generated"
            message = (
                f"{what} column {column.name} added: Delta adds no identity or generated column to an "
                "existing table, so it needs a new versioned table"
            )
            yield change("DC-AD204", message, field, None, column, rules=rules)
        elif column.nullable:
            default = f" with default {plain(column.default)}" if column.default is not None else ""
            yield change(
                "DC-AD201",
                f"nullable column {column.name} {canonical_or_text(column.type)} added{default}{hint}",
                field,
                None,
                column,
                rules=rules,
            )
        elif column.default is not None:
            message = f"NOT NULL column {column.name} added with default {plain(column.default)}"
            yield change("DC-AD202", message, field, None, column, rules=rules)
        else:
            message = f"NOT NULL column {column.name} added without a default{hint}"
            yield change("DC-AD203", message, field, None, column, rules=rules)
        if column.deprecated is not None:
            message = f"column {column.name} added deprecated since {column.deprecated.since}"
            yield change("DC-LC701", message, f"{field}.deprecated", None, column)
    constraints = (old.constraints, new.constraints)
    for before, after in pairing.matched:
        field = f"columns[{new_index[after.name.casefold()]}]"
        if before.name != after.name:
            # the column's rules are named after it: each is rewritten (in case) or replaced (renamed)
            rules = partial(column_change_rules, before, after)
            if before.name.casefold() == after.name.casefold():
                message = f"column {before.name} renamed in case only to {after.name}"
                yield change("DC-DC605", message, field, before, after, rules=rules)
            else:
                message = f"column {before.name} renamed to {after.name}"
                yield change("DC-BC102", message, f"{field}.name", before, after, rules=rules)
        yield from _column(before, after, field, target, constraints)


def _column(
    before: Column,
    after: Column,
    field: str,
    target: Target,
    constraints: tuple[tuple[TableConstraint, ...], tuple[TableConstraint, ...]],
) -> Iterator[Change]:
    name = after.name
    old_type, new_type = canonical_or_text(before.type), canonical_or_text(after.type)
    fieldwise, why_not = _field_changes(before, after, target) if old_type != new_type else (None, None)
    if fieldwise is not None:
        yield from _fields(before, after, field, fieldwise)
    elif old_type != new_type:
        try:
            widening = widens_to(parse_type(old_type), parse_type(new_type), target.widening_rules)
        except TypeParseError:
            widening = False
        code = "DC-MF106" if widening else "DC-MF107"
        kind = "widened" if widening else "changed"
        message = f"column {name} type {kind}: {old_type} -> {new_type}"
        if why_not is not None and not widening:
            message += f" (not field by field in place: {why_not})"
        rules = partial(retyped_rules, before, after, *constraints)
        yield change(code, message, f"{field}.type", before, after, rules=rules)
    # a nullable column's rules let NULL through, a NOT NULL column's do not: their text changes with it
    rules = partial(column_change_rules, before, after)
    if before.nullable and not after.nullable:
        message = f"column {name} made NOT NULL"
        yield change("DC-MF104", message, f"{field}.nullable", before, after, rules=rules)
    elif not before.nullable and after.nullable:
        message = f"column {name} made nullable"
        yield change("DC-MF105", message, f"{field}.nullable", before, after, rules=rules)
    if before.default != after.default:
        message = f"column {name} default {plain(before.default)} -> {plain(after.default)}"
        yield change("DC-MF108", message, f"{field}.default", before, after)
    elif not same_text_expression(before.default_expression, after.default_expression):
        message = f"column {name} default {before.default_expression} -> {after.default_expression}"
        yield change("DC-MF108", message, f"{field}.default_expression", before, after)
    if before.identity != after.identity:
        message = f"column {name} identity {_identity_text(before)} -> {_identity_text(after)}"
        yield change("DC-MF109", message, f"{field}.identity", before, after)
    if not same_text_expression(before.generated, after.generated):
        message = (
            f"column {name} generated as {before.generated or 'nothing'} -> {after.generated or 'nothing'}"
        )
        yield change("DC-MF110", message, f"{field}.generated", before, after)
    if before.description != after.description:
        message = f"column {name} description changed"
        yield change("DC-DC605", message, f"{field}.description", before, after)
    if before.tags != after.tags or before.pii != after.pii:
        yield change("DC-DC604", f"column {name} tags or pii changed", f"{field}.tags", before, after)
    if after.deprecated is not None and before.deprecated is None:
        replaced = f" (replaced by {after.deprecated.replaced_by})" if after.deprecated.replaced_by else ""
        message = f"column {name} deprecated since {after.deprecated.since}{replaced}"
        yield change("DC-LC701", message, f"{field}.deprecated", before, after)
    yield from _deprecated_fields(before, after, field)
    yield from _checks(before, after, f"{field}.checks")


def _field_changes(
    before: Column, after: Column, target: Target
) -> tuple[tuple[FieldChange, ...] | None, str | None]:
    """The changes inside a struct column (or an array or map of structs), field by field, when its type
    changes only by fields Delta adds, drops, renames or widens in place; else None and why not (None: the
    column holds no fields)."""
    try:
        old, new = parse_type(before.type), parse_type(after.type)
    except TypeParseError:
        return None, None
    if not (is_nested(old) and is_nested(new)):
        return None, None
    renames = {parse_path(path): to for path, to in after.renamed_fields.items()}
    found = field_changes(old, new, renames, target.widening_rules)
    if found:
        return found, None
    return None, not_fieldwise_reason(old, new, renames, target.widening_rules)


_FIELD_CODES = {
    FieldChangeKind.ADDED: "DC-AD205",
    FieldChangeKind.DROPPED: "DC-DS111",
    FieldChangeKind.RENAMED: "DC-BC112",
    FieldChangeKind.WIDENED: "DC-MF113",
}


def _fields(before: Column, after: Column, field: str, found: tuple[FieldChange, ...]) -> Iterator[Change]:
    for nested in found:
        if nested.kind is FieldChangeKind.ADDED:
            message = f"nullable field {dotted(after.name, nested.new_path)} {nested.new_type} added"
        elif nested.kind is FieldChangeKind.DROPPED:
            message = f"field {dotted(before.name, nested.new_path)} removed"
        elif nested.kind is FieldChangeKind.RENAMED:
            message = (
                f"field {dotted(before.name, nested.path)} renamed to {dotted(after.name, nested.new_path)}"
            )
        else:
            message = (
                f"field {dotted(after.name, nested.new_path)} type widened: "
                f"{nested.old_type} -> {nested.new_type}"
            )
        code = _FIELD_CODES[nested.kind]
        yield change(code, message, f"{field}.type", before, after, nested=nested)


def _deprecated_fields(before: Column, after: Column, field: str) -> Iterator[Change]:
    """Fields newly listed under `deprecated_fields`: each starts its own deprecation window."""
    earlier = {parse_path(p) for p in before.deprecated_fields}
    for path, mark in after.deprecated_fields.items():
        steps = parse_path(path)
        if steps in earlier:
            continue
        replaced = f" (replaced by {mark.replaced_by})" if mark.replaced_by else ""
        message = f"field {dotted(after.name, steps)} deprecated since {mark.since}{replaced}"
        nested = FieldChange(FieldChangeKind.DEPRECATED, steps, steps, None, None)
        yield change("DC-LC704", message, f"{field}.deprecated_fields", before, after, nested=nested)


def _identity_text(column: Column) -> str:
    identity = column.identity
    if identity is None:
        return "none"
    return f"{identity.generated.value} (start {identity.start}, step {identity.step})"


def same_text_expression(a: str | None, b: str | None) -> bool:
    """Two optional SQL expressions the same after normalising (case, spacing, quotes)."""
    if a is None or b is None:
        return a is None and b is None
    return _same_expression(a, b)


def _bound(
    kind: str, old: Bound | None, new: Bound | None, columns: tuple[Column, Column], field: str
) -> Iterator[Change]:
    if old == new:
        return
    name, where = columns[1].name, f"{field}.{kind}"
    rules = partial(kind_rules, *columns, kind)
    if old is None:
        yield change("DC-CK301", f"column {name}: {kind} {new} added", where, *columns, rules=rules)
    elif new is None:
        yield change("DC-CK302", f"column {name}: {kind} {old} removed", where, *columns, rules=rules)
    else:
        try:
            tighter = new > old if kind == "min" else new < old  # type: ignore[operator]
        except TypeError:  # bounds of different kinds (a number, then a date): assume the stricter
            tighter = True
        code = "DC-CK303" if tighter else "DC-CK304"
        verb = "tightened" if tighter else "loosened"
        message = f"column {name}: {kind} {verb} {old} -> {new}"
        yield change(code, message, where, *columns, rules=rules)


def _checks(before: Column, after: Column, field: str) -> Iterator[Change]:
    """A column's checks: each change carries the column as it was and as it is."""
    old, new, name, columns = before.checks, after.checks, after.name, (before, after)
    yield from _bound("min", old.min, new.min, columns, field)
    yield from _bound("max", old.max, new.max, columns, field)
    if old.enum != new.enum:
        where, rules = f"{field}.enum", partial(kind_rules, *columns, "enum")
        if old.enum is None:
            message = f"column {name}: enum {plain(list(new.enum or ()))} added"
            yield change("DC-CK301", message, where, *columns, rules=rules)
        elif new.enum is None:
            yield change("DC-CK302", f"column {name}: enum removed", where, *columns, rules=rules)
        else:
            added = [v for v in new.enum if v not in old.enum]
            removed = [v for v in old.enum if v not in new.enum]
            if removed:
                message = f"column {name}: enum values {plain(removed)} removed"
                yield change("DC-CK306", message, where, *columns, rules=rules)
            if added:
                message = f"column {name}: enum values {plain(added)} added"
                yield change("DC-CK305", message, where, *columns, rules=rules)
    if old.regex != new.regex:
        where, rules = f"{field}.regex", partial(kind_rules, *columns, "regex")
        if old.regex is None:
            message = f"column {name}: regex {new.regex!r} added"
            yield change("DC-CK301", message, where, *columns, rules=rules)
        elif new.regex is None:
            yield change("DC-CK302", f"column {name}: regex removed", where, *columns, rules=rules)
        else:
            message = f"column {name}: regex {old.regex!r} -> {new.regex!r}"
            yield change("DC-CK307", message, where, *columns, rules=rules)


def _same_expression(a: str, b: str) -> bool:
    if a == b:  # the common case, answered without importing sqlglot (a third of `diff`'s start-up)
        return True
    from delta_contracts.sql.normalize import same_expression

    return same_expression(a, b)


def _constraints(old: Contract, new: Contract) -> Iterator[Change]:
    before = {c.name.casefold(): c for c in old.constraints}
    for i, constraint in enumerate(new.constraints):
        prior = before.pop(constraint.name.casefold(), None)
        field = f"constraints[{i}]"
        rules = partial(constraint_rules, prior, constraint)
        if prior is None:
            message = f"constraint {constraint.name} added: {constraint.expression}"
            yield change("DC-CK311", message, field, None, constraint, rules=rules)
        elif not _same_expression(prior.expression, constraint.expression):
            message = f"constraint {constraint.name} changed to {constraint.expression}"
            yield change("DC-CK313", message, field, prior, constraint, rules=rules)
    for constraint in before.values():
        message, rules = f"constraint {constraint.name} removed", partial(constraint_rules, constraint, None)
        yield change("DC-CK312", message, "constraints", constraint, None, rules=rules)


def _table(a: TableSpec, b: TableSpec) -> Iterator[Change]:
    """The table settings: every change carries both `table:` blocks. The one partitioning comparison."""
    if [c.casefold() for c in a.partitioned_by] != [c.casefold() for c in b.partitioned_by]:
        message = f"partitioning {list(a.partitioned_by)} -> {list(b.partitioned_by)}"
        yield change("DC-TB401", message, "table.partitioned_by", a, b)
    if [c.casefold() for c in a.clustered_by] != [c.casefold() for c in b.clustered_by]:
        message = f"clustering {list(a.clustered_by)} -> {list(b.clustered_by)}"
        yield change("DC-TB402", message, "table.clustered_by", a, b)
    for key in sorted(set(a.properties) | set(b.properties)):
        if a.properties.get(key) != b.properties.get(key):
            message = f"property {key}: {a.properties.get(key)!r} -> {b.properties.get(key)!r}"
            yield change("DC-TB403", message, f"table.properties.{key}", a, b, key=key)
    if a.versioning != b.versioning:
        code = "DC-TB405" if b.versioning is Versioning.VERSIONED else "DC-TB404"
        yield change(code, f"versioning {a.versioning} -> {b.versioning}", "table.versioning", a, b)
    if a.comment != b.comment:
        yield change("DC-DC601", "table comment changed", "table.comment", a, b)


def _sla(
    kind: str,
    old: float | None,
    new: float | None,
    higher_is_tighter: bool,
    field: str,
    blocks: tuple[Quality, Quality],
) -> Iterator[Change]:
    if old == new:
        return
    if old is None:
        yield change("DC-QA501", f"{kind} SLA added", field, *blocks)
    elif new is None:
        yield change("DC-QA502", f"{kind} SLA removed", field, *blocks)
    else:
        tighter = (new > old) if higher_is_tighter else (new < old)
        code = "DC-QA501" if tighter else "DC-QA502"
        yield change(code, f"{kind} SLA {'tightened' if tighter else 'loosened'}", field, *blocks)


def _quality(a: Quality, b: Quality) -> Iterator[Change]:
    """The quality block: every change carries both blocks."""
    blocks = (a, b)
    fa = duration_seconds(a.freshness.max_age) if a.freshness else None
    fb = duration_seconds(b.freshness.max_age) if b.freshness else None
    yield from _sla("freshness", fa, fb, False, "quality.freshness", blocks)
    if a.freshness and b.freshness and a.freshness.column != b.freshness.column and fa == fb:
        message = "freshness measured on another column"
        yield change("DC-QA502", message, "quality.freshness.column", *blocks)
    yield from _sla(
        "volume min_rows",
        a.volume.min_rows if a.volume else None,
        b.volume.min_rows if b.volume else None,
        True,
        "quality.volume.min_rows",
        blocks,
    )
    yield from _sla(
        "volume max_rows",
        a.volume.max_rows if a.volume else None,
        b.volume.max_rows if b.volume else None,
        False,
        "quality.volume.max_rows",
        blocks,
    )
    ca = {c.column.casefold(): c.min_ratio for c in a.completeness}
    cb = {c.column.casefold(): c.min_ratio for c in b.completeness}
    for column in sorted(set(ca) | set(cb)):
        yield from _sla(
            f"completeness of {column}", ca.get(column), cb.get(column), True, "quality.completeness", blocks
        )
    if {tuple(k.casefold() for k in u) for u in a.unique} != {
        tuple(k.casefold() for k in u) for u in b.unique
    }:
        message = f"unique keys {[list(u) for u in a.unique]} -> {[list(u) for u in b.unique]}"
        yield change("DC-QA503", message, "quality.unique", *blocks)
