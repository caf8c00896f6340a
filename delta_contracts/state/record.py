"""A governed table's record: its verified migrations, as they run in one environment, and its rows in that
environment's ledger, opened once. What was planned, what ran, what is done, pending, held or marked, the
version `create` started it at, and where the table lives now (under renames, behind its alias view) are
asked of it; nothing else reads the migrations folder or folds the ledger's rows.

`Records` opens the records of many contracts from one read of the ledger (`status`, `drift`, the site);
`TableRecord.open` one table's (`apply`, which appends to it as it runs).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.state.ledger import (
    APPLIED,
    DONE,
    FINAL,
    Claim,
    Ledger,
    LedgerEntry,
    Status,
    event_row,
    migration_checksum,
    op_checksum,
    op_row,
)
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.model import Contract
    from delta_contracts.plan.ops import Op
    from delta_contracts.plan.stored import StoredMigration

# Statuses of an op that left its properties set (`created`: made by `create`).
_SET = frozenset({Status.SUCCEEDED, Status.FORCED, Status.SKIPPED, Status.CREATED})
# Where a ledger is: an engine (its `ledger_table()`), a state folder (`<folder>/ledger`) or a state table.
LedgerPlace = Any


def open_ledger(where: LedgerPlace) -> Ledger:
    """The ledger kept at `where`: an engine's (its catalog table, or the one in its state folder), the one
    in a state folder, or a state table (a `Ledger` is itself)."""
    if isinstance(where, Ledger):
        return where
    if hasattr(where, "ledger_table"):
        return Ledger(where.ledger_table())
    return Ledger(where)


def ledger_rows(where: LedgerPlace) -> list[LedgerEntry]:
    """Every row in force of the ledger at `where`, of every contract (`Ledger.entries`)."""
    return open_ledger(where).entries()


@dataclass(frozen=True, slots=True)
class Pending:
    migration_id: str
    phases: tuple[str, ...]  # the phases with ops the ledger has not finished

    def to_json(self) -> dict[str, object]:
        return {"migration": self.migration_id, "phases": list(self.phases)}


@dataclass(frozen=True, slots=True)
class Location:
    """Where a contract's table is in an environment."""

    read: TableId  # the name readers query: the contract's, a view after a versioned cutover
    planned: TableId  # the table the planned migrations put the rows in
    current: TableId  # where the rows live now


@dataclass(frozen=True, slots=True)
class MarkSet:
    at: datetime
    migration_id: str
    op_index: int


