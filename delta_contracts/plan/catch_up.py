"""The cutover catch-up of a versioned migration: bring the new table up to the rows written to the old one
since the populate copy, writing only what changed.

Strategies, chosen by the planner from the contracts (`choose_catch_up`):

- `change_feed`: the old table records its changes (`delta.enableChangeDataFeed=true`) and the contract has
  a unique key of NOT NULL columns: a MERGE whose source is the latest change of each key read with
  `table_changes` since the version the old table stood at when the new table was created. The populate copy
  read that version or a later one, and the latest change of a key is that key's current row, so starting
  early only re-reads changes the MERGE then finds already applied. The start version is known at run time
  only: the statement carries the placeholder `:start_version`, which the engine binds
  (`change_feed_start`). Spark only: Sail 0.7.2 has no `table_changes`.
- `merge_on_key`: the contract has a unique key: MERGE INTO new USING (the old rows, converted) ON the key,
  updating rows where a column differs (NULL-safe), inserting new keys and deleting keys gone from the old
  table (`WHEN NOT MATCHED BY SOURCE`, Delta >= 2.3). Reads both tables; writes only the changed rows.
- `partitions`: no usable key, but the new table is partitioned: one MERGE that rewrites only the partitions
  whose rows differ. A partition differs when its row count or the sum of its rows' hashes (`xxhash64` over
  every column and whether it is NULL) differs between the old rows, converted to the new shape (so a
  repartitioning copy works too), and the new table's rows, compared NULL-safely by the new table's partition
  columns. The MERGE source holds one `delete` marker per differing partition (matched to every row of that
  partition in the new table, which it deletes) and the converted old rows of those partitions (never
  matched, inserted). Rows carry no identity, so a partition is the unit replaced. One statement and one
  commit: a run killed anywhere left the new table as it was, and the next run compares again.
- otherwise the populate copy is repeated (`CopyRows`, INSERT OVERWRITE), and the plan warns why.

Every strategy is idempotent: run again with nothing new, the MERGE matches no row (`partitions`: no
partition differs, its source is empty) and changes none.

A key MERGE needs the key unique on both sides, which Delta does not enforce: with two source rows of one key
Delta refuses the MERGE (several source rows for one target row), and one source row updates every target
row of its key, writing one row's values over its twins'. So the populate copy refuses an old table with a
duplicated key, and the catch-up refuses duplicates on either side (`duplicated_key`), before writing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from delta_contracts.live import Commit
from delta_contracts.plan.conditions import AllOf, Condition, NoRowsWhere, TableAbsent, TableExists
from delta_contracts.plan.guards import copy_guards
from delta_contracts.plan.ops import CopyRows, Op, Phase, copy_precondition
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
START_VERSION = "start_version"  # the placeholder the engine binds in a change-feed catch-up
# Columns the MERGE source adds beside the new table's columns (change-feed strategy only).
CHANGE_TYPE = "__delta_contracts_change"
CHANGE_RANK = "__delta_contracts_rank"
# The partition fingerprints' columns (partitions strategy only).
ROW_COUNT = "__delta_contracts_rows"
ROW_HASHES = "__delta_contracts_hashes"
CHANGED = "__delta_contracts_changed"
TARGET, SOURCE = "t", "s"


class CatchUpStrategy(StrEnum):
    CHANGE_FEED = "change_feed"
    MERGE_ON_KEY = "merge_on_key"
    PARTITIONS = "partitions"
    INSERT_MISSING = "insert_missing"  # the cutover's fence (`plan.fence`)


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUpRows(Op):
    """MERGE the rows written to `source` since the populate copy into `table` (see the module docstring)."""

    kind: ClassVar[str] = "catch_up_rows"
    rewrites_rows: ClassVar[bool] = True  # its MERGE updates the rows the source changed
    source: TableId
    mapping: tuple[tuple[str, str], ...]  # (target column, SQL expression over the source), as the copy's
    key: tuple[str, ...]  # target columns, unique in the contract (empty for the partitions strategy)
    partition_by: tuple[str, ...] = ()  # the new table's partition columns (partitions strategy only)
    strategy: CatchUpStrategy = CatchUpStrategy.MERGE_ON_KEY
    rejects: str | None = None  # as CopyRows: source rows the new table must not receive
    # Columns the MERGE never updates: identity columns (Delta refuses an UPDATE of one, and a row keeps its
    # id). Written to migration files only when set, so files from before stay byte for byte.
    kept: tuple[str, ...] = ()
    # Map columns: Spark orders no map (`<=>` on one is refused, INVALID_ORDERING_TYPE), so the MERGE tells a
    # changed one by its JSON text (a map whose entries merely come in another order is updated, to itself).
    maps: tuple[str, ...] = ()
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("kept", "maps")
    reasons: tuple[tuple[str, str], ...] = ()  # as CopyRows: what each part of `rejects` refuses

    def __post_init__(self) -> None:
        Op.__post_init__(self)
        object.__setattr__(self, "strategy", CatchUpStrategy(self.strategy))  # from a migration file

    def postcondition(self) -> Condition:
        # As the copy: rerunnable until the source is retired (renamed away or dropped at cutover).
        return TableAbsent(self.source)

    def precondition(self) -> Condition:
        copied = copy_precondition(self.source, self.table, self.rejects, self.reasons)
        if not self.key or self.strategy is CatchUpStrategy.INSERT_MISSING:
            return copied
        # The source's duplicates are in `rejects` (as for the copy); the new table may have got some since.
        parts = copied.conditions if isinstance(copied, AllOf) else (copied,)
        # `key` holds column names, and duplicated_key takes SQL: each name goes in as a quoted column.
        key = [x.sql(x.column(k)) for k in self.key]
        return AllOf((*parts, NoRowsWhere(self.table, duplicated_key(self.table, key))))

    def result_condition(self) -> Condition:
        return AllOf((TableExists(self.source), TableExists(self.table)))

    def summary(self) -> str:
        if self.strategy is CatchUpStrategy.INSERT_MISSING:
            by = f"by {', '.join(self.key)}" if self.key else "by whole rows"
            source, target = str(self.source), str(self.table)
            # Named as every catch-up (its kind, catch_up_rows, in the ledger and `history`), the fence said.
            return f"catch up rows {source} -> {target} (fence: only the rows {target} lacks, {by})"
        if self.strategy is CatchUpStrategy.PARTITIONS:
            return (
                f"catch up rows {self.source} -> {self.table} "
                f"(rewriting the partitions of {', '.join(self.partition_by)} whose rows differ)"
            )
        how = "change data feed" if self.strategy is CatchUpStrategy.CHANGE_FEED else "the whole source"
        return f"catch up rows {self.source} -> {self.table} (merge on {', '.join(self.key)}, reading {how})"

    def copies_from(self) -> TableId:
        return self.source

    def file_guards(self, alias: TableId) -> tuple[tuple[str, str], ...]:
        fence = self.strategy is CatchUpStrategy.INSERT_MISSING
        return copy_guards(self.source, self.table, alias, fence=fence)


@dataclass(frozen=True, slots=True)
class CatchUpChoice:
    op: CatchUpRows | CopyRows
    # The unique key the catch-up merges on, which the cutover's fence inserts new keys by (`plan.fence`);
    # empty when it compares partitions or copies the whole table again.
    key: tuple[str, ...]
    warning: str | None  # set only when the catch-up copies the whole table again
    note: str | None  # how a merge catches up (the warning says it for a copy)
    copy_rejects: str | None  # the populate copy's pre-check, with what this catch-up needs of the old rows
    copy_reasons: tuple[tuple[str, str], ...]  # its parts, named


def duplicated_key(table: TableId, key: Sequence[str]) -> str:
    """Rows of `table` whose key (SQL expressions over its columns) another row shares. A NULL in the key
    never matches, as in the catch-up MERGE's `=`."""
    values = [x.parse(x.never_raising(k)) for k in key]
    shared = (
        exp.select(*(v.copy() for v in values))
        .from_(x.table(table))
        .group_by(*(v.copy() for v in values))
        .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)))
    )
    keyed = values[0] if len(values) == 1 else exp.Tuple(expressions=values)
    return x.sql(exp.In(this=keyed, query=exp.Subquery(this=shared)))


