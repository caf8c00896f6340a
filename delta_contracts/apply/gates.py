"""The sunset gate of a destructive op: its deprecation window has passed since the mark, and the readers log
shows nobody read the objects it drops over `reader_lookback`. Never open by default: no record of the mark,
no telemetry, or a stale log keeps it shut, and each reason is said. `--force --reason` is the only way past.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from delta_contracts.apply.ledger import LedgerEntry, Status
from delta_contracts.plan.ops import Gate, MarkDeprecated, Op


@dataclass(frozen=True, slots=True)
class GateVerdict:
    open: bool
    reasons: tuple[str, ...]  # why it is shut (empty when open)
    readers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    opens_at: datetime | None = None  # when the window ends, once the mark's time is known


def mark_of(ops: Sequence[Op], op: Op, gate: Gate) -> int | None:
    """The 1-based index of the op in the same migration that set the mark the gate's window counts from."""
    for index, candidate in enumerate(ops, start=1):
        if (
            isinstance(candidate, MarkDeprecated)
            and candidate.table == op.table
            and gate.deprecated_by in dict(candidate.properties)
        ):
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


def evaluate(
    gate: Gate, *, marked: datetime | None, state_dir: Path, now: datetime, freshness: timedelta
) -> GateVerdict:
    from delta_contracts.contract.model import duration
    from delta_contracts.telemetry.gate import readers_gate

    reasons: list[str] = []
    opens_at = None
    if marked is None:
        reasons.append(
            f"no record of when {gate.deprecated_by} was set (the ledger has no run of the mark), "
            f"so the {gate.deprecation_window} window cannot have been seen to pass"
        )
    else:
        opens_at = marked + duration(gate.deprecation_window)
        if now < opens_at:
            reasons.append(
                f"deprecation window {gate.deprecation_window} since {marked:%Y-%m-%d %H:%M} UTC "
                f"ends {opens_at:%Y-%m-%d %H:%M} UTC"
            )
    verdict = readers_gate(state_dir, gate.objects, duration(gate.reader_lookback), now, freshness)
    if not verdict.open:
        reasons.extend(verdict.reasons or ("the readers gate is shut",))
    return GateVerdict(not reasons, tuple(reasons), verdict.readers, opens_at)
