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
- otherwise the populate copy is repeated (`CopyRows`, INSERT OVERWRITE), and the plan warns why.

Every strategy is idempotent: run again with nothing new, the MERGE matches every row and changes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from delta_contracts.live import Commit, TableId
from delta_contracts.plan import expressions as x
from delta_contracts.plan.conditions import AllOf, Condition, TableAbsent, TableExists
from delta_contracts.plan.ops import CopyRows, Op, Phase, copy_precondition, table_name

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
START_VERSION = "start_version"  # the placeholder the engine binds in a change-feed catch-up
# Columns the MERGE source adds beside the new table's columns (change-feed strategy only).
CHANGE_TYPE = "__delta_contracts_change"
CHANGE_RANK = "__delta_contracts_rank"
TARGET, SOURCE = "t", "s"


class CatchUpStrategy(StrEnum):
    CHANGE_FEED = "change_feed"
    MERGE_ON_KEY = "merge_on_key"


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUpRows(Op):
    """MERGE the rows written to `source` since the populate copy into `table` (see the module docstring)."""

    kind: ClassVar[str] = "catch_up_rows"
    source: TableId
    mapping: tuple[tuple[str, str], ...]  # (target column, SQL expression over the source), as the copy's
    key: tuple[str, ...]  # target columns, unique in the contract
    strategy: CatchUpStrategy = CatchUpStrategy.MERGE_ON_KEY
    rejects: str | None = None  # as CopyRows: source rows the new table must not receive

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategy", CatchUpStrategy(self.strategy))  # from a migration file

    def postcondition(self) -> Condition:
        # As the copy: rerunnable until the source is retired (renamed away or dropped at cutover).
        return TableAbsent(self.source)

    def precondition(self) -> Condition:
        return copy_precondition(self.source, self.table, self.rejects)

    def result_condition(self) -> Condition:
        return AllOf((TableExists(self.source), TableExists(self.table)))

    def summary(self) -> str:
        how = "change data feed" if self.strategy is CatchUpStrategy.CHANGE_FEED else "the whole source"
        return (
            f"catch up rows {table_name(self.source)} -> {table_name(self.table)} "
            f"(merge on {', '.join(self.key)}, reading {how})"
        )


@dataclass(frozen=True, slots=True)
class CatchUpChoice:
    op: Op
    warning: str | None  # set only when the catch-up copies the whole table again
    note: str | None  # how a merge catches up (the warning says it for a copy)


def choose_catch_up(
    copy: CopyRows, new: Contract, old_properties: Sequence[tuple[str, str]]
) -> CatchUpChoice:
    """The cutover catch-up for the populate `copy`, by what the contracts say of the tables."""
    target = table_name(copy.table)
    source = table_name(copy.source)
    key = _merge_key(new, copy)
    feed = dict(old_properties).get(CHANGE_DATA_FEED, "false").lower() == "true"
    if key is not None:
        strategy = CatchUpStrategy.MERGE_ON_KEY
        how = f"merges on the unique key ({', '.join(key)}), reading every row of {source}"
        nullable = [c for c in key if (col := new.column(c)) is None or col.nullable]
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
            rejects=copy.rejects,
            reason="catch rows written since populate",
        )
        return CatchUpChoice(op, None, f"{target}: the cutover catch-up {how}; it writes only changed rows")
    why = "the contract declares no unique key (`quality.unique`) to merge on"
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
        reason="catch rows written since populate",
    )
    return CatchUpChoice(repeat, warning, None)


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
    columns = [name for name, _ in op.mapping]
    keys = {k.casefold() for k in op.key}
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        source: exp.Expr = exp.Subquery(this=_latest_changes(op, start_version), alias=_alias(SOURCE))
    else:
        select = exp.Select(
            expressions=[exp.Alias(this=x.parse(expr), alias=x.ident(name)) for name, expr in op.mapping]
        ).from_(x.table(op.source))
        source = exp.Subquery(this=select, alias=_alias(SOURCE))
    on = exp.and_(*(exp.EQ(this=_col(TARGET, k), expression=_col(SOURCE, k)) for k in op.key))
    values = [c for c in columns if c.casefold() not in keys]
    differs = exp.Not(
        this=exp.Paren(
            this=exp.and_(*(exp.NullSafeEQ(this=_col(TARGET, c), expression=_col(SOURCE, c)) for c in values))
        )
    )
    whens: list[exp.When] = []
    not_deleted: exp.Expr | None = None
    if op.strategy is CatchUpStrategy.CHANGE_FEED:
        deleted = exp.EQ(this=_col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("delete"))
        not_deleted = exp.NEQ(this=_col(SOURCE, CHANGE_TYPE), expression=exp.Literal.string("delete"))
        whens.append(exp.When(matched=True, source=False, condition=deleted, then=exp.var("DELETE")))
    if values:
        update = exp.Update(
            expressions=[exp.EQ(this=_col(TARGET, c), expression=_col(SOURCE, c)) for c in values]
        )
        whens.append(exp.When(matched=True, source=False, condition=differs, then=update))
    insert = exp.Insert(
        this=exp.Tuple(expressions=[x.column(c) for c in columns]),
        expression=exp.Tuple(expressions=[_col(SOURCE, c) for c in columns]),
    )
    whens.append(exp.When(matched=False, source=False, condition=not_deleted, then=insert))
    if op.strategy is CatchUpStrategy.MERGE_ON_KEY:
        whens.append(exp.When(matched=False, source=True, then=exp.var("DELETE")))
    target = x.table(op.table)
    target.set("alias", _alias(TARGET))
    return exp.Merge(
        this=target,
        using=source,
        on=on,
        whens=exp.Whens(expressions=whens),
    )


def _latest_changes(op: CatchUpRows, start_version: int | None) -> exp.Select:
    """The last change of each key since `start_version` (pre-images left out), in the new table's shape,
    with its change type. In one commit a key deleted and inserted again (an overwrite) counts as inserted."""
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
    change_type = x.column("_change_type")
    is_delete = exp.EQ(this=change_type.copy(), expression=exp.Literal.string("delete"))
    shaped = (
        exp.Select(
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
        )
        .from_(feed)
        .where(exp.NEQ(this=change_type.copy(), expression=exp.Literal.string("update_preimage")))
    )
    names = [x.column(name) for name, _ in op.mapping]
    return (
        exp.Select(expressions=[*names, x.column(CHANGE_TYPE)])
        .from_(exp.Subquery(this=shaped, alias=_alias("changes")))
        .where(exp.EQ(this=x.column(CHANGE_RANK), expression=exp.Literal.number(1)))
    )


def _alias(name: str) -> exp.TableAlias:
    return exp.TableAlias(this=x.ident(name))


def _col(table: str, name: str) -> exp.Column:
    return exp.Column(this=x.ident(name), table=x.ident(table))