def choose_catch_up(
    copy: CopyRows, new: Contract, old_properties: Sequence[tuple[str, str]]
) -> CatchUpChoice:
    """The cutover catch-up for the populate `copy`, by what the contracts say of the tables."""
    target = str(copy.table)
    source = str(copy.source)
    key = _merge_key(new, copy)
    feed = dict(old_properties).get(CHANGE_DATA_FEED, "false").lower() == "true"
    if key is not None:
        by_source = dict(copy.mapping)
        old_keys = duplicated_key(copy.source, [by_source[k] for k in key])
        rejects = x.any_of([p for p in (copy.rejects, old_keys) if p is not None])
        shared = f"rows of {source} share a key ({', '.join(key)}) the catch-up merges on"
        reasons = (*copy.reasons, (shared, old_keys))
        strategy = CatchUpStrategy.MERGE_ON_KEY
        how = f"merges on the unique key ({', '.join(key)}), reading every row of {source}"
        nullable = [c for c in key if (found := new.column(c)) is None or found.nullable]
        if feed and not nullable:
            strategy = CatchUpStrategy.CHANGE_FEED
            how = (
                f"merges on the unique key ({', '.join(key)}) the changes {source} recorded in its change "
                "data feed since the new table was created"
            )
        elif feed:
            how += f" (the change data feed is not used: key column(s) {nullable} may be NULL)"
        op = CatchUpRows(
            table=copy.table,
            phase=Phase.CUTOVER,
            source=copy.source,
            mapping=copy.mapping,
            key=key,
            strategy=strategy,
            rejects=rejects,
            kept=tuple(c.name for c in new.columns if c.identity is not None and c.name in by_source),
            maps=tuple(c.name for c in new.columns if "map<" in c.type.replace(" ", "").lower()),
            reasons=reasons,
            reason="catch rows written since populate",
        )
        note = (
            f"{target}: the cutover catch-up {how}; it writes only changed rows. The key must be unique "
            f"(Delta does not enforce it): populate and cutover refuse rows of {source} sharing a key, and "
            f"cutover refuses rows of {target} sharing one"
        )
        return CatchUpChoice(op, key, None, note, rejects, reasons)
    partitions = _partition_columns(new, copy)
    unhashable = [c.name for c in new.columns if "map<" in c.type.replace(" ", "").lower()]
    if partitions is not None and not unhashable:
        op = CatchUpRows(
            table=copy.table,
            phase=Phase.CUTOVER,
            source=copy.source,
            mapping=copy.mapping,
            key=(),
            partition_by=partitions,
            strategy=CatchUpStrategy.PARTITIONS,
            rejects=copy.rejects,
            reasons=copy.reasons,
            reason="catch rows written since populate",
        )
        how = (
            f"{target}: the cutover catch-up compares each partition ({', '.join(partitions)}) of {source}, "
            f"converted, with the same partition of {target} (row count and a sum of row hashes) and, in one "
            "MERGE, deletes and re-inserts only the partitions that differ; the others are not rewritten"
        )
        if feed:
            how += " (the change data feed is applied by key, and the contract declares no unique key)"
        return CatchUpChoice(op, (), None, how, copy.rejects, copy.reasons)
    why = "the contract declares no unique key (`quality.unique`) to merge on"
    if partitions is None:
        why += " and no partitioning (`table.partitioned_by`) to compare partitions by"
    else:
        # Spark refuses to hash a map (xxhash64), so partitions cannot be fingerprinted.
        why += f", and map column(s) {unhashable} cannot be hashed to compare partitions"
    if feed:
        why += f" (the change data feed of {source} is applied by key)"
    else:
        why += f", and {source} records no change data feed ({CHANGE_DATA_FEED})"
    warning = f"{target}: the cutover catch-up copies the whole table again (INSERT OVERWRITE): {why}"
    repeat = CopyRows(
        table=copy.table,
        phase=Phase.CUTOVER,
        source=copy.source,
        mapping=copy.mapping,
        rejects=copy.rejects,
        reasons=copy.reasons,
        reason="catch rows written since populate",
    )
    return CatchUpChoice(repeat, (), warning, None, copy.rejects, copy.reasons)


