"""What a contract change will make of the table, for the pull request that proposes it (`diff`): the
migration `plan` would write for the change, read for what producers and readers must know before it
merges (the name becoming a view over a new `<table>__vN`, producers moving to it) and what it cannot
keep."""

from __future__ import annotations

from dataclasses import dataclass

from delta_contracts.contract.model import Contract
from delta_contracts.plan.building import initial_state, not_kept
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target


@dataclass(frozen=True, slots=True)
class Outlook:
    becomes: tuple[str, ...] = ()  # what the table becomes (served as a versioned table), in sentences
    not_kept: tuple[str, ...] = ()  # the plan's warnings about what it cannot keep


def outlook(old: Contract, new: Contract, target: Target) -> Outlook:
    """What the migration from `old` to `new` makes of the table; nothing when `plan` refuses the change
    (`plan` and `diff`'s verdict say why)."""
    before = initial_state(old).physical
    try:
        migration, after = plan(old, new, target)
    except PlanError:
        return Outlook()
    alias = new.table_parts
    lost = not_kept(migration.warnings)
    if after.physical == before:
        return Outlook(not_kept=lost)
    new_table, old_table = after.physical, before
    if before == alias:
        said = (
            f"served as a versioned table: at cutover {alias} becomes a view over the new table {new_table}. "
            f"Readers keep reading {alias}; producers must write to {new_table} from then on — an INSERT "
            f"INTO {alias} fails, it is no table any more"
        )
    else:
        said = (
            f"served as a new versioned table: at cutover the view {alias} moves from {old_table} to "
            f"{new_table}. Readers keep reading {alias}; producers must write to {new_table}, not to "
            f"{old_table}"
        )
    return Outlook(becomes=(said,), not_kept=lost)
