"""What the runner says of each op (`OpReport`, `OpStatus`), of each batch (`BatchProgress`), of each table
(`TableRun`), what it is asked (`ApplyOptions`), and the one value it carries per op in flight
(`OpInFlight`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from delta_contracts.plan.conditions import AllOf, Condition, NoRowsWhere, describe
from delta_contracts.plan.ops import PHASES, Op, Phase
from delta_contracts.plan.stored import StoredMigration
from delta_contracts.state import ledger as lg
from delta_contracts.state.lease import DEFAULT_TTL
from delta_contracts.tableid import TableId
from delta_contracts.telemetry.gate import DEFAULT_FRESHNESS


@dataclass(frozen=True, slots=True)
class OpInFlight:
    """One op of a contract's stored migration (its 1-based `index` there), as the runner carries it from
    its decision to its ledger rows: every step of one op takes this one value."""

    contract: str
    stored: StoredMigration
    index: int
    op: Op

    @property
    def name(self) -> str:
        return f"{self.stored.migration_id} op {self.index}"

    @property
    def key(self) -> tuple[str, str, int]:
        """The op's key in the ledger (its batches' marks are found by it)."""
        return (self.contract, self.stored.migration_id, self.index)

    def tag(self, reason: str | None) -> str:
        """The userMetadata of the op's commits: which op of which migration made them."""
        meta: dict[str, object] = {
            "contract": self.contract,
            "migration": self.stored.migration_id,
            "op": self.index,
            "phase": self.op.phase.value,
            "kind": self.op.kind,
        }
        if reason:
            meta["forced_reason"] = reason
        return json.dumps({"delta_contracts": meta}, ensure_ascii=False, sort_keys=True)


class OpStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    SKIPPED = "skipped"
    FORCED = "forced"
    FAILED = "failed"
    DONE = "done"  # the ledger says it finished in an earlier run
    SUPERSEDED = "superseded"  # `create` made the table at this contract version or later
    HELD = "held"  # its gate is shut
    WAITING = "waiting"  # behind a held op, or its phase was not selected
    PLANNED = "would run"  # --dry-run
    WOULD_SKIP = "would skip"  # --dry-run, postcondition holds


@dataclass(frozen=True, slots=True)
class OpReport:
    contract: str
    migration_id: str
    index: int
    phase: str
    kind: str
    summary: str
    table: str
    status: OpStatus
    sql: str = ""
    path: str = ""
    version: int | None = None  # the table's version after the op
    version_before: int | None = None  # … and before it: the same when the op committed nothing
    detail: str = ""
    prechecks: tuple[str, ...] = ()  # SQL counting queries that must return 0 before it runs
    requires: tuple[str, ...] = ()  # what else must hold of the tables before it runs, in words
    gate: str = ""  # what opens it
    reasons: tuple[str, ...] = ()  # why it is held or waiting
    retries: int = 0  # commits run again after another writer's commit won the race (engine.retry)

    @property
    def committed(self) -> bool:
        """Whether the op committed a new version of its table (a skipped or empty op commits none)."""
        return self.version is not None and self.version != self.version_before

    def to_json(self) -> dict[str, object]:
        return {
            "contract": self.contract,
            "migration": self.migration_id,
            "op": self.index,
            "phase": self.phase,
            "kind": self.kind,
            "summary": self.summary,
            "table": self.table,
            "status": self.status.value,
            "sql": self.sql,
            "path": self.path,
            "version": self.version,
            "version_before": self.version_before,
            "committed": self.committed,
            "detail": self.detail,
            "prechecks": list(self.prechecks),
            "requires": list(self.requires),
            "gate": self.gate,
            "reasons": list(self.reasons),
            "retries": self.retries,
        }


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """A batch of a row-moving op (a backfill, a copy) finished: how far the op is, for a progress line."""

    name: str  # the op in its migration: "<migration> op <n>"
    summary: str
    table: str
    done: int  # batches finished, counted from the op's first batch (a resumed run's earlier ones included)
    total: int
    rows: int | None  # rows this run's batches wrote so far (None: the engine reports no counts)
    elapsed: float  # seconds since this run started the op's batches

    def line(self) -> str:
        rows = "" if self.rows is None else f", {self.rows:,} rows written"
        return (
            f"{self.table} {self.name}: {self.summary}: batch {self.done}/{self.total}{rows}, "
            f"{self.elapsed:.1f} s"
        )


@dataclass(frozen=True)
class ApplyOptions:
    to_version: str | None = None
    phases: frozenset[Phase] = frozenset(PHASES)
    dry_run: bool = False
    force_reason: str | None = None  # opens shut gates; recorded
    batch_rows: int = 1_000_000
    lease_ttl: timedelta = DEFAULT_TTL
    clock: Callable[[], datetime] = lg.now
    readers_freshness: timedelta = DEFAULT_FRESHNESS  # how recent the readers log must be (contracts.yml)
    on_event: Callable[[OpReport], None] | None = None  # progress: every op as it starts and ends
    on_batch: Callable[[BatchProgress], None] | None = None  # progress: every batch of a row-moving op
    on_boundary: Callable[[str], None] | None = None  # called between steps (tests kill the process here)


@dataclass
class TableRun:
    contract: str
    reports: list[OpReport] = field(default_factory=list)
    failure: OpReport | None = None
    takeover: str | None = None  # the dead holder whose lease this run took over

    @property
    def held(self) -> list[OpReport]:
        return [r for r in self.reports if r.status is OpStatus.HELD]


def _preconditions(op: Op) -> tuple[Condition, ...]:
    condition = op.precondition()
    return condition.conditions if isinstance(condition, AllOf) else (condition,) if condition else ()


def prechecks(op: Op) -> tuple[str, ...]:
    """The queries that must return 0 before the op may run (tightening ops, copies)."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    out = []
    for check in _preconditions(op):
        if isinstance(check, NoRowsWhere):
            query = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(x.table(check.table))
            out.append(x.sql(query.where(x.parse(check.predicate))))
    return tuple(out)


def requirements(op: Op) -> tuple[str, ...]:
    """The rest of the op's precondition, the metadata it needs of the tables, in words."""
    return tuple(describe(c) for c in _preconditions(op) if not isinstance(c, NoRowsWhere))


def op_sql(op: Op) -> str:
    from delta_contracts.plan.render import render

    try:
        return render(op)
    except TypeError:  # ops with no single statement (clustering on some targets)
        return ""


@dataclass(frozen=True)
class Attempt:
    """How an op that started ended, when it did not fail: the ledger row's status and what it ran."""

    status: lg.Status
    table: TableId  # the table it left (a rename's new name)
    path: str  # how it ran: sql | delta-rs | delta-spark | catalog | rewrite | skipped
    version: int | None
    detail: str
