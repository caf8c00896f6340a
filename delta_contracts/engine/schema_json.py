"""Delta's schema JSON (the log's `schemaString`, Spark's `StructType.json()`) to our live-table values."""

from __future__ import annotations

import json
from typing import Any

from delta_contracts.contract.types import canonical
from delta_contracts.live import LiveColumn

_PRIMITIVE = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
COMMENT_KEY = "comment"
DEFAULT_KEY = "CURRENT_DEFAULT"
IDENTITY_START = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"
IDENTITY_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
IDENTITY_HIGH_WATER_MARK = "delta.identity.highWaterMark"
GENERATION_EXPRESSION = "delta.generationExpression"


def identity_of(metadata: dict[str, Any]) -> tuple[str, int, int] | None:
    """("always" | "by_default", start, step) of a field's metadata, or None when it is no identity column."""
    if IDENTITY_START not in metadata:
        return None
    mode = "by_default" if metadata.get(IDENTITY_EXPLICIT_INSERT) else "always"
    return mode, int(metadata[IDENTITY_START]), int(metadata.get(IDENTITY_STEP, 1))


def high_water_mark(metadata: dict[str, Any]) -> int | None:
    value = metadata.get(IDENTITY_HIGH_WATER_MARK)
    return None if value is None else int(value)


def type_sql(data_type: Any) -> str:
    """A Delta JSON data type as canonical Spark DDL text."""
    if isinstance(data_type, str):
        return canonical(_PRIMITIVE.get(data_type, data_type))
    kind = data_type.get("type")
    if kind == "array":
        return f"array<{type_sql(data_type['elementType'])}>"
    if kind == "map":
        return f"map<{type_sql(data_type['keyType'])},{type_sql(data_type['valueType'])}>"
    if kind == "struct":
        fields = []
        for field in data_type["fields"]:
            name = field["name"]
            quoted = name if name.isidentifier() and name.isascii() else "`" + name.replace("`", "``") + "`"
            text = f"{quoted}:{type_sql(field['type'])}"
            if not field.get("nullable", True):
                text += " NOT NULL"
            fields.append(text)
        return canonical("struct<" + ",".join(fields) + ">")
    raise ValueError(f"unknown Delta data type {data_type!r}")


def columns_from_schema(schema: str | dict[str, Any]) -> tuple[LiveColumn, ...]:
    data = json.loads(schema) if isinstance(schema, str) else schema
    columns = []
    for field in data["fields"]:
        metadata = field.get("metadata") or {}
        columns.append(
            LiveColumn(
                name=field["name"],
                type=type_sql(field["type"]),
                nullable=bool(field.get("nullable", True)),
                comment=metadata.get(COMMENT_KEY),
                default=metadata.get(DEFAULT_KEY),
                identity=identity_of(metadata),
                identity_high_water_mark=high_water_mark(metadata),
                generated=metadata.get(GENERATION_EXPRESSION),
            )
        )
    return tuple(columns)
