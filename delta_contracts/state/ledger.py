"""The apply ledger: a Delta table, one row per op attempt event. By default it is at
`<warehouse>/_delta_contracts/ledger`, written with delta-rs (the same on every engine, and no Spark needed);
on `spark` and `connect`, contracts.yml's `engine.ledger` names a catalog table instead
(`state.state_table`).

Rows are only ever appended: an op attempt writes `started` before it runs and
`succeeded`/`skipped`/`failed`/`forced` after, plus a `batch` row per finished batch of a batched backfill
or copy (its watermark), and a `held` row for an op a run left at its shut gate (why, in `detail`).
`rehashed` rows record a deliberate checksum override, `created` rows the ops of `create`. Readers fold
the events: the latest final row of an op says whether it is done; the ledger's claims on table versions
tell drift which commits are ours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.contract.errors import first_line
from delta_contracts.paths import inside
from delta_contracts.state.state_table import PathStateTable, StateTable, StateTableError, who

if TYPE_CHECKING:
    from delta_contracts.plan.ops import Op

LEDGER_DIR = "ledger"


class Status(StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    SKIPPED = "skipped"
    FAILED = "failed"
    FORCED = "forced"  # succeeded through a gate opened with --force --reason
    BATCH = "batch"  # one batch of a batched op finished; `watermark` says which
    REHASHED = "rehashed"  # `rehash`: the migration's new checksum is accepted
    CREATED = "created"  # an op of `create` (a table made straight from its contract)
    # `discard`: a planned migration removed, having served no reader; the rows of it recorded before are
    # retracted (`current`): every fold reads the ledger as if it had never been planned
    DISCARDED = "discarded"
    LEASE_BROKEN = "lease_broken"  # `apply --break-lease --reason`: an operator freed the table
    LEDGER_RESTARTED = "ledger_restarted"  # `apply --force --reason` on a stamped table this ledger never saw
    # `apply --force --reason` ran a migration's phase in an environment before an earlier one of
    # `promote:` finished it; `detail` says what they lacked
    PROMOTION_FORCED = "promotion_forced"
    HELD = "held"  # `apply` found the op's gate shut and left it; `detail` says why (nothing ran)


DONE = frozenset({Status.SUCCEEDED, Status.SKIPPED, Status.FORCED})
FINAL = DONE | {Status.FAILED}
# Statuses whose row proves the migration's file, as it was then, reached the table.
APPLIED = DONE | {Status.STARTED, Status.BATCH, Status.REHASHED}


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    contract: str  # the contract id (the migrations folder)
    migration_id: str  # NNNN_slug; `create <version>` for `create`
    table: str  # the table the op ran on (its new name, for a rename)
    phase: str
    op_index: int  # 1-based, as numbered in the migration's .sql file; 0 for whole-migration rows
    op_kind: str
    status: str
    run_id: str = ""
    sql: str = ""
    checksum: str = ""
    error: str = ""
    engine: str = ""
    path: str = ""  # how it ran: sql | delta-rs | rewrite | catalog | skipped
    version_before: int | None = None  # the table's version when the op started
    version: int | None = None  # the table version the op produced
    to_version: str = ""  # the contract version the migration reaches
    user: str = ""
    host: str = ""
    pid: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    reason: str = ""  # --force --reason, or rehash's reason
    watermark: str = ""  # JSON: the last finished batch of a batched op
    detail: str = ""
    renamed_from: str = ""  # a rename: the table's name before (its commits so far are claimed under it)
    recorded_at: datetime | None = None
    seq: int = 0  # order within one append
    # What the op was (`op_checksum`): its row counts for the op of the migration with that content, wherever
    # re-planning put it, and never for another op that came to stand at its index. Empty in older rows.
    op_checksum: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.contract, self.migration_id, self.op_index)

    @property
    def done(self) -> bool:
        """The op finished: it succeeded, was found done (skipped) or was forced past its gate."""
        return self.status in DONE

    @property
    def forced(self) -> bool:
        """The op ran past its shut gate, with `reason`."""
        return self.status == Status.FORCED


def _schema() -> Any:
    import pyarrow as pa

    stamp = pa.timestamp("us", tz="UTC")
    types = {
        "op_index": pa.int32(),
        "version_before": pa.int64(),
        "version": pa.int64(),
        "pid": pa.int64(),
        "seq": pa.int32(),
        "started_at": stamp,
        "ended_at": stamp,
        "recorded_at": stamp,
    }
    return pa.schema([pa.field(f.name, types.get(f.name, pa.string())) for f in fields(LedgerEntry)])


def now() -> datetime:
    return datetime.now(UTC)


# The rows about a contract's migrations as a whole, no op of theirs: their kind and status.
EVENTS = {
    "rehash": Status.REHASHED,
    "discard": Status.DISCARDED,
    "break_lease": Status.LEASE_BROKEN,
    "promotion": Status.PROMOTION_FORCED,
    "ledger_restarted": Status.LEDGER_RESTARTED,
}


def event_row(contract: str, kind: str, *, table: str = "", **values: Any) -> LedgerEntry:
    """A row about a contract's migrations as a whole (`EVENTS`: a rehash, a discard, a broken lease, a
    forced promotion, a restarted ledger): by whom and when, now; `table` the one it concerns (the
    contract's, unless given); `values`: the row's other fields."""
    user, host, pid = who()
    at = now()
    return LedgerEntry(
        contract=contract,
        migration_id=values.pop("migration_id", ""),
        table=table or contract,
        phase="",
        op_index=0,
        op_kind=kind,
        status=EVENTS[kind].value,
        user=user,
        host=host,
        pid=pid,
        started_at=at,
        ended_at=at,
        **values,
    )


def op_row(
    contract: str, migration_id: str, index: int, op: Op, status: Status, **values: Any
) -> LedgerEntry:
    """A row about one op of a migration (`index` from 1): what it is, by whom; `values`: the row's other
    fields (when, how it ran, the versions it saw and made)."""
    user, host, pid = who()
    base = LedgerEntry(
        contract=contract,
        migration_id=migration_id,
        table=str(op.table),
        phase=op.phase.value,
        op_index=index,
        op_kind=op.kind,
        op_checksum=op_checksum(op),
        status=status.value,
        user=user,
        host=host,
        pid=pid,
    )
    return replace(base, **values)


@contextmanager
def storage_errors(what: str, doing: str) -> Iterator[None]:
    """A toolkit table (the ledger, the leases) that cannot be read or written — a corrupted or half-deleted
    commit, a truncated data file — as one StateTableError line naming it; delta-rs's messages carry a Rust
    backtrace that has no place on a terminal."""
    from deltalake.exceptions import DeltaError
    from pyarrow import ArrowException

    try:
        yield
    except StateTableError:
        raise
    except (DeltaError, ArrowException, OSError, ValueError) as err:
        raise StateTableError(f"{what} cannot be {doing}: {first_line(err)}") from None
    except BaseException as err:
        if type(err).__name__ != "PanicException":  # pyo3's: delta-rs gave up on the log it read
            raise
        raise StateTableError(f"{what} cannot be {doing}: {first_line(err)}") from None


class Ledger:
    """The ledger's rows in a state table: `Ledger(state_dir)` is the default one at
    `<state_dir>/ledger`; an engine names its own with `Ledger(engine.ledger_table())`."""

    def __init__(self, where: Path | StateTable) -> None:
        located = PathStateTable(inside(where, LEDGER_DIR)) if isinstance(where, Path) else where
        self.table: StateTable = located

    @property
    def where(self) -> str:
        return self.table.where

    def append(self, entries: Sequence[LedgerEntry]) -> None:
        """One Delta commit for the rows; concurrent appends do not conflict."""
        if not entries:
            return
        stamp = now()
        rows = [asdict(replace(e, recorded_at=stamp, seq=i)) for i, e in enumerate(entries)]
        with storage_errors(f"the ledger at {self.where}", "written"):
            self.table.append(rows, _schema())

    def entries(
        self, contracts: Iterable[str] | None = None, *, retracted: bool = False
    ) -> list[LedgerEntry]:
        """Every row (of `contracts` only, when given), in the order they were recorded; the rows a later
        `discard` retracted only with `retracted` (the history shown to people), see `current`."""
        wanted = {c.casefold() for c in contracts} if contracts is not None else None
        names = {f.name for f in fields(LedgerEntry)}
        out = []
        with storage_errors(f"the ledger at {self.where}", "read"):
            rows = self.table.read(_schema())
        for row in rows:
            entry = LedgerEntry(**{k: v for k, v in row.items() if k in names})
            if wanted is None or entry.contract.casefold() in wanted:
                out.append(entry)
        epoch = datetime.min.replace(tzinfo=UTC)
        ordered = sorted(out, key=lambda e: (e.recorded_at or epoch, e.seq))
        return ordered if retracted else current(ordered)


def current(entries: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """The rows still in force: those of a migration recorded before its `discarded` row are left out (the
    discard undid what they did), so that a migration planned again under the same id starts afresh. The
    `discarded` row itself stays: it says who discarded what, and why."""
    last: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(entries):
        if entry.status == Status.DISCARDED:
            last[(entry.contract.casefold(), entry.migration_id)] = i
    return [e for i, e in enumerate(entries) if i >= last.get((e.contract.casefold(), e.migration_id), -1)]


# -- folding the events -------------------------------------------------------------------------------------
def op_checksum(op: Op) -> str:
    """The op's content: its kind and every field, as the migration's JSON holds them."""
    from delta_contracts.plan.serialize import op_to_data

    text = json.dumps(op_to_data(op), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Claim:
    """Table versions a toolkit op produced: (after, up_to] — or everything up to `up_to` after a rewrite."""

    after: int | None
    up_to: int

    def covers(self, version: int) -> bool:
        if self.after is None or self.up_to < self.after:  # a new table, or a rewrite restarted the log
            return version <= self.up_to
        return self.after < version <= self.up_to


def migration_checksum(sql_path: Path, json_path: Path) -> str:
    """What the ledger compares: both files of the migration, the reviewed SQL and the machine ops."""
    digest = hashlib.sha256()
    for path in (sql_path, json_path):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()
