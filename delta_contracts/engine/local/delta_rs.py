"""What the local engine's delta-rs commits share: our canonical types as delta-rs's schema types. Each op's
change itself is its entry's in `local.ops`, used only where its route says delta-rs can commit to the table
(its writer features allow it).
"""

from __future__ import annotations

from typing import Any


def delta_type(type_text: str) -> Any:
    """Our canonical type as the delta-rs schema type."""
    from deltalake.schema import ArrayType, MapType, PrimitiveType, StructType

    from delta_contracts.contract import types as t

    def convert(value: t.SparkType) -> Any:
        if isinstance(value, t.PrimitiveType):
            names = {"bigint": "long", "int": "integer", "smallint": "short", "tinyint": "byte"}
            return PrimitiveType(names.get(value.name, value.name))
        if isinstance(value, t.DecimalType):
            return PrimitiveType(f"decimal({value.precision},{value.scale})")
        if isinstance(value, t.CharType | t.VarcharType):
            return PrimitiveType("string")
        if isinstance(value, t.ArrayType):
            return ArrayType(convert(value.element), contains_null=value.contains_null)
        if isinstance(value, t.MapType):
            return MapType(convert(value.key), convert(value.value))
        from deltalake.schema import Field

        return StructType([Field(f.name, convert(f.type), nullable=f.nullable) for f in value.fields])

    return convert(t.parse_type(type_text))
