"""ALTER TABLE on the in-memory engine: each action changes the table's Delta metadata (and its rows' DuckDB
columns) as delta-spark would, under delta-spark's rules, and makes the commit delta-spark makes, with its
operation name (DESCRIBE HISTORY's) and parameters."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from delta_contracts.engine.base import EngineError
from delta_contracts.engine.memory.catalog import Catalog, MemoryTable, duckdb_type
from delta_contracts.engine.memory.definitions import column_of, table_id, text_of, type_text
from delta_contracts.sql import expressions as x
from delta_contracts.sql.dialect import DIALECT

_UNSET = re.compile(
    r"^TABLE\s+(?P<table>.+?)\s+UNSET\s+TBLPROPERTIES\s+(?P<exists>IF\s+EXISTS\s+)?\((?P<keys>.*)\)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_DROP_FEATURE = re.compile(r"^TABLE\s+(?P<table>.+?)\s+DROP\s+FEATURE\s+(?P<feature>.+?)\s*$", re.IGNORECASE)
# What a property turns on, for DROP FEATURE: a feature still turned on cannot be dropped.
_FEATURE_SWITCH = {
    "typeWidening": "delta.enableTypeWidening",
    "deletionVectors": "delta.enableDeletionVectors",
    "changeDataFeed": "delta.enableChangeDataFeed",
    "appendOnly": "delta.appendOnly",
    "rowTracking": "delta.enableRowTracking",
}
_INTEGRAL = ["tinyint", "smallint", "int", "bigint"]
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


def alter_table(
    catalog: Catalog, tag: str | None, node: exp.Table, actions: list[exp.Expr]
) -> list[dict[str, Any]]:
    table = catalog.existing(table_id(node))
    for action in actions:
        if isinstance(action, exp.AlterRename):
            catalog.rename(table, table_id(action.this))
            continue
        operation, parameters = _apply(catalog, table, action)
        if operation is not None:
            catalog.commit(table, operation, parameters, tag)
    return []


def alter_command(catalog: Catalog, tag: str | None, rest: str) -> list[dict[str, Any]]:
    """The ALTER TABLE forms sqlglot reads as a bare command: UNSET TBLPROPERTIES and DROP FEATURE."""
    if found := _UNSET.match(rest):
        table = catalog.existing(table_id(exp.to_table(found["table"], dialect=DIALECT)))
        keys = [str(text_of(k)) for k in x.parse(f"({found['keys']})").flatten()]
        missing = [k for k in keys if k not in table.properties]
        if missing and not found["exists"]:
            raise EngineError(f"[UNSET_NONEXISTENT_PROPERTIES] {table.name} has no property {missing[0]}")
        for key in keys:
            table.properties.pop(key, None)
        catalog.commit(table, "UNSET TBLPROPERTIES", {"properties": keys}, tag)
        return []
    if found := _DROP_FEATURE.match(rest):
        table = catalog.existing(table_id(exp.to_table(found["table"], dialect=DIALECT)))
        feature = found["feature"].strip("`")
        switch = _FEATURE_SWITCH.get(feature)
        if feature not in table.features:
            raise EngineError(
                f"[DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT] {table.name} has no feature {feature}"
            )
        if switch is None or table.properties.get(switch, "").casefold() == "true":
            raise EngineError(
                f"[DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY] {feature} is in use on {table.name}"
                + (f": set {switch} to false first" if switch else "")
            )
        table.features.discard(feature)
        catalog.commit(table, "DROP FEATURE", {"featureName": feature}, tag)
        return []
    raise EngineError(f"the in-memory engine does not model ALTER {rest.split(' ', 3)[-1][:40]}")


def _apply(catalog: Catalog, table: MemoryTable, action: exp.Expr) -> tuple[str | None, dict[str, Any]]:
    if isinstance(action, exp.AlterSet):
        return _set_properties(table, action)
    if isinstance(action, exp.Schema):
        return _add_columns(catalog, table, action)
    if isinstance(action, exp.AlterColumn):
        return _alter_column(catalog, table, action)
    if isinstance(action, exp.Drop):
        kind = str(action.args.get("kind") or "").upper()
        if kind == "CONSTRAINT":
            return _drop_check(table, action)
        if kind in {"COLUMN", "COLUMNS"}:
            return _drop_columns(catalog, table, action)
    if isinstance(action, exp.AddConstraint):
        return _add_check(catalog, table, action)
    if isinstance(action, exp.RenameColumn):
        return _rename_column(catalog, table, action)
    if isinstance(action, exp.ClusterProperty):
        return _cluster_by(table, action)
    raise EngineError(f"{table.name}: the in-memory engine does not model ALTER TABLE … {x.sql(action)}")


def _set_properties(table: MemoryTable, action: exp.AlterSet) -> tuple[str, dict[str, Any]]:
    given: dict[str, str] = {}
    for properties in action.expressions:
        for prop in properties.expressions:
            given[str(text_of(prop.this))] = str(text_of(prop.args.get("value")))
    table.set_properties(given)
    return "SET TBLPROPERTIES", {"properties": given}


def _top_level(table: MemoryTable, node: exp.Expr) -> str:
    """The column an action names; a nested field's path is refused (the real engines change fields)."""
    if isinstance(node, exp.Column) and node.table:
        raise EngineError(f"{table.name}: the in-memory engine does not change nested fields ({x.sql(node)})")
    return node.name


