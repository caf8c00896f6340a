"""Which objects (tables, columns) a contract change can break readers of, by the names readers use. Pure.

A reviewer asks "who reads what this change breaks?": a removed, renamed, retyped or narrowed column; a
column or table tightened (NOT NULL, a new or stricter CHECK) or deprecated; a table deleted or retired.
Additions, loosenings and documentation break no reader and name no object here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract, LifecycleStatus
from delta_contracts.diff.changes import Change

# Changes to a column: the change carries the column as it was (and as it is).
COLUMN_CODES = frozenset(
    {
        "DC-BC102",  # renamed: readers of the old name break
        "DC-DS103",  # removed
        "DC-MF104",  # made NOT NULL (tightened)
        "DC-MF106",  # widened: a retype, readers with a fixed schema (streams, typed jobs) see it
        "DC-MF107",  # retyped or narrowed
        "DC-CK301",  # a new CHECK, enum or regex
        "DC-CK303",  # a CHECK tightened
        "DC-CK306",  # enum values removed (narrowed)
        "DC-CK307",  # regex changed
        "DC-LC701",  # deprecated
    }
)
# Changes to the whole table.
TABLE_CODES = frozenset(
    {
        "DC-DS101",  # contract deleted
        "DC-CK311",  # table constraint added
        "DC-CK313",  # table constraint changed
        "DC-LC703",  # retired
    }
)


@dataclass(frozen=True, slots=True)
class Affected:
    """One object and the changes of one contract that touch its readers."""

    contract_id: str
    object: str  # lower-case `schema.table` or `schema.table.column`, as readers name it before the change
    column: str | None  # None for the table itself
    changes: tuple[Change, ...]


def affected_objects(old: Contract | None, new: Contract | None, changes: Sequence[Change]) -> list[Affected]:
    """The objects `changes` (between `old` and `new` of one table) touch readers of, in change order."""
    base = old or new
    if base is None:
        return []
    table = base.id.casefold()
    found: dict[str, list[Change]] = {}
    columns: dict[str, str | None] = {}
    for item in changes:
        name = _column_of(item)
        if item.code in TABLE_CODES or _deprecates_table(item, new):
            key, column = table, None
        elif item.code in COLUMN_CODES and name is not None:
            key, column = f"{table}.{name.casefold()}", name.casefold()
        else:
            continue
        found.setdefault(key, []).append(item)
        columns[key] = column
    return [Affected(base.id, key, columns[key], tuple(items)) for key, items in found.items()]


def _deprecates_table(item: Change, new: Contract | None) -> bool:
    return (
        item.code == "DC-LC702"
        and item.field == "lifecycle.status"
        and new is not None
        and new.lifecycle.status is LifecycleStatus.DEPRECATED
    )


def _column_of(item: Change) -> str | None:
    """The name readers use for the column a change is about: its name in the old contract (the change
    carries the old and new column, paired once by `compare`)."""
    if isinstance(item.before, Column):
        return item.before.name
    if isinstance(item.after, Column):
        return item.after.name
    return None
