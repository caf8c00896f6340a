"""The versioned recipes: a new `<table>__v<major>` behind the alias view, and table creation."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from sqlglot import exp

from delta_contracts.contract.model import Contract, IdentityGeneration, Versioning
from delta_contracts.contract.pairing import ColumnPairing
from delta_contracts.contract.types import canonical, lossless_cast
from delta_contracts.diff.compare import Comparison
from delta_contracts.marks import DEPRECATED_TABLE
from delta_contracts.plan.building import (
    NOT_KEPT,
    Builder,
    FeatureLossError,
    PlanError,
    TableState,
    alias_view,
    converted,
    create_ops,
    create_properties,
    default_sql,
    gate_for,
    initial_state,
    refuse_uncreatable_columns,
    stamp_op,
    versioned_name,
)
from delta_contracts.plan.catch_up import (
    CHANGE_DATA_FEED,
    choose_catch_up,
    left_behind,
)
from delta_contracts.plan.fence import fence_catch_up
from delta_contracts.plan.fields import field_copy
from delta_contracts.plan.ops import (
    CopyRows,
    CreateView,
    DropTable,
    MarkDeprecated,
    Migration,
    Phase,
    RenameTable,
    SetClustering,
    SetProperties,
    SyncIdentity,
    violation_predicate,
)
from delta_contracts.plan.rules import contract_rules
from delta_contracts.plan.table_limits import append_only_property
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

ROW_TRACKING = "delta.enableRowTracking"


def plan_create(new: Contract, target: Target) -> tuple[Migration, TableState]:
    refuse_uncreatable_columns(new, target)
    b = Builder(new.table_parts)
    state = initial_state(new)
    for op in create_ops(new, state.physical, Phase.EXPAND):
        b.add(op)
    if new.table.versioning is Versioning.VERSIONED:
        b.add(alias_view(new, state.physical, Phase.CUTOVER, reason="alias view"))
        b.notes.append(f"versioned: data in {state.physical}, read through the view {new.id}")
    b.add(stamp_op(state.physical, new))
    state = TableState(state.physical, create_properties(new))
    migration = Migration(
        new.table_parts, None, new.version, new.table.versioning.value, b.all_ops(), (), tuple(b.notes)
    )
    return migration, state


def plan_versioned(
    comparison: Comparison, state: TableState, reasons: list[str]
) -> tuple[Migration, TableState]:
    old, new, target, pairing = comparison.old, comparison.new, comparison.target, comparison.pairing
    alias = new.table_parts
    old_physical = state.physical
    new_physical = versioned_name(new)
    refuse_uncreatable_columns(new, target)
    b = Builder(alias)
    for reason in reasons:
        b.notes.append(f"versioned table {new_physical}: {reason}")
    # An append-only table refuses the copy's INSERT OVERWRITE and the catch-ups' MERGE updates: the new
    # table is created without the property, which is set once the fence has written it.
    append_only = append_only_property(dict(create_properties(new)))
    for op in create_ops(new, new_physical, Phase.EXPAND, withheld=tuple(k for k, _ in append_only)):
        b.add(op)
    mapping = copy_mapping(pairing, new)
    identities = _copied_identities(pairing, new)
    checks = copy_checks(pairing, new, mapping)
    copy = CopyRows(
        table=new_physical,
        phase=Phase.POPULATE,
        source=old_physical,
        mapping=mapping,
        rejects=checks.rejects,
        reasons=checks.reasons,
        lossy=checks.lossy,
        reason="copy rows",
    )
    copy = by_source_partitions(copy, old)
    catch_up = choose_catch_up(copy, new, state.properties)
    b.add(replace(copy, rejects=catch_up.copy_rejects, reasons=catch_up.copy_reasons))
    for column in identities:
        b.add(SyncIdentity(table=new_physical, phase=Phase.POPULATE, column=column, reason="after the copy"))
    b.add(catch_up.op)
    if catch_up.warning is not None:
        b.warn(catch_up.warning)
    if catch_up.note is not None:
        b.notes.append(catch_up.note)
    # The cutover's order is what keeps every change a producer commits (docs/migrations.md, "Writers during
    # a migration"): the runner holds producers off the old table from the catch-up to the stamp
    # (`apply.schedule.held_runs`), so the catch-up makes the new table equal to the old one; the alias view
    # then moves to the new table (the old one renamed away first when the alias takes its name), and only
    # then is the new table stamped, telling producers to switch. So every cell before the stamp runs while
    # producers write only the old table, and a catch-up run again by hand is refused by its guard (the alias
    # reads another table) before it could delete a producer's row from the new one. The old table is then
    # closed to producers (the deprecation mark, a metadata commit, fails every write still in flight on it)
    # and the fence carries what a producer that did not wait wrote to it meanwhile.
    retired = old_physical
    if old_physical == alias:
        retired = versioned_name(old)
        b.add(
            RenameTable(
                table=alias, phase=Phase.CUTOVER, new_name=retired, reason="free the name for the alias view"
            )
        )
        b.warn(f"{alias}: between the rename and the view swap the name is briefly missing")
    alter = target.supports_alter_view_as and old_physical != alias
    b.add(alias_view(new, new_physical, Phase.CUTOVER, alter_existing=alter, reason="swap the alias view"))
    b.add(stamp_op(new_physical, new))
    if old_physical == alias:
        b.warn(
            f"{alias}: after cutover the name is a view: producers must write to "
            f"{new_physical}; writes to {alias} fail, it is no table any more"
        )
    else:
        b.warn(f"{alias}: after cutover producers must write to {new_physical}, not to {old_physical}")
    b.warn(
        f"{alias}: a streaming reader reads a table, not the view: after cutover start it anew "
        f"on {new_physical} (a new checkpoint)"
    )
    if not alter:
        b.warn(f"{alias}: CREATE OR REPLACE VIEW drops the view's grants on Unity Catalog; re-grant")
    b.add(
        MarkDeprecated.of(retired, whole_table=True, since=new.version, reason="old version on its way out")
    )
    maps = [c.name for c in new.columns if "map<" in c.type.replace(" ", "").lower()]
    fence = fence_catch_up(catch_up.op, retired, catch_up.key, maps=tuple(maps))
    if not fence.key and maps:
        # Without a key the fence copies the old rows the new table lacks by EXCEPT ALL over whole rows,
        # which Spark refuses over a map (UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE, delta-spark 4.4).
        raise FeatureLossError(
            f"{new.id}: the versioned cutover's last catch-up compares whole rows, and Spark compares no map "
            f"column ({', '.join(maps)}); declare a unique key (`quality.unique`) to catch up by"
        )
    b.add(fence)
    for column in identities:
        b.add(SyncIdentity(table=new_physical, phase=Phase.CUTOVER, column=column, reason="after the fence"))
        b.warn(
            f"{new_physical}: identity {column} is synced above the copied values after the fence; a row a "
            "producer inserts into it before then without an id may get one the old table also gave"
        )
    if new.table.clustered_by:
        # INSERT OVERWRITE (the copy; a re-copy at cutover) resets the `delta.clustering` domain to no
        # columns: the keys are declared again once no overwrite follows.
        b.add(
            SetClustering(
                table=new_physical,
                phase=Phase.CUTOVER,
                columns=new.table.clustered_by,
                reason="clustering keys again after the copy",
            )
        )
    if append_only:
        b.add(
            SetProperties(
                table=new_physical,
                phase=Phase.CUTOVER,
                properties=append_only,
                reason="append-only once the copy and the fence have written it",
            )
        )
    _feature_warnings(b, old, new, state, new_physical)
    b.add(
        DropTable(
            table=retired,
            phase=Phase.CONTRACT,
            gate=gate_for(new, [str(retired)], DEPRECATED_TABLE),
            left_behind=left_behind(retired, new_physical, fence.mapping, fence.key),
            reason="old version, after the window",
        )
    )
    compat = _compat_columns(pairing, old)
    if compat is None:
        b.notes.append(
            f"{retired} gets no compatibility view: not every {old.version} column can be "
            "computed from the new table (removed, or converted without an `inverse`)"
        )
    else:
        b.add(
            CreateView(
                table=retired,
                phase=Phase.CONTRACT,
                source=new_physical,
                columns=compat,
                reason="old shape over the new table",
            )
        )
        b.notes.append(f"{retired} becomes a compatibility view in the {old.version} shape after the drop")
    after_state = TableState(new_physical, create_properties(new))
    migration = Migration(
        alias, old.version, new.version, "versioned", b.all_ops(), tuple(b.warnings), tuple(b.notes)
    )
    return migration, after_state


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyConvertedPartitions(CopyRows):
    """The versioned copy of a table whose partition column reaches the new table converted (retyped with a
    CAST or its `convert`, or computed from partition columns): the copy's statement, run in batches of the
    source's partitions (`engine.row_moves.CopyConvertedPartitionsInBatches`) instead of ranges of a key,
    each batch reading only its partitions. The batches are found in the new table by the converted values
    of their partitions."""

    kind: ClassVar[str] = "copy_converted_partitions"
    partitioned_by: tuple[str, ...]  # the source's partition columns the batches follow

    def summary(self) -> str:
        return (
            f"copy rows {self.source} -> {self.table} by partitions of {', '.join(self.partitioned_by)} "
            "(converted)"
        )


def by_source_partitions(copy: CopyRows, old: Contract) -> CopyRows:
    """The copy batched by the old table's partitions when one of them reaches the new table converted: a
    copy batches by partitions only when every partition column is carried over as it is, else by ranges of
    an integral column, each batch then reading the whole source and writing into every partition of the
    new table (or, with no such column, in one statement)."""
    partitions = {c.casefold() for c in old.table.partitioned_by}
    if not partitions:
        return copy
    plain = set()
    from_partitions = False
    for _, expression in copy.mapping:
        parsed = x.parse(expression)
        if isinstance(parsed, exp.Column) and not parsed.table:
            plain.add(parsed.name.casefold())
        read = x.referenced_columns(expression)
        from_partitions = from_partitions or bool(read and read <= partitions)
    if partitions <= plain or not from_partitions:
        return copy
    return CopyConvertedPartitions(
        table=copy.table,
        phase=copy.phase,
        source=copy.source,
        mapping=copy.mapping,
        rejects=copy.rejects,
        reasons=copy.reasons,
        lossy=copy.lossy,
        reason=copy.reason,
        partitioned_by=old.table.partitioned_by,
    )


def _copied_identities(pairing: ColumnPairing, new: Contract) -> tuple[str, ...]:
    """The new table's identity columns the copy gives values (their ids are kept), refusing where Delta
    cannot take them: a GENERATED ALWAYS identity refuses every given value."""
    copied = []
    for before, after in pairing.matched:
        if after.identity is None:
            continue
        if after.identity.generated is IdentityGeneration.ALWAYS:
            raise FeatureLossError(
                f"{new.id}: column {after.name} is GENERATED ALWAYS AS IDENTITY: Delta refuses given values "
                "for it (DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED), so a copy into a new "
                f"versioned table would renumber every row of {before.name}. Declare "
                "`identity: {generated: by_default}` for the new version (the ids are copied and new rows "
                "still get the next one), or make the change in place"
            )
        copied.append(after.name)
    return tuple(copied)


def _feature_warnings(
    b: Builder, old: Contract, new: Contract, state: TableState, new_physical: TableId
) -> None:
    """What no copy into a new table keeps, said in the plan."""
    props = {**dict(state.properties), **old.table.properties}
    if props.get(CHANGE_DATA_FEED, "false").lower() == "true":
        b.warn(
            f"{new.id}: {NOT_KEPT}a Change Data Feed consumer's position: consumers (table_changes, "
            f"readChangeFeed) read a table, not the alias view; after cutover read the feed of "
            f"{new_physical} (the copy is its first insert); the old table's feed ends at the cutover"
        )
    if props.get(ROW_TRACKING, "false").lower() == "true":
        b.warn(
            f"{new.id}: {NOT_KEPT}row ids and row commit versions: {new_physical} gives every row a new "
            "_metadata.row_id and _metadata.row_commit_version; consumers keyed on them must re-read"
        )


def copy_mapping(pairing: ColumnPairing, new: Contract) -> tuple[tuple[str, str], ...]:
    """Each new column as an expression over the old table: the column, a lossless CAST, the contract's
    conversion, its default or fill, or NULL for a nullable column; anything else is refused. Columns Delta
    computes itself are left out: a generated column, and an identity column the old table lacked."""
    sources = {after.name: before for before, after in pairing.matched}
    mapping = []
    for column in new.columns:
        to_type = canonical(column.type)
        before = sources.get(column.name)
        if column.generated is not None or (column.identity is not None and before is None):
            continue
        reshape = field_copy(before, column) if before is not None and column.convert is None else None
        if before is not None and lossless_cast(before.type, column.type):
            mapping.append((column.name, converted(before.name, before.type, column.type)))
        elif reshape is not None:
            mapping.append((column.name, reshape))
        elif before is not None:
            if column.convert is None:
                raise PlanError(
                    f"{new.id}: column {column.name}: {canonical(before.type)} -> {to_type} can lose values "
                    "(a CAST that overflows wraps or turns NULL, depending on the session's ANSI mode); "
                    "declare `convert: {expression: <SQL over the previous columns>, inverse: <SQL back, "
                    "optional>}` on the column"
                )
            message = (
                f"{new.id}: column {column.name}: the conversion to {to_type} loses a value (overflow or "
                "no such value); nothing was copied"
            )
            mapping.append((column.name, x.refusing_loss(column.convert.expression, to_type, message)))
        elif (default := default_sql(column)) is not None:
            mapping.append((column.name, x.cast_text(default, to_type)))
        elif column.fill is not None:
            mapping.append((column.name, x.cast_text(column.fill, to_type)))
        elif column.nullable:
            mapping.append((column.name, x.sql(x.cast(x.literal(None), to_type))))
        else:
            raise PlanError(
                f"{new.id}: column {column.name} is NOT NULL with no default and no source: declare "
                "`fill: <SQL over the other columns>` to give existing rows a value"
            )
    return tuple(mapping)


@dataclass(frozen=True, slots=True)
class CopyChecks:
    """What the copy checks of the old rows, and what it counts."""

    rejects: str | None  # rows the copy must not meet (the pre-check): the OR of `reasons`
    reasons: tuple[tuple[str, str], ...]  # (what a row breaks, the predicate of the rows breaking it)
    lossy: tuple[tuple[str, str], ...]  # (column, rows whose value its declared lossy conversion changes)


def copy_checks(pairing: ColumnPairing, new: Contract, mapping: tuple[tuple[str, str], ...]) -> CopyChecks:
    """Rows of the old table the copy must not meet: a NULL bound for a NOT NULL column, a broken rule, or a
    value a conversion loses (NULL after it, or not given back by the `inverse` unless the conversion is
    declared `lossy`) — evaluated on the old rows, since the new table is still empty. Each with the words
    that name it when rows break it; and, of a `lossy` conversion, the rows whose value it changes."""
    values = {name: x.never_raising(value) for name, value in mapping}
    sources = {after.name: before for before, after in pairing.matched}
    found: list[str] = []  # the pre-check as it always read, one part per column
    reasons: list[tuple[str, str]] = []
    lossy: list[tuple[str, str]] = []
    for c in new.columns:
        before = sources.get(c.name)
        # NOT NULL holds already where a NOT NULL column is copied as it is (or widened).
        if c.nullable or (before is not None and not before.nullable and lossless_cast(before.type, c.type)):
            continue
        null = x.is_null_text(values[c.name])
        found.append(null)
        reasons.append((f"column {c.name} is NOT NULL, but the copy gives it NULL", null))
    for rule in contract_rules(new).values():
        broken = x.substitute_columns(violation_predicate(rule.expression), values)
        found.append(broken)
        reasons.append((f"rule {rule.name} ({rule.expression}) does not hold of the copied row", broken))
    for column in new.columns:
        before = sources.get(column.name)
        if before is None or column.convert is None or lossless_cast(before.type, column.type):
            continue
        convert, to_type = column.convert, canonical(column.type)
        attempt = values[column.name]
        used = sorted(x.referenced_columns(convert.expression))
        overflow = x.overflowed(used, attempt)
        reasons.append(
            (
                f"column {column.name}: the conversion to {to_type} gives NULL where the source is not NULL "
                "(overflow, or no such value): refused, lossy or not",
                overflow,
            )
        )
        single = len(used) == 1 and before.name.casefold() in used
        back = convert.inverse
        if back is None and convert.lossy:
            back = x.sql(x.column(column.name))  # a CAST back to the previous type says what changed
        if not single or back is None:
            found.append(overflow)
            continue
        round_trip = x.never_raising(
            x.substitute_columns(x.cast_text(back, canonical(before.type)), {**values, column.name: attempt})
        )
        changed = x.not_given_back(before.name, round_trip)
        if convert.lossy:
            found.append(overflow)
            lossy.append((column.name, changed))
            continue
        found.append(x.lost_in_conversion(overflow, changed))
        reasons.append(
            (
                f"column {column.name}: the inverse does not give back the original value (the conversion "
                f"to {to_type} changes it: lossy); declare `convert: {{lossy: true}}` on the column to copy "
                "such rows anyway, counted",
                changed,
            )
        )
    return CopyChecks(x.any_of(found), tuple(reasons), tuple(lossy))


def _compat_columns(pairing: ColumnPairing, old: Contract) -> tuple[tuple[str, str], ...] | None:
    """The old shape computed from the new table, or None when an old column has no source any more."""
    targets = {before.name: after for before, after in pairing.matched}
    columns = []
    for column in old.columns:
        after = targets.get(column.name)
        if after is None:
            return None
        if lossless_cast(column.type, after.type):
            columns.append((column.name, converted(after.name, after.type, column.type)))
        elif after.convert is not None and after.convert.inverse is not None:
            columns.append((column.name, x.cast_text(after.convert.inverse, canonical(column.type))))
        else:
            return None
    return tuple(columns)
