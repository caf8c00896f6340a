"""The versioned cutover's fence: the last catch-up, from the old table into the new one after the new table
was stamped (docs/migrations.md, "The versioned cutover's fence").

By the fence producers are switching. One that obeys the hold (`apply.schedule.held_runs`: the old table is
held from the catch-up to the stamp) wrote nothing to the old table since the catch-up; one that does not may
still write the old table while others write the new one. The fence carries over every change the old
table received since the catch-up — inserts, updates and deletes of existing keys
— and never one a producer made to the new table since the stamp:

- `new@S`: the new table as of its stamp's commit (version S) is what the catch-up left, since no producer
  writes the new table before its stamp; a key whose old row (read as of one fixed version V, the fence's own
  commit on the old table) differs from `new@S`, or is gone, was changed on the old table since;
- such a key is changed on the new table only where the new table still holds `new@S`'s row: a key a producer
  has written to the new table since the stamp keeps that value (the producer switched after its last write
  to the old table, so the new table's write is its later one);
- a key the old table has and `new@S` lacks is inserted unless the new table has it (a blind append, see
  `fence_statement`).

Without a unique key rows cannot be told apart: the fence inserts the old rows the new table lacks (EXCEPT
ALL) and refuses, naming them, when rows of `new@S` are gone from the old table and still in the new one (an
update or delete made on the old table since the catch-up, which it cannot apply to one row of several equal).

The versions are bound by the engine at run time (`engine.fence`); the migration file's cell shows the
statement that reads both tables as they are (inserts only).
"""

from __future__ import annotations

from sqlglot import exp

from delta_contracts.plan.catch_up import (
    SOURCE,
    TARGET,
    CatchUpRows,
    CatchUpStrategy,
    alias,
    as_of,
    col,
    converted_rows,
    same_value,
)
from delta_contracts.plan.ops import CopyRows, Phase
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

IN_OLD = "__delta_contracts_in_old"  # set on the changed rows whose key the old table still has
STAMPED = "__delta_contracts_stamped_"  # prefix of the columns holding `new@S`'s row of a changed key
STAMPED_ROWS, OLD_ROWS = "a", "o"


def fence_catch_up(
    bulk: CatchUpRows | CopyRows, source: TableId, key: tuple[str, ...], *, maps: tuple[str, ...] = ()
) -> CatchUpRows:
    """The last catch-up of a versioned cutover, from the old table (`source`: by now renamed, or marked
    deprecated), after the new table was stamped (see the module docstring); `key`: the unique key the
    catch-up `bulk` merged on (empty: none, its rows are told apart whole); `maps`: the new table's columns
    with a map in their type, which its changed rows are compared by as JSON (`same_value`)."""

    # The first catch-up's checks name the old table as it was then (its duplicate-key subquery reads it by
    # name); by the fence that name may be the alias view over the new table, so they read `source` itself.
    def physical(predicate: str) -> str:
        return x.reading_table(predicate, bulk.source, source)

    return CatchUpRows(
        table=bulk.table,
        phase=Phase.CUTOVER,
        source=source,
        mapping=bulk.mapping,
        key=key,
        strategy=CatchUpStrategy.INSERT_MISSING,
        maps=maps,
        rejects=None if bulk.rejects is None else physical(bulk.rejects),
        reasons=tuple((why.replace(str(bulk.source), str(source)), physical(p)) for why, p in bulk.reasons),
        reason="rows committed to the old table until it was closed to writers",
    )


def fence_statement(
    op: CatchUpRows,
    new_table_version: int | None = None,
    *,
    source_version: int | None = None,
    stamp_version: int | None = None,
) -> exp.Insert:
    """INSERT the converted old rows the new table lacks: by key (new keys only), or without a key every old
    row beyond the count of its equal rows in the new table (EXCEPT ALL).

    With `new_table_version` the new table is read as of that version (the engine binds the version it stood
    at when the attempt began): the statement then reads the new table only through time travel, which Delta
    does not count as a read of the table it writes, so it commits as a blind append and no producer's append
    to the new table can fail it (open-source Delta is Serializable: a MERGE, or an INSERT reading the table's
    current version, conflicts with every append committed while it ran, and a producer writing back to back
    leaves no gap; measured on delta-spark 4). Rows producers append after that version are rows of their
    own, never the old rows this copies. Without it (the migration file's form) the new table is read as it
    is: exact against any producer, a commit race lost against a busy one.

    `source_version` reads the old table as of the fence's version V, and `stamp_version` leaves out a key
    the new table had at its stamp (a key a producer deleted from the new table since is not brought back)."""
    columns = [name for name, _ in op.mapping]
    current = as_of(x.table(op.table), new_table_version)
    rows: exp.Query = converted_rows(op, source_version)
    if not op.key:
        lacking = exp.Select(expressions=[x.column(c) for c in columns]).from_(current)
        rows = exp.Except(this=rows, expression=lacking, distinct=False)
    select = exp.Select(expressions=[col(SOURCE, c) for c in columns]).from_(
        exp.Subquery(this=rows, alias=alias(SOURCE))
    )
    if op.key:
        stamped = () if stamp_version is None else (as_of(x.table(op.table), stamp_version),)
        for table in (current, *stamped):
            table.set("alias", alias(TARGET))
            same_key = exp.and_(*(exp.EQ(this=col(TARGET, k), expression=col(SOURCE, k)) for k in op.key))
            present = exp.select(exp.Literal.number(1)).from_(table).where(same_key)
            select = select.where(exp.Not(this=exp.Exists(this=present)))
    target = exp.Schema(this=x.table(op.table), expressions=[x.ident(c) for c in columns])
    return exp.Insert(this=target, expression=select)


