"""Ops and migrations to and from JSON-ready data (the machine half of a migration file)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from delta_contracts.plan.ops import (
    ColumnSpec,
    Gate,
    Migration,
    Op,
    Phase,
    op_class,
    registered_ops,
)
from delta_contracts.tableid import TableId


def known_ops() -> Mapping[str, type[Op]]:
    """Every op a migration file can hold, by kind (those defined outside `plan.ops` included)."""
    return registered_ops()


def _plain(value: Any) -> Any:
    if isinstance(value, Phase):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Fields added after migration files were first written are left out while empty, so that those
        # files stay byte for byte (`omitted_when_empty` on the class: ColumnSpec, CatchUpRows, DropColumns).
        omitted = getattr(type(value), "omitted_when_empty", ())
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in omitted or getattr(value, f.name)
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def op_to_data(op: Op) -> dict[str, Any]:
    return {"kind": op.kind, **_plain(op)}


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def op_from_data(data: dict[str, Any]) -> Op:
    fields = dict(data)
    kind = fields.pop("kind")
    cls = op_class(kind)  # UnknownOpKindError (a ValueError) names a kind no op registered
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "phase":
            out[name] = Phase(value)
        elif name == "gate":
            out[name] = Gate(**{k: _tuples(v) for k, v in value.items()})
        elif name == "column" and isinstance(value, dict):
            out[name] = _column_spec(value)
        elif name == "columns" and value and isinstance(value[0], dict):
            out[name] = tuple(_column_spec(v) for v in value)
        else:
            out[name] = _tuples(value)
    return cls(**out)


def _column_spec(data: dict[str, Any]) -> ColumnSpec:
    return ColumnSpec(**{k: _tuples(v) for k, v in data.items()})


def migration_to_data(migration: Migration) -> dict[str, Any]:
    return {
        "table": list(migration.table),
        "from_version": migration.from_version,
        "to_version": migration.to_version,
        "strategy": migration.strategy,
        "warnings": list(migration.warnings),
        "notes": list(migration.notes),
        "ops": [op_to_data(op) for op in migration.ops],
    }


def migration_from_data(data: dict[str, Any]) -> Migration:
    return Migration(
        table=TableId(data["table"]),
        from_version=data["from_version"],
        to_version=data["to_version"],
        strategy=data["strategy"],
        ops=tuple(op_from_data(o) for o in data["ops"]),
        warnings=tuple(data.get("warnings", ())),
        notes=tuple(data.get("notes", ())),
    )
