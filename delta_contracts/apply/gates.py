"""The sunset gate of a destructive op: its deprecation window has passed since the mark, and the readers log
shows nobody read the objects it drops over `reader_lookback`. Never open by default: no record of the mark,
no telemetry, or a stale log keeps it shut, and each reason is said. `--force --reason` is the only way past.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.apply.reports import OpInFlight
from delta_contracts.live import Commit
from delta_contracts.plan.migrations import StoredMigration
from delta_contracts.plan.ops import Gate, Op
from delta_contracts.state.ledger import LedgerEntry, Status
from delta_contracts.telemetry.names import Names

# Ledger statuses of an op that left its properties set (`created`: made by `create`).
_SET = frozenset({Status.SUCCEEDED, Status.FORCED, Status.SKIPPED, Status.CREATED})


@dataclass(frozen=True, slots=True)
class GateVerdict:
    open: bool
    reasons: tuple[str, ...]  # why it is shut (empty when open)
    readers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    opens_at: datetime | None = None  # when the window ends, once the mark's time is known


def mark_of(ops: Sequence[Op], op: Op, gate: Gate) -> int | None:
    """The 1-based index of the op in the same migration that set the mark the gate's window counts from."""
    for index, candidate in enumerate(ops, start=1):
        if candidate.table == op.table and candidate.marks(gate.deprecated_by):
            return index
    return None


def under_later_names(objects: Sequence[str], entries: Sequence[LedgerEntry]) -> tuple[str, ...]:
    """The objects, and each again under the names its table was given since by renames the ledger records:
    a later migration's rename (`orders` → `orders__v2`) moves a deprecated column along, and a read of it
    under the new name is a read of what the drop removes."""
    renames = {
        e.renamed_from.casefold(): e.table.casefold()
        for e in entries
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


def marked_at(entries: Sequence[LedgerEntry], key: tuple[str, str, int]) -> datetime | None:
    """When the toolkit set the mark: the end of the first successful run of the mark op."""
    for entry in entries:
        if entry.key == key and entry.status in (Status.SUCCEEDED, Status.FORCED):
            return entry.ended_at
    return None


@dataclass(frozen=True, slots=True)
class Mark:
    at: datetime
    where: str  # which op set it, for the reasons `apply` prints


def find_mark(
    flight: OpInFlight, gate: Gate, history: Sequence[StoredMigration], entries: Sequence[LedgerEntry]
) -> Mark | None:
    """When the mark the gate's window counts from was set, wherever it was set: the mark op of this
    migration, else of any migration of the table (a column deprecated in 2.4.0 and dropped in 3.0.0 is
    marked by the 2.4.0 migration), else any op the ledger records setting the property on the table (under
    any of its names). The earliest wins: the window runs from when the mark was first set."""
    contract, stored, op = flight.contract, flight.stored, flight.op
    found: list[Mark] = []
    index = mark_of(stored.migration.ops, op, gate)
    if index is not None and (when := marked_at(entries, (contract, stored.migration_id, index))):
        found.append(Mark(when, f"{stored.migration_id} op {index}"))
    tables = {str(op.table).casefold()} | set(_earlier_names(str(op.table), entries))
    for other in history:
        for number, candidate in enumerate(other.migration.ops, start=1):
            if (
                str(candidate.table).casefold() in tables
                and candidate.marks(gate.deprecated_by)
                and (when := marked_at(entries, (contract, other.migration_id, number)))
            ):
                found.append(Mark(when, f"{other.migration_id} op {number}"))
    for entry in entries:
        if (
            entry.status in _SET
            and entry.ended_at is not None
            and entry.table.casefold() in tables
            and gate.deprecated_by
            and f"'{gate.deprecated_by}'" in entry.sql
            and entry.op_kind in ("mark_deprecated", "set_properties")
        ):
            found.append(Mark(entry.ended_at, f"{entry.migration_id} op {entry.op_index}"))
    return min(found, key=lambda m: m.at, default=None)


def mark_in_commits(history: Sequence[StoredMigration], gate: Gate, commits: Sequence[Commit]) -> Mark | None:
    """The mark as the table's own Delta history records it: the first commit the toolkit tagged with a mark
    op (`userMetadata`) whose migration sets the gate's property. For a ledger that lost the run."""
    ops = {stored.migration_id: stored.migration.ops for stored in history}
    for commit in sorted(commits, key=lambda c: c.version):
        try:
            tag = json.loads(commit.user_metadata or "{}").get("delta_contracts", {})
        except (ValueError, AttributeError):
            continue
        if not isinstance(tag, dict) or tag.get("kind") != "mark_deprecated":
            continue
        migration, index = ops.get(str(tag.get("migration")), ()), tag.get("op")
        if not isinstance(index, int) or not 1 <= index <= len(migration):
            continue
        op = migration[index - 1]
        if op.marks(gate.deprecated_by):
            when = datetime.fromtimestamp(commit.timestamp_ms / 1000, tz=UTC)
            return Mark(when, f"{tag.get('migration')} op {index} (table history v{commit.version})")
    return None


def canonical_gate_objects(gate: Gate, op: Op, contract: str) -> tuple[str, ...]:
    """The gate's objects, plus each under the physical table the op drops from: a drop planned on
    `logistics.shipments__v5` names its column by the contract's id (`logistics.shipments.notes`), the log
    by the table that held it; both are the one object."""
    physical = str(op.table).casefold()
    logical = contract.casefold()
    out = list(gate.objects)
    if physical != logical:
        for obj in gate.objects:
            name = obj.casefold()
            if name.startswith(logical + "."):
                out.append(physical + name[len(logical) :])
    return tuple(dict.fromkeys(out))


def _earlier_names(table: str, entries: Sequence[LedgerEntry]) -> list[str]:
    renames = [(e.renamed_from.casefold(), e.table.casefold()) for e in entries if e.renamed_from]
    names, current = [], table.casefold()
    for _ in range(len(renames)):
        older = next((old for old, new in renames if new == current and old not in names), None)
        if older is None:
            break
        names.append(older)
        current = older
    return names


def evaluate(
    gate: Gate,
    *,
    marked: datetime | None,
    state_dir: Path,
    now: datetime,
    freshness: timedelta,
    names: Names | None = None,
) -> GateVerdict:
    from delta_contracts.contract.model import duration
    from delta_contracts.telemetry.gate import readers_gate

    reasons: list[str] = []
    opens_at = None
    if marked is None:
        reasons.append(
            f"no record of when {gate.deprecated_by} was set (no migration's mark of it ran, and the "
            f"ledger records no op setting it), so the {gate.deprecation_window} window cannot have been "
            "seen to pass"
        )
    else:
        opens_at = marked + duration(gate.deprecation_window)
        if now < opens_at:
            reasons.append(
                f"deprecation window {gate.deprecation_window} since {marked:%Y-%m-%d %H:%M} UTC "
                f"ends {opens_at:%Y-%m-%d %H:%M} UTC"
            )
    verdict = readers_gate(state_dir, gate.objects, duration(gate.reader_lookback), now, freshness, names)
    if not verdict.open:
        reasons.extend(verdict.reasons or ("the readers gate is shut",))
    return GateVerdict(not reasons, tuple(reasons), verdict.readers, opens_at)