def _values(op: CatchUpRows) -> list[str]:
    """The columns a changed key's row is compared and updated by: not the key, not a kept identity."""
    fixed = {c.casefold() for c in (*op.key, *op.kept)}
    return [name for name, _ in op.mapping if name.casefold() not in fixed]


def _stamped(index: int) -> str:
    return f"{STAMPED}{index}"


def changed_keys(op: CatchUpRows, source_version: int, stamp_version: int) -> exp.Select:
    """The keys of `new@S` whose converted old row (as of `source_version`) differs or is gone: each with the
    old row's columns (by the new table's names), IN_OLD (NULL when the old table lost the key) and `new@S`'s
    row (STAMPED + the mapping's index)."""
    columns = [name for name, _ in op.mapping]
    stamped = as_of(x.table(op.table), stamp_version)
    stamped.set("alias", alias(STAMPED_ROWS))
    old = converted_rows(op, source_version)
    old.select(exp.Alias(this=exp.true(), alias=x.ident(IN_OLD)), copy=False)
    same_key = exp.and_(*(exp.EQ(this=col(STAMPED_ROWS, k), expression=col(OLD_ROWS, k)) for k in op.key))
    same_values = [same_value(op, col(STAMPED_ROWS, c), col(OLD_ROWS, c), c) for c in _values(op)]
    gone = exp.Is(this=col(OLD_ROWS, IN_OLD), expression=exp.Null())
    differs = gone if not same_values else exp.or_(gone, exp.Not(this=exp.Paren(this=exp.and_(*same_values))))
    return (
        exp.Select(
            expressions=[
                *(col(OLD_ROWS, c) for c in columns),
                col(OLD_ROWS, IN_OLD),
                *(
                    exp.Alias(this=col(STAMPED_ROWS, c), alias=x.ident(_stamped(i)))
                    for i, c in enumerate(columns)
                ),
            ]
        )
        .from_(stamped)
        .join(exp.Subquery(this=old, alias=alias(OLD_ROWS)), on=same_key, join_type="LEFT")
        .where(differs)
    )


def _unchanged_since_stamp(op: CatchUpRows) -> exp.Expr:
    """The new table's row (TARGET) is still `new@S`'s row of its key (SOURCE's STAMPED columns)."""
    return exp.and_(
        *(same_value(op, col(TARGET, c), col(SOURCE, _stamped(i)), c) for i, (c, _) in enumerate(op.mapping))
    )


def _on_key(op: CatchUpRows) -> exp.Expr:
    stamped = {c: _stamped(i) for i, (c, _) in enumerate(op.mapping)}
    return exp.and_(*(exp.EQ(this=col(TARGET, k), expression=col(SOURCE, stamped[k])) for k in op.key))


def pending_changes(op: CatchUpRows, source_version: int, stamp_version: int) -> exp.Select:
    """The changed keys (`changed_keys`) the new table still holds as of its stamp: the changes still to
    apply, by key (the old value, or NULL for a key the old table lost)."""
    target = x.table(op.table)
    target.set("alias", alias(TARGET))
    changed = exp.Subquery(this=changed_keys(op, source_version, stamp_version), alias=alias(SOURCE))
    stamped = {c: _stamped(i) for i, (c, _) in enumerate(op.mapping)}
    return (
        exp.Select(
            expressions=[
                *(exp.Alias(this=col(SOURCE, stamped[k]), alias=x.ident(k)) for k in op.key),
                col(SOURCE, IN_OLD),
            ]
        )
        .from_(changed)
        .join(target, on=exp.and_(_on_key(op), _unchanged_since_stamp(op)), join_type="INNER")
    )


def changes_merge(op: CatchUpRows, source_version: int, stamp_version: int) -> exp.Merge:
    """MERGE the old table's updates and deletes since the catch-up into the new table, on keys the new
    table still holds as of its stamp (see the module docstring)."""
    target = x.table(op.table)
    target.set("alias", alias(TARGET))
    unchanged = _unchanged_since_stamp(op)
    gone = exp.Is(this=col(SOURCE, IN_OLD), expression=exp.Null())
    whens = [
        exp.When(matched=True, source=False, condition=exp.and_(unchanged, gone), then=exp.var("DELETE"))
    ]
    values = _values(op)
    if values:
        update = exp.Update(
            expressions=[exp.EQ(this=col(TARGET, c), expression=col(SOURCE, c)) for c in values]
        )
        whens.append(exp.When(matched=True, source=False, condition=unchanged.copy(), then=update))
    return exp.Merge(
        this=target,
        using=exp.Subquery(this=changed_keys(op, source_version, stamp_version), alias=alias(SOURCE)),
        on=_on_key(op),
        whens=exp.Whens(expressions=whens),
    )


