"""Fields inside a column's type (struct fields, also inside arrays and map values), changed in place: the
ops, their conditions and statements, and the copy expression a versioned table's copy reshapes a value by.

Delta (measured on delta-spark 4.4) adds a nullable field with `ALTER TABLE t ADD COLUMNS (addr.country
STRING)` (`items.element.price`, `m.value.f`; never NOT NULL: DELTA_OPERATION_NOT_ALLOWED), renames and drops
one only on a column-mapped table (`RENAME COLUMN addr.zip TO postal_code`, `DROP COLUMN addr.zip`), and
widens one with type widening on (`ALTER COLUMN addr.n TYPE bigint`). A field's path is the column's name and
the steps down its type, `element` into an array, `value` into a map: Delta's own notation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from sqlglot import exp

from delta_contracts.contract.model import Column
from delta_contracts.contract.nested import (
    Path,
    field_at,
    field_changes,
    is_nested,
    parse_path,
    path_text,
)
from delta_contracts.contract.types import (
    ArrayType,
    MapType,
    SparkType,
    StructField,
    StructType,
    TypeParseError,
    parse_type,
)
from delta_contracts.live import LiveTable
from delta_contracts.plan.conditions import AllOf, Condition, TableCondition
from delta_contracts.plan.ops import Gate, Op, Phase, checks_not_checked
from delta_contracts.plan.render import build
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

# A copy CASTs a widened field: any widening Delta 4 knows keeps every value (`types.lossless_cast`).
WIDENING_RULES = 4


def _live_field_type(live: LiveTable, path: Path) -> SparkType | None:
    column = live.column(path[0])
    if column is None:
        return None
    try:
        column_type = parse_type(column.type)
    except TypeParseError:
        return None
    found = field_at(column_type, path[1:])
    return found.type if found is not None else None


@dataclass(frozen=True, slots=True)
class FieldIs(TableCondition):
    """The field at the path has the type."""

    table: TableId
    path: tuple[str, ...]
    type: str

    def holds_on(self, live: LiveTable) -> bool:
        return _live_field_type(live, self.path) == parse_type(self.type)

    def describe(self) -> str:
        return f"{self.table}: field {path_text(self.path)} is {self.type}"


@dataclass(frozen=True, slots=True)
class FieldPresent(TableCondition):
    """A field at the path, of any type."""

    table: TableId
    path: tuple[str, ...]

    def holds_on(self, live: LiveTable) -> bool:
        return _live_field_type(live, self.path) is not None

    def describe(self) -> str:
        return f"{self.table}: field {path_text(self.path)} is there"


@dataclass(frozen=True, slots=True)
class FieldAbsent(TableCondition):
    """No field at the path."""

    table: TableId
    path: tuple[str, ...]
    when_absent: ClassVar[bool] = True

    def holds_on(self, live: LiveTable) -> bool:
        return _live_field_type(live, self.path) is None

    def describe(self) -> str:
        return f"{self.table}: no field {path_text(self.path)}"


def field_name(path: tuple[str, ...]) -> exp.Expr:
    """A field's path as Delta's ALTER TABLE names it, every step quoted: `addr`.`zip`."""
    return exp.Dot.build([x.ident(step) for step in path]) if len(path) > 1 else x.ident(path[0])


@dataclass(frozen=True, slots=True, kw_only=True)
class AddField(Op):
    """A nullable field added to a struct inside a column (`ADD COLUMNS (addr.country STRING)`)."""

    kind: ClassVar[str] = "add_field"
    changes_fields: ClassVar[bool] = True
    path: tuple[str, ...]  # the column, then the steps to the new field (its name last)
    type: str
    comment: str | None = None
    after: str | None = None  # the field it follows; None with `first`: the first of its struct
    first: bool = False

    def postcondition(self) -> Condition:
        return FieldIs(self.table, self.path, self.type)

    def summary(self) -> str:
        return f"add field {path_text(self.path)} {self.type}"

    def edit(self) -> FieldEdit:
        """What the op does to the struct holding its field (a rewrite's shape of the table)."""
        return _adding(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class WidenField(Op):
    """A field's type widened in place (`ALTER COLUMN addr.n TYPE bigint`; type widening on)."""

    kind: ClassVar[str] = "widen_field"
    changes_fields: ClassVar[bool] = True
    path: tuple[str, ...]
    from_type: str
    to_type: str
    checks_kept: tuple[str, ...] = ()  # as `WidenType.checks_kept`: the CHECKs reading the column stand
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("checks_kept",)

    def postcondition(self) -> Condition:
        return FieldIs(self.table, self.path, self.to_type)

    def summary(self) -> str:
        return f"widen field {path_text(self.path)} {self.from_type} -> {self.to_type}"

    def edit(self) -> FieldEdit:
        wider = parse_type(self.to_type)
        return lambda struct, name: _each(struct, name, lambda f: replace(f, type=wider))

    def session_settings(self) -> tuple[tuple[str, str, str], ...]:
        return checks_not_checked() if self.checks_kept else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameField(Op):
    """A field renamed in place (`RENAME COLUMN addr.zip TO postal_code`; column mapping on): metadata only,
    its values kept."""

    kind: ClassVar[str] = "rename_field"
    changes_fields: ClassVar[bool] = True
    path: tuple[str, ...]
    new_name: str

    def postcondition(self) -> Condition:
        renamed = (*self.path[:-1], self.new_name)
        return AllOf((FieldPresent(self.table, renamed), FieldAbsent(self.table, self.path)))

    def summary(self) -> str:
        return f"rename field {path_text(self.path)} to {self.new_name}"

    def edit(self) -> FieldEdit:
        return lambda struct, name: _each(struct, name, lambda f: replace(f, name=self.new_name))


@dataclass(frozen=True, slots=True, kw_only=True)
class DropField(Op):
    """A field dropped (`DROP COLUMN addr.zip`; column mapping on), once its deprecation window has passed
    and nobody reads it."""

    kind: ClassVar[str] = "drop_field"
    destructive: ClassVar[bool] = True
    changes_fields: ClassVar[bool] = True
    path: tuple[str, ...]
    gate: Gate

    def gated_by(self) -> Gate:
        return self.gate

    def postcondition(self) -> Condition:
        return FieldAbsent(self.table, self.path)

    def summary(self) -> str:
        return f"drop field {path_text(self.path)}"

    def edit(self) -> FieldEdit:
        return lambda struct, name: _each(struct, name, lambda f: None)


FieldEdit = Callable[[StructType, str], StructType]


def _edited(spark_type: SparkType, steps: tuple[str, ...], edit: FieldEdit) -> SparkType:
    """`spark_type` with `edit` applied to the struct holding the field `steps` lead to (its name last)."""
    head, rest = steps[0], steps[1:]
    if isinstance(spark_type, ArrayType) and head.casefold() == "element" and rest:
        return ArrayType(_edited(spark_type.element, rest, edit), spark_type.contains_null)
    if isinstance(spark_type, MapType) and head.casefold() == "value" and rest:
        return MapType(spark_type.key, _edited(spark_type.value, rest, edit))
    if not isinstance(spark_type, StructType):
        raise ValueError(f"no struct at {head}")
    if not rest:
        return edit(spark_type, head)
    fields = tuple(
        replace(f, type=_edited(f.type, rest, edit)) if f.name.casefold() == head.casefold() else f
        for f in spark_type.fields
    )
    return StructType(fields)


def _adding(op: AddField) -> FieldEdit:
    def edit(struct: StructType, name: str) -> StructType:
        added = StructField(name, parse_type(op.type), True, op.comment)
        fields = list(struct.fields)
        if op.first:
            return StructType((added, *fields))
        at = len(fields)
        if op.after is not None:
            at = 1 + next(i for i, f in enumerate(fields) if f.name.casefold() == op.after.casefold())
        return StructType((*fields[:at], added, *fields[at:]))

    return edit


def _each(struct: StructType, name: str, change: Callable[[StructField], StructField | None]) -> StructType:
    kept = (change(f) if f.name.casefold() == name.casefold() else f for f in struct.fields)
    return StructType(tuple(f for f in kept if f is not None))


def column_type_after(op: AddField | WidenField | RenameField | DropField, column_type: str) -> str:
    """The type of the op's column once the op has run on a column of `column_type`."""
    return str(_edited(parse_type(column_type), op.path[1:], op.edit()))


def _alter(op: Op, action: exp.Expr) -> exp.Alter:
    return exp.Alter(this=x.table(op.table), kind="TABLE", actions=[action])


@build.register
def _(op: AddField) -> exp.Expr:
    constraints = []
    if op.comment is not None:
        comment = exp.CommentColumnConstraint(this=exp.Literal.string(op.comment))
        constraints.append(exp.ColumnConstraint(kind=comment))
    position = None
    if op.first:
        position = exp.ColumnPosition(position="FIRST")
    elif op.after is not None:
        position = exp.ColumnPosition(this=x.ident(op.after), position="AFTER")
    definition = exp.ColumnDef(
        this=field_name(op.path), kind=x.data_type(op.type), constraints=constraints, position=position
    )
    return _alter(op, exp.Schema(expressions=[definition]))


@build.register
def _(op: WidenField) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=field_name(op.path), dtype=x.data_type(op.to_type)))


