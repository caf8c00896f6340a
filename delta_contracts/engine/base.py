"""The one engine interface everything above the engine layer uses."""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan.conditions import AllOf, AnyOf, Condition, NoRowsWhere, TableId, holds
from delta_contracts.plan.ops import Op


class EngineError(Exception):
    """An op could not run; the message says which op, on which table, and why."""


class PreconditionFailed(EngineError):
    def __init__(self, op: Op, condition: NoRowsWhere, count: int, samples: list[dict[str, Any]]) -> None:
        self.op, self.count, self.samples = op, count, samples
        shown = "\n".join(f"    {row}" for row in samples)
        super().__init__(
            f"{op.summary()}: {count} row(s) of {'.'.join(condition.table)} violate it "
            f"(WHERE {condition.predicate}); fix them first. Sample:\n{shown}"
        )


@dataclass(frozen=True, slots=True)
class OpOutcome:
    op_kind: str
    table: str
    version: int | None  # the Delta table version the op's commit produced (None: no table commit)
    path: str  # how it ran: sql | delta-rs | rewrite | catalog | skipped
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CommitRecord:
    table: str
    version: int
    op_kind: str
    tag: str | None
    engine: str
    path: str
    at: float


class CommitLog:
    """Which table versions the toolkit produced, so any other commit is known to be out of band.

    An append-only JSON-lines file beside the warehouse; the apply ledger will supersede it.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / "commits.jsonl"

    def record(self, record: CommitRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(asdict(record), ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def last_version(self, table: str) -> int | None:
        """The table version after the toolkit's latest commit (a rewrite restarts the numbering)."""
        mine = [r for r in self.records() if r.table.casefold() == table.casefold()]
        return mine[-1].version if mine else None

    def records(self) -> list[CommitRecord]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(CommitRecord(**json.loads(line)))
        return out


class Engine(ABC):
    name: str = "engine"

    @abstractmethod
    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        """Perform the op (assumes its precondition was checked); report the commit it produced."""

    @abstractmethod
    def describe(self, table: TableId) -> LiveTable | None:
        """The live table as its Delta log says, or None when there is no such table."""

    @abstractmethod
    def views(self) -> Mapping[TableId, str]:
        """Views the engine knows, with their query text."""

    @abstractmethod
    def sql(self, statement: str) -> list[dict[str, Any]]:
        """Run one statement; rows as dicts."""

    @abstractmethod
    def history(self, table: TableId) -> list[Commit]:
        """The table's commits, oldest first."""

    @property
    @abstractmethod
    def commit_log(self) -> CommitLog: ...

    def unsupported_reason(self, op: Op) -> str | None:
        """Why this engine cannot run `op`, or None; checked for a whole migration before any op runs."""
        return None

    def check_supported(self, ops: Sequence[Op]) -> None:
        reasons = [f"{op.summary()}: {why}" for op in ops if (why := self.unsupported_reason(op)) is not None]
        if reasons:
            raise EngineError(f"the {self.name} engine cannot run this migration:\n  " + "\n  ".join(reasons))

    def close(self) -> None:
        return None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- conditions ---------------------------------------------------------------------------------------
    def count_where(self, table: TableId, predicate: str) -> int:
        from sqlglot import exp

        from delta_contracts.plan import expressions as x

        query = (
            exp.select(exp.Count(this=exp.Star()).as_("n")).from_(x.table(table)).where(x.parse(predicate))
        )
        return int(self.sql(x.sql(query))[0]["n"])

    def sample_where(self, table: TableId, predicate: str, limit: int = 5) -> list[dict[str, Any]]:
        from sqlglot import exp

        from delta_contracts.plan import expressions as x

        query = exp.select(exp.Star()).from_(x.table(table)).where(x.parse(predicate)).limit(limit)
        return self.sql(x.sql(query))

    def holds(self, condition: Condition) -> bool:
        if isinstance(condition, NoRowsWhere):
            if self.describe(condition.table) is None:
                return False
            return self.count_where(condition.table, condition.predicate) == 0
        if isinstance(condition, AllOf):
            return all(self.holds(c) for c in condition.conditions)
        if isinstance(condition, AnyOf):
            return any(self.holds(c) for c in condition.conditions)
        tables = {t: live for t in _tables_of(condition) if (live := self.describe(t)) is not None}
        return holds(condition, tables, dict(self.views()))

    def check_precondition(self, op: Op) -> None:
        condition = op.precondition()
        if condition is None:
            return
        checks = condition.conditions if isinstance(condition, AllOf) else (condition,)
        for check in checks:
            if isinstance(check, NoRowsWhere):
                count = self.count_where(check.table, check.predicate)
                if count:
                    raise PreconditionFailed(
                        op, check, count, self.sample_where(check.table, check.predicate)
                    )
            elif not self.holds(check):
                raise EngineError(f"{op.summary()}: precondition {check} does not hold")

    def apply_op(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        """State-based and idempotent: skip an op whose postcondition holds, check, run, record."""
        post = op.postcondition()
        if post is not None and self.holds(post):
            return OpOutcome(op.kind, ".".join(op.table), None, "skipped", "postcondition already holds")
        self.check_precondition(op)
        outcome = self.run(op, tag=tag)
        if outcome.version is not None:
            self.commit_log.record(
                CommitRecord(
                    outcome.table, outcome.version, op.kind, tag, self.name, outcome.path, time.time()
                )
            )
        return outcome


def _tables_of(condition: Condition) -> list[TableId]:
    if isinstance(condition, AllOf | AnyOf):
        return [t for c in condition.conditions for t in _tables_of(c)]
    table = getattr(condition, "table", None) or getattr(condition, "view", None)
    return [table] if table is not None else []
