"""Fields inside a column's type (struct fields, also inside arrays and map values): their paths in Delta's
notation (`addr.zip`, `items.element.price`, `m.value.f`), and what changed between two versions of one
column's type, field by field, where Delta can make each change in place.

Pure: it reads parsed types only. A field path is the column's name followed by the steps down the type:
a struct field's name, `element` into an array, `value` into a map (Delta's own spelling in ALTER TABLE).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from delta_contracts.contract.types import (
    ArrayType,
    MapType,
    SparkType,
    StructField,
    StructType,
    widens_to,
)

Path = tuple[str, ...]  # the steps below the column: field names, `element`, `value`


class FieldChangeKind(StrEnum):
    ADDED = "added"
    DROPPED = "dropped"
    RENAMED = "renamed"
    WIDENED = "widened"
    DEPRECATED = "deprecated"


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of a column's type changed. `path`: where it is on the table when its op runs (the old
    names of its parents for an add, a widening or a rename, which run before any parent's rename; the new
    names for a drop, which runs after them); `new_path`: where it is in the new contract (an added,
    renamed or widened field) or was in the old one (a dropped field)."""

    kind: FieldChangeKind
    path: Path
    new_path: Path
    old: StructField | None  # the field as the old type has it (None: added)
    new: StructField | None  # the field as the new type has it (None: dropped)
    after: str | None = None  # an added field: the field it follows in its struct (None: the first)
    last: bool = True  # an added field: it comes last in its struct (Delta's ADD COLUMNS default)

    @property
    def old_type(self) -> str:
        return str(self.old.type) if self.old is not None else ""

    @property
    def new_type(self) -> str:
        return str(self.new.type) if self.new is not None else ""


class NotFieldwiseError(ValueError):
    """The two types differ in a way no field-by-field change in place says (caught in this module)."""


def path_text(path: Path) -> str:
    """A field path as a contract and a user write it, `addr.zip` (a column path, never a table id)."""
    return ".".join(path)


def dotted(column: str, path: Path) -> str:
    """A field's path from its column as a user reads it, `addr.zip`."""
    return path_text((column, *path))


def parse_path(text: str) -> Path:
    """A field path as a contract writes it (`zip`, `element.price`): its steps, folded as Delta matches."""
    return tuple(step.strip().casefold() for step in text.split("."))


def field_at(spark_type: SparkType, path: Path) -> StructField | None:
    """The field a path names in a type (None: the path names none)."""
    current: SparkType = spark_type
    found: StructField | None = None
    for step in path:
        if isinstance(current, ArrayType) and step == "element":
            current, found = current.element, None
            continue
        if isinstance(current, MapType) and step == "value":
            current, found = current.value, None
            continue
        if not isinstance(current, StructType):
            return None
        match = [f for f in current.fields if f.name.casefold() == step.casefold()]
        if not match:
            return None
        found = match[0]
        current = found.type
    return found


def unknown_field_paths(
    spark_type: SparkType, renamed_fields: Mapping[str, str], deprecated_fields: Mapping[str, object]
) -> list[tuple[str, str, str]]:
    """The paths of a column's `renamed_fields` and `deprecated_fields` that name no field of its type:
    (key, path, message). A rename is checked where it lands: the new name beside the old one's place."""
    found = []
    for path, name in renamed_fields.items():
        steps = parse_path(path)
        if field_at(spark_type, (*steps[:-1], name.casefold())) is None:
            found.append(
                ("renamed_fields", path, f"renamed_fields '{path}': the type has no field {name} there")
            )
    for path in deprecated_fields:
        if field_at(spark_type, parse_path(path)) is None:
            found.append(
                ("deprecated_fields", path, f"deprecated_fields '{path}': the type has no such field")
            )
    return found


def field_changes(
    old: SparkType, new: SparkType, renames: Mapping[Path, str], delta_major: int
) -> tuple[FieldChange, ...] | None:
    """The changes, field by field, that take a column of type `old` to `new`, with `renames` (old field
    path → new name, folded) the contract declares; None when some difference is no such change (a field's
    nullability, a type that does not widen, fields reordered, a NOT NULL field added …): then the column's
    type changes as a whole."""
    try:
        found = list(_walk(old, new, (), (), renames, delta_major))
    except NotFieldwiseError:
        return None
    return tuple(found)


def not_fieldwise_reason(
    old: SparkType, new: SparkType, renames: Mapping[Path, str], delta_major: int
) -> str | None:
    """Why `field_changes` finds no field-by-field change from `old` to `new` (None: it finds one)."""
    try:
        _walk(old, new, (), (), renames, delta_major)
    except NotFieldwiseError as err:
        return str(err)
    return None


