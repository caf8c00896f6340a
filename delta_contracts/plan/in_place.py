"""The in-place recipes: expand → populate → cutover → contract on the same Delta table."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.types import canonical, parse_type
from delta_contracts.diff.compare import Comparison
from delta_contracts.live import TableId
from delta_contracts.plan.building import (
    COLUMN_DEFAULTS,
    COLUMN_MAPPING,
    MAPPING_PROTOCOL,
    NOT_KEPT,
    TYPE_WIDENING,
    Builder,
    PlanError,
    TableState,
    add_check,
    alias_columns,
    alias_view,
    column_spec,
    converted,
    default_sql,
    gate_for,
    stamp_op,
)
from delta_contracts.plan.catch_up import CHANGE_DATA_FEED
from delta_contracts.plan.ops import (
    DEPRECATED_COLUMNS,
    AddColumn,
    Backfill,
    CloseColumn,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropFeature,
    DropNotNull,
    LastCatchUp,
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
    UnlistDeprecated,
    WidenType,
    column_mark_key,
    marked_columns,
)
from delta_contracts.plan.rules import contract_rules, not_null_rule
from delta_contracts.sql import expressions as x
from delta_contracts.target import NO_SET_NOT_NULL, Target

Enable = Callable[[tuple[str, str], str], None]

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
    Alembic's comparators; the phase of each op, not the order of the aspects, orders the migration."""
    old, new, target, pairing = comparison.old, comparison.new, comparison.target, comparison.pairing
    ctx = _Context(Builder(new.table_parts), state.physical, target, dict(state.properties))
    b, t = ctx.b, ctx.t
    going = [*pairing.removed, *(before for before, _ in pairing.renamed)]
    if going:
        ctx.enable(COLUMN_MAPPING, "DROP COLUMN needs column mapping")
        b.warn(
            f"{t}: streaming readers of a column-mapped table continue past the drop only with "
            "the reader option schemaTrackingLocation (under their checkpoint) and, on their session, "
            "spark.databricks.delta.streaming.allowSourceColumnDrop=always (allowSourceColumnRenameAndDrop "
            "for a rename by Delta); restart them after each schema change"
        )
    widened = {
        before.name.casefold(): canonical(after.type)
        for before, after in pairing.kept
        if parse_type(before.type) != parse_type(after.type)
    }
    widening_off = _turns_type_widening_off(ctx, old, new, bool(widened))
    _table_layout(ctx, comparison, held_back=frozenset({TYPE_WIDENING[0]}) if widening_off else frozenset())
    relax = _old_rules(ctx, old, new, going, widened)
    for before, after in pairing.kept:
        _kept_column(b, t, before, after, target, ctx.enable)
    for column in pairing.added:
        _added_column(b, t, column, target, ctx.enable)
    for before, after in pairing.renamed:
        _renamed_column(ctx, before, after)
    _clustering(ctx, comparison)
    _change_feed_warnings(ctx, old, going, bool(pairing.renamed))
    _new_rules(ctx, old, new, widened)
    _deprecation_marks(ctx, old, new, going)
    for op in relax:
        b.add(op)
    b.add(stamp_op(t, new))
    copies = {
        before.name.casefold(): (after.name, converted(before.name, before.type, after.type))
        for before, after in pairing.renamed
    }
    if widening_off:
        _type_widening_off(ctx, new)
    _contract_phase(ctx, new, going, copies)
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


def _table_layout(ctx: _Context, comparison: Comparison, held_back: frozenset[str]) -> None:
    """Properties, description and clustering keys, as the comparison found them changed: metadata-only, in
    expand. `held_back`: properties a later phase sets."""
    b, t, old, new = ctx.b, ctx.t, comparison.old, comparison.new
    changed_props = tuple(
        (k, v)
        for k, v in sorted(new.table.properties.items())
        if old.table.properties.get(k) != v and k not in held_back
    )
    if changed_props:
        b.add(
            SetProperties(table=t, phase=Phase.EXPAND, properties=changed_props, reason="contract properties")
        )
        ctx.props.update(changed_props)
    for key in sorted(set(old.table.properties) - set(new.table.properties) - held_back):
        b.warn(f"{t}: property {key} left the contract but stays on the table (unset it by hand)")
    described = any(c.field == "description" for c in comparison.having("DC-DC601"))
    if described and new.description:
        b.add(
            SetTableComment(table=t, phase=Phase.EXPAND, comment=new.description, reason="table description")
        )


