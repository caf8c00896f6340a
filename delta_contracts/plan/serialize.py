"""Ops and migrations to and from JSON-ready data (the machine half of a migration file)."""

from __future__ import annotations

import dataclasses
from typing import Any

from delta_contracts.plan.catch_up import CatchUpRows
from delta_contracts.plan.ops import OPS_BY_KIND, ColumnSpec, Gate, Migration, Op, Phase

# Op kinds defined outside `ops` (kept small) are known here too.
KINDS: dict[str, type[Op]] = {**OPS_BY_KIND, CatchUpRows.kind: CatchUpRows}


def _plain(value: Any) -> Any:
    if isinstance(value, Phase):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def op_to_data(op: Op) -> dict[str, Any]:
    data = _plain(op)
    return {"kind": op.kind, **data}


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def op_from_data(data: dict[str, Any]) -> Op:
    fields = dict(data)
    kind = fields.pop("kind")
    cls = KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown op kind '{kind}'")
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "phase":
            out[name] = Phase(value)
        elif name == "gate":
            out[name] = Gate(**{k: _tuples(v) for k, v in value.items()})
        elif name == "column" and isinstance(value, dict):
            out[name] = ColumnSpec(**value)
        elif name == "columns" and value and isinstance(value[0], dict):
            out[name] = tuple(ColumnSpec(**v) for v in value)
        else:
            out[name] = _tuples(value)
    return cls(**out)


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
        table=tuple(data["table"]),
        from_version=data["from_version"],
        to_version=data["to_version"],
        strategy=data["strategy"],
        ops=tuple(op_from_data(o) for o in data["ops"]),
        warnings=tuple(data.get("warnings", ())),
        notes=tuple(data.get("notes", ())),
    )