class TableRecord:
    """One contract's record in one environment. Its ledger rows are `rows` when given, else read from
    `ledger` when first asked for (`refreshed` reads them again); with neither, the ledger could not be read:
    every fold answers as for an empty ledger, and `known` says so. A runner's rows are appended as it goes
    (`append`)."""

    def __init__(
        self,
        contract: str,
        history: Sequence[StoredMigration],
        rows: list[LedgerEntry] | None = None,
        ledger: Ledger | None = None,
        names: NameMapping | None = None,
        *,
        unreadable: str | None = None,
    ) -> None:
        self.contract, self.history, self.ledger, self.names = contract, tuple(history), ledger, names
        self.known = rows is not None or ledger is not None
        self._rows = rows
        # Why its migrations could not be read (a folder that does not match its sum), when they could not.
        self.unreadable = unreadable

    @classmethod
    def open(
        cls,
        root: Path | None,
        contract: str,
        ledger: Ledger | None = None,
        names: NameMapping | None = None,
        *,
        verified: bool = True,
    ) -> TableRecord:
        """The record of `contract`: its migrations under `root` (checked against `migrations.sum` unless
        `verified` is False; IntegrityError names the file that differs) and its rows in `ledger`, read when
        first asked for (StateTableError when they cannot be). None for `root`: a table made with no
        migrations (`create`)."""
        return cls(contract, load_migrations(root, contract, names, verified=verified), None, ledger, names)

    def refreshed(self) -> TableRecord:
        """The same record with its rows read again from its ledger (another runner may have added some)."""
        return TableRecord(self.contract, self.history, None, self.ledger, self.names)

    # -- the rows --------------------------------------------------------------------------------------------
    @property
    def rows(self) -> Sequence[LedgerEntry]:
        """This contract's rows in force, in the order they were recorded (ours appended as we go)."""
        return self._read()

    def _read(self) -> list[LedgerEntry]:
        if self._rows is None:
            self._rows = self.ledger.entries([self.contract]) if self.ledger is not None else []
        return self._rows

    def append(self, *entries: LedgerEntry) -> None:
        """Rows written to the ledger in one commit, and kept in the record."""
        if self.ledger is None:
            raise ValueError(f"the record of {self.contract} was opened without a ledger to write to")
        self.ledger.append(entries)
        if self._rows is not None:  # else read, these included, when first asked for
            self._rows.extend(entries)

    def append_event(self, kind: str, **values: Any) -> LedgerEntry:
        """A row about the contract's migrations as a whole (`ledger.EVENTS`: a rehash, a discard, a broken
        lease, a forced promotion, a restarted ledger), by whom and when, now."""
        entry = event_row(self.contract, kind, **values)
        self.append(entry)
        return entry

    def append_created(self, version: str, ops: Sequence[Op], outcomes: Sequence[Any], engine: str) -> None:
        """`create` made the table straight from its contract at `version`: its ops are the toolkit's, and the
        table starts there (earlier migrations describe a past it never had)."""
        self.append(
            *(
                op_row(
                    self.contract,
                    f"create {version}",
                    index,
                    op,
                    Status.CREATED,
                    table=str(outcome.table),
                    engine=engine,
                    path=outcome.path,
                    version=outcome.version,
                    to_version=version,
                )
                for index, (op, outcome) in enumerate(zip(ops, outcomes, strict=True), start=1)
            )
        )

    # -- what ran --------------------------------------------------------------------------------------------
    @property
    def baseline(self) -> str | None:
        """The contract version `create` made the table at, when it was created that way."""
        versions = [e.to_version for e in self.rows if e.status == Status.CREATED]
        return versions[-1] if versions else None

    def before_baseline(self, stored: StoredMigration) -> bool:
        """The migration describes a past the table never had: `create` made it at a later version."""
        from delta_contracts.contract.model import semver_tuple

        baseline = self.baseline
        return baseline is not None and semver_tuple(stored.migration.to_version) <= semver_tuple(baseline)

    def last_final(self, migration_id: str, op_index: int) -> LedgerEntry | None:
        """The latest final row (succeeded, skipped, forced or failed) of the op at that index."""
        found = None
        for entry in self.rows:
            if entry.status in FINAL and (entry.migration_id, entry.op_index) == (migration_id, op_index):
                found = entry
        return found

    def done_ops(self, stored: StoredMigration) -> set[int]:
        """The indexes (1-based) of the migration's ops the ledger says finished, matched by content: after a
        re-plan and `rehash`, an op is done only if an op with the same content finished, wherever it stood.

        Rows written before ops were checksummed name an index only; they count for the op at that index when
        the file is the one they ran (same migration checksum), or when that op has their kind and SQL."""
        file_checksum = migration_checksum(stored.sql_path, stored.json_path)
        latest: dict[str, LedgerEntry] = {}  # the latest final row per op content
        legacy: dict[int, LedgerEntry] = {}  # the same, per index, for rows without an op checksum
        for entry in self.rows:
            if entry.status in FINAL and entry.migration_id == stored.migration_id:
                if entry.op_checksum:
                    latest[entry.op_checksum] = entry
                else:
                    legacy[entry.op_index] = entry
        done = set()
        for index, op in enumerate(stored.migration.ops, start=1):
            found = latest.get(op_checksum(op))
            if found is not None:
                if found.status in DONE:
                    done.add(index)
                continue
            old = legacy.get(index)
            if old is not None and old.status in DONE and _same_op(old, op, file_checksum):
                done.add(index)
        return done

    def pending(self) -> list[Pending]:
        """Exactly the migrations the ledger has not finished (none of those before the baseline)."""
        from delta_contracts.plan.ops import PHASES

        out = []
        for stored in self.history:
            if self.before_baseline(stored):
                continue
            done = self.done_ops(stored)
            open_phases = {op.phase for i, op in enumerate(stored.migration.ops, start=1) if i not in done}
            if open_phases:
                out.append(Pending(stored.migration_id, tuple(p.value for p in PHASES if p in open_phases)))
        return out

    def waiting_for(self, migration_id: str) -> str:
        """What the latest run left the migration waiting for (its latest `held` row), until an op of it ran
        since; empty when nothing holds it."""
        why = ""
        for entry in self.rows:
            if entry.migration_id != migration_id:
                continue
            if entry.status == Status.HELD:
                why = entry.detail
            elif entry.status in (Status.SUCCEEDED, Status.FORCED):
                why = ""
        return why

    def batch_marks(self, key: tuple[str, str, int], checksum: str = "") -> list[dict[str, Any]]:
        """Where an unfinished batched op resumes: the batches it finished since the op last finished (rows of
        another op that stood at the same index before a re-plan do not count)."""
        marks: list[dict[str, Any]] = []
        for entry in self.rows:
            if entry.key != key or (checksum and entry.op_checksum and entry.op_checksum != checksum):
                continue
            if entry.status in DONE:
                marks = []
            elif entry.status == Status.BATCH and entry.watermark:
                marks.append(json.loads(entry.watermark))
        return marks

    def recorded_checksum(self, migration_id: str) -> str | None:
        """The checksum the migration had when it (or part of it) last reached the table, or its rehash.

        An attempt that failed without a commit (a pre-check refused it: the table's version did not move)
        proves nothing reached the table, so its `started` row does not pin the file: a migration that never
        ran may be re-planned freely."""
        untouched = self._untouched()
        found = None
        for entry in self.rows:
            if entry.migration_id != migration_id or entry.status not in APPLIED:
                continue
            if entry.status == Status.STARTED and (entry.run_id, entry.key) in untouched:
                continue
            found = entry.checksum or found
        return found

    def touched_ops(self, migration_id: str) -> list[tuple[int, bool]]:
        """The ops of the migration whose work may have reached a table, by index, each with whether it
        finished having done its work itself (not found done and skipped)."""
        untouched = self._untouched()
        touched: dict[int, bool] = {}
        for e in self.rows:
            if e.migration_id != migration_id or not e.op_index:
                continue
            if (e.run_id, e.key) in untouched:
                continue
            if e.status in APPLIED | {Status.FAILED} and e.status != Status.REHASHED:
                did = e.status in DONE and e.status != Status.SKIPPED
                touched[e.op_index] = touched.get(e.op_index, False) or did
        return sorted(touched.items())

    def _untouched(self) -> set[tuple[str, tuple[str, str, int]]]:
        """Attempts that failed without a commit (a pre-check refused them): they touched nothing."""
        failed = (e for e in self.rows if e.status == Status.FAILED)
        return {(e.run_id, e.key) for e in failed if e.version == e.version_before}

    # -- marks and names -------------------------------------------------------------------------------------
    def marked_at(self, migration_id: str, op_index: int) -> datetime | None:
        """When the toolkit set a mark: the end of the first successful run of the mark op."""
        for entry in self.rows:
            if (entry.migration_id, entry.op_index) == (migration_id, op_index) and entry.status in (
                Status.SUCCEEDED,
                Status.FORCED,
            ):
                return entry.ended_at
        return None

    def property_set(self, tables: set[str], key: str) -> Iterator[MarkSet]:
        """Every op the ledger records setting the table property `key` on one of `tables` (case-folded
        names), whatever migration planned it."""
        for entry in self.rows:
            if (
                entry.status in _SET
                and entry.ended_at is not None
                and entry.table.casefold() in tables
                and key
                and f"'{key}'" in entry.sql
                and entry.op_kind in ("mark_deprecated", "set_properties")
            ):
                yield MarkSet(entry.ended_at, entry.migration_id, entry.op_index)

    def earlier_names(self, table: str) -> list[str]:
        """The names `table` had before the toolkit's renames, newest first (case-folded)."""
        renames = [(e.renamed_from.casefold(), e.table.casefold()) for e in self.rows if e.renamed_from]
        names, current = [], table.casefold()
        for _ in range(len(renames)):
            older = next((old for old, new in renames if new == current and old not in names), None)
            if older is None:
                break
            names.append(older)
            current = older
        return names

    def under_later_names(self, objects: Sequence[str]) -> tuple[str, ...]:
        """The objects, and each again under the names its table was given since by renames the ledger
        records: a later migration's rename (`orders` → `orders__v2`) moves a deprecated column along, and a
        read of it under the new name is a read of what the drop removes."""
        renames = {
            e.renamed_from.casefold(): e.table.casefold()
            for e in self.rows
            if e.renamed_from and e.status in (Status.SUCCEEDED, Status.FORCED, Status.SKIPPED)
        }
        out = list(objects)
        for obj in objects:
            name = obj.casefold()
            for _ in range(len(renames)):  # follow a chain of renames; bounded, so a cycle cannot loop
                old = next((t for t in renames if name == t or name.startswith(t + ".")), None)
                if old is None:
                    break
                name = renames[old] + name[len(old) :]
                out.append(name)
        return tuple(dict.fromkeys(out))

    def claimed(self, table: TableId, version: int) -> bool:
        """Whether the table's commit at `version` is the toolkit's: an op the ledger records produced it
        (under any name the table had before a toolkit rename: its Delta history goes with it)."""
        names = {str(table).casefold()}
        grew = True
        while grew:
            earlier = {
                e.renamed_from.casefold()
                for e in self.rows
                if e.renamed_from and e.table.casefold() in names and e.status in DONE
            }
            grew = not earlier <= names
            names |= earlier
        return any(
            Claim(e.version_before, e.version).covers(version)
            for e in self.rows
            if e.table.casefold() in names
            and e.version is not None
            and e.status in DONE | {Status.BATCH, Status.FAILED, Status.CREATED}
        )

    # -- where the table lives -------------------------------------------------------------------------------
    def planned_table(self, contract: Contract) -> TableId:
        """Where the planned migrations put the contract's rows: the last one's table, else the first's."""
        from delta_contracts.contract.environments import NameMapping
        from delta_contracts.plan.environment import planned_table

        if self.history:
            return self.history[-1].state.physical
        return planned_table(contract, self.names or NameMapping())

    def location(
        self, contract: Contract, views: Mapping[TableId, str], exists: Callable[[TableId], bool]
    ) -> Location:
        """Where the contract's rows live now: the table behind its alias view, else the table of its name,
        else (nothing created yet) where the planned migrations will put it."""
        from delta_contracts.contract.environments import NameMapping

        read = (self.names or NameMapping()).physical(contract.table_parts)
        planned = self.planned_table(contract)
        source = alias_source(read, views)
        if source is not None:
            current = TableId(
                source if len(source) >= len(read) else (*read[: len(read) - len(source)], *source)
            )
        else:
            current = read if exists(read) else planned
        return Location(read, planned, current)


