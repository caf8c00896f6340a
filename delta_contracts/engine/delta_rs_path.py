"""The local engine's metadata changes through delta-rs (`DeltaTable.alter`), one per op class.

Used only where the local engine's capability table (`capabilities.LOCAL`) says delta-rs can commit to the
table (its writer features allow it).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch
from typing import Any

from delta_contracts.engine.base import EngineError
from delta_contracts.engine.deltalog import CONSTRAINT_PREFIX
from delta_contracts.plan.ops import AddColumn, DropCheck, DropNotNull, Op, SetColumnComment, SetTableComment


@singledispatch
def delta_rs_change(op: Op, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    """Commit `op` with delta-rs; `configuration` is the table's, as its log states it now."""
    raise EngineError(f"{op.summary()}: delta-rs has no way to do this")


@delta_rs_change.register
def _(op: AddColumn, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    from deltalake.schema import Field

    spec = op.column
    metadata = {"comment": spec.comment} if spec.comment is not None else {}
    field = Field(spec.name, delta_type(spec.type), nullable=True, metadata=metadata)
    alter.add_columns([field], commit_properties=properties)


@delta_rs_change.register
def _(op: SetColumnComment, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    alter.set_column_metadata(op.column, {"comment": op.comment}, commit_properties=properties)


@delta_rs_change.register
def _(op: SetTableComment, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    alter.set_table_description(op.comment, commit_properties=properties)


@delta_rs_change.register
def _(op: DropCheck, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    # delta-rs matches constraint names exactly; the contract's name may differ in case.
    names = [k.removeprefix(CONSTRAINT_PREFIX) for k in configuration if k.startswith(CONSTRAINT_PREFIX)]
    name = next((n for n in names if n.casefold() == op.name.casefold()), op.name)
    alter.drop_constraint(name, raise_if_not_exists=False, commit_properties=properties)


@delta_rs_change.register
def _(op: DropNotNull, alter: Any, properties: Any, configuration: Mapping[str, str]) -> None:
    alter.drop_column_not_null(op.column, commit_properties=properties)


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
