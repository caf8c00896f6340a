"""The in-place recipes: expand → populate → cutover → contract on the same Delta table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from delta_contracts.contract.model import Column, Contract
from delta_contracts.diff.compare import Comparison
from delta_contracts.marks import DEPRECATED_COLUMNS, column_mark_key, marked_columns
from delta_contracts.plan.building import (
    COLUMN_DEFAULTS,
    COLUMN_MAPPING,
    MAPPING_PROTOCOL,
    NOT_KEPT,
    TIMESTAMP_NTZ,
    TYPE_WIDENING,
    Builder,
    TableState,
    alias_columns,
    alias_view,
    column_spec,
    converted,
    default_sql,
    gate_for,
    stamp_op,
)
from delta_contracts.plan.catch_up import CHANGE_DATA_FEED
from delta_contracts.plan.change_set import ChangeSet, read_changes
from delta_contracts.plan.in_place_columns import (
    Placement,
    added_column,
    contract_index,
    enable_timestamp_ntz,
    kept_column,
    placement,
)
from delta_contracts.plan.in_place_fields import FieldPlan, plan_fields
from delta_contracts.plan.in_place_rules import (
    RulePlan,
    checks_reading,
    new_rules,
    old_rules,
    renamed_not_null,
    renamed_values,
)
from delta_contracts.plan.ops import (
    AddColumn,
    Backfill,
    CloseColumn,
    DropCheck,
    DropColumns,
    DropFeature,
    LastCatchUp,
    MarkDeprecated,
    Migration,
    Op,
    Phase,
    SetClustering,
    SetColumnDefault,
    SetProperties,
    SetTableComment,
    UnlistDeprecated,
)
from delta_contracts.plan.purge import PurgeDroppedColumns
from delta_contracts.plan.recluster import recluster_for
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

# What `delta.enableTypeWidening` adds to the protocol on Delta 4, and on Delta 3.2/3.3 (TableFeature.scala).
TYPE_WIDENING_FEATURE, TYPE_WIDENING_PREVIEW = "typeWidening", "typeWidening-preview"


@dataclass
class _Context:
    """What every aspect of an in-place plan shares: the builder, the physical table, the target and the
    table properties as they will be (so a feature is enabled once, and only when it is off)."""

    b: Builder
    t: TableId
    target: Target
    props: dict[str, str]
    # renamed columns whose default is set only after the old column is dropped (`_renamed_column`)
    defaults_after_drop: list[Column] = field(default_factory=list)

    def enable(self, prop: tuple[str, str], why: str) -> None:
        if self.props.get(prop[0]) == prop[1]:
            return  # already on: no op, and nothing to warn about
        if prop == COLUMN_DEFAULTS:
            self.b.warn(
                f"{self.t}: column defaults need the allowColumnDefaults feature "
                "(an irreversible protocol upgrade)"
            )
        if prop == TIMESTAMP_NTZ:
            self.b.warn(
                f"{self.t}: TIMESTAMP_NTZ needs the timestampNtz table feature (an irreversible protocol "
                "upgrade: reader 3, writer 7; readers without the feature cannot read the table)"
            )
        if prop == COLUMN_MAPPING:
            self.b.warn(
                f"{self.t}: enabling column mapping upgrades the table protocol irreversibly "
                "(reader 2, writer 5)"
            )
        extra = MAPPING_PROTOCOL if prop == COLUMN_MAPPING else ()
        self.b.add(SetProperties(table=self.t, phase=Phase.EXPAND, properties=(prop, *extra), reason=why))
        self.props[prop[0]] = prop[1]


def plan_in_place(comparison: Comparison, state: TableState) -> tuple[Migration, TableState]:
    """Each aspect in turn — table layout, rules, columns, deprecation, the contract phase — in the manner of
    Alembic's comparators; the phase of each op, not the order of the aspects, orders the migration. Every
    op follows from a change `diff` reported (`read_changes`): the contracts are not compared again."""
    old, new, target = comparison.old, comparison.new, comparison.target
    changes = read_changes(comparison)
    ctx = _Context(Builder(new.table_parts), state.physical, target, dict(state.properties))
    b, t = ctx.b, ctx.t
    going = list(changes.going)
    if going:
        ctx.enable(COLUMN_MAPPING, "DROP COLUMN needs column mapping")
        b.warn(
            f"{t}: streaming readers of a column-mapped table continue past the drop only with "
            "the reader option schemaTrackingLocation (under their checkpoint) and, on their session, "
            "spark.databricks.delta.streaming.allowSourceColumnDrop=always (allowSourceColumnRenameAndDrop "
            "for a rename by Delta); restart them after each schema change"
        )
    widened = changes.widened
    widening_off = _turns_type_widening_off(ctx, changes, bool(widened))
    _table_layout(ctx, changes, held_back=frozenset({TYPE_WIDENING[0]}) if widening_off else frozenset())
    rules = old_rules(b, t, changes, going)
    standing = checks_reading(old, target)
    for kept in changes.kept:
        kept_column(b, t, kept, target, ctx.enable, standing.get(kept.before.name.casefold(), ()))
    copies = {
        before.name.casefold(): (after.name, converted(before.name, before.type, after.type))
        for before, after in changes.renamed
    }
    # In the contract's order, so that the column each is placed after is in the table when it is added.
    arriving = [(added, None) for added in changes.added] + [(a, b4) for b4, a in changes.renamed]
    for column, renamed_from in sorted(arriving, key=lambda pair: contract_index(new, pair[0].name)):
        place = placement(new, column.name)
        if renamed_from is None:
            added_column(b, t, column, target, ctx.enable, place)
        else:
            _renamed_column(ctx, renamed_from, column, place, copies, rules)
    renamed = frozenset(before.name.casefold() for before, _ in changes.renamed)
    fields = plan_fields(b, t, new, changes.fields, renamed, target, ctx.enable, standing)
    _clustering(ctx, changes)
    _change_feed_warnings(ctx, old, going, bool(changes.renamed))
    new_rules(b, t, changes, renamed_values(changes, copies), rules)
    _deprecation_marks(ctx, changes, new, going, fields)
    for op in rules.relax:
        b.add(op)
    recluster = recluster_for(t, changes.clustering.clustered_by) if changes.clustering else None
    if recluster is not None:
        b.add(recluster)
    b.add(stamp_op(t, new))
    if widening_off:
        _type_widening_off(ctx, changes)
    _contract_phase(ctx, new, going, copies, rules.final)
    for name, drop in fields.drops:
        b.add(drop)
        _unlist_dropped(ctx, name, new.version)
    for column in ctx.defaults_after_drop:
        b.add(
            SetColumnDefault(
                table=t,
                phase=Phase.CONTRACT,
                column=column.name,
                default=default_sql(column) or "",
                reason="renamed column's default, once old producers cannot write",
            )
        )
    if t != new.table_parts:
        _repoint_alias(b, new, t, [c.name for c in going], target)
    _cost_warnings(ctx)
    after_state = TableState(t, tuple(sorted(ctx.props.items())))
    migration = Migration(
        new.table_parts, old.version, new.version, "in_place", b.all_ops(), tuple(b.warnings), tuple(b.notes)
    )
    return migration, after_state


def _table_layout(ctx: _Context, changes: ChangeSet, held_back: frozenset[str]) -> None:
    """Properties (DC-TB403) and the description (DC-DC601) as diff found them changed: metadata-only, in
    expand. `held_back`: properties a later phase sets."""
    b, t = ctx.b, ctx.t
    changed_props = tuple(
        (key, value) for key, _, value in changes.properties if value is not None and key not in held_back
    )
    if changed_props:
        b.add(
            SetProperties(table=t, phase=Phase.EXPAND, properties=changed_props, reason="contract properties")
        )
        ctx.props.update(changed_props)
    for key, _, value in changes.properties:
        if value is None and key not in held_back:
            b.warn(f"{t}: property {key} left the contract but stays on the table (unset it by hand)")
    if changes.description:
        b.add(
            SetTableComment(
                table=t, phase=Phase.EXPAND, comment=changes.description, reason="table description"
            )
        )


def _clustering(ctx: _Context, changes: ChangeSet) -> None:
    """New clustering keys (DC-TB402), once every column they name exists (Delta refuses CLUSTER BY on a
    column the table lacks, DELTA_COLUMN_NOT_FOUND_IN_SCHEMA): after the expand phase's ADD COLUMNS."""
    b, t = ctx.b, ctx.t
    if changes.clustering is None:
        return
    b.add(
        SetClustering(
            table=t, phase=Phase.EXPAND, columns=changes.clustering.clustered_by, reason="clustering keys"
        )
    )
    if ctx.target is Target.DELTA_3:
        b.warn(
            f"{t}: ALTER TABLE … CLUSTER BY needs Delta 3.2+ and OPTIMIZE … FULL 3.3+ on the delta-3 target"
        )


