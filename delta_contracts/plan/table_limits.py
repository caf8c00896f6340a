"""What a table's properties forbid a migration's statements, found before any of them runs.

Delta refuses some statements because of what the table they write says of itself, and a refusal half-way
through a migration comes after steps that cannot be undone (column mapping, a protocol upgrade, a copy
begun). So the plan follows each table's properties through its ops (`Op.track_properties`) and names every
op Delta would refuse; the planner refuses such a plan (exit 2), and `apply` asks the same of the live tables
before their first op, for a property set on the table by hand.

Measured on delta-spark 4.2 (Delta 4.x): on a table with `delta.appendOnly=true`, UPDATE, DELETE, MERGE
with a `WHEN MATCHED … UPDATE` and INSERT OVERWRITE (of an empty table too) fail with
DELTA_CANNOT_MODIFY_APPEND_ONLY; ADD COLUMNS, ADD CONSTRAINT, RENAME and DROP COLUMN (column mapping),
OPTIMIZE and an insert-only MERGE run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from delta_contracts.plan.ops import Op
from delta_contracts.tableid import TableId

APPEND_ONLY = "delta.appendOnly"


def append_only_property(properties: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The property making a table append-only, as `properties` spell it, or () when they do not."""
    return tuple(
        (k, v)
        for k, v in properties.items()
        if k.casefold() == APPEND_ONLY.casefold() and v.strip().lower() == "true"
    )


def _append_only(properties: Mapping[str, str]) -> bool:
    return bool(append_only_property(properties))


def refused_statements(ops: Iterable[Op], properties: Mapping[TableId, Mapping[str, str]]) -> list[str]:
    """Why Delta would refuse some of `ops`, run in order on tables that start with `properties` (a table
    not named starts with none), one sentence per table; empty when it would refuse none."""
    tables = {table: dict(props) for table, props in properties.items()}
    refused: dict[TableId, list[str]] = {}
    for op in ops:
        if op.rewrites_rows and _append_only(tables.get(op.table, {})):
            refused.setdefault(op.table, []).append(op.summary())
        op.track_properties(tables)
    return [
        f"{table} is append-only ({APPEND_ONLY}=true), and Delta refuses a statement that updates or "
        f"replaces its rows (DELTA_CANNOT_MODIFY_APPEND_ONLY): {'; '.join(summaries)}. Set {APPEND_ONLY} "
        f"to false in "
        f"a contract version applied before this one, and back to true in a version after it"
        for table, summaries in refused.items()
    ]
