"""One runner per table: a lease taken by a Delta commit on `<warehouse>/_delta_contracts/leases`.

Every acquire, renewal and release is an appended row, committed with delta-rs against the snapshot the
decision was made on and with no commit retries: when two processes decide at once, Delta's optimistic
concurrency lets exactly one commit land (the other gets CommitFailedError, re-reads, and sees the winner).
That holds on object storage too, where a lock file would not. A lease whose holder is past its expiry, or
whose process is gone from this host, is taken over, and the takeover is a row of its own.

A pid alone does not say a process is gone: the holder may have run in a container, as pid 1 of its own pid
namespace, on a host where pid 1 is init. Each row therefore carries the holder's process identity — the
host's boot id, its pid namespace and its start time — and a holder counts as gone only when this process can
see that it is (`holder_alive`). What cannot be seen stands until it expires, or until an operator breaks the
lease (`apply --break-lease --reason`, recorded in the ledger).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from delta_contracts.errors import TableHeldError
from delta_contracts.paths import inside
from delta_contracts.state.ledger import storage_errors
from delta_contracts.state.state_table import snapshot_rows, who

LEASES_DIR = "leases"
DEFAULT_TTL = timedelta(minutes=30)
_ATTEMPTS = 50
# The inode of the host's own pid namespace (the kernel's PROC_PID_INIT_INO): a process in it sees every
# process of the machine, those of every container included.
INITIAL_PID_NAMESPACE = 0xEFFFFFFC
FREE_ACTIONS = frozenset({"release", "break"})


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
    process: str = ""  # the writer's ProcessIdentity as text; empty in rows of older versions

    def __post_init__(self) -> None:
        for name in ("note", "process"):  # a column older lease tables lack reads as null
            if getattr(self, name) is None:
                object.__setattr__(self, name, "")

    def describe(self) -> str:
        return (
            f"runner {self.owner} ({self.user}@{self.host}, pid {self.pid}) since "
            f"{self.acquired:%Y-%m-%d %H:%M:%S} UTC, until {self.expires:%H:%M:%S} UTC"
        )


class LeaseHeldError(TableHeldError):
    """Another runner holds the table."""

    def __init__(self, table: str, holder: LeaseRow) -> None:
        self.table, self.holder = table, holder
        super().__init__(f"{table} is being migrated by {holder.describe()}")


class LeaseLostError(TableHeldError):
    """Our lease was taken over (it expired while we ran): stop before touching the table again."""


def _schema() -> Any:
    import pyarrow as pa

    stamp = pa.timestamp("us", tz="UTC")
    types = {"pid": pa.int64(), "sequence": pa.int64(), "acquired": stamp, "expires": stamp}
    return pa.schema([pa.field(f.name, types.get(f.name, pa.string())) for f in fields(LeaseRow)])


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """A process as the kernel tells it apart: the boot it runs in, its pid namespace, its start time (clock
    ticks after boot, the same seen from any namespace)."""

    boot: str
    pid_namespace: int
    start: int

    def text(self) -> str:
        return f"{self.boot} {self.pid_namespace} {self.start}"

    @classmethod
    def parse(cls, text: str) -> ProcessIdentity | None:
        parts = text.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            return None
        return cls(parts[0], int(parts[1]), int(parts[2]))


def _pid_namespace(pid: int | str) -> int | None:
    """The inode of the process's pid namespace; None when it is gone, or hidden from this process
    (PermissionError is raised for that: a process this one may not inspect)."""
    try:
        link = os.readlink(f"/proc/{pid}/ns/pid")  # pid:[4026531836]
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    return int(link.split("[", 1)[1].rstrip("]")) if "[" in link else None


def _state_and_start(pid: int | str) -> tuple[str, int] | None:
    """The process's state letter and start time from /proc/<pid>/stat; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])  # fields 3 and 22 of proc_pid_stat(5)


