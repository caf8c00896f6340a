"""A stored migration as it runs in one environment: every table it names (its ops', their conditions', the
objects their gates wait on, the table's planned name) under that environment's name mapping. Migration
files are written once, with contract ids; each environment reads them through its mapping here."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delta_contracts.contract.environments import NameMapping
from delta_contracts.contract.model import Contract
from delta_contracts.plan.building import TableState, initial_state
from delta_contracts.plan.ops import Op, table_id_fields
from delta_contracts.sql.expressions import reading_table
from delta_contracts.tableid import TableId

if TYPE_CHECKING:  # plan.migrations reads a history through this module
    from delta_contracts.plan.stored import StoredMigration

# The fields of ops that hold a predicate which may read another table by name (`left_behind`'s NOT EXISTS
# over the new table, `rejects`'s duplicated-key subquery): their table references are renamed too.
_PREDICATES = ("rejects", "left_behind")


def op_in_environment(op: Op, names: NameMapping) -> Op:
    """The op with its tables (and its gate's objects) named as they are in the environment."""
    if names.identity:
        return op
    tables = {name: getattr(op, name) for name in table_id_fields(type(op))}
    changes: dict[str, object] = {
        name: None if table is None else names.physical(table) for name, table in tables.items()
    }
    named = [t for t in tables.values() if isinstance(t, TableId)]
    for field in _PREDICATES:
        text = getattr(op, field, None)
        if isinstance(text, str):
            changes[field] = _renamed(text, named, names)
    reasons = getattr(op, "reasons", None)
    if isinstance(reasons, tuple) and reasons:
        changes["reasons"] = tuple((why, _renamed(text, named, names)) for why, text in reasons)
    gate = op.gated_by()
    if gate is not None:
        objects = tuple(names.object_name(obj, named) for obj in gate.objects)
        changes["gate"] = dataclasses.replace(gate, objects=objects)
    return dataclasses.replace(op, **changes)  # type: ignore[arg-type]


def _renamed(predicate: str, tables: Sequence[TableId], names: NameMapping) -> str:
    for table in tables:
        if table.name.casefold() in predicate.casefold():  # no parse for predicates that name no table
            predicate = reading_table(predicate, table, names.physical(table))
    return predicate


def in_environment(stored: StoredMigration, names: NameMapping) -> StoredMigration:
    if names.identity:
        return stored
    migration = stored.migration
    mapped = dataclasses.replace(
        migration,
        table=names.physical(migration.table),
        ops=tuple(op_in_environment(op, names) for op in migration.ops),
    )
    state = TableState(names.physical(stored.state.physical), stored.state.properties)
    return dataclasses.replace(stored, migration=mapped, state=state)


def planned_table(contract: Contract, names: NameMapping) -> TableId:
    """Where the contract's first migration puts its table, in the environment."""
    return names.physical(initial_state(contract).physical)


def history_in_environment(history: Sequence[StoredMigration], names: NameMapping) -> list[StoredMigration]:
    return [in_environment(stored, names) for stored in history]