def _change_feed_warnings(ctx: _Context, old: Contract, going: list[Column], renamed: bool) -> None:
    """What a rename or drop in place does to the table's Change Data Feed consumers."""
    on = {**old.table.properties, **ctx.props}.get(CHANGE_DATA_FEED, "false").lower() == "true"
    if not on or not going:
        return
    ctx.b.warn(
        f"{ctx.t}: {NOT_KEPT}a Change Data Feed range across the drop: consumers (table_changes, "
        "readChangeFeed) fail on a range that spans a column's drop "
        "(DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE); read up to the version before it, then on "
        "from the drop's version"
    )
    if renamed:
        ctx.b.warn(
            f"{ctx.t}: the rename's backfill (UPDATE) writes an update_preimage and an update_postimage of "
            "every row into the Change Data Feed"
        )


def _renamed_column(
    ctx: _Context,
    before: Column,
    after: Column,
    place: Placement,
    copies: Mapping[str, tuple[str, str]],
    rules: RulePlan,
) -> None:
    """A rename in place: add the new column, copy, catch up at cutover; the old one is dropped later."""
    b, t = ctx.b, ctx.t
    enable_timestamp_ntz(before.type, after.type, ctx.enable)
    b.add(
        AddColumn(
            table=t,
            phase=Phase.EXPAND,
            column=column_spec(after),
            reason=f"rename {before.name}",
            after=place.after,
            first=place.first,
        )
    )
    if default_sql(after) is not None:
        # Not before the old column is dropped: an old producer's row would get the default in the new
        # column, and the catch-up (`WHERE new IS NULL`) would then never copy the value it wrote.
        ctx.enable(COLUMN_DEFAULTS, "column defaults")
        ctx.defaults_after_drop.append(after)
    fill = Backfill(
        table=t,
        phase=Phase.POPULATE,
        column=after.name,
        expression=converted(before.name, before.type, after.type),
        reason=f"copy {before.name}",
    )
    b.add(fill)
    b.add(
        replace(fill, phase=Phase.CUTOVER, reason=f"catch rows written to {before.name} only since populate")
    )
    if not after.nullable:
        copy = copies[before.name.casefold()][1]
        renamed_not_null(b, t, before, after, copy, ctx.target, rules)