def this_process() -> ProcessIdentity | None:
    """This process's identity; None where there is no Linux /proc."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = _pid_namespace("self")
        stat = _state_and_start("self")
    except OSError:
        return None
    if namespace is None or stat is None:
        return None
    return ProcessIdentity(boot, namespace, stat[1])


def holder_alive(pid: int, holder: ProcessIdentity, here: ProcessIdentity) -> bool:
    """Whether the holder process may still run, judged on this host (`here` is this process).

    Another boot: gone. The same pid namespace: its pid names it, if that process started when it did. Another
    namespace, where its pid means nothing here: a process of that namespace with its start time is looked
    for; none found means gone only when this process sees that namespace at all (it is the host's own, or
    other processes of the namespace show); otherwise it cannot be told, and the holder counts as alive."""
    if holder.boot != here.boot:
        return False
    if holder.pid_namespace == here.pid_namespace:
        stat = _state_and_start(pid)
        return stat is not None and stat[0] not in {"Z", "X"} and stat[1] == holder.start
    namespace_seen, blind = False, False
    for entry in os.scandir("/proc"):
        # Pid 1 here is the init of this process's own namespace, not of the holder's (and some sandboxes
        # hide its namespace even from root).
        if not entry.name.isdigit() or entry.name == "1":
            continue
        try:
            namespace = _pid_namespace(entry.name)
        except PermissionError:
            blind = True
            continue
        if namespace != holder.pid_namespace:
            continue
        namespace_seen = True
        stat = _state_and_start(entry.name)
        if stat is not None and stat[0] not in {"Z", "X"} and stat[1] == holder.start:
            return True
    sees_everything = here.pid_namespace == INITIAL_PID_NAMESPACE and not blind
    return not (namespace_seen or sees_everything)


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
    if row.action in FREE_ACTIONS or row.expires <= now:
        return False
    if row.host != socket.gethostname():
        return True  # another machine's processes cannot be seen: the lease stands until it expires
    holder, here = ProcessIdentity.parse(row.process), this_process()
    if holder is None or here is None:  # a row of an older version, or no /proc here
        return process_alive(row.pid)
    return holder_alive(row.pid, holder, here)


class Lease:
    """Held by one runner for one table; use as a context manager or call acquire()/release()."""

    def __init__(self, state_dir: Path, table: str, *, ttl: timedelta = DEFAULT_TTL) -> None:
        self.location = inside(state_dir, LEASES_DIR)
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
        with storage_errors(f"the lease table at {self.location}", "read"):
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
        with storage_errors(f"the lease table at {self.location}", "read"):
            found = snapshot_rows(snapshot, _schema())
        rows = [LeaseRow(**r) for r in found if str(r["table"]).casefold() == self.table.casefold()]
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
        try:  # `merge`: a lease table of an older version gets the columns added since
            write_deltalake(snapshot, data, mode="append", commit_properties=properties, schema_mode="merge")
        except CommitFailedError:
            return False
        return True

    def _row(self, snapshot: Any, action: str, acquired: datetime, now: datetime, note: str = "") -> LeaseRow:
        user, host, pid = who()
        sequence = int(snapshot.version()) + 1
        identity = this_process()
        process = identity.text() if identity is not None else ""
        return LeaseRow(
            self.table, self.owner, action, user, host, pid, acquired, now + self.ttl, sequence, note, process
        )

    def acquire(self) -> Lease:
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            now = datetime.now(UTC)
            action, note = "acquire", ""
            if holder is not None and holder.action not in FREE_ACTIONS and holder.owner != self.owner:
                if _live(holder, now):
                    raise LeaseHeldError(self.table, holder)
                action = "takeover"
                gone = "expired" if holder.expires <= now else "process gone"
                note = f"took over from {holder.describe()} ({gone})"
            row = self._row(snapshot, action, now, now, note)
            if self._commit(snapshot, row):
                self.taken_over = holder if action == "takeover" else None
                self.expires = row.expires
                return self
        raise LeaseLostError(f"could not take the lease on {self.table}: the lease table is too busy")

    def renew(self) -> None:
        """Push the expiry out; raises LeaseLostError when someone else holds the table now."""
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            if holder is None or holder.owner != self.owner or holder.action in FREE_ACTIONS:
                raise LeaseLostError(
                    f"the lease on {self.table} is no longer ours: {holder and holder.describe()}"
                )
            now = datetime.now(UTC)
            row = self._row(snapshot, "renew", holder.acquired, now)
            if self._commit(snapshot, row):
                self.expires = row.expires
                return
        raise LeaseLostError(f"could not renew the lease on {self.table}: the lease table is too busy")

    def break_lease(self, reason: str) -> LeaseRow | None:
        """Free the table whoever holds it (an operator's decision: the holder cannot be seen to be gone), as
        a `break` row saying why; the holder, if it still runs, stops at its next renewal. Returns the broken
        holder's row, or None when nobody held the table."""
        for _ in range(_ATTEMPTS):
            snapshot = self._table()
            holder = self._latest(snapshot)
            now = datetime.now(UTC)
            if holder is None or holder.action in FREE_ACTIONS or holder.expires <= now:
                return None
            note = f"broke the lease of {holder.describe()}: {reason}"
            if self._commit(snapshot, self._row(snapshot, "break", now, now, note)):
                return holder
        raise LeaseLostError(f"could not break the lease on {self.table}: the lease table is too busy")

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