def _add_columns(catalog: Catalog, table: MemoryTable, action: exp.Schema) -> tuple[str, dict[str, Any]]:
    added = []
    for definition in action.expressions:
        if not isinstance(definition, exp.ColumnDef):
            raise EngineError(f"{table.name}: ADD COLUMNS takes column definitions")
        if isinstance(definition.this, exp.Dot):
            raise EngineError(f"{table.name}: the in-memory engine does not add nested fields")
        column = column_of(definition)
        if table.column(column.name) is not None:
            raise EngineError(f"[FIELD_ALREADY_EXISTS] {table.name} already has a column {column.name}")
        if not column.nullable:
            raise EngineError(
                f"[DELTA_ADD_COLUMN_NOT_NULL] {table.name}: a column added to a table with rows must be "
                f"nullable ({column.name})"
            )
        add = exp.ColumnDef(this=x.ident(column.name), kind=duckdb_type(column.type))
        catalog.run(exp.Alter(this=table.data, kind="TABLE", actions=[add]))
        table.columns.append(column)
        if column.default is not None:
            catalog.set_duckdb_default(table, column)
        added.append({"column": {"name": column.name, "type": column.type, "nullable": True}})
    return "ADD COLUMNS", {"columns": added}


def _widens(before: str, after: str) -> bool:
    if before == after:
        return True
    if before in _INTEGRAL and after in _INTEGRAL:
        return _INTEGRAL.index(before) < _INTEGRAL.index(after)
    if (before, after) in {("float", "double"), ("date", "timestamp_ntz")}:
        return True
    if before in _INTEGRAL[:3] and after == "double":
        return True
    old, new = _DECIMAL.match(before), _DECIMAL.match(after)
    if old and new:
        (p1, s1), (p2, s2) = (map(int, old.groups()), map(int, new.groups()))
        return s2 >= s1 and p2 - s2 >= p1 - s1
    return False


def _alter_column(
    catalog: Catalog, table: MemoryTable, action: exp.AlterColumn
) -> tuple[str, dict[str, Any]]:
    name = _top_level(table, action.this)
    column = table.column(name)
    if column is None:
        raise EngineError(f"[DELTA_COLUMN_NOT_FOUND] {table.name} has no column {name}")
    args = action.args
    if args.get("dtype") is not None:
        wanted = type_text(args["dtype"])
        if not _widens(column.type, wanted):
            raise EngineError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] {table.name}.{column.name}: "
                f"{column.type} cannot change to {wanted}"
            )
        if wanted != column.type and table.properties.get("delta.enableTypeWidening", "") != "true":
            raise EngineError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] {table.name}.{column.name}: widening "
                f"{column.type} to {wanted} needs delta.enableTypeWidening"
            )
        catalog.retype_in_duckdb(table, column.name, wanted)
        changed = catalog.replace_column(table, name, type=wanted)
    elif args.get("default") is not None:
        if "allowColumnDefaults" not in table.features:
            raise EngineError(
                f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] {table.name}: set "
                "delta.feature.allowColumnDefaults = 'supported' first"
            )
        changed = catalog.replace_column(table, name, default=x.sql(args["default"]))
        catalog.set_duckdb_default(table, changed)
    elif args.get("allow_null") is True and args.get("drop"):
        changed = catalog.replace_column(table, name, nullable=True)
    elif args.get("allow_null") is False:
        rule = exp.Not(this=exp.Is(this=x.column(column.name), expression=exp.Null()))
        if catalog.broken_rows(table, rule):
            raise EngineError(
                f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: {column.name}"
            )
        changed = catalog.replace_column(table, name, nullable=False)
    elif args.get("drop"):
        changed = catalog.replace_column(table, name, default=None)
        catalog.set_duckdb_default(table, changed)
    elif args.get("comment") is not None:
        changed = catalog.replace_column(table, name, comment=text_of(args["comment"]))
    else:
        raise EngineError(f"{table.name}: the in-memory engine does not model {x.sql(action)}")
    shown = {"name": changed.name, "type": changed.type, "nullable": changed.nullable}
    return "CHANGE COLUMN", {"column": shown}


def _needs_column_mapping(table: MemoryTable, what: str) -> None:
    if not table.column_mapped():
        raise EngineError(
            f"[DELTA_UNSUPPORTED_{what.upper().replace(' ', '_')}] {what} on {table.name} needs column "
            "mapping (delta.columnMapping.mode = 'name')"
        )