def _deprecation_marks(
    ctx: _Context, changes: ChangeSet, new: Contract, going: list[Column], fields: FieldPlan
) -> None:
    """Marks accumulate: columns marked by earlier migrations (and maybe still awaiting their drop) stay
    marked with their own since and window; only the newly marked (going, or DC-LC701) get a mark, starting
    their own clock. The mark lists every column the new contract deprecates, and every field (`addr.zip`)
    on its way out or deprecated."""
    # A column's own mark outlives its drop (it is history: when its window started); the list loses a column
    # when its drop runs (`_unlist_dropped`), and a column removed from the contract stays listed until then,
    # even across later migrations while its drop waits at its gate.
    still_marked = marked_columns(ctx.props)
    earlier = {n.casefold() for n in still_marked}
    newly = (
        {c.name for c in going if c.deprecated is None and c.name.casefold() not in earlier}
        | {c.name for c in changes.newly_deprecated if c.name.casefold() not in earlier}
        | {name for name in fields.newly_marked if name.casefold() not in earlier}
    )
    if not newly:
        return
    deprecated = sorted(
        {
            *still_marked,
            *(c.name for c in going),
            *(c.name for c in new.columns if c.deprecated),
            *fields.listed,
        },
        key=str.casefold,
    )
    mark = MarkDeprecated.of(
        ctx.t,
        columns=tuple(deprecated),
        newly=tuple(newly),
        window=new.evolution.deprecation_window,
        since=new.version,
        reason="deprecation mark starts the window",
    )
    ctx.b.add(mark)
    ctx.props.update(mark.properties)


