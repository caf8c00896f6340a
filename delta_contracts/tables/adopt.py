"""Adopting a table that has no contract: the contract its Delta log describes, and a baseline migration.

`contract_data` reads columns, types, nullability, comments, defaults (literal or expression), identity and
generated columns, CHECK constraints, partitioning, clustering, properties (not Delta's own bookkeeping, see
`contract.delta_properties`) and the contract stamp (id, version, deprecation marks, and the JSON in
`delta_contracts.contract` holding what no DDL can: owner, consumers, tags, quality, evolution) from a live
table. A CHECK becomes a column rule (`checks.min`, …) only when rendering that rule gives back the same
expression, so nothing is guessed; every other CHECK stays a table constraint under its own name.

The baseline migration records the table as already at the contract's version: the first real change then
plans an ALTER from it, never a CREATE. When the table is not stamped with that version yet, the baseline's
one op (cutover) stamps it — metadata only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from delta_contracts.contract.delta_properties import is_bookkeeping
from delta_contracts.contract.model import Checks, Column, Contract
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.marks import (
    DEPRECATED_COLUMNS,
    DEPRECATED_SINCE,
    STAMP_CONTRACT,
    STAMP_ID,
    STAMP_VERSION,
)
from delta_contracts.plan.building import TableState, stamp_op
from delta_contracts.plan.migrations import PlannedFiles, migration_data
from delta_contracts.plan.ops import Migration
from delta_contracts.plan.rules import RULE_KINDS, column_rules, not_null_rule
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.plan.stamp import read_contract_stamp
from delta_contracts.sql.dialect import DIALECT
from delta_contracts.sql.normalize import same_expression
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

_VERSIONED = re.compile(r"^(?P<name>.+)__v(?P<major>\d+)$")
# Protocol and bookkeeping, not settings a contract states: features are switched on by the planner.
_NOT_CONTRACT_PROPERTIES = ("delta_contracts.", "delta.feature.", "delta.constraints.")
_INTERNAL = {"delta.minReaderVersion", "delta.minWriterVersion", "delta.columnMapping.maxColumnId"}
_MISSING = object()


@dataclass(frozen=True)
class Adopted:
    data: dict[str, Any]  # the contract, as YAML data (owner left to the caller)
    notes: tuple[str, ...]  # what the table holds that a contract cannot say


def contract_properties(live: LiveTable) -> dict[str, str]:
    return {
        key: value
        for key, value in sorted(live.properties.items())
        if not key.startswith(_NOT_CONTRACT_PROPERTIES) and key not in _INTERNAL and not is_bookkeeping(key)
    }


def contract_data(live: LiveTable, physical: TableId, *, alias: TableId | None = None) -> Adopted:
    """The contract of `live` (at `physical`; `alias` is the view readers use for a versioned table)."""
    physical, alias = TableId(physical), None if alias is None else TableId(alias)  # a caller's plain tuples
    notes: list[str] = []
    stamped_id = live.properties.get(STAMP_ID)
    versioned = _VERSIONED.match(physical[-1])
    if stamped_id:
        table_id = stamped_id
    elif alias is not None:
        table_id = str(alias)
    elif versioned:
        table_id = str(TableId((*physical[:-1], versioned.group("name"))))
    else:
        table_id = str(physical)
    version = live.properties.get(STAMP_VERSION) or (
        f"{versioned.group('major')}.0.0" if versioned else "1.0.0"
    )
    data: dict[str, Any] = {"apiVersion": "delta-contracts/v1", "id": table_id, "version": version}
    stamped = read_contract_stamp(live.properties.get(STAMP_CONTRACT))
    if "owner" in stamped:
        data["owner"] = stamped["owner"]
    if live.comment:
        data["description"] = live.comment
    data.update({k: stamped[k] for k in ("consumers", "tags") if k in stamped})
    table: dict[str, Any] = {}
    if live.partition_columns:
        table["partitioned_by"] = list(live.partition_columns)
    if live.clustering_columns:
        table["clustered_by"] = list(live.clustering_columns)
    properties = contract_properties(live)
    if properties:
        table["properties"] = properties
    if versioned and (alias is not None or stamped_id):
        table["versioning"] = "versioned"
    if table:
        data["table"] = table
    checks = dict(live.checks)
    deprecated = _deprecated(live)
    columns = []
    stamped_columns = stamped.get("columns", {})
    for live_column in live.columns:
        column = _column(live_column, checks, notes)
        mark = deprecated.get(live_column.name.casefold())
        if mark is not None:
            column["deprecated"] = {"since": mark}
        column.update(stamped_columns.get(live_column.name.casefold(), {}))
        columns.append(column)
    data["columns"] = columns
    if checks:  # in the table's order
        data["constraints"] = [{"name": n, "expression": checks[n]} for n in live.checks if n in checks]
    data.update({k: stamped[k] for k in ("quality", "evolution") if k in stamped})
    return Adopted(data, tuple(notes))


def _deprecated(live: LiveTable) -> dict[str, str]:
    raw = live.properties.get(DEPRECATED_COLUMNS)
    since = live.properties.get(DEPRECATED_SINCE) or live.properties.get(STAMP_VERSION) or "1.0.0"
    try:
        names = json.loads(raw) if raw else []
    except ValueError:
        return {}
    return {str(n).casefold(): since for n in names} if isinstance(names, list) else {}


def _column(live: LiveColumn, checks: dict[str, str], notes: list[str]) -> dict[str, Any]:
    """One column; the CHECKs it accounts for are taken out of `checks`."""
    name, type_text = live.name, live.type
    column: dict[str, Any] = {"name": name, "type": type_text}
    nullable = bool(live.nullable)
    not_null = _take(checks, not_null_rule(name).name)
    if not_null is not None and same_expression(not_null, not_null_rule(name).expression):
        nullable = False
    elif not_null is not None:
        checks[not_null_rule(name).name] = not_null  # not ours after all: a table constraint
    if not nullable:
        column["nullable"] = False
    if live.comment:
        column["description"] = live.comment
    if live.default is not None:
        value = literal_value(live.default)
        if value is _MISSING:
            column["default_expression"] = live.default
        else:
            column["default"] = value
    if live.identity is not None:
        mode, start, step = live.identity
        column["identity"] = {"generated": mode, "start": start, "step": step}
        if live.identity_high_water_mark is not None:
            notes.append(
                f"{name}: identity high-water mark {live.identity_high_water_mark} (Delta's own, not in the "
                "contract: a copy into a new table continues above the values it copies)"
            )
    if live.generated is not None:
        column["generated"] = live.generated
    rules: dict[str, Any] = {}
    for kind in RULE_KINDS:
        expression = _take(checks, f"{name}_{kind}")
        if expression is None:
            continue
        value = _rule_value(expression, kind)
        if value is not _MISSING and _renders_as(name, type_text, nullable, kind, value, expression):
            rules[kind] = value
        else:
            checks[f"{name}_{kind}"] = expression
    if rules:
        column["checks"] = {k: _plain(v) for k, v in rules.items()}
    return column


def _take(checks: dict[str, str], name: str) -> str | None:
    key = next((k for k in checks if k.casefold() == name.casefold()), None)
    return checks.pop(key) if key is not None else None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _renders_as(name: str, type_text: str, nullable: bool, kind: str, value: Any, expression: str) -> bool:
    """Whether the contract rule `kind: value` renders to exactly this CHECK."""
    try:
        candidate = Column(name=name, type=type_text, nullable=nullable, checks=Checks(**{kind: value}))
    except ValueError:
        return False
    rendered = [r for r in column_rules(candidate) if r.name.casefold() == f"{name}_{kind}".casefold()]
    return len(rendered) == 1 and same_expression(rendered[0].expression, expression)


def _rule_value(expression: str, kind: str) -> Any:
    """The bound, values or pattern a rule CHECK holds, or _MISSING when it is not a rule's shape."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        tree = sqlglot.parse_one(expression, read=DIALECT)
    except (ParseError, TokenError):
        return _MISSING
    tree = _unwrap(tree)
    if isinstance(tree, exp.Or) and isinstance(_unwrap(tree.this), exp.Is):
        tree = _unwrap(tree.expression)  # `c IS NULL OR <rule>`: the NULL-safe form
    if kind == "min" and isinstance(tree, exp.GTE):
        return _literal(tree.expression)
    if kind == "max" and isinstance(tree, exp.LTE):
        return _literal(tree.expression)
    if kind == "enum" and isinstance(tree, exp.In):
        values = [_literal(v) for v in tree.expressions]
        return _MISSING if any(v is _MISSING for v in values) else tuple(values)
    if kind == "regex" and isinstance(tree, exp.RegexpLike):
        pattern = _literal(tree.expression)
        return pattern if isinstance(pattern, str) else _MISSING
    return _MISSING


