"""Who reads what a contract change touches: each affected object's readers within the contract's
`reader_lookback`, from the readers log or from a query history read for the purpose.

A name in the log is the name a statement used. A contract's rows are read under its id and, for a versioned
table, under its physical tables `<id>__v<N>`: a read of `sales.orders__v2.amount` is a read of the
`amount` of `sales.orders`, and is shown with the name it was read as.

The readers log records reads of deprecated objects only (what `telemetry collect` watches). An object
that was not deprecated when the log was collected has no record there, which says nothing about its
readers: that is told as "no telemetry", never as an empty list of readers. Reading the query history
itself (`--source`) watches exactly the objects the change touches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.diff.affected import Affected, affected_objects
from delta_contracts.telemetry.coverage import Coverage, coverage
from delta_contracts.telemetry.gate import DEFAULT_FRESHNESS
from delta_contracts.telemetry.log import Watermark
from delta_contracts.telemetry.report import Reader, build_report

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract
    from delta_contracts.diff.changes import Change
    from delta_contracts.telemetry.objects import Watched

READ, UNREAD, UNKNOWN = "read", "unread", "no telemetry"


@dataclass(frozen=True, slots=True)
class Telemetry:
    """The reads at hand: rows in the readers log's format and each source's newest watermark."""

    rows: Sequence[Mapping[str, object]]
    marks: Mapping[str, Watermark]
    where: str  # the log's location or the sources read, for messages
    watches_all: bool = False  # True when read for exactly the changed objects (--source)

    @property
    def empty(self) -> bool:
        """Nothing collected: no row, and no source that delivered a statement."""
        return not self.rows and all(m.watermark is None for m in self.marks.values())


@dataclass(frozen=True, slots=True)
class ObjectReaders:
    affected: Affected
    status: str  # READ | UNREAD | UNKNOWN
    readers: tuple[Reader, ...]
    read_as: tuple[str, ...]  # the logged names the reads used
    since: datetime
    lookback: str  # the contract's reader_lookback (ISO-8601)
    declared: tuple[str, ...]  # the contract's consumers
    notes: tuple[str, ...]  # what the telemetry cannot say (a source starting late, a stale log, …)
    coverage: Coverage | None = None  # the sources' coverage of the window

    @property
    def unread(self) -> str:
        """The sentence for no reads: "no readers" only when every source covers the window."""
        if self.coverage is None:
            return "no reads recorded in the window"
        return self.coverage.no_readers()

    @property
    def name(self) -> str:
        return self.affected.object

    @property
    def unknown_readers(self) -> tuple[Reader, ...]:
        return tuple(r for r in self.readers if not r.declared)

    @property
    def declared_readers(self) -> tuple[Reader, ...]:
        return tuple(r for r in self.readers if r.declared)

    def to_json(self) -> dict[str, object]:
        return {
            "contract": self.affected.contract_id,
            "object": self.name,
            "changes": [c.code for c in self.affected.changes],
            "status": self.status,
            "lookback": self.lookback,
            "since": self.since.isoformat(),
            "read_as": list(self.read_as),
            "declared_consumers": list(self.declared),
            "readers": [
                {
                    "user": r.user,
                    "client": r.client,
                    "statements": r.reads,
                    "possible": r.possible,
                    "last_read": r.last.isoformat() if r.last else None,
                    "sample_statement_id": r.samples[0] if r.samples else None,
                    "declared_consumer": r.declared,
                }
                for r in self.readers
            ],
            "notes": list(self.notes),
            "verdict": self.unread if self.status == UNREAD else None,
            "coverage": self.coverage.to_json() if self.coverage is not None else None,
        }


@dataclass(frozen=True, slots=True)
class ContractChange:
    """One contract's side of a pull request: before, after and the changes between them."""

    old: Contract | None
    new: Contract | None
    changes: Sequence[Change] = field(default_factory=tuple)


def readers_of_changes(
    changes: Sequence[ContractChange],
    telemetry: Telemetry,
    now: datetime,
    freshness: timedelta = DEFAULT_FRESHNESS,
) -> list[ObjectReaders]:
    """One entry per object the changes touch readers of, in the order of the changes."""
    from delta_contracts.contract.model import duration
    from delta_contracts.telemetry.objects import deprecated_in_contract

    out: list[ObjectReaders] = []
    for pair in changes:
        contract = pair.new or pair.old
        if contract is None:
            continue
        lookback = contract.evolution.reader_lookback
        since = now - duration(lookback)
        consumers = tuple(
            dict.fromkeys(c.name for side in (pair.old, pair.new) if side for c in side.consumers)
        )
        deprecated = set(deprecated_in_contract(pair.old)) if pair.old is not None else set()
        for affected in affected_objects(pair.old, pair.new, pair.changes):
            pattern = _pattern(affected)
            mine = [r for r in telemetry.rows if pattern.match(str(r["object"]).casefold())]
            recent = [r for r in mine if _in_window(r, since)]
            canonical = [{**r, "object": affected.object} for r in recent]
            report = build_report(canonical, [affected.object], {affected.object: consumers}, since)[0]
            read_as = tuple(sorted({str(r["object"]) for r in recent}))
            # Watched all along: read for this purpose, or deprecated (so collected) before the change.
            watched = telemetry.watches_all or affected.object in deprecated
            if report.readers:
                status = READ
            elif (watched or mine) and not telemetry.empty:
                status = UNREAD  # a log that ever recorded the object would have recorded recent reads
            else:
                status = UNKNOWN
            table = _pattern(Affected(affected.contract_id, affected.contract_id, None, ()))
            table_known = any(table.match(str(r["object"]).casefold()) for r in telemetry.rows)
            # "this table" when the log knows nothing of the table at all
            what = "column" if affected.column is not None and table_known else "table"
            notes = _notes(status, affected, telemetry, since, now - freshness, watched, what)
            out.append(
                ObjectReaders(
                    affected,
                    status,
                    report.readers,
                    read_as,
                    since,
                    lookback,
                    consumers,
                    notes,
                    coverage(telemetry.marks, since, now - freshness),
                )
            )
    return out