def _walk(
    old: SparkType, new: SparkType, path: Path, new_path: Path, renames: Mapping[Path, str], major: int
) -> list[FieldChange]:
    if isinstance(old, StructType) and isinstance(new, StructType):
        return _struct(old, new, path, new_path, renames, major)
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        step = ("element",)
        return _walk(old.element, new.element, path + step, new_path + step, renames, major)
    if isinstance(old, MapType) and isinstance(new, MapType):
        if old.key != new.key:
            raise NotFieldwiseError(f"the key type of {_at(path)} changes")
        step = ("value",)
        return _walk(old.value, new.value, path + step, new_path + step, renames, major)
    if old == new:
        return []
    raise NotFieldwiseError(f"{_at(path)} changes from {old} to {new}, not a widening")


def _struct(
    old: StructType, new: StructType, path: Path, new_path: Path, renames: Mapping[Path, str], major: int
) -> list[FieldChange]:
    folded_path = tuple(s.casefold() for s in path)
    new_by_name = {f.name.casefold(): f for f in new.fields}
    # each old field: the new field it became (same name, or its declared new name), or None (dropped)
    became: list[tuple[StructField, StructField | None]] = []
    for field in old.fields:
        target = renames.get((*folded_path, field.name.casefold()), field.name)
        became.append((field, new_by_name.get(target.casefold())))
    claimed = [n.name.casefold() for _, n in became if n is not None]
    if len(set(claimed)) != len(claimed):
        raise NotFieldwiseError(f"two fields of {_at(path)} become one")
    kept_order = [n.name.casefold() for n in new.fields if n.name.casefold() in claimed]
    if kept_order != claimed:
        raise NotFieldwiseError(f"the fields of {_at(path)} are reordered (Delta moves no field)")
    changes: list[FieldChange] = []
    drops: list[FieldChange] = []
    for before, after in became:
        here, there = (*path, before.name), new_path
        if after is None:
            drops.append(FieldChange(FieldChangeKind.DROPPED, (*new_path, before.name), here, before, None))
            continue
        there = (*new_path, after.name)
        if before.nullable != after.nullable:
            raise NotFieldwiseError(
                f"field {_at(here)} changes nullability (Delta changes no field's NOT NULL)"
            )
        if before.comment != after.comment:
            raise NotFieldwiseError(f"the comment of field {_at(here)} changes")
        if before.name != after.name:
            if before.name.casefold() == after.name.casefold():
                raise NotFieldwiseError(f"field {_at(here)} is renamed in case only")
            changes.append(FieldChange(FieldChangeKind.RENAMED, here, there, before, after))
        changes.extend(_inside(before, after, here, there, renames, major))
    previous: str | None = None
    for position, field in enumerate(new.fields):
        if field.name.casefold() not in claimed:
            if not field.nullable:
                raise NotFieldwiseError(
                    f"field {_at((*path, field.name))} is added NOT NULL (Delta's ADD COLUMNS adds a "
                    "nullable field only)"
                )
            last = all(f.name.casefold() not in claimed for f in new.fields[position:])
            changes.append(
                FieldChange(
                    FieldChangeKind.ADDED,
                    (*path, field.name),
                    (*new_path, field.name),
                    None,
                    field,
                    after=previous,
                    last=last,
                )
            )
        previous = _old_name_of(field, became)
    return changes + drops


def _at(path: Path) -> str:
    return path_text(path) if path else "the column"


def _old_name_of(field: StructField, became: list[tuple[StructField, StructField | None]]) -> str:
    """A new struct's field as the table names it before any rename: its old name, or its own (added)."""
    for before, after in became:
        if after is field:
            return before.name
    return field.name


def _inside(
    before: StructField,
    after: StructField,
    here: Path,
    there: Path,
    renames: Mapping[Path, str],
    major: int,
) -> list[FieldChange]:
    """The changes inside one field both types have: in its own type, or the field widened as a whole."""
    try:
        return _walk(before.type, after.type, here, there, renames, major)
    except NotFieldwiseError:
        if widens_to(before.type, after.type, major) and not _nested(before.type):
            return [FieldChange(FieldChangeKind.WIDENED, here, there, before, after)]
        raise


def _nested(spark_type: SparkType) -> bool:
    return isinstance(spark_type, StructType | ArrayType | MapType)


def is_nested(spark_type: SparkType) -> bool:
    """A type with fields inside it a change can name (a struct, or an array or map holding one)."""
    if isinstance(spark_type, StructType):
        return True
    if isinstance(spark_type, ArrayType):
        return is_nested(spark_type.element)
    if isinstance(spark_type, MapType):
        return is_nested(spark_type.value)
    return False
