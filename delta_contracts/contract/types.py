"""Spark / Delta SQL types: parse, canonicalize, render, and decide Delta type widening.

A small recursive-descent parser rather than sqlglot's DataType: sqlglot maps types onto its own
cross-dialect vocabulary (STRING becomes TEXT, aliases and defaults are lost), while we need Spark's exact
canonical spelling to compare contracts with the Delta log and to round-trip.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from delta_contracts.errors import InputError

PRIMITIVES = (
    "boolean",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "string",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "void",
    "variant",
)
ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "bool": "boolean",
    "timestamp_ltz": "timestamp",
    "dec": "decimal",
    "numeric": "decimal",
}
INTEGRALS = ("tinyint", "smallint", "int", "bigint")
KNOWN_NAMES = (*PRIMITIVES, *ALIASES, "decimal", "char", "varchar", "array", "map", "struct")
MAX_PRECISION = 38
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TypeParseError(InputError, ValueError):
    def __init__(self, message: str, position: int) -> None:
        self.message = message
        self.position = position
        super().__init__(f"{message} (at position {position})")


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class DecimalType:
    precision: int = 10
    scale: int = 0

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True, slots=True)
class CharType:
    length: int

    def __str__(self) -> str:
        return f"char({self.length})"


@dataclass(frozen=True, slots=True)
class VarcharType:
    length: int

    def __str__(self) -> str:
        return f"varchar({self.length})"


@dataclass(frozen=True, slots=True)
class ArrayType:
    element: SparkType
    contains_null: bool = True

    def __str__(self) -> str:
        return f"array<{self.element}>"


@dataclass(frozen=True, slots=True)
class MapType:
    key: SparkType
    value: SparkType

    def __str__(self) -> str:
        return f"map<{self.key},{self.value}>"


@dataclass(frozen=True, slots=True)
class StructField:
    name: str
    type: SparkType
    nullable: bool = True
    comment: str | None = None

    def __str__(self) -> str:
        name = self.name if _PLAIN_NAME.match(self.name) else "`" + self.name.replace("`", "``") + "`"
        text = f"{name}:{self.type}"
        if not self.nullable:
            text += " NOT NULL"
        if self.comment is not None:
            escaped = self.comment.replace("\\", "\\\\").replace("'", "\\'")
            text += f" COMMENT '{escaped}'"
        return text


@dataclass(frozen=True, slots=True)
class StructType:
    fields: tuple[StructField, ...]

    def __str__(self) -> str:
        return "struct<" + ",".join(str(f) for f in self.fields) + ">"


SparkType = PrimitiveType | DecimalType | CharType | VarcharType | ArrayType | MapType | StructType


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str, at: int | None = None) -> TypeParseError:
        return TypeParseError(message, self.pos if at is None else at)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of text"
            raise self.fail(f"expected '{char}' at position {self.pos}, found {found}")
        self.pos += 1

    def word(self) -> str:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
            self.pos += 1
        if start == self.pos:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of text"
            raise self.fail(f"expected a type name at position {start}, found {found}")
        return self.text[start : self.pos]

    def number(self) -> int:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if start == self.pos:
            raise self.fail(f"expected a number at position {start}")
        return int(self.text[start : self.pos])

    def parse_type(self) -> SparkType:
        start = self.pos
        raw = self.word()
        name = ALIASES.get(raw.lower(), raw.lower())
        if name in PRIMITIVES:
            return PrimitiveType(name)
        if name == "decimal":
            return self.decimal(start)
        if name in ("char", "varchar"):
            self.expect("(")
            length = self.number()
            self.expect(")")
            if length < 1:
                raise self.fail(f"{name} length must be at least 1", start)
            return CharType(length) if name == "char" else VarcharType(length)
        if name == "array":
            self.expect("<")
            element = self.parse_type()
            self.expect(">")
            return ArrayType(element)
        if name == "map":
            self.expect("<")
            key = self.parse_type()
            self.expect(",")
            value = self.parse_type()
            self.expect(">")
            return MapType(key, value)
        if name == "struct":
            return self.struct()
        hint = difflib.get_close_matches(raw.lower(), KNOWN_NAMES, n=1, cutoff=0.6)
        suggestion = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise self.fail(f"unknown type '{raw}'{suggestion}", start)

    def decimal(self, start: int) -> DecimalType:
        precision, scale = 10, 0
        if self.peek() == "(":
            self.pos += 1
            precision = self.number()
            if self.peek() == ",":
                self.pos += 1
                scale = self.number()
            self.expect(")")
        if not 1 <= precision <= MAX_PRECISION:
            raise self.fail(f"decimal precision {precision} is out of range 1..{MAX_PRECISION}", start)
        if scale > precision:
            raise self.fail(f"decimal scale {scale} is greater than its precision {precision}", start)
        return DecimalType(precision, scale)

    def struct(self) -> StructType:
        self.expect("<")
        fields: list[StructField] = []
        if self.peek() == ">":
            self.pos += 1
            return StructType(())
        while True:
            name = self.field_name()
            if self.peek() == ":":
                self.pos += 1
            field_type = self.parse_type()
            nullable, comment = True, None
            while True:
                save = self.pos
                if self.peek() in (",", ">", ""):
                    break
                keyword = self.word().upper()
                if keyword == "NOT":
                    if not self.peek().isalpha() or self.word().upper() != "NULL":
                        raise self.fail("expected NULL after NOT", save)
                    nullable = False
                elif keyword == "COMMENT":
                    comment = self.string()
                else:
                    raise self.fail(f"unexpected '{keyword}' in struct field", save)
            fields.append(StructField(name, field_type, nullable, comment))
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(">")
            return StructType(tuple(fields))

    def field_name(self) -> str:
        if self.peek() == "`":
            self.pos += 1
            out = []
            while True:
                if self.pos >= len(self.text):
                    raise self.fail("unclosed ` in a struct field name")
                char = self.text[self.pos]
                if char == "`":
                    if self.text[self.pos + 1 : self.pos + 2] == "`":
                        out.append("`")
                        self.pos += 2
                        continue
                    self.pos += 1
                    return "".join(out)
                out.append(char)
                self.pos += 1
        return self.word()

    def string(self) -> str:
        quote = self.peek()
        if quote not in ("'", '"'):
            raise self.fail("expected a quoted comment")
        self.pos += 1
        out = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if char == quote:
                self.pos += 1
                return "".join(out)
            out.append(char)
            self.pos += 1
        raise self.fail("unclosed comment string")


def parse_type(text: str) -> SparkType:
    parser = _Parser(text)
    result = parser.parse_type()
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail(f"unexpected '{text[parser.pos :]}' after the type")
    return result


def render_type(spark_type: SparkType) -> str:
    return str(spark_type)


def canonical(text: str) -> str:
    return render_type(parse_type(text))


def canonical_or_text(text: str) -> str:
    """The canonical spelling of a type, or the text itself when it is no type (compared as written)."""
    try:
        return canonical(text)
    except TypeParseError:
        return text


def is_numeric(t: SparkType) -> bool:
    return isinstance(t, DecimalType) or (
        isinstance(t, PrimitiveType) and t.name in (*INTEGRALS, "float", "double")
    )


def is_string(t: SparkType) -> bool:
    return isinstance(t, CharType | VarcharType) or (isinstance(t, PrimitiveType) and t.name == "string")


def is_orderable(t: SparkType) -> bool:
    return (
        is_numeric(t)
        or is_string(t)
        or (isinstance(t, PrimitiveType) and t.name in ("date", "timestamp", "timestamp_ntz"))
    )


def _integral_rank(t: SparkType) -> int | None:
    if isinstance(t, PrimitiveType) and t.name in INTEGRALS:
        return INTEGRALS.index(t.name)
    return None


def _widens_flat(old: SparkType, new: SparkType, delta_major: int) -> bool:
    old_rank, new_rank = _integral_rank(old), _integral_rank(new)
    if delta_major < 4:
        # Delta 3.x: byte -> short -> int only.
        return old_rank is not None and new_rank is not None and old_rank < new_rank <= 2
    if old_rank is not None and new_rank is not None:
        return old_rank < new_rank
    if old == PrimitiveType("float") and new == PrimitiveType("double"):
        return True
    if old == PrimitiveType("date") and new == PrimitiveType("timestamp_ntz"):
        return True
    if old_rank is not None and old_rank <= 2 and new == PrimitiveType("double"):
        return True
    if old_rank is not None and isinstance(new, DecimalType):
        digits = 20 if old_rank == 3 else 10
        return new.precision - new.scale >= digits
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        grow_p, grow_s = new.precision - old.precision, new.scale - old.scale
        return grow_p >= grow_s >= 0 and (grow_p, grow_s) != (0, 0)
    return False


def _equal_or_widens(old: SparkType, new: SparkType, delta_major: int) -> bool:
    return old == new or widens_to(old, new, delta_major)


def widens_to(old: SparkType, new: SparkType, delta_major: int) -> bool:
    """True when changing a column from `old` to `new` is a type widening Delta allows in place."""
    if old == new:
        return False
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return widens_to(old.element, new.element, delta_major)
    if isinstance(old, MapType) and isinstance(new, MapType):
        return old.key == new.key and widens_to(old.value, new.value, delta_major)
    if isinstance(old, StructType) and isinstance(new, StructType):
        if [f.name.casefold() for f in old.fields] != [f.name.casefold() for f in new.fields]:
            return False
        return all(
            _equal_or_widens(a.type, b.type, delta_major) and a.nullable == b.nullable
            for a, b in zip(old.fields, new.fields, strict=True)
        )
    return _widens_flat(old, new, delta_major)


def lossless_cast(from_type: str, to_type: str) -> bool:
    """A CAST that keeps every value: equal types, or any widening Delta 4 knows (Delta 3 merely cannot do
    it in place). Any other type change needs the contract's `convert`, in `diff` as in `plan`."""
    old, new = parse_type(from_type), parse_type(to_type)
    return old == new or widens_to(old, new, 4)


def holds_timestamp_ntz(text: str) -> bool:
    """Whether a column of this type holds TIMESTAMP_NTZ values anywhere (a struct's field, an array's
    element, a map's key or value included): Delta asks for the timestampNtz table feature before a table
    gets one by ALTER TABLE (DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT, measured on delta-spark 4.4)."""

    def holds(t: SparkType) -> bool:
        if isinstance(t, PrimitiveType):
            return t.name == "timestamp_ntz"
        if isinstance(t, ArrayType):
            return holds(t.element)
        if isinstance(t, MapType):
            return holds(t.key) or holds(t.value)
        if isinstance(t, StructType):
            return any(holds(f.type) for f in t.fields)
        return False

    return holds(parse_type(text))