def _pattern(affected: Affected) -> re.Pattern[str]:
    table = re.escape(affected.contract_id.casefold()) + r"(?:__v\d+)?"
    if affected.column is None:
        return re.compile(rf"^{table}(?:\.[^.]+)?$")
    return re.compile(rf"^{table}\.{re.escape(affected.column)}$")


def _in_window(row: Mapping[str, object], since: datetime) -> bool:
    when = row.get("statement_time")
    return not isinstance(when, datetime) or when >= since


def _notes(
    status: str,
    affected: Affected,
    telemetry: Telemetry,
    since: datetime,
    fresh_from: datetime,
    watched: bool,
    what: str,
) -> tuple[str, ...]:
    if telemetry.empty:
        return (
            f"no telemetry for this table: nothing collected at {telemetry.where} "
            "(run `telemetry collect`, or give --source KIND:LOCATION to read a query history)",
        )
    notes: list[str] = []
    if status == UNKNOWN:
        notes.append(
            f"no telemetry for this {what}: the readers log records reads of deprecated objects only, and "
            f"holds none of {affected.object}; its readers are unknown "
            "(give --source KIND:LOCATION to read them from the query history)"
        )
    elif not watched:
        notes.append(
            f"{affected.object} was not deprecated before this change, and the readers log records reads of "
            "deprecated objects only: readers it did not watch are missing (--source reads them all)"
        )
    notes.extend(coverage(telemetry.marks, since, fresh_from).problems)
    return tuple(notes)


def log_telemetry(state_dir: Path) -> Telemetry:
    """What the readers log at `<warehouse>/_delta_contracts` holds (the same on every engine)."""
    from delta_contracts.telemetry.log import read_rows, watermarks
    from delta_contracts.telemetry.store import readers_path

    return Telemetry(read_rows(state_dir), watermarks(state_dir), str(readers_path(state_dir)))


def watched_for(changes: Sequence[ContractChange]) -> Watched:
    """What to extract from a query history for these changes: every affected object under the contract's
    id and its versioned physical names, with the columns each table had before and after."""
    from delta_contracts.contract.model import semver_tuple
    from delta_contracts.sql.extract import Catalog
    from delta_contracts.telemetry.objects import Watched

    objects: list[str] = []
    consumers: dict[str, tuple[str, ...]] = {}
    schemas: dict[str, tuple[str, ...]] = {}
    for pair in changes:
        sides = [c for c in (pair.old, pair.new) if c is not None]
        if not sides:
            continue
        table = sides[0].id.casefold()
        majors = max(semver_tuple(c.version)[0] for c in sides)
        tables = [table, *(f"{table}__v{n}" for n in range(1, majors + 1))]
        columns = tuple(
            dict.fromkeys(
                name.casefold()
                for c in sides
                for col in c.columns
                for name in (col.name, col.renamed_from)
                if name
            )
        )
        names = tuple(dict.fromkeys(c.name for side in sides for c in side.consumers))
        for physical in tables:
            schemas[physical] = columns
        for affected in affected_objects(pair.old, pair.new, pair.changes):
            suffix = f".{affected.column}" if affected.column else ""
            for physical in tables:
                objects.append(physical + suffix)
                consumers[physical + suffix] = names
    return Watched(tuple(dict.fromkeys(objects)), consumers, Catalog({}, schemas))


def source_telemetry(
    spark: Any, frames: Sequence[tuple[str, Any]], watched: Watched, now: datetime
) -> Telemetry:
    """Read each source (name, DataFrame of statements) for `watched`'s objects into a scratch readers log,
    the same rows `telemetry collect` would log, and return them; the project's own log is not touched."""
    import tempfile

    from delta_contracts.telemetry.log import read_rows, watermarks
    from delta_contracts.telemetry.pipeline import collect

    with tempfile.TemporaryDirectory(prefix="delta-contracts-readers-") as scratch:
        state_dir = Path(scratch)
        for name, frame in frames:
            collect(spark, frame, name, watched, state_dir, now=now)
        rows, marks = read_rows(state_dir), watermarks(state_dir)
    return Telemetry(rows, marks, ", ".join(name for name, _ in frames), watches_all=True)