def _partition_columns(new: Contract, copy: CopyRows) -> tuple[str, ...] | None:
    """The new table's partition columns, as the new table's column names, when the copy fills them all."""
    columns = {name.casefold(): name for name, _ in copy.mapping}
    found = tuple(columns.get(c.casefold()) for c in new.table.partitioned_by)
    if not found or any(c is None for c in found):
        return None
    return tuple(c for c in found if c is not None)


def _merge_key(new: Contract, copy: CopyRows) -> tuple[str, ...] | None:
    """The first unique key of the new contract, as the new table's column names, when the copy fills every
    one of its columns."""
    if not new.quality.unique:
        return None
    columns = {name.casefold(): name for name, _ in copy.mapping}
    key = tuple(columns.get(c.casefold()) for c in new.quality.unique[0])
    if not key or any(c is None for c in key):
        return None
    return tuple(c for c in key if c is not None)


# Commit timestamps come from the storage's clock at millisecond grain: reading changes from a little before
# the new table's creation only re-reads changes the MERGE finds applied already, which is harmless.
CLOCK_MARGIN_MS = 1000


def change_feed_start(source: Sequence[Commit], target: Sequence[Commit]) -> int | None:
    """The first source version to read changes from, or None when the source has no commit that late.

    The populate copy ran after the target was created (its first commit), so it read the source at the last
    version committed before that, or later: the changes to read follow that version (found with a margin).
    """
    if not target:
        raise ValueError("the new table has no history: it was never created")
    if not source:
        raise ValueError("the old table has no history")
    created = min(target, key=lambda c: c.version).timestamp_ms
    before = [c.version for c in source if c.timestamp_ms < created - CLOCK_MARGIN_MS]
    start = max(before) + 1 if before else min(c.version for c in source)
    return start if start <= max(c.version for c in source) else None


