"""How an op moves rows, at scale: a backfill or a copy runs in bounded batches — by partition, else by
ranges of an integral key — each one Delta commit, each recorded in the ledger when it finished.

A copy whose partition column reaches the target converted (`plan.versioned.CopyConvertedPartitions`) runs in
batches of the source's partitions too: the partitions whose rows take the same converted values in the
target go in one batch, and a batch is looked for in the target by those values.

A killed run resumes after the batches the ledger recorded. A batch can also have committed without its ledger
row (killed in between): a backfill batch is harmless to repeat (it only fills NULLs), and a copy batch is
first looked for in the target — rows of the batch there mean its one commit landed — so no row is written
twice. A copy's first batch is an INSERT OVERWRITE (the target then holds exactly that batch), later ones
append; a table with neither partitions nor an integral key runs as the op itself, in one statement.

The cutover catch-up MERGE (`plan.catch_up.CatchUpRows`) is not split: its one commit is the unit a rerun
repeats, and it writes only the rows that changed.

Each engine's op table names the `RowMover` of the ops it runs in batches (`Engine.row_mover`); the runner
asks for it, so no op class is tested for here or in `apply`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlglot import exp

from delta_contracts.engine.base import Engine, EngineError
from delta_contracts.errors import FailedError
from delta_contracts.live import LiveTable
from delta_contracts.plan.ops import Backfill, CopyRows, Op
from delta_contracts.plan.render import build
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

MovingOp = TypeVar("MovingOp", bound=Op)

INTEGRAL = frozenset({"tinyint", "smallint", "int", "bigint"})


@dataclass(frozen=True, slots=True)
class Batch:
    mark: dict[str, Any]  # the watermark recorded once it finished (JSON)
    source: exp.Expr  # which rows: a predicate over the table read
    target: exp.Expr  # the same rows as the target sees them (copies: to find a batch that landed)


@dataclass(frozen=True, slots=True)
class BatchDone:
    mark: dict[str, Any]
    version: int | None
    rows_found: bool  # the batch had already landed (a copy batch found in the target)
    rows: int | None = None  # rows the batch's statement wrote, where the engine reports them


def _value(value: object) -> exp.Expr:
    if isinstance(value, dt.datetime):
        return x.cast(x.literal(value.isoformat(sep=" ")), "timestamp")
    if isinstance(value, dt.date):
        return x.cast(x.literal(value.isoformat()), "date")
    return x.literal(value)


def _key(values: Sequence[object]) -> str:
    return json.dumps([None if v is None else str(v) for v in values])


def _matching(columns: Sequence[str], values: Sequence[object]) -> exp.Expr:
    terms: list[exp.Expr] = [
        exp.Is(this=x.column(c), expression=exp.Null())
        if v is None
        else exp.EQ(this=x.column(c), expression=_value(v))
        for c, v in zip(columns, values, strict=True)
    ]
    return exp.and_(*terms) if len(terms) > 1 else terms[0]


def _partition_batches(
    engine: Engine,
    read: TableId,
    columns: Sequence[str],
    rename: Callable[[str], str],
    batch_rows: int,
    finished: set[str],
) -> Iterator[Batch]:
    group = exp.select(*[x.column(c) for c in columns], exp.Count(this=exp.Star()).as_("n"))
    group = group.from_(x.table(read)).group_by(*[x.column(c) for c in columns])
    rows = [r for r in engine.sql(x.sql(group)) if _key([r[c] for c in columns]) not in finished]
    chunk: list[list[object]] = []
    count = 0
    for row in sorted(rows, key=lambda r: _key([r[c] for c in columns])):
        chunk.append([row[c] for c in columns])
        count += int(row["n"])
        if count >= batch_rows:
            yield _partition_batch(columns, chunk, rename)
            chunk, count = [], 0
    if chunk:
        yield _partition_batch(columns, chunk, rename)


def _partition_batch(
    columns: Sequence[str], chunk: list[list[object]], rename: Callable[[str], str]
) -> Batch:
    targets = [rename(c) for c in columns]
    return Batch(
        {"partitions": [_key(v) for v in chunk]},
        exp.or_(*[_matching(columns, v) for v in chunk]),
        exp.or_(*[_matching(targets, v) for v in chunk]),
    )


def _range_batches(
    engine: Engine, read: TableId, key: str, target_key: str, batch_rows: int, step: int | None
) -> Iterator[Batch]:
    bounds = exp.select(
        exp.Min(this=x.column(key)).as_("lo"),
        exp.Max(this=x.column(key)).as_("hi"),
        exp.Count(this=x.column(key)).as_("n"),
    ).from_(x.table(read))
    row = engine.sql(x.sql(bounds))[0]
    if row["n"]:
        lo, hi, n = int(row["lo"]), int(row["hi"]), int(row["n"])
        # The step is kept from the first run (recorded in each mark) so resumed ranges line up.
        step = step or max(1, math.ceil((hi - lo + 1) * batch_rows / n))
        start = (lo // step) * step
        for low in range(start, hi + 1, step):

            def between(column: str, low: int = low) -> exp.Expr:
                return exp.and_(
                    exp.GTE(this=x.column(column), expression=x.literal(low)),
                    exp.LT(this=x.column(column), expression=x.literal(low + step)),
                )

            yield Batch({"key": key, "step": step, "from": low}, between(key), between(target_key))
    yield Batch(
        {"key": key, "nulls": True},
        exp.Is(this=x.column(key), expression=exp.Null()),
        exp.Is(this=x.column(target_key), expression=exp.Null()),
    )


class RowMover(ABC, Generic[MovingOp]):
    """How one kind of op moves rows in batches: the table it reads, the columns it carries over unchanged,
    and its statement restricted to one batch. The base is shared machinery; a subclass is one op kind's."""

    def read_table(self, op: MovingOp) -> TableId:
        return op.table

    def carried(self, op: MovingOp) -> dict[str, str] | None:
        """Source column -> target column for the columns carried over unchanged (None: every column, the op
        reads and writes one table)."""
        return None

    @abstractmethod
    def restrict(self, statement: exp.Expr, batch: Batch, *, first: bool) -> exp.Expr:
        """The op's statement restricted to the batch's rows."""

    def landed(self, engine: Engine, op: MovingOp, batch: Batch) -> bool:
        """Whether a batch's commit is already in the target (killed before its ledger row)."""
        return False

    def before_run(self, engine: Engine, op: MovingOp) -> str:
        """What the op's ledger row says of rows counted before they move (empty: nothing)."""
        return ""

    def plan(
        self, engine: Engine, op: MovingOp, batch_rows: int, done: Sequence[dict[str, Any]]
    ) -> list[Batch] | None:
        """The batches still to run, or None when the op cannot be split (it then runs whole)."""
        read = self.read_table(op)
        live = engine.describe(read)
        if live is None:
            raise EngineError(f"{op.summary()}: table {read} does not exist")
        carried = self.carried(op)

        def rename(column: str) -> str:
            return column if carried is None else carried.get(column.casefold(), column)

        kept = [c for c in live.partition_columns if carried is None or c.casefold() in carried]
        if kept and len(kept) == len(live.partition_columns):
            finished = {p for mark in done for p in mark.get("partitions", ())}
            return list(
                _partition_batches(engine, read, live.partition_columns, rename, batch_rows, finished)
            )
        key = _range_key(live, carried)
        if key is None:
            return None
        step = next((int(m["step"]) for m in done if "step" in m), None)
        finished_ranges = {int(m["from"]) for m in done if "from" in m}
        nulls_done = any(m.get("nulls") for m in done)
        return [
            b
            for b in _range_batches(engine, read, key, rename(key), batch_rows, step)
            if not (b.mark.get("from") in finished_ranges or (b.mark.get("nulls") and nulls_done))
        ]

    def statement(self, op: MovingOp, batch: Batch, *, first: bool) -> str:
        """The op restricted to the batch's rows."""
        return x.sql(self.restrict(build(op), batch, first=first))

    def run(
        self,
        engine: Engine,
        op: MovingOp,
        batches: Sequence[Batch],
        *,
        fresh: bool,
        tag: str | None,
        on_batch: Callable[[BatchDone], None],
    ) -> None:
        """Run each batch as one statement; `fresh`: no batch of this op ran yet (a copy then overwrites)."""
        for position, batch in enumerate(batches):
            first = fresh and position == 0
            if not first and self.landed(engine, op, batch):
                on_batch(BatchDone(batch.mark, None, True))
                continue
            rows = engine.run_statement(self.statement(op, batch, first=first), tag=tag, table=op.table)
            on_batch(BatchDone(batch.mark, engine.table_version(op.table), False, rows))