def _unwrap(node: Any) -> Any:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _literal(node: Any) -> Any:
    from sqlglot import exp

    node = _unwrap(node)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        return -inner if isinstance(inner, int | float) and not isinstance(inner, bool) else _MISSING
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        target = node.to.this
        try:
            if target == exp.DataType.Type.DATE:
                return date.fromisoformat(str(node.this.this))
            if target in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ):
                return datetime.fromisoformat(str(node.this.this))
        except ValueError:
            return _MISSING
    return _MISSING


def literal_value(sql_text: str) -> Any:
    """The Python value of a SQL literal (`'web'`, `0`, `-1.5`, `TRUE`), or _MISSING for an expression."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        return _literal(sqlglot.parse_one(sql_text, read=DIALECT))
    except (ParseError, TokenError):
        return _MISSING


ADOPTED_AT_VERSION = "adopted_at_version"


def adopted_at_version(baseline_json: Path) -> int | None:
    """The table version `init --from-table` adopted the table at, from its baseline migration's file."""
    try:
        value = json.loads(baseline_json.read_text(encoding="utf-8")).get(ADOPTED_AT_VERSION)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None


def baseline(contract: Contract, live: LiveTable, physical: TableId, target: Target) -> PlannedFiles:
    """Migration 0001: the table is already at `contract`'s version; it only stamps what is not stamped."""
    physical = TableId(physical)  # a caller's plain tuple
    stamp = stamp_op(physical, contract)
    stamped = all(live.properties.get(key) == value for key, value in stamp.properties)
    strategy = contract.table.versioning.value
    note = (
        f"baseline: {physical} existed before its contract (delta-contracts init --from-table); "
        "nothing is created"
    )
    migration = Migration(
        contract.table_parts,
        contract.version,  # from its own version: nothing before it is known
        contract.version,
        strategy,
        () if stamped else (stamp,),
        (),
        (note,),
    )
    properties = tuple(
        sorted((k, v) for k, v in live.properties.items() if not k.startswith("delta_contracts."))
    )
    state = TableState(physical, properties)
    migration_id = f"0001_baseline_{contract.version}"
    payload = migration_data(migration, state, contract, target)
    if live.version is not None:
        # the commits up to here were made before the table had a contract: `drift` does not flag them
        payload[ADOPTED_AT_VERSION] = live.version
    files = {
        f"{migration_id}.sql": render_sql_file(migration, migration_id=migration_id, target=target),
        f"{migration_id}.json": json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True) + "\n",
    }
    return PlannedFiles(migration_id, migration, files)