def merge_statement(op: CatchUpRows, start_version: int | None = None) -> exp.Merge:
    """The catch-up MERGE; a change-feed one reads from `start_version`, or from the `:start_version`
    placeholder when None (the migration file shows it so; the engine binds it)."""
    if op.strategy is CatchUpStrategy.PARTITIONS:
        return _partition_merge(op)
    columns = [name for name, _ in op.mapping]
    keys = {k.casefold() for k in op.key}
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        source: exp.Expr = exp.Subquery(this=_latest_changes(op, start_version), alias=alias(SOURCE))
    else:
        select = exp.Select(
            expressions=[exp.Alias(this=x.parse(expr), alias=x.ident(name)) for name, expr in op.mapping]
        ).from_(x.table(op.source))
        source = exp.Subquery(this=select, alias=alias(SOURCE))
    on = exp.and_(*(exp.EQ(this=col(TARGET, k), expression=col(SOURCE, k)) for k in op.key))
    kept = {k.casefold() for k in op.kept}
    values = [c for c in columns if c.casefold() not in keys and c.casefold() not in kept]
    differs = exp.Not(
        this=exp.Paren(this=exp.and_(*(same_value(op, col(TARGET, c), col(SOURCE, c), c) for c in values)))
    )
    whens: list[exp.When] = []
    not_deleted: exp.Expr | None = None
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        deleted = exp.EQ(this=col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("delete"))
        not_deleted = exp.NEQ(this=col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("delete"))
        whens.append(exp.When(matched=True, source=False, condition=deleted, then=exp.var("DELETE")))
    if values:
        update = exp.Update(
            expressions=[exp.EQ(this=col(TARGET, c), expression=col(SOURCE, c)) for c in values]
        )
        whens.append(exp.When(matched=True, source=False, condition=differs, then=update))
    insert = insert_from_source(columns)
    whens.append(exp.When(matched=False, source=False, condition=not_deleted, then=insert))
    if op.strategy is CatchUpStrategy.MERGE_ON_KEY:
        whens.append(exp.When(matched=False, source=True, then=exp.var("DELETE")))
    return exp.Merge(
        this=_aliased_target(op),
        using=source,
        on=on,
        whens=exp.Whens(expressions=whens),
    )