class BackfillRows(RowMover[Backfill]):
    """UPDATE … AND batch: only fills NULLs, so a batch repeated after a crash changes nothing."""

    def restrict(self, statement: exp.Expr, batch: Batch, *, first: bool) -> exp.Expr:
        if not isinstance(statement, exp.Update):
            raise FailedError(f"a backfill's statement is an UPDATE, not {type(statement).__name__}")
        where = statement.args["where"].this
        statement.set("where", exp.Where(this=exp.and_(where, batch.source)))
        return statement


class CopyRowsInBatches(RowMover[CopyRows]):
    """INSERT [OVERWRITE] … WHERE batch: the first batch of a fresh copy overwrites, the others append."""

    def read_table(self, op: CopyRows) -> TableId:
        return op.source

    def carried(self, op: CopyRows) -> dict[str, str]:
        out = {}
        for target, expression in op.mapping:
            parsed = x.parse(expression)
            if isinstance(parsed, exp.Column) and not parsed.table:
                out[parsed.name.casefold()] = target
        return out

    def restrict(self, statement: exp.Expr, batch: Batch, *, first: bool) -> exp.Expr:
        select = statement.expression if isinstance(statement, exp.Insert) else None
        if not isinstance(select, exp.Select):
            raise FailedError("a copy's statement is an INSERT … SELECT")
        statement.set("expression", select.where(batch.source))
        statement.set("overwrite", first)
        return statement

    def landed(self, engine: Engine, op: CopyRows, batch: Batch) -> bool:
        query = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(x.table(op.table)).where(batch.target)
        return int(engine.sql(x.sql(query))[0]["n"]) > 0

    def before_run(self, engine: Engine, op: CopyRows) -> str:
        """How many rows of the source each conversion declared `lossy` changes, counted before the copy (its
        source still holds them): what `apply` prints and the ledger keeps of the op."""
        return "; ".join(
            f"{column}: {engine.count_where(op.source, where)} row(s) changed by its lossy conversion"
            for column, where in op.lossy
        )