def removed_rows(op: CatchUpRows, source_version: int, stamp_version: int) -> exp.Query:
    """Without a key: rows of `new@S` the old table no longer has (as of `source_version`: updated or
    deleted there since the catch-up) that the new table still holds."""
    columns = [name for name, _ in op.mapping]
    stamped = exp.Select(expressions=[x.column(c) for c in columns]).from_(
        as_of(x.table(op.table), stamp_version)
    )
    current = exp.Select(expressions=[x.column(c) for c in columns]).from_(x.table(op.table))
    gone = exp.Except(this=stamped, expression=converted_rows(op, source_version), distinct=False)
    return exp.Intersect(this=gone, expression=current, distinct=False)


CHANGE = "change"  # in `changed_since`: whether a row is one the table has now, or one it has lost


def changed_since(table: TableId, columns: list[tuple[str, str]], version: int) -> exp.Query:
    """Rows of `table` that differ from the table as of `version`, compared by every column it has
    (`columns`, (name, type) pairs): the rows it has now and had not then, and those it had then and has not
    now (CHANGE says which). A map is compared as its JSON text: Spark refuses a map in EXCEPT."""

    def value(name: str, type_: str) -> exp.Expr:
        if "map<" not in type_.replace(" ", "").lower():
            return x.column(name)
        return exp.Alias(
            this=exp.Anonymous(this="to_json", expressions=[x.column(name)]), alias=x.ident(name)
        )

    def rows(at: int | None) -> exp.Select:
        return exp.select(*(value(n, t) for n, t in columns)).from_(as_of(x.table(table), at))

    def labelled(query: exp.Query, change: str) -> exp.Select:
        return exp.select(exp.Literal.string(change).as_(CHANGE), exp.Star()).from_(
            exp.Subquery(this=query, alias=alias("d"))
        )

    added = labelled(exp.Except(this=rows(None), expression=rows(version), distinct=False), "has now")
    gone = labelled(exp.Except(this=rows(version), expression=rows(None), distinct=False), "had, gone since")
    return exp.union(added, gone, distinct=False)


CARRIED_VALUE, AT_MARK = "__delta_contracts_value", "__delta_contracts_at_mark"


def renamed_column_updates(
    table: TableId, column: str, expression: str, key: list[str], version: int
) -> exp.Select:
    """An in-place rename's keys whose new `column` holds what it held at `version` (the old column's
    deprecation mark: after the cutover's backfill, before the stamp, so no producer had written the new
    column yet) while the old column's `expression` now gives another value: updates an old producer made
    to an existing key after the backfill. Each with the value to carry (CARRIED_VALUE) and the new column's
    value at the mark (AT_MARK)."""
    now, then = "n", "m"
    current = x.table(table)
    current.set("alias", alias(now))
    marked = as_of(x.table(table), version)
    marked.set("alias", alias(then))
    value = x.parse(expression)
    for node in list(value.find_all(exp.Column)):
        if not node.table:
            node.set("table", x.ident(now))
    same_key = exp.and_(*(exp.EQ(this=col(now, k), expression=col(then, k)) for k in key))
    untouched = exp.NullSafeEQ(this=col(now, column), expression=col(then, column))
    differs = exp.Not(this=exp.NullSafeEQ(this=col(now, column), expression=exp.Paren(this=value.copy())))
    return (
        exp.Select(
            expressions=[
                *(col(now, k) for k in key),
                exp.Alias(this=value, alias=x.ident(CARRIED_VALUE)),
                exp.Alias(this=col(then, column), alias=x.ident(AT_MARK)),
            ]
        )
        .from_(current)
        .join(marked, on=same_key, join_type="INNER")
        .where(exp.and_(untouched, differs))
    )


def renamed_column_merge(
    table: TableId, column: str, expression: str, key: list[str], version: int
) -> exp.Merge:
    """Carry `renamed_column_updates` into the new column, where it still holds its value at the mark."""
    target = x.table(table)
    target.set("alias", alias(TARGET))
    source = renamed_column_updates(table, column, expression, key, version)
    still = exp.NullSafeEQ(this=col(TARGET, column), expression=col(SOURCE, AT_MARK))
    update = exp.Update(expressions=[exp.EQ(this=col(TARGET, column), expression=col(SOURCE, CARRIED_VALUE))])
    return exp.Merge(
        this=target,
        using=exp.Subquery(this=source, alias=alias(SOURCE)),
        on=exp.and_(*(exp.EQ(this=col(TARGET, k), expression=col(SOURCE, k)) for k in key)),
        whens=exp.Whens(expressions=[exp.When(matched=True, source=False, condition=still, then=update)]),
    )