@build.register
def _(op: RenameField) -> exp.Expr:
    return _alter(op, exp.RenameColumn(this=field_name(op.path), to=x.ident(op.new_name)))


@build.register
def _(op: DropField) -> exp.Expr:
    return _alter(op, exp.Drop(tables=[field_name(op.path)], kind="COLUMN"))


def field_copy(before: Column, after: Column) -> str | None:
    """The old column as the new one's type when only fields inside it change (added, dropped, renamed,
    widened): the versioned copy's expression for it; None when its type changes otherwise."""
    try:
        old, new = parse_type(before.type), parse_type(after.type)
    except TypeParseError:
        return None
    if old == new or not (is_nested(old) and is_nested(new)):
        return None
    renames = {parse_path(p): name for p, name in after.renamed_fields.items()}
    if field_changes(old, new, renames, WIDENING_RULES) is None:
        return None
    return x.sql(reshaped(x.column(before.name), old, new, renames))


def reshaped(
    value: exp.Expr, old: SparkType, new: SparkType, renames: dict[Path, str], at: Path = ()
) -> exp.Expr:
    """`value` (of type `old`) as a value of type `new`, field by field: kept and renamed fields carried over
    (a widened one CAST), added fields NULL, dropped ones left out; into arrays by `transform`, into map
    values by `transform_values`. For a versioned copy of a column whose fields change."""
    if isinstance(old, StructType) and isinstance(new, StructType):
        by_name = {f.name.casefold(): f for f in old.fields}
        sources = {renames.get((*at, f.name.casefold()), f.name).casefold(): f for f in old.fields}
        parts: list[exp.Expr] = []
        for field in new.fields:
            source = sources.get(field.name.casefold()) or by_name.get(field.name.casefold())
            if source is None:
                part = x.cast(exp.Null(), str(field.type))
            else:
                inner = exp.Dot(this=value.copy(), expression=x.ident(source.name))
                part = reshaped(inner, source.type, field.type, renames, (*at, source.name.casefold()))
            parts.append(exp.alias_(part, x.ident(field.name)))
        built = exp.Struct(expressions=parts)
        return exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(), false=built)
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        element = x.ident("e")
        body = reshaped(element, old.element, new.element, renames, (*at, "element"))
        return exp.Anonymous(
            this="transform", expressions=[value, exp.Lambda(this=body, expressions=[element.copy()])]
        )
    if isinstance(old, MapType) and isinstance(new, MapType):
        key, item = x.ident("k"), x.ident("v")
        body = reshaped(item, old.value, new.value, renames, (*at, "value"))
        return exp.Anonymous(
            this="transform_values",
            expressions=[value, exp.Lambda(this=body, expressions=[key.copy(), item.copy()])],
        )
    return value if old == new else x.cast(value, str(new))


__all__ = [
    "AddField",
    "DropField",
    "FieldAbsent",
    "FieldIs",
    "FieldPresent",
    "Phase",
    "RenameField",
    "WidenField",
    "column_type_after",
    "field_copy",
    "reshaped",
]