class CopyConvertedPartitionsInBatches(CopyRowsInBatches):
    """A copy batched by the source's partitions whose values reach the target converted. The conversion may
    give several partitions one value (a timestamp to its day): such partitions go in one batch, so that
    rows of a batch's converted values in the target are that batch's commit and no other's. A source
    without those partition columns (or a mapping that converts none of them) batches as any copy."""

    def plan(
        self, engine: Engine, op: CopyRows, batch_rows: int, done: Sequence[dict[str, Any]]
    ) -> list[Batch] | None:
        live = engine.describe(op.source)
        if live is None:
            raise EngineError(f"{op.summary()}: table {op.source} does not exist")
        columns = live.partition_columns
        folded = {c.casefold() for c in columns}
        targets = [
            (target, x.parse(expression))
            for target, expression in op.mapping
            if (read := x.referenced_columns(expression)) and read <= folded
        ]
        if not columns or not targets:
            return super().plan(engine, op, batch_rows, done)
        finished = {p for mark in done for p in mark.get("partitions", ())}
        # Counted by partition first, then converted: the conversions read the partition values only.
        counted = exp.select(*[x.column(c) for c in columns], exp.Count(this=exp.Star()).as_(x.ident(_ROWS)))
        counted = counted.from_(x.table(op.source)).group_by(*[x.column(c) for c in columns])
        converted = exp.select(
            *[x.column(c) for c in columns],
            x.column(_ROWS),
            *[expression.copy().as_(x.ident(_converted(i))) for i, (_, expression) in enumerate(targets)],
        ).from_(counted.subquery(x.ident(_PARTITIONS)))
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in engine.sql(x.sql(converted)):
            if _key([row[c] for c in columns]) not in finished:
                groups.setdefault(_key([row[_converted(i)] for i in range(len(targets))]), []).append(row)
        batches: list[Batch] = []
        chunk: list[list[dict[str, Any]]] = []
        count = 0
        for value in sorted(groups):
            group = sorted(groups[value], key=lambda row: _key([row[c] for c in columns]))
            chunk.append(group)
            count += sum(int(row[_ROWS]) for row in group)
            if count >= batch_rows:
                batches.append(_converted_batch(columns, targets, chunk))
                chunk, count = [], 0
        if chunk:
            batches.append(_converted_batch(columns, targets, chunk))
        return batches


