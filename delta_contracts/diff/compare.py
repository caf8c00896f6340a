"""`diff(old, new)`: every change between two contracts of one table, classified. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from delta_contracts.contract.errors import plain
from delta_contracts.contract.model import (
    Bound,
    Checks,
    Column,
    Contract,
    LifecycleStatus,
    Versioning,
    duration_seconds,
)
from delta_contracts.contract.pairing import pair_columns
from delta_contracts.contract.types import TypeParseError, canonical_or_text, parse_type, widens_to
from delta_contracts.diff.changes import Change, change
from delta_contracts.target import DEFAULT_TARGET, Target


def diff(old: Contract, new: Contract, target: Target = DEFAULT_TARGET) -> list[Change]:
    return list(_diff(old, new, target))


def _diff(old: Contract, new: Contract, target: Target) -> Iterator[Change]:
    yield from _documentation(old, new)
    yield from _columns(old, new, target)
    yield from _constraints(old, new)
    yield from _table(old, new)
    yield from _quality(old, new)
    if old.lifecycle.status != new.lifecycle.status:
        code = "DC-LC703" if new.lifecycle.status is LifecycleStatus.RETIRED else "DC-LC702"
        yield change(code, f"lifecycle {old.lifecycle.status} -> {new.lifecycle.status}", "lifecycle.status")
    if old.lifecycle.successor != new.lifecycle.successor:
        yield change("DC-LC702", f"successor is now {new.lifecycle.successor!r}", "lifecycle.successor")


def _documentation(old: Contract, new: Contract) -> Iterator[Change]:
    if old.description != new.description:
        yield change("DC-DC601", "table description changed", "description")
    if old.owner != new.owner:
        yield change("DC-DC602", f"owner {old.owner.team} -> {new.owner.team}", "owner")
    if old.consumers != new.consumers:
        before = {c.name for c in old.consumers}
        after = {c.name for c in new.consumers}
        added, gone = sorted(after - before), sorted(before - after)
        detail = "; ".join(
            p for p in (f"added {added}" if added else "", f"removed {gone}" if gone else "") if p
        )
        yield change("DC-DC603", f"consumers changed{': ' + detail if detail else ''}", "consumers")
    if old.tags != new.tags:
        yield change("DC-DC604", f"tags {list(old.tags)} -> {list(new.tags)}", "tags")
    if old.evolution != new.evolution:
        yield change("DC-DC606", "evolution settings changed", "evolution")


def _rename_hint(column: Column, others: tuple[Column, ...]) -> str:
    for other in others:
        a, b = column.name.casefold(), other.name.casefold()
        similar = difflib.SequenceMatcher(None, a, b).ratio() >= 0.6 or a in b or b in a
        if similar and canonical_or_text(column.type) == canonical_or_text(other.type):
            return f"; looks like a rename of {other.name}: add `renamed_from: {other.name}` if it is"
    return ""


def _columns(old: Contract, new: Contract, target: Target) -> Iterator[Change]:
    pairing = pair_columns(old, new)
    new_index = {c.name.casefold(): i for i, c in enumerate(new.columns)}
    old_index = {c.name.casefold(): i for i, c in enumerate(old.columns)}
    for column in pairing.removed:
        hint = _rename_hint(column, pairing.added)
        field = f"columns[{old_index[column.name.casefold()]}]"
        yield change("DC-DS103", f"column {column.name} removed{hint}", field)
    for column in pairing.added:
        field = f"columns[{new_index[column.name.casefold()]}]"
        hint = _rename_hint(column, pairing.removed).replace("a rename of", "a rename from")
        if column.nullable:
            yield change(
                "DC-AD201",
                f"nullable column {column.name} {canonical_or_text(column.type)} added{hint}",
                field,
            )
        elif column.default is not None:
            yield change(
                "DC-AD202", f"NOT NULL column {column.name} added with default {column.default!r}", field
            )
        else:
            yield change("DC-AD203", f"NOT NULL column {column.name} added without a default{hint}", field)
    for before, after in pairing.matched:
        field = f"columns[{new_index[after.name.casefold()]}]"
        if before.name != after.name:
            if before.name.casefold() == after.name.casefold():
                yield change("DC-DC605", f"column {before.name} renamed in case only to {after.name}", field)
            else:
                yield change("DC-BC102", f"column {before.name} renamed to {after.name}", f"{field}.name")
        yield from _column(before, after, field, target)


def _column(before: Column, after: Column, field: str, target: Target) -> Iterator[Change]:
    name = after.name
    old_type, new_type = canonical_or_text(before.type), canonical_or_text(after.type)
    if old_type != new_type:
        try:
            widening = widens_to(parse_type(old_type), parse_type(new_type), target.widening_rules)
        except TypeParseError:
            widening = False
        code = "DC-MF106" if widening else "DC-MF107"
        kind = "widened" if widening else "changed"
        yield change(code, f"column {name} type {kind}: {old_type} -> {new_type}", f"{field}.type")
    if before.nullable and not after.nullable:
        yield change("DC-MF104", f"column {name} made NOT NULL", f"{field}.nullable")
    elif not before.nullable and after.nullable:
        yield change("DC-MF105", f"column {name} made nullable", f"{field}.nullable")
    if before.default != after.default:
        yield change(
            "DC-MF108", f"column {name} default {before.default!r} -> {after.default!r}", f"{field}.default"
        )
    if before.description != after.description:
        yield change("DC-DC605", f"column {name} description changed", f"{field}.description")
    if before.tags != after.tags or before.pii != after.pii:
        yield change("DC-DC604", f"column {name} tags or pii changed", f"{field}.tags")
    if after.deprecated is not None and before.deprecated is None:
        replaced = f" (replaced by {after.deprecated.replaced_by})" if after.deprecated.replaced_by else ""
        yield change(
            "DC-LC701",
            f"column {name} deprecated since {after.deprecated.since}{replaced}",
            f"{field}.deprecated",
        )
    yield from _checks(before.checks, after.checks, name, f"{field}.checks")


def _bound(kind: str, old: Bound | None, new: Bound | None, name: str, field: str) -> Iterator[Change]:
    if old == new:
        return
    where = f"{field}.{kind}"
    if old is None:
        yield change("DC-CK301", f"column {name}: {kind} {new} added", where)
    elif new is None:
        yield change("DC-CK302", f"column {name}: {kind} {old} removed", where)
    else:
        try:
            tighter = new > old if kind == "min" else new < old  # type: ignore[operator]
        except TypeError:  # bounds of different kinds (a number, then a date): assume the stricter
            tighter = True
        code = "DC-CK303" if tighter else "DC-CK304"
        verb = "tightened" if tighter else "loosened"
        yield change(code, f"column {name}: {kind} {verb} {old} -> {new}", where)


def _checks(old: Checks, new: Checks, name: str, field: str) -> Iterator[Change]:
    yield from _bound("min", old.min, new.min, name, field)
    yield from _bound("max", old.max, new.max, name, field)
    if old.enum != new.enum:
        where = f"{field}.enum"
        if old.enum is None:
            yield change("DC-CK301", f"column {name}: enum {plain(list(new.enum or ()))} added", where)
        elif new.enum is None:
            yield change("DC-CK302", f"column {name}: enum removed", where)
        else:
            added = [v for v in new.enum if v not in old.enum]
            removed = [v for v in old.enum if v not in new.enum]
            if removed:
                yield change("DC-CK306", f"column {name}: enum values {plain(removed)} removed", where)
            if added:
                yield change("DC-CK305", f"column {name}: enum values {plain(added)} added", where)
    if old.regex != new.regex:
        where = f"{field}.regex"
        if old.regex is None:
            yield change("DC-CK301", f"column {name}: regex {new.regex!r} added", where)
        elif new.regex is None:
            yield change("DC-CK302", f"column {name}: regex removed", where)
        else:
            yield change("DC-CK307", f"column {name}: regex {old.regex!r} -> {new.regex!r}", where)


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
        if prior is None:
            yield change("DC-CK311", f"constraint {constraint.name} added: {constraint.expression}", field)
        elif not _same_expression(prior.expression, constraint.expression):
            yield change(
                "DC-CK313", f"constraint {constraint.name} changed to {constraint.expression}", field
            )
    for constraint in before.values():
        yield change("DC-CK312", f"constraint {constraint.name} removed", "constraints")


def _table(old: Contract, new: Contract) -> Iterator[Change]:
    a, b = old.table, new.table
    if [c.casefold() for c in a.partitioned_by] != [c.casefold() for c in b.partitioned_by]:
        yield change(
            "DC-TB401",
            f"partitioning {list(a.partitioned_by)} -> {list(b.partitioned_by)}",
            "table.partitioned_by",
        )
    if [c.casefold() for c in a.clustered_by] != [c.casefold() for c in b.clustered_by]:
        yield change(
            "DC-TB402", f"clustering {list(a.clustered_by)} -> {list(b.clustered_by)}", "table.clustered_by"
        )
    for key in sorted(set(a.properties) | set(b.properties)):
        if a.properties.get(key) != b.properties.get(key):
            yield change(
                "DC-TB403",
                f"property {key}: {a.properties.get(key)!r} -> {b.properties.get(key)!r}",
                f"table.properties.{key}",
            )
    if a.versioning != b.versioning:
        code = "DC-TB405" if b.versioning is Versioning.VERSIONED else "DC-TB404"
        yield change(code, f"versioning {a.versioning} -> {b.versioning}", "table.versioning")
    if a.comment != b.comment:
        yield change("DC-DC601", "table comment changed", "table.comment")


def _sla(
    kind: str, old: float | None, new: float | None, higher_is_tighter: bool, field: str
) -> Iterator[Change]:
    if old == new:
        return
    if old is None:
        yield change("DC-QA501", f"{kind} SLA added", field)
    elif new is None:
        yield change("DC-QA502", f"{kind} SLA removed", field)
    else:
        tighter = (new > old) if higher_is_tighter else (new < old)
        code = "DC-QA501" if tighter else "DC-QA502"
        yield change(code, f"{kind} SLA {'tightened' if tighter else 'loosened'}", field)


def _quality(old: Contract, new: Contract) -> Iterator[Change]:
    a, b = old.quality, new.quality
    fa = duration_seconds(a.freshness.max_age) if a.freshness else None
    fb = duration_seconds(b.freshness.max_age) if b.freshness else None
    yield from _sla("freshness", fa, fb, False, "quality.freshness")
    if a.freshness and b.freshness and a.freshness.column != b.freshness.column and fa == fb:
        yield change("DC-QA502", "freshness measured on another column", "quality.freshness.column")
    yield from _sla(
        "volume min_rows",
        a.volume.min_rows if a.volume else None,
        b.volume.min_rows if b.volume else None,
        True,
        "quality.volume.min_rows",
    )
    yield from _sla(
        "volume max_rows",
        a.volume.max_rows if a.volume else None,
        b.volume.max_rows if b.volume else None,
        False,
        "quality.volume.max_rows",
    )
    ca = {c.column.casefold(): c.min_ratio for c in a.completeness}
    cb = {c.column.casefold(): c.min_ratio for c in b.completeness}
    for column in sorted(set(ca) | set(cb)):
        yield from _sla(
            f"completeness of {column}", ca.get(column), cb.get(column), True, "quality.completeness"
        )
    if {tuple(k.casefold() for k in u) for u in a.unique} != {
        tuple(k.casefold() for k in u) for u in b.unique
    }:
        yield change(
            "DC-QA503",
            f"unique keys {[list(u) for u in a.unique]} -> {[list(u) for u in b.unique]}",
            "quality.unique",
        )