def _clustering(ctx: _Context, comparison: Comparison) -> None:
    """New clustering keys, once every column they name exists (Delta refuses CLUSTER BY on a column the
    table lacks, DELTA_COLUMN_NOT_FOUND_IN_SCHEMA): emitted after the expand phase's ADD COLUMNS."""
    b, t, new = ctx.b, ctx.t, comparison.new
    if not comparison.having("DC-TB402"):
        return
    b.add(
        SetClustering(table=t, phase=Phase.EXPAND, columns=new.table.clustered_by, reason="clustering keys")
    )
    if ctx.target is Target.DELTA_3:
        b.warn(f"{t}: ALTER TABLE … CLUSTER BY needs Delta 3.2+ on the delta-3 target")
    b.warn(f"{t}: new clustering keys apply to new writes; OPTIMIZE reclusters existing files")


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


def _old_rules(
    ctx: _Context, old: Contract, new: Contract, going: list[Column], widened: Mapping[str, str]
) -> list[Op]:
    """Drop the old rules that must go, and return those relaxed at cutover (rules of deprecated columns).

    Delta refuses to retype a column a CHECK reads: such rules go before ALTER TYPE and come back in cutover.
    Rules of columns on their way out are relaxed at cutover, so producers may stop writing them."""
    b, t = ctx.b, ctx.t
    old_rules, new_rules = contract_rules(old), contract_rules(new)
    going_names = {before.name.casefold() for before in going}
    relax: list[Op] = []
    for rule in old_rules.values():
        new_rule = new_rules.get(rule.key)
        drop = DropCheck(table=t, phase=Phase.EXPAND, name=rule.name, reason="its column is retyped")
        if retyped := sorted((c, widened[c]) for c in rule.columns if c in widened):
            again = None if new_rule is None else new_rule.expression
            b.add(replace(drop, replaced_by=again, retyped=tuple(retyped)))
        elif new_rule is None and rule.columns & going_names:
            relax.append(replace(drop, phase=Phase.CUTOVER, reason="rule of a deprecated column"))
        elif new_rule is None:
            b.add(replace(drop, reason="rule removed from the contract"))
        elif new_rule.expression != rule.expression:
            b.add(
                replace(
                    drop,
                    phase=Phase.CUTOVER,
                    replaced_by=new_rule.expression,
                    reason="rule changed: swapped where it is re-added",
                )
            )
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
    return relax


def _renamed_column(ctx: _Context, before: Column, after: Column) -> None:
    """A rename in place: add the new column, copy, catch up at cutover; the old one is dropped later."""
    b, t = ctx.b, ctx.t
    b.add(AddColumn(table=t, phase=Phase.EXPAND, column=column_spec(after), reason=f"rename {before.name}"))
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
        _tighten_not_null(b, t, after.name, ctx.target)


def _new_rules(ctx: _Context, old: Contract, new: Contract, widened: Mapping[str, str]) -> None:
    old_rules = contract_rules(old)
    for rule in contract_rules(new).values():
        old_rule = old_rules.get(rule.key)
        if old_rule is None or old_rule.expression != rule.expression or old_rule.columns & widened.keys():
            ctx.b.add(add_check(ctx.t, Phase.CUTOVER, rule))


def _deprecation_marks(ctx: _Context, old: Contract, new: Contract, going: list[Column]) -> None:
    """Marks accumulate: columns marked by earlier migrations (and maybe still awaiting their drop) stay
    marked with their own since and window; only the newly marked get a mark, starting their own clock."""
    # A column's own mark outlives its drop (it is history: when its window started); the list names only
    # columns the table still has.
    present = {c.name.casefold() for c in old.columns}
    earlier = [n for n in marked_columns(ctx.props) if n.casefold() in present]
    previously = {c.name.casefold() for c in old.columns if c.deprecated} | {n.casefold() for n in earlier}
    newly = {c.name for c in going if c.name.casefold() not in previously} | {
        c.name for c in new.columns if c.deprecated and c.name.casefold() not in previously
    }
    if not newly:
        return
    deprecated = sorted(
        {*earlier, *(c.name for c in going), *(c.name for c in new.columns if c.deprecated)},
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


def _turns_type_widening_off(ctx: _Context, old: Contract, new: Contract, widens: bool) -> bool:
    """Whether the contract turns type widening off (its property 'false', or gone after 'true') on a table
    that has the feature, or gets it for a widening of this same migration: then the contract phase turns it
    off, after every widening (`_type_widening_off`)."""
    key, on = TYPE_WIDENING
    wanted, before = new.table.properties.get(key), old.table.properties.get(key)
    turned_off = (wanted == "false" and before != "false") or (wanted is None and before == on)
    if not turned_off or not (ctx.props.get(key) == on or widens):
        return False
    # Delta 3.3 cannot unset it by dropping the feature (below): a property gone stays on the table, as any.
    return ctx.target is not Target.DELTA_3 or wanted is not None


def _type_widening_off(ctx: _Context, new: Contract) -> None:
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
    wanted = new.table.properties.get(key)
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
    ctx: _Context, new: Contract, going: list[Column], copies: Mapping[str, tuple[str, str]]
) -> None:
    """One drop per column, each waiting for its own mark's window. A renamed column's drop comes after a
    last catch-up under the same gate: an old producer may still write only the old column after the
    cutover, and the drop would lose those values. Then a CHECK closes the old column to values the new one
    lacks (Delta checks every row as it adds it, and every commit after), so no such row can land between
    that check and the drop; the drop runs while the CHECK stands, and the CHECK is dropped right after."""
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
        _unlist_dropped(ctx, column.name)


