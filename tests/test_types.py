from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delta_contracts.contract.types import (
    PRIMITIVES,
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    SparkType,
    StructField,
    StructType,
    TypeParseError,
    canonical,
    parse_type,
    render_type,
    widens_to,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", "int"),
        ("INTEGER", "int"),
        ("long", "bigint"),
        ("short", "smallint"),
        ("byte", "tinyint"),
        ("real", "float"),
        ("bool", "boolean"),
        ("timestamp_ltz", "timestamp"),
        ("Timestamp_NTZ", "timestamp_ntz"),
        ("decimal", "decimal(10,0)"),
        ("dec(5)", "decimal(5,0)"),
        ("numeric( 12 , 2 )", "decimal(12,2)"),
        ("decimal(38,38)", "decimal(38,38)"),
        ("varchar(10)", "varchar(10)"),
        ("array< string >", "array<string>"),
        ("map<string, array<long>>", "map<string,array<bigint>>"),
        ("struct<a: int, b string NOT NULL>", "struct<a:int,b:string NOT NULL>"),
        ("struct<`a b`:int COMMENT 'it\\'s'>", "struct<`a b`:int COMMENT 'it\\'s'>"),
        ("struct<`x``y`:int>", "struct<`x``y`:int>"),
        ("struct<>", "struct<>"),
    ],
)
def test_canonical(text: str, expected: str) -> None:
    assert canonical(text) == expected


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("decimal(40,2)", "decimal precision 40 is out of range 1..38", 0),
        ("decimal(0)", "decimal precision 0 is out of range 1..38", 0),
        ("decimal(5,6)", "decimal scale 6 is greater than its precision 5", 0),
        ("strng", "unknown type 'strng' (did you mean 'string'?)", 0),
        ("array<int", "expected '>' at position 9, found end of text", 9),
        ("map<int>", "expected ',' at position 7, found '>'", 7),
        ("int x", "unexpected 'x' after the type", 4),
        ("", "expected a type name at position 0, found end of text", 0),
        ("struct<a int NOT>", "expected NULL after NOT", 12),
    ],
)
def test_errors(text: str, message: str, position: int) -> None:
    with pytest.raises(TypeParseError) as caught:
        parse_type(text)
    assert caught.value.message == message
    assert caught.value.position == position


# (old, new, widens on Delta 3, widens on Delta 4) — DESIGN.md, "Delta facts the planner must respect".
WIDENING = [
    ("tinyint", "smallint", True, True),
    ("tinyint", "int", True, True),
    ("smallint", "int", True, True),
    ("int", "bigint", False, True),
    ("tinyint", "bigint", False, True),
    ("float", "double", False, True),
    ("date", "timestamp_ntz", False, True),
    ("date", "timestamp", False, False),
    ("int", "double", False, True),
    ("smallint", "double", False, True),
    ("bigint", "double", False, False),
    ("int", "decimal(10,0)", False, True),
    ("int", "decimal(12,2)", False, True),
    ("int", "decimal(9,0)", False, False),
    ("int", "decimal(11,2)", False, False),
    ("bigint", "decimal(20,0)", False, True),
    ("bigint", "decimal(19,0)", False, False),
    ("decimal(10,2)", "decimal(12,2)", False, True),
    ("decimal(10,2)", "decimal(12,4)", False, True),
    ("decimal(10,2)", "decimal(11,3)", False, True),
    ("decimal(10,2)", "decimal(10,3)", False, False),
    ("decimal(10,2)", "decimal(12,1)", False, False),
    ("decimal(10,2)", "decimal(10,2)", False, False),
    ("int", "string", False, False),
    ("bigint", "int", False, False),
    ("double", "float", False, False),
    ("int", "int", False, False),
    ("array<tinyint>", "array<int>", True, True),
    ("array<int>", "array<bigint>", False, True),
    ("map<string,int>", "map<string,bigint>", False, True),
    ("map<int,int>", "map<bigint,int>", False, False),
    ("struct<a:int,b:string>", "struct<a:bigint,b:string>", False, True),
    ("struct<a:smallint,b:string>", "struct<a:int,b:string>", True, True),
    ("struct<a:int>", "struct<b:bigint>", False, False),
    ("struct<a:int>", "struct<a:int,b:int>", False, False),
]


@pytest.mark.parametrize(("old", "new", "delta3", "delta4"), WIDENING)
def test_widening_rules(old: str, new: str, delta3: bool, delta4: bool) -> None:
    assert widens_to(parse_type(old), parse_type(new), 3) is delta3
    assert widens_to(parse_type(old), parse_type(new), 4) is delta4


names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8),
)
leaves = st.one_of(
    st.sampled_from([PrimitiveType(p) for p in PRIMITIVES]),
    st.builds(lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 38)),
)


def _nested(inner: st.SearchStrategy[SparkType]) -> st.SearchStrategy[SparkType]:
    fields = st.builds(StructField, names, inner, st.booleans(), st.one_of(st.none(), st.text(max_size=10)))
    return st.one_of(
        st.builds(ArrayType, inner),
        st.builds(MapType, inner, inner),
        st.lists(fields, max_size=3).map(lambda fs: StructType(tuple(fs))),
    )


types = st.recursive(leaves, _nested, max_leaves=8)


@given(types)
def test_render_parse_round_trip(t: SparkType) -> None:
    assert parse_type(render_type(t)) == t


@given(types, st.sampled_from([3, 4]))
def test_nothing_widens_to_itself(t: SparkType, major: int) -> None:
    assert not widens_to(t, t, major)