def _same_op(entry: LedgerEntry, op: Op, file_checksum: str) -> bool:
    if entry.checksum == file_checksum:
        return True
    from delta_contracts.plan.render import render

    try:
        sql = render(op)
    except TypeError:  # an op with no single statement
        sql = ""
    return entry.op_kind == op.kind and entry.sql == sql


def alias_source(alias: TableId, views: Mapping[TableId, str]) -> tuple[str, ...] | None:
    """The table an alias view `SELECT * FROM t` reads, named as the view names it (perhaps unqualified), or
    None when `alias` is no such view."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    local = {key[-2:]: query for key, query in views.items()}
    query = views.get(alias, local.get(alias[-2:]))
    if query is None:
        return None
    tables = list(x.parse(query).find_all(exp.Table))
    if len(tables) != 1:
        return None
    table = tables[0]
    return tuple(part for part in (table.catalog, table.db, table.name) if part)


def load_migrations(
    root: Path | None, contract: str, names: NameMapping | None = None, *, verified: bool = True
) -> list[StoredMigration]:
    """The contract's planned migrations under `root` as they run under `names` ([] without a folder)."""
    from delta_contracts.plan.migrations import load_history, table_folder, verify

    if root is None:
        return []
    folder = table_folder(root, contract)
    if not folder.is_dir():
        return []
    if verified:
        verify(folder)
    return load_history(folder, names)


class Records:
    """The records of an environment's contracts from one read of its ledger: `of(contract)` for each.
    `rows` is None when the ledger could not be read (the records say `known` False)."""

    def __init__(
        self,
        root: Path | None,
        rows: list[LedgerEntry] | None = None,
        names: NameMapping | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.root, self.names, self.ledger = root, names, ledger
        self._rows = rows

    @classmethod
    def open(cls, root: Path | None, where: LedgerPlace, names: NameMapping | None = None) -> Records:
        """The ledger at `where` read now (StateTableError when it cannot be)."""
        ledger = open_ledger(where)
        return cls(root, ledger.entries(), names, ledger)

    def of(self, contract: str, *, verified: bool = True) -> TableRecord:
        """The contract's record; one whose migrations folder does not match its sum has no history and says
        why (`unreadable`)."""
        from delta_contracts.plan.migrations import IntegrityError

        folded = contract.casefold()
        rows = None if self._rows is None else [e for e in self._rows if e.contract.casefold() == folded]
        try:
            history = load_migrations(self.root, contract, self.names, verified=verified)
        except IntegrityError as err:
            return TableRecord(contract, (), rows, self.ledger, self.names, unreadable=str(err))
        return TableRecord(contract, history, rows, self.ledger, self.names)
