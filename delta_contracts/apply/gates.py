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
from typing import TYPE_CHECKING

from delta_contracts.apply.reports import OpInFlight
from delta_contracts.live import Commit
from delta_contracts.plan.ops import Gate, Op
from delta_contracts.telemetry.names import Names

if TYPE_CHECKING:
    from delta_contracts.plan.stored import StoredMigration
    from delta_contracts.state.record import TableRecord


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


@dataclass(frozen=True, slots=True)
class Mark:
    at: datetime
    where: str  # which op set it, for the reasons `apply` prints


def find_mark(flight: OpInFlight, gate: Gate, record: TableRecord) -> Mark | None:
    """When the mark the gate's window counts from was set, wherever it was set: the mark op of this
    migration, else of any migration of the table (a column deprecated in 2.4.0 and dropped in 3.0.0 is
    marked by the 2.4.0 migration), else any op the ledger records setting the property on the table (under
    any of its names). The earliest wins: the window runs from when the mark was first set."""
    stored, op = flight.stored, flight.op
    found: list[Mark] = []
    index = mark_of(stored.migration.ops, op, gate)
    if index is not None and (when := record.marked_at(stored.migration_id, index)):
        found.append(Mark(when, f"{stored.migration_id} op {index}"))
    tables = {str(op.table).casefold()} | set(record.earlier_names(str(op.table)))
    for other in record.history:
        for number, candidate in enumerate(other.migration.ops, start=1):
            if (
                str(candidate.table).casefold() in tables
                and candidate.marks(gate.deprecated_by)
                and (when := record.marked_at(other.migration_id, number))
            ):
                found.append(Mark(when, f"{other.migration_id} op {number}"))
    for done in record.property_set(tables, gate.deprecated_by):
        found.append(Mark(done.at, f"{done.migration_id} op {done.op_index}"))
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