def _turns_type_widening_off(ctx: _Context, changes: ChangeSet, widens: bool) -> bool:
    """Whether the contract turns type widening off (its property 'false', or gone after 'true', DC-TB403) on
    a table that has the feature, or gets it for a widening of this same migration: then the contract phase
    turns it off, after every widening (`_type_widening_off`)."""
    key, on = TYPE_WIDENING
    changed = changes.property_change(key)
    if changed is None:
        return False
    before, wanted = changed
    turned_off = (wanted == "false" and before != "false") or (wanted is None and before == on)
    if not turned_off or not (ctx.props.get(key) == on or widens):
        return False
    # Delta 3.3 cannot unset it by dropping the feature (below): a property gone stays on the table, as any.
    return ctx.target is not Target.DELTA_3 or wanted is not None


def _type_widening_off(ctx: _Context, changes: ChangeSet) -> None:
    """DROP FEATURE gives readers without the feature (Delta before 3.3, delta-rs) the table back; on Delta 4
    with no TRUNCATE HISTORY nor wait (checkpoint protection). It unsets the property: a contract's 'false'
    is set again after it (which does not bring the feature back, measured on Delta 4.4). Delta 3.3 drops a
    feature only after the log retention or a day and TRUNCATE HISTORY (measured): there the feature stays."""
    key = TYPE_WIDENING[0]
    if ctx.target is Target.DELTA_3:
        ctx.b.warn(
            f"{ctx.t}: type widening is off, but the {TYPE_WIDENING_PREVIEW} feature stays in "
            "the protocol: Delta 3.3 drops a feature only after the log retention (or 24 hours and TRUNCATE "
            "HISTORY); plan for delta-4 to drop it"
        )
    else:
        why = "type widening turned off: readers without the feature can read the table again"
        ctx.b.add(DropFeature(table=ctx.t, phase=Phase.CONTRACT, feature=TYPE_WIDENING_FEATURE, reason=why))
        ctx.b.warn(  # measured: delta-rs 1.6.6 and Sail 0.7.2 refuse to commit ("Unsupported table features")
            f"{ctx.t}: the drop adds the checkpointProtection writer feature: writers without it (delta-rs, "
            "the local engine) can no longer write the table; only DROP FEATURE checkpointProtection "
            "TRUNCATE HISTORY, after the log retention, removes it (and the history before)"
        )
    changed = changes.property_change(key)
    wanted = changed[1] if changed is not None else None
    if wanted is None:
        ctx.props.pop(key, None)
        return
    ctx.b.add(
        SetProperties(
            table=ctx.t, phase=Phase.CONTRACT, properties=((key, wanted),), reason="contract properties"
        )
    )
    ctx.props[key] = wanted


def _contract_phase(
    ctx: _Context,
    new: Contract,
    going: list[Column],
    copies: Mapping[str, tuple[str, str]],
    final_rules: Mapping[str, list[Op]],
) -> None:
    """One drop per column, each waiting for its own mark's window. A renamed column's drop comes after a
    last catch-up under the same gate: an old producer may still write only the old column after the
    cutover, and the drop would lose those values. Then a CHECK closes the old column to values the new one
    lacks (Delta checks every row as it adds it, and every commit after), so no such row can land between
    that check and the drop; the drop runs while the CHECK stands, and the CHECK is dropped right after.
    The rules over the new column take their final form between that CHECK and the drop (`in_place_rules`)."""
    for column in going:
        gate = gate_for(new, [f"{new.id}.{column.name}"], column_mark_key(column.name))
        copy = copies.get(column.name.casefold())
        closing = f"dc_{column.name}_closed"
        if copy is not None:
            ctx.b.add(
                LastCatchUp(
                    table=ctx.t,
                    phase=Phase.CONTRACT,
                    column=copy[0],
                    expression=copy[1],
                    gate=gate,
                    reason=f"rows written to {column.name} only since the cutover",
                )
            )
            ctx.b.add(
                CloseColumn(
                    table=ctx.t,
                    phase=Phase.CONTRACT,
                    name=closing,
                    expression=x.closed_to(*copy),
                    gate=gate,
                    reason=f"no row with a value only in {column.name} can land before the drop",
                )
            )
        # The rules over the renamed column in their final form once no old-shape row can land, each
        # before its both-shapes bridge goes; so the old column is dropped with no bridge reading it.
        for op in final_rules.get(column.name.casefold(), ()):
            ctx.b.add(op)
        ctx.b.add(
            DropColumns(
                table=ctx.t,
                phase=Phase.CONTRACT,
                columns=(column.name,),
                gate=gate,
                copies=(copy,) if copy is not None else (),
                closed_by=(closing,) if copy is not None else (),
                reason="column removed or renamed in the contract",
            )
        )
        if copy is not None:
            ctx.b.add(
                DropCheck(
                    table=ctx.t,
                    phase=Phase.CONTRACT,
                    name=closing,
                    reason=f"the check that closed {column.name}, which is gone",
                )
            )
        _unlist_dropped(ctx, column.name, new.version)
    if going:
        dropped = tuple(column.name for column in going)
        why = "a column drop leaves the column's values in the data files"
        ctx.b.add(PurgeDroppedColumns(table=ctx.t, phase=Phase.CONTRACT, columns=dropped, reason=why))


