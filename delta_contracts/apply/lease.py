"""One runner per table: a lease taken by a Delta commit on `<warehouse>/_delta_contracts/leases`.

Every acquire, renewal and release is an appended row, committed with delta-rs against the snapshot the
decision was made on and with no commit retries: when two processes decide at once, Delta's optimistic
concurrency lets exactly one commit land (the other gets CommitFailedError, re-reads, and sees the winner).
That holds on object storage too, where a lock file would not. A lease whose holder is past its expiry, or
whose process is gone from this host, is taken over, and the takeover is a row of its own.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from delta_contracts.apply.ledger import who
from delta_contracts.engine.state_table import snapshot_rows

LEASES_DIR = "leases"
DEFAULT_TTL = timedelta(minutes=30)
_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class LeaseRow:
    table: str
    owner: str  # the runner's id
    action: str  # acquire | takeover | renew | release
    user: str
    host: str
    pid: int
    acquired: datetime
    expires: datetime
    sequence: int  # the lease table version this row was committed as: rows are ordered by it
    note: str = ""

    def describe(self) -> str:
        return (
            f"runner {self.owner} ({self.user}@{self.host}, pid {self.pid}) since "
            f"{self.acquired:%Y-%m-%d %H:%M:%S} UTC, until {self.expires:%H:%M:%S} UTC"
        )


class LeaseHeld(Exception):
    """Another runner holds the table."""

    def __init__(self, table: str, holder: LeaseRow) -> None:
        self.table, self.holder = table, holder
        super().__init__(f"{table} is being migrated by {holder.describe()}")


class LeaseLost(Exception):
    """Our lease was taken over (it expired while we ran): stop before touching the table again."""


def _schema() -> Any:
    import pyarrow as pa

    stamp = pa.timestamp("us", tz="UTC")
    types = {"pid": pa.int64(), "sequence": pa.int64(), "acquired": stamp, "expires": stamp}
    return pa.schema([pa.field(f.name, types.get(f.name, pa.string())) for f in fields(LeaseRow)])


def process_alive(pid: int) -> bool:
    """Whether `pid` runs on this host (a zombie — killed, not yet reaped — counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in {"Z", "X"}


def _live(row: LeaseRow, now: datetime) -> bool:
    if row.action == "release" or row.expires <= now:
        return False
    return row.host != socket.gethostname() or process_alive(row.pid)


class Lease:
    """Held by one runner for one table; use as a context manager or call acquire()/release()."""

    def __init__(self, state_dir: Path, table: str, *, ttl: timedelta = DEFAULT_TTL) -> None:
        self.location = Path(state_dir) / LEASES_DIR
        self.table = table
        self.ttl = ttl
        self.owner = uuid.uuid4().hex[:12]
        self.taken_over: LeaseRow | None = None  # the dead or expired holder we replaced
        self.expires: datetime | None = None

    def current(self) -> LeaseRow | None:
        """The table's latest lease row."""
        return self._latest(self._snapshot())

    def _snapshot(self) -> Any:
        from deltalake import DeltaTable

        if not (self.location / "_delta_log").is_dir():
            return None
        return DeltaTable(str(self.location))

    def _table(self) -> Any:
        """The lease table's latest snapshot, creating the (empty) table first: every decision must be made on
        a snapshot, or a second process's write would land on top of the first one's without a conflict."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        snapshot = self._snapshot()
        if snapshot is not None:
            return snapshot
        self.location.parent.mkdir(parents=True, exist_ok=True)
        try:
            DeltaTable.create(str(self.location), schema=_schema(), mode="ignore")
        except DeltaError:
            if self._snapshot() is None:  # not a creation race lost to another process: a real failure
                raise
        return self._snapshot()

    def _latest(self, snapshot: Any) -> LeaseRow | None:
        if snapshot is None:
            return None
        rows = [
            LeaseRow(**r)
            for r in snapshot_rows(snapshot, _schema())
            if str(r["table"]).casefold() == self.table.casefold()
        ]
        return max(rows, key=lambda r: r.sequence, default=None)

    def _commit(self, snapshot: Any, row: LeaseRow) -> bool:
        """Append `row` on top of exactly `snapshot`; False when another commit got there first."""
        import pyarrow as pa
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError

        data = pa.Table.from_pylist([asdict(row)], schema=_schema())
        properties = CommitProperties(
            max_commit_retries=0, custom_metadata={"userMetadata": f"delta-contracts lease {row.action}"}
        )
        try:
            write_deltalake(snapshot, data, mode="append", commit_properties=properties)
        except CommitFailedError:
            return False
        return True

    def _row(self, snapshot: Any, action: str, acquired: datetime, now: datetime, note: str = "") -> LeaseRow:
        user, host, pid = who()
        sequence = int(snapshot.version()) + 1
        return LeaseRow(
            self.table, self.owner, action, user, host, pid, acquired, now + self.ttl, sequence, note
        )

    def acquire(self) -> Lease:
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            now = datetime.now(UTC)
            action, note = "acquire", ""
            if holder is not None and holder.action != "release" and holder.owner != self.owner:
                if _live(holder, now):
                    raise LeaseHeld(self.table, holder)
                action = "takeover"
                gone = "expired" if holder.expires <= now else "process gone"
                note = f"took over from {holder.describe()} ({gone})"
            row = self._row(snapshot, action, now, now, note)
            if self._commit(snapshot, row):
                self.taken_over = holder if action == "takeover" else None
                self.expires = row.expires
                return self
        raise LeaseLost(f"could not take the lease on {self.table}: the lease table is too busy")

    def renew(self) -> None:
        """Push the expiry out; raises LeaseLost when someone else holds the table now."""
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            if holder is None or holder.owner != self.owner or holder.action == "release":
                raise LeaseLost(
                    f"the lease on {self.table} is no longer ours: {holder and holder.describe()}"
                )
            now = datetime.now(UTC)
            row = self._row(snapshot, "renew", holder.acquired, now)
            if self._commit(snapshot, row):
                self.expires = row.expires
                return
        raise LeaseLost(f"could not renew the lease on {self.table}: the lease table is too busy")

    def renew_if_due(self) -> None:
        if self.expires is None or self.expires - datetime.now(UTC) < self.ttl / 2:
            self.renew()

    def release(self) -> None:
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            if holder is None or holder.owner != self.owner:
                return  # taken over: nothing of ours to release
            now = datetime.now(UTC)
            if self._commit(snapshot, self._row(snapshot, "release", holder.acquired, now)):
                self.expires = None
                return

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
