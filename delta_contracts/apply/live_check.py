"""What the live tables say before a migration's first op runs: what a versioned copy would leave behind, and
which statements Delta would refuse because of a property set on a table by hand.

A versioned migration copies the columns of the contract into a new table and, in its contract phase, drops
the old one. A column a producer added outside the contract (a `mergeSchema` append) or a CHECK added by hand
is on the live table only: the copy would not carry it, and the drop would take it with its values. So before
the first op of such a migration `apply` compares the table the copy reads with the contract it was planned
from, as `drift` does, and refuses (exit 2) while the table has a column or a CHECK that contract lacks.
"""

from __future__ import annotations

from collections.abc import Sequence

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import Op
from delta_contracts.plan.stored import StoredMigration
from delta_contracts.plan.table_limits import refused_statements
from delta_contracts.tables.drift import table_drift

LEFT_BEHIND = {"extra-column": "column", "check-extra": "CHECK"}


def left_behind_by_copy(
    engine: Engine, stored: StoredMigration, previous: Contract | None, todo: Sequence[Op]
) -> str | None:
    """Why the versioned copy of `stored` would lose what its source table has beyond `previous` (the
    contract the table is at), or None. Only while a copy or catch-up of it is still to run."""
    moves = [(source, op.table) for op in todo if (source := op.copies_from()) is not None]
    if previous is None or not moves:
        return None
    source, target = moves[0]
    live = engine.describe(source, with_version=False)
    if live is None:
        return None
    extra = [i for i in table_drift(previous, live, source) if i.kind in LEFT_BEHIND and i.is_drift]
    if not extra:
        return None
    what = "; ".join(
        f"{LEFT_BEHIND[i.kind]} {i.subject}" + (f" ({i.actual})" if i.actual else "") for i in extra
    )
    return (
        f"{source} has what contract {previous.id} {previous.version} does not declare: {what}. "
        f"Migration {stored.migration_id} copies only the contract's columns and rules into "
        f"{target} and then drops {source}, so it would be lost with its values. Add it to the "
        f"contract (a new version, planned again), or drop it from {source} first; then apply again"
    )


def refused_by_live_tables(engine: Engine, stored: StoredMigration, todo: Sequence[Op]) -> str | None:
    """Why Delta would refuse some of `todo` on the tables as they stand (`plan.table_limits`), or None. The
    plan already refused what its contracts declare; this finds a property set outside the contract."""
    written = {op.table for op in todo if op.rewrites_rows}
    properties = {}
    for table in sorted(written, key=str):
        live = engine.describe(table, with_version=False)
        if live is not None:
            properties[table] = live.properties
    refused = refused_statements(todo, properties)
    if not refused:
        return None
    return f"migration {stored.migration_id} cannot run as planned: " + "; ".join(refused)