def _unlist_dropped(ctx: _Context, dropped: str, version: str) -> None:
    """The deprecation list (`delta_contracts.deprecated.columns`) without a column just dropped: readers of
    the marks (telemetry, the site, adopt, drift) take a listed column for one still on its way out."""
    listed = ctx.props.get(DEPRECATED_COLUMNS)
    try:
        names = json.loads(listed) if listed else []
    except ValueError:
        return
    if not isinstance(names, list) or dropped.casefold() not in {str(n).casefold() for n in names}:
        return
    left = json.dumps([str(n) for n in names if str(n).casefold() != dropped.casefold()], ensure_ascii=False)
    ctx.b.add(
        UnlistDeprecated(
            table=ctx.t,
            phase=Phase.CONTRACT,
            column=dropped,
            version=version,
            properties=((DEPRECATED_COLUMNS, left),),
            reason=f"the deprecation list without {dropped}, which is gone",
        )
    )
    ctx.props[DEPRECATED_COLUMNS] = left


def _cost_warnings(ctx: _Context) -> None:
    ops = ctx.b.all_ops()
    if any(op.changes_columns for op in ops):
        ctx.b.warn(f"{ctx.t}: streaming readers stop at a schema change; restart them after apply")
    if any(op.fills() is not None for op in ops):
        ctx.b.warn(f"{ctx.t}: backfill UPDATEs rewrite every file holding a touched row: O(table)")
        ctx.b.warn(
            f"{ctx.t}: streaming readers need the reader option skipChangeCommits=true: a Delta "
            "stream refuses the rows the backfill UPDATEs rewrite"
        )


def _repoint_alias(b: Builder, new: Contract, t: TableId, going: list[str], target: Target) -> None:
    """A versioned table changed in place: its alias view is re-created in the phase that changes the
    table's columns, since Spark froze the view's columns and types when it was created: new columns, fields
    and types in expand, renamed fields at cutover, dropped columns and fields in the contract phase. Columns
    on their way out stay visible until the contract phase drops them (a renamed column's old one is no
    column of the view)."""
    final = alias_columns(new)
    during = (*final, *((name, x.sql(x.column(name))) for name in going))
    alter = target.supports_alter_view_as
    if any(op.changes_columns or op.changes_fields for op in b.ops[Phase.EXPAND]):
        b.add(
            alias_view(
                new,
                t,
                Phase.EXPAND,
                columns=during,
                superseded_by=final if going else (),
                alter_existing=alter,
                reason="the alias view shows the new columns and types",
            )
        )
    if any(op.changes_fields for op in b.ops[Phase.CUTOVER]):
        b.add(
            alias_view(new, t, Phase.CUTOVER, alter_existing=alter, reason="the alias view's renamed fields")
        )
    if going or any(op.changes_fields for op in b.ops[Phase.CONTRACT]):
        b.add(
            alias_view(
                new, t, Phase.CONTRACT, alter_existing=alter, reason="the alias view without dropped columns"
            )
        )
        b.warn(
            f"{new.table_parts}: between the column drop and the view's re-creation the alias "
            "view briefly fails to resolve"
        )