def _unlist_dropped(ctx: _Context, dropped: str) -> None:
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
            properties=((DEPRECATED_COLUMNS, left),),
            reason=f"the deprecation list without {dropped}, which is gone",
        )
    )
    ctx.props[DEPRECATED_COLUMNS] = left


def _cost_warnings(ctx: _Context) -> None:
    ops = ctx.b.all_ops()
    if any(isinstance(op, AddColumn | WidenType | DropColumns) for op in ops):
        ctx.b.warn(f"{ctx.t}: streaming readers stop at a schema change; restart them after apply")
    if any(isinstance(op, Backfill) for op in ops):
        ctx.b.warn(f"{ctx.t}: backfill UPDATEs rewrite every file holding a touched row: O(table)")
        ctx.b.warn(
            f"{ctx.t}: streaming readers need the reader option skipChangeCommits=true: a Delta "
            "stream refuses the rows the backfill UPDATEs rewrite"
        )


def _repoint_alias(b: Builder, new: Contract, t: TableId, going: list[str], target: Target) -> None:
    """A versioned table changed in place: its alias view is re-created in the phase that changes the
    table's columns, since Spark froze the view's columns and types when it was created. Columns on their
    way out stay visible until the contract phase drops them."""
    final = alias_columns(new)
    during = (*final, *((name, x.sql(x.column(name))) for name in going))
    alter = target.supports_alter_view_as
    if any(isinstance(op, AddColumn | WidenType) for op in b.ops[Phase.EXPAND]):
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
    if going:
        b.add(
            alias_view(
                new, t, Phase.CONTRACT, alter_existing=alter, reason="the alias view without dropped columns"
            )
        )
        b.warn(
            f"{new.table_parts}: between the column drop and the view's re-creation the alias "
            "view briefly fails to resolve"
        )


def _tighten_not_null(b: Builder, t: TableId, column: str, target: Target) -> None:
    if target.supports_set_not_null:
        b.add(SetNotNull(table=t, phase=Phase.CUTOVER, column=column, reason="nullable: false"))
        return
    b.add(add_check(t, Phase.CUTOVER, not_null_rule(column), f"nullable: false ({NO_SET_NOT_NULL})"))


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
        b.warn(f"{t}: {target.type_widening_note}")
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
        if after.fill is not None:
            _fill(
                b,
                t,
                after.name,
                x.canonical_expression(after.fill),
                "fill rows without a value (the contract's fill)",
            )
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
            # SQL INSERT/UPDATE/MERGE apply a default, DataFrame appends do not: rows written without the
            # column between populate and cutover are filled again by the cutover's catch-up.
            _fill(b, t, column.name, spec.default, "fill existing rows with the default")
        elif column.fill is not None:
            _fill(
                b,
                t,
                column.name,
                x.canonical_expression(column.fill),
                "fill existing rows (the contract's fill)",
            )
        else:
            raise PlanError(
                f"{b.table}: column {column.name} is added NOT NULL with no default: existing "
                "rows would fail the cutover's NOT NULL check; declare `fill: <SQL over the other columns>` "
                "(or a default)"
            )
        _tighten_not_null(b, t, column.name, target)


def _fill(b: Builder, t: TableId, column: str, expression: str, reason: str) -> None:
    """Backfill in populate, and again at cutover for rows written meanwhile by producers that do not
    write the column yet — right before the NOT NULL check that needs it."""
    fill = Backfill(table=t, phase=Phase.POPULATE, column=column, expression=expression, reason=reason)
    b.add(fill)
    b.add(replace(fill, phase=Phase.CUTOVER, reason="catch rows written without it since populate"))