def _latest_changes(op: CatchUpRows, start_version: int | None) -> exp.Select:
    """The last change of each key since `start_version`, in the new table's shape, with its change type (an
    update's pre-image counts as a delete of its key). In one commit a key deleted and inserted again (an
    overwrite, an update that kept its key) counts as inserted."""
    start: exp.Expr = (
        exp.Placeholder(this=START_VERSION) if start_version is None else exp.Literal.number(start_version)
    )
    feed = exp.Table(
        this=exp.Anonymous(
            # The table's name as Delta parses it from the string: quoted parts, so any name reads back.
            this="table_changes",
            expressions=[exp.Literal.string(x.sql(x.table(op.source))), start],
        )
    )
    # An update's pre-image is the end of the row it shows: a delete of its key, which the post-image of the
    # same commit outranks when the key stayed (a key that changed, `SET k = k + 1000`, is gone otherwise).
    raw_type = x.column("_change_type")
    change_type = exp.Case(
        ifs=[
            exp.If(
                this=exp.EQ(this=raw_type.copy(), expression=exp.Literal.string("update_preimage")),
                true=exp.Literal.string("delete"),
            )
        ],
        default=raw_type.copy(),
    )
    is_delete = exp.EQ(this=change_type.copy(), expression=exp.Literal.string("delete"))
    shaped = exp.Select(
        expressions=[
            *(exp.Alias(this=x.parse(expr), alias=x.ident(name)) for name, expr in op.mapping),
            exp.Alias(this=change_type, alias=x.ident(CHANGE_TYPE)),
            exp.Alias(
                this=exp.Window(
                    this=exp.RowNumber(),
                    partition_by=[x.parse(dict(op.mapping)[k]) for k in op.key],
                    order=exp.Order(
                        expressions=[
                            exp.Ordered(this=x.column("_commit_version"), desc=True),
                            exp.Ordered(this=is_delete),
                        ]
                    ),
                ),
                alias=x.ident(CHANGE_RANK),
            ),
        ]
    ).from_(feed)
    names = [x.column(name) for name, _ in op.mapping]
    return (
        exp.Select(expressions=[*names, x.column(CHANGE_TYPE)])
        .from_(exp.Subquery(this=shaped, alias=alias("changes")))
        .where(exp.EQ(this=x.column(CHANGE_RANK), expression=exp.Literal.number(1)))
    )


def insert_from_source(columns: Sequence[str]) -> exp.Insert:
    """A MERGE's `INSERT (columns) VALUES (s.columns)`."""
    return exp.Insert(
        this=exp.Tuple(expressions=[x.column(c) for c in columns]),
        expression=exp.Tuple(expressions=[col(SOURCE, c) for c in columns]),
    )


def _aliased_target(op: CatchUpRows) -> exp.Table:
    target = x.table(op.table)
    target.set("alias", alias(TARGET))
    return target


def left_behind(
    source: TableId, target: TableId, mapping: Sequence[tuple[str, str]], key: Sequence[str]
) -> str:
    """Rows of `source` (an old version's table) with no row in `target` (the new one): by key when there is
    one, else by every column, compared NULL-safely on the old rows converted as the copy converts them. A
    predicate over `source`, whose columns it names qualified by the table's name."""
    outer = source[-1]

    def qualified(text: str) -> exp.Expr:
        tree = x.parse(text)
        for node in list(tree.find_all(exp.Column)):
            if not node.table:
                node.set("table", x.ident(outer))
        return tree

    values = dict(mapping)
    compared = list(key) if key else [name for name, _ in mapping]
    inner = "n"
    match = exp.and_(
        *(
            exp.NullSafeEQ(this=col(inner, c), expression=exp.Paren(this=qualified(values[c])))
            for c in compared
        )
    )
    searched = x.table(target)
    searched.set("alias", alias(inner))
    found = exp.select(exp.Literal.number(1)).from_(searched).where(match)
    return x.sql(exp.Not(this=exp.Exists(this=found)))


def _partition_merge(op: CatchUpRows) -> exp.Merge:
    """The partitions strategy's MERGE (see the module docstring)."""
    columns = [name for name, _ in op.mapping]
    changed = exp.Table(this=x.ident(CHANGED))
    markers = exp.Select(
        expressions=[
            exp.Alias(this=exp.Literal.string("delete"), alias=x.ident(CHANGE_TYPE)),
            *(
                col(CHANGED, c) if c in op.partition_by else exp.Alias(this=exp.Null(), alias=x.ident(c))
                for c in columns
            ),
        ]
    ).from_(changed)
    rows = exp.Select(
        expressions=[
            exp.Alias(this=exp.Literal.string("insert"), alias=x.ident(CHANGE_TYPE)),
            *(col("r", c) for c in columns),
        ]
    ).from_(exp.Subquery(this=converted_rows(op), alias=alias("r")))
    rows = rows.join(changed.copy(), on=_same_partition(op, "r", CHANGED), join_type="LEFT SEMI")
    source = exp.union(markers, rows, distinct=False)
    source.set("with_", exp.With(expressions=[exp.CTE(this=_changed_partitions(op), alias=alias(CHANGED))]))
    is_marker = exp.EQ(this=col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("delete"))
    is_row = exp.EQ(this=col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("insert"))
    insert = insert_from_source(columns)
    return exp.Merge(
        this=_aliased_target(op),
        using=exp.Subquery(this=source, alias=alias(SOURCE)),
        on=exp.and_(is_marker, _same_partition(op, TARGET, SOURCE)),
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, then=exp.var("DELETE")),
                exp.When(matched=False, source=False, condition=is_row, then=insert),
            ]
        ),
    )


