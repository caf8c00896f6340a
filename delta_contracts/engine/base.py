"""The one engine interface everything above the engine layer uses."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum, auto
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.engine import DEFAULT_CONFLICT_PATIENCE
from delta_contracts.engine.verify import held_since
from delta_contracts.errors import FailedError, InputError
from delta_contracts.live import Commit, LiveTable, property_set_by
from delta_contracts.marks import FENCED_INTO
from delta_contracts.plan.conditions import (
    AllOf,
    AnyOf,
    Condition,
    HistoryCondition,
    IdentityCoversRows,
    NoRowsWhere,
    RenamedColumnCarried,
    UnchangedSinceFence,
    ViewDefined,
    describe,
    holds,
)
from delta_contracts.plan.ops import Op
from delta_contracts.state.state_table import PathStateTable, StateTable
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.row_moves import RowMover

# The Spark setting whose value Delta writes into a commit's userMetadata: how a commit is tied to its op.
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


class EngineError(FailedError):
    """An op could not run; the message says which op, on which table, and why."""


class EngineChoiceError(InputError, EngineError):
    """The engine asked for cannot be chosen (an unknown name, connect without a URL, a bad `--conf`):
    bad input, not a failed op."""


class Unread(Enum):
    """A value the caller has not read (as opposed to None, read and absent)."""

    UNREAD = auto()


class PartialOpError(EngineError):
    """An op committed to the table yet did not do what it says: the Delta log holds its version."""

    def __init__(self, op: Op, version: int, why: str) -> None:
        self.op, self.version = op, version
        super().__init__(
            f"{op.summary()} on {op.table}: partial: the table is now at version {version}, "
            f"but {why}; inspect that commit (DESCRIBE HISTORY) before retrying"
        )


class PreconditionFailedError(EngineError):
    """Rows break an op's pre-check. `broken`: what they break, as the condition's named parts say, with how
    many rows break each (empty when the condition has no parts); the samples are of the first."""

    def __init__(
        self,
        op: Op,
        condition: NoRowsWhere,
        count: int,
        samples: list[dict[str, Any]],
        broken: Sequence[tuple[str, int, str]] = (),
    ) -> None:
        self.op, self.condition, self.count, self.samples = op, condition, count, samples
        self.broken = [(why, n) for why, n, _ in broken]
        # Each sample row as JSON (dates, decimals and timestamps as their text), never a dict's repr.
        shown = "\n".join(f"    {json.dumps(row, default=str, ensure_ascii=False)}" for row in samples)
        if not broken:
            super().__init__(
                f"{op.summary()}: {count} row(s) of {condition.table} violate it "
                f"(WHERE {condition.predicate}); fix them first. Sample:\n{shown}"
            )
            return
        lines = "\n".join(f"  - {why}: {n} row(s)" for why, n, _ in broken)
        super().__init__(
            f"{op.summary()}: {count} row(s) of {condition.table} cannot be copied; fix them first, or "
            f"change the contract and plan again:\n{lines}\n"
            f"Sample of the first ({broken[0][0]}; WHERE {broken[0][2]}):\n{shown}"
        )


class ChangedSinceFenceError(EngineError):
    """The drop of an old version's table would lose rows committed to it after the cutover's fence."""

    def __init__(self, op: Op, table: TableId, count: int, samples: list[dict[str, Any]]) -> None:
        self.op, self.count, self.samples = op, count, samples
        shown = "\n".join(f"    {json.dumps(row, default=str, ensure_ascii=False)}" for row in samples)
        super().__init__(
            f"{op.summary()}: {count} row(s) of {table} were written, changed or deleted after the cutover's "
            "fence carried it into the new table (a producer that never switched); dropping it would lose "
            "them. Carry each over to the new table by its key (or undo it on the old one), then apply "
            "again. "
            f"Rows (`change`: whether the table has it now, or had it at the fence):\n{shown}"
        )


@dataclass(slots=True)
class Reads:
    """What the engine has read of the tables and views while it decides about one op (is it done, may it
    run): the parts of its conditions on one table share one DESCRIBE. Valid only while nothing writes, so
    never kept across the op's run."""

    tables: dict[TableId, LiveTable | None] = field(default_factory=dict)
    views: dict[TableId, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OpOutcome:
    op_kind: str
    table: TableId  # the table the op left (its new name, for a rename)
    version: int | None  # the Delta table version the op's commit produced (None: no table commit)
    path: str  # how it ran: sql | delta-rs | rewrite | catalog | skipped
    detail: str = ""


SKIPPED_DETAIL = "postcondition already holds"


class Engine(ABC):
    name: str = "engine"
    # `<warehouse>/_delta_contracts`: the apply ledger, leases and the telemetry logs live here.
    state_dir: Path
    # Commits retried after another writer's commit won the race (`engine.retry`), since the engine opened.
    retried: int = 0
    # Seconds a statement that lost a commit race is run again for (`engine.retry`); `apply` sets it.
    conflict_patience: float = DEFAULT_CONFLICT_PATIENCE

    def count_retry(self, conflict: str) -> None:
        self.retried += 1

    @abstractmethod
    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        """Perform the op (assumes its precondition was checked); report the commit it produced."""

    @abstractmethod
    def describe(self, table: TableId, *, with_version: bool = True) -> LiveTable | None:
        """The live table as its Delta log says, or None when there is no such table.

        `with_version=False` lets an engine skip reading the table's version where that costs a scan of its
        history (Spark: DESCRIBE HISTORY); `version` may then be None. Conditions never need it."""

    @abstractmethod
    def views(self) -> Mapping[TableId, str]:
        """Views the engine knows, with their query text."""

    @abstractmethod
    def sql(self, statement: str) -> list[dict[str, Any]]:
        """Run one statement; rows as dicts."""

    @abstractmethod
    def history(self, table: TableId) -> list[Commit]:
        """The table's commits, oldest first."""

    def ledger_table(self) -> StateTable:
        """The apply ledger's table: `<state_dir>/ledger`, unless the engine was given a catalog table."""
        return PathStateTable(self.state_dir / "ledger")

    def view_text(self, view: TableId) -> str | None:
        """The query text of one view, or None when no view has that name."""
        return self.views().get(view)

    def run_statement(
        self, statement: str, *, tag: str | None = None, table: TableId | None = None
    ) -> int | None:
        """Run one data statement of an op (a batch of a backfill or copy) writing `table`, its commit tagged
        with `tag`; the rows it wrote, where the engine reports them (`rows_written`)."""
        return rows_written(self.sql(statement))

    def holding_producers(self, table: TableId) -> AbstractContextManager[None]:
        """Producers of `table` held off it while the block runs (`apply.schedule.held_runs`), where the
        engine has a hold (spark: `engine.spark.hold`); elsewhere nothing."""
        return nullcontext()

    def row_mover(self, op: Op) -> RowMover[Any] | None:
        """How the op moves rows in batches on this engine (its op table says), or None: it runs whole."""
        return None

    def unsupported_reason(self, op: Op) -> str | None:
        """Why this engine cannot run `op`, or None; checked for a whole migration before any op runs."""
        return None

    def check_supported(self, ops: Sequence[Op]) -> None:
        reasons = [f"{op.summary()}: {why}" for op in ops if (why := self.unsupported_reason(op)) is not None]
        if reasons:
            raise EngineError(f"the {self.name} engine cannot run this migration:\n  " + "\n  ".join(reasons))

    def resumed(self, done: Sequence[Op]) -> None:
        """The ops of a migration an earlier run did (the ledger's), before this run does the rest: an engine
        that acts on what an op of the same migration did (the spark engine, where a cutover's rename left
        the old table) learns it here."""
        return None

    def close(self) -> None:
        return None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- conditions ---------------------------------------------------------------------------------------
    def count_where(self, table: TableId, predicate: str) -> int:
        from sqlglot import exp

        from delta_contracts.sql import expressions as x

        query = (
            exp.select(exp.Count(this=exp.Star()).as_("n")).from_(x.table(table)).where(x.parse(predicate))
        )
        return int(self.sql(x.sql(query))[0]["n"])

    def sample_where(self, table: TableId, predicate: str, limit: int = 5) -> list[dict[str, Any]]:
        from sqlglot import exp

        from delta_contracts.sql import expressions as x

        query = exp.select(exp.Star()).from_(x.table(table)).where(x.parse(predicate)).limit(limit)
        return self.sql(x.sql(query))

    def holds(self, condition: Condition, reads: Reads | None = None) -> bool:
        """`reads`: what this decision has read so far, to be shared with the next condition checked before
        anything writes (a fresh one when None)."""
        return self._holds(condition, Reads() if reads is None else reads)

    def _holds(self, condition: Condition, reads: Reads) -> bool:
        if isinstance(condition, NoRowsWhere):
            if self._described(condition.table, reads) is None:
                return False
            return self.count_where(condition.table, condition.predicate) == 0
        if isinstance(condition, IdentityCoversRows):
            return self._identity_covers_rows(condition, reads)
        if isinstance(condition, UnchangedSinceFence):
            return self.changed_since_fence(condition.table)[0] == 0
        if isinstance(condition, RenamedColumnCarried):
            pending = self.renamed_column_updates(condition)
            return pending is None or self.count_rows(pending) == 0
        if isinstance(condition, HistoryCondition):
            if self._described(condition.table, reads) is None:
                return condition.when_absent
            return condition.holds_in(self.history(condition.table))
        if isinstance(condition, AllOf):
            return all(self._holds(c, reads) for c in self._unsuperseded(condition.conditions))
        if isinstance(condition, AnyOf):
            return any(self._holds(c, reads) for c in condition.conditions)
        live = {t: found for t in _tables_of(condition) if (found := self._described(t, reads)) is not None}
        texts = {v: text for v in _views_of(condition) if (text := self._view_text(v, reads)) is not None}
        if not holds(condition, live, texts):
            return False
        return not isinstance(condition, ViewDefined) or self.view_types_current(condition.view)

    def _identity_covers_rows(self, condition: IdentityCoversRows, reads: Reads) -> bool:
        from sqlglot import exp

        from delta_contracts.sql import expressions as x

        live = self._described(condition.table, reads)
        column = None if live is None else live.column(condition.column)
        if column is None or column.identity is None:
            return False
        value = x.column(column.name)
        if column.identity_high_water_mark is None:  # Delta assigned nothing yet: any value is beyond it
            beyond: exp.Expr = exp.Not(this=exp.Is(this=value, expression=exp.Null()))
        else:
            mark = exp.Literal.number(column.identity_high_water_mark)
            step = column.identity[2]
            beyond = exp.GT(this=value, expression=mark) if step > 0 else exp.LT(this=value, expression=mark)
        return self.count_where(condition.table, x.sql(beyond)) == 0

    def _described(self, table: TableId, reads: Reads) -> LiveTable | None:
        if table not in reads.tables:
            reads.tables[table] = self.describe(table, with_version=False)
        return reads.tables[table]

    def _view_text(self, view: TableId, reads: Reads) -> str | None:
        if view not in reads.views:
            reads.views[view] = self.view_text(view)
        return reads.views[view]

    def view_types_current(self, view: TableId) -> bool:
        """Whether a view whose text is the wanted one also reads its columns in today's types (engines that
        bind a view's types at creation say; the default binds nothing)."""
        return True

    def check_precondition(self, op: Op, reads: Reads | None = None) -> None:
        condition = op.precondition()
        if condition is None:
            return
        checks = self._unsuperseded(condition.conditions if isinstance(condition, AllOf) else (condition,))
        for check in checks:
            if isinstance(check, NoRowsWhere):
                count = self.count_where(check.table, check.predicate)
                if count:
                    # one scan while it holds; only a failed check is taken apart, to say what broke
                    broken = [
                        (why, n, where)
                        for why, where in check.parts
                        if (n := self.count_where(check.table, where))
                    ]
                    sampled = broken[0][2] if broken else check.predicate
                    samples = self.sample_where(check.table, sampled)
                    raise PreconditionFailedError(op, check, count, samples, broken)
            elif isinstance(check, UnchangedSinceFence):
                count, samples = self.changed_since_fence(check.table)
                if count:
                    raise ChangedSinceFenceError(op, check.table, count, samples)
            elif not self.holds(check, reads):
                raise EngineError(f"{op.summary()}: it needs that {describe(check)}, which does not hold")

    def _unsuperseded(self, checks: Sequence[Condition]) -> tuple[Condition, ...]:
        """`checks` without the row checks of a table a versioned cutover's fence marked when they stand
        beside its `UnchangedSinceFence`: the drop's by-key check against the new table (`left_behind`)
        holds only of a table whose fence inserted missing keys alone (before it marked tables, or the `.sql`
        file's cell). Since the fence carries every change up to its mark, a key missing from the new table
        was deleted there by a producer that switched, and what the drop must not lose is what changed on
        the old table after the mark."""
        fenced = {
            c.table
            for c in checks
            if isinstance(c, UnchangedSinceFence) and self._fence_version(c.table) is not None
        }
        return tuple(c for c in checks if not (isinstance(c, NoRowsWhere) and c.table in fenced))

    def _fence_version(self, table: TableId) -> int | None:
        """The old version's table's commit that the fence marked (`marks.FENCED_INTO`), if any."""
        if self.describe(table, with_version=False) is None:
            return None
        return property_set_by(self.history(table), FENCED_INTO)

    def changed_since_fence(self, table: TableId) -> tuple[int, list[dict[str, Any]]]:
        """Rows of `table` (an old version's) added, changed or deleted since the version the versioned
        cutover's fence carried over (`engine.fence`), by every column the table has: their count and a
        sample. (0, []) for a table no fence marked (its fence ran before it marked tables, or by hand)."""
        from sqlglot import exp

        from delta_contracts.plan.fence import changed_since
        from delta_contracts.sql import expressions as x

        version = self._fence_version(table)
        live = self.describe(table, with_version=False)
        if version is None or live is None:
            return 0, []
        rows = changed_since(table, [(c.name, c.type) for c in live.columns], version)
        counted = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(
            exp.Subquery(this=rows, alias=exp.TableAlias(this=x.ident("q")))
        )
        count = int(self.sql(x.sql(counted))[0]["n"])
        return count, (self.sql(x.sql(rows.limit(5))) if count else [])

    def renamed_column_updates(self, condition: RenamedColumnCarried) -> Any:
        """The keys whose renamed column an old producer's update left behind (`plan.fence`), as a query;
        None where that cannot be known (`renamed_column_basis`)."""
        from delta_contracts.plan.fence import renamed_column_updates

        basis = self.renamed_column_basis(condition)
        if basis is None:
            return None
        key, mark = basis
        return renamed_column_updates(condition.table, condition.column, condition.expression, key, mark)

    def renamed_column_basis(self, condition: RenamedColumnCarried) -> tuple[list[str], int] | None:
        """The table's unique key (from its stamp) and the version of the old column's deprecation mark, or
        None without either (or when the new column is computed from more than one old one)."""
        from delta_contracts.marks import STAMP_CONTRACT, column_mark_key
        from delta_contracts.plan.stamp import read_contract_stamp
        from delta_contracts.sql.expressions import referenced_columns

        live = self.describe(condition.table, with_version=False)
        sources = sorted(referenced_columns(condition.expression))
        if live is None or len(sources) != 1 or live.column(condition.column) is None:
            return None
        unique = read_contract_stamp(live.properties.get(STAMP_CONTRACT)).get("quality", {}).get("unique")
        key = [str(c) for c in unique[0]] if unique else []
        if not key or any(live.column(c) is None for c in key):
            return None
        old = live.column(sources[0])
        mark = property_set_by(
            self.history(condition.table), column_mark_key(old.name if old else sources[0])
        )
        return None if mark is None else (key, mark)

    def count_rows(self, query: Any) -> int:
        """How many rows a query (a sqlglot one) returns."""
        from sqlglot import exp

        from delta_contracts.sql import expressions as x

        counted = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(
            exp.Subquery(this=query, alias=exp.TableAlias(this=x.ident("q")))
        )
        return int(self.sql(x.sql(counted))[0]["n"])

    def table_version(self, table: TableId) -> int | None:
        """The table's current Delta version, or None when there is no such table."""
        live = self.describe(table)
        return None if live is None else live.version

    def postcondition_holds(self, op: Op, reads: Reads | None = None) -> bool:
        post = op.postcondition()
        return post is not None and self.holds(post, reads)

    def apply_op(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        """State-based and idempotent: skip an op whose postcondition holds, check, run, verify.

        Recording what ran is the caller's (`delta_contracts.apply` writes the ledger)."""
        if self.skip_or_check(op):
            return OpOutcome(op.kind, op.table, None, "skipped", SKIPPED_DETAIL)
        return self.run_verified(op, tag=tag)

    def skip_or_check(self, op: Op) -> bool:
        """True when the op's postcondition already holds (nothing to run); otherwise check its precondition
        (PreconditionFailedError when rows break it) and return False. The two read the table once."""
        reads = Reads()
        if self.postcondition_holds(op, reads):
            return True
        self.check_precondition(op, reads)
        return False

    def run_verified(
        self, op: Op, *, tag: str | None = None, before: int | Unread | None = Unread.UNREAD
    ) -> OpOutcome:
        """Run the op and check the outcome against the Delta log: an op that failed must have left no
        commit, and one that ran must show its result; otherwise it is reported as partial with the version
        it made. `before`: the table's version when the caller has just read it (None: no such table)."""
        if isinstance(before, Unread):
            before = self.table_version(op.table)
        try:
            outcome = self.run(op, tag=tag)
        except EngineError as err:
            if getattr(err, "committed_nothing", False):
                raise  # a commit that lost to another writer's: the version moved, but not by this op
            after = self.table_version(op.table)
            if after is not None and after != before:
                raise PartialOpError(op, after, f"the op failed: {err}") from err
            raise
        result = op.result_condition()
        if result is not None and not self.holds(result):
            after = self.table_version(op.table)
            if after is not None and after != before:
                # a producer may have written rows the op's result is about since it committed
                if before is not None and held_since(self, result, op.table, before, after):
                    return outcome
                raise PartialOpError(op, after, f"the Delta log does not show {result}")
            raise EngineError(f"{op.summary()} on {op.table}: ran, but the table does not show {result}")
        return outcome


def _views_of(condition: Condition) -> list[TableId]:
    if isinstance(condition, AllOf | AnyOf):
        return [v for c in condition.conditions for v in _views_of(c)]
    return [condition.view] if isinstance(condition, ViewDefined) else []


def _tables_of(condition: Condition) -> list[TableId]:
    if isinstance(condition, AllOf | AnyOf):
        return [t for c in condition.conditions for t in _tables_of(c)]
    table = getattr(condition, "table", None) or getattr(condition, "view", None)
    return [table] if table is not None else []


def rows_written(result: Sequence[Mapping[str, Any]]) -> int | None:
    """The rows a DML statement wrote, from the one row Delta answers it with (`num_affected_rows`), or None
    when the engine answers nothing of the kind."""
    if len(result) != 1:
        return None
    count = result[0].get("num_affected_rows")
    return count if isinstance(count, int) else None