def _used_by_checks(table: MemoryTable, column: str, what: str) -> None:
    for name, expression in table.checks.items():
        if column.casefold() in {c.casefold() for c in x.referenced_roots(expression)}:
            raise EngineError(
                f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] cannot {what} column {column} of {table.name}: "
                f"the CHECK constraint {name} reads it"
            )


def _drop_columns(catalog: Catalog, table: MemoryTable, action: exp.Drop) -> tuple[str, dict[str, Any]]:
    _needs_column_mapping(table, "drop column")
    given = action.args.get("tables") or []
    named = [n for node in given for n in (node.expressions if isinstance(node, exp.Schema) else [node])]
    names = [_top_level(table, n) for n in named]
    for name in names:
        column = table.column(name)
        if column is None:
            raise EngineError(f"[DELTA_COLUMN_NOT_FOUND] {table.name} has no column {name}")
        if column.name.casefold() in {p.casefold() for p in table.partition_columns}:
            raise EngineError(
                f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] {column.name} partitions {table.name}"
            )
        _used_by_checks(table, column.name, "drop")
    if len(names) >= len(table.columns):
        raise EngineError(f"[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] {table.name} would have no column")
    for name in names:
        column = table.column(name)
        assert column is not None
        catalog.run(
            exp.Alter(
                this=table.data,
                kind="TABLE",
                actions=[exp.Drop(tables=[x.column(column.name)], kind="COLUMN")],
            )
        )
        table.columns = [c for c in table.columns if c is not column]
    return "DROP COLUMNS", {"columns": names}


def _drop_check(table: MemoryTable, action: exp.Drop) -> tuple[str | None, dict[str, Any]]:
    given = action.args.get("tables") or []
    name = given[0].name if given else ""
    found = next((n for n in table.checks if n.casefold() == name.casefold()), None)
    if found is None:
        if action.args.get("exists"):
            return None, {}
        raise EngineError(f"[DELTA_CONSTRAINT_DOES_NOT_EXIST] {table.name} has no constraint {name}")
    expression = table.checks.pop(found)
    return "DROP CONSTRAINT", {"name": found, "expr": expression}


def _add_check(catalog: Catalog, table: MemoryTable, action: exp.AddConstraint) -> tuple[str, dict[str, Any]]:
    constraint = action.expressions[0]
    name = constraint.name
    check = next((e for e in constraint.expressions if isinstance(e, exp.CheckColumnConstraint)), None)
    if check is None:
        raise EngineError(f"{table.name}: the in-memory engine adds CHECK constraints only")
    if table.check_named(name) is not None:
        raise EngineError(f"[DELTA_CONSTRAINT_ALREADY_EXISTS] {table.name} has a constraint {name} already")
    expression = x.sql(check.this)
    broken = catalog.broken_rows(table, check.this)
    if broken:
        raise EngineError(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {broken} rows in {table.name} violate the new CHECK "
            f"constraint ({expression})"
        )
    table.checks[name] = expression
    return "ADD CONSTRAINT", {"name": name, "expr": expression}


def _rename_column(
    catalog: Catalog, table: MemoryTable, action: exp.RenameColumn
) -> tuple[str, dict[str, Any]]:
    _needs_column_mapping(table, "rename column")
    old, new = _top_level(table, action.this), _top_level(table, action.args["to"])
    column = table.column(old)
    if column is None:
        raise EngineError(f"[DELTA_COLUMN_NOT_FOUND] {table.name} has no column {old}")
    if table.column(new) is not None:
        raise EngineError(f"[FIELD_ALREADY_EXISTS] {table.name} already has a column {new}")
    _used_by_checks(table, column.name, "rename")
    rename = exp.RenameColumn(this=x.column(column.name), to=x.column(new))
    catalog.run(exp.Alter(this=table.data, kind="TABLE", actions=[rename]))
    catalog.replace_column(table, column.name, name=new)
    fold = column.name.casefold()
    table.partition_columns = tuple(new if p.casefold() == fold else p for p in table.partition_columns)
    table.clustering_columns = tuple(new if p.casefold() == fold else p for p in table.clustering_columns)
    return "RENAME COLUMN", {"oldColumnPath": column.name, "newColumnPath": new}


def _cluster_by(table: MemoryTable, action: exp.ClusterProperty) -> tuple[str, dict[str, Any]]:
    if table.partition_columns:
        raise EngineError(f"[DELTA_CLUSTERING_WITH_PARTITION_PREDICATE] {table.name} is partitioned")
    wanted = tuple(_top_level(table, c) for c in action.expressions)
    for name in wanted:
        if table.column(name) is None:
            raise EngineError(f"[DELTA_COLUMN_NOT_FOUND] {table.name} has no column {name}")
    before = table.clustering_columns
    table.clustering_columns = wanted
    table.features.add("clustering")
    return "CLUSTER BY", {"oldClusteringColumns": list(before), "newClusteringColumns": list(wanted)}