def converted_rows(op: CatchUpRows, version: int | None = None) -> exp.Select:
    """The source's rows in the new table's shape; read as of `version` when given."""
    return exp.Select(
        expressions=[exp.Alias(this=x.parse(expr), alias=x.ident(name)) for name, expr in op.mapping]
    ).from_(as_of(x.table(op.source), version))


def as_of(table: exp.Table, version: int | None) -> exp.Table:
    """`table VERSION AS OF version` (the table as it is when None)."""
    if version is not None:
        table.set(
            "version", exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(version))
        )
    return table


def _changed_partitions(op: CatchUpRows) -> exp.Select:
    """The partition values whose row count or sum of row hashes differs between the converted old rows
    and the new table (a partition on one side only differs too)."""
    old, new = "o", "n"
    current = exp.Select(expressions=[x.column(name) for name, _ in op.mapping]).from_(x.table(op.table))
    differs = exp.Not(
        this=exp.Paren(
            this=exp.and_(
                *(exp.NullSafeEQ(this=col(old, c), expression=col(new, c)) for c in (ROW_COUNT, ROW_HASHES))
            )
        )
    )
    return (
        exp.Select(
            expressions=[
                exp.Alias(this=exp.Coalesce(this=col(old, c), expressions=[col(new, c)]), alias=x.ident(c))
                for c in op.partition_by
            ]
        )
        .from_(exp.Subquery(this=_fingerprints(op, converted_rows(op)), alias=alias(old)))
        .join(
            exp.Subquery(this=_fingerprints(op, current), alias=alias(new)),
            on=_same_partition(op, old, new),
            join_type="FULL OUTER",
        )
        .where(differs)
    )


def _fingerprints(op: CatchUpRows, rows: exp.Select) -> exp.Select:
    """Per partition of `rows` (in the new table's shape): its row count and the sum of its rows' hashes.
    Each column is hashed beside whether it is NULL (xxhash64 skips NULLs, so (NULL, 'a') and ('a', NULL)
    would otherwise collide); the sum is a DECIMAL(38,0), which cannot overflow as a BIGINT sum would."""
    hashed: list[exp.Expr] = []
    for name, _ in op.mapping:
        hashed += [x.column(name), exp.Is(this=x.column(name), expression=exp.Null())]
    row_hash = exp.Anonymous(this="xxhash64", expressions=hashed)
    return (
        exp.Select(
            expressions=[
                *(x.column(c) for c in op.partition_by),
                exp.Alias(this=exp.Count(this=exp.Star()), alias=x.ident(ROW_COUNT)),
                exp.Alias(this=exp.Sum(this=x.cast(row_hash, "DECIMAL(38,0)")), alias=x.ident(ROW_HASHES)),
            ]
        )
        .from_(exp.Subquery(this=rows, alias=alias("r")))
        .group_by(*(x.column(c) for c in op.partition_by))
    )


def _same_partition(op: CatchUpRows, left: str, right: str) -> exp.Expr:
    return exp.and_(*(exp.NullSafeEQ(this=col(left, c), expression=col(right, c)) for c in op.partition_by))


def alias(name: str) -> exp.TableAlias:
    return exp.TableAlias(this=x.ident(name))


def col(table: str, name: str) -> exp.Column:
    return exp.Column(this=x.ident(name), table=x.ident(table))


def same_value(op: CatchUpRows, left: exp.Expr, right: exp.Expr, column: str) -> exp.Expr:
    """`left` and `right` hold the same value of `column` (NULLs the same): by `<=>`, except for a column
    with a map anywhere in its type, which Spark cannot compare (DATATYPE_MISMATCH.INVALID_ORDERING_TYPE)
    and which is compared by its JSON instead."""
    if column.casefold() in {m.casefold() for m in op.maps}:
        left, right = exp.JSONFormat(this=left), exp.JSONFormat(this=right)
    return exp.NullSafeEQ(this=left, expression=right)