_ROWS, _PARTITIONS = "dc_rows", "dc_partitions"


def _converted(position: int) -> str:
    return f"dc_converted_{position}"


def _converted_batch(
    columns: Sequence[str], targets: Sequence[tuple[str, exp.Expr]], groups: Sequence[list[dict[str, Any]]]
) -> Batch:
    """Every source partition of `groups` (each the partitions of one converted value); in the target, the
    rows whose converted columns are NULL-safely equal to the conversion of a group's first partition."""
    partitions = [[row[c] for c in columns] for group in groups for row in group]

    def converted_value(expression: exp.Expr, values: Sequence[object]) -> exp.Expr:
        by_name = {c.casefold(): v for c, v in zip(columns, values, strict=True)}

        def literal(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column) and node.name.casefold() in by_name:
                value = by_name[node.name.casefold()]
                return exp.Null() if value is None else _value(value)
            return node

        return expression.copy().transform(literal)

    def in_target(values: Sequence[object]) -> exp.Expr:
        terms = [
            exp.NullSafeEQ(this=x.column(target), expression=converted_value(expression, values))
            for target, expression in targets
        ]
        return exp.and_(*terms) if len(terms) > 1 else terms[0]

    return Batch(
        {"partitions": [_key(v) for v in partitions]},
        exp.or_(*[_matching(columns, v) for v in partitions]),
        exp.or_(*[in_target([group[0][c] for c in columns]) for group in groups]),
    )


class LastCatchUpRows(BackfillRows):
    """An in-place rename's last catch-up: first the old column's updates since the cutover's backfill
    (`engine.fence.carry_renamed_column`, one MERGE), then the NULLs in batches as any backfill."""

    def plan(
        self, engine: Engine, op: Backfill, batch_rows: int, done: Sequence[dict[str, Any]]
    ) -> list[Batch] | None:
        from delta_contracts.engine.fence import carry_renamed_column

        carry_renamed_column(engine, op)
        return super().plan(engine, op, batch_rows, done)


BACKFILL_ROWS = BackfillRows()
LAST_CATCH_UP_ROWS = LastCatchUpRows()
COPY_ROWS = CopyRowsInBatches()
COPY_CONVERTED_PARTITIONS = CopyConvertedPartitionsInBatches()


def _range_key(live: LiveTable, carried: dict[str, str] | None) -> str | None:
    for column in live.columns:
        if column.type in INTEGRAL and (carried is None or column.name.casefold() in carried):
            return column.name
    return None
