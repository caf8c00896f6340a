"""`TableId`: one spelling of a table's name. Parsed and shown in one place, equal to the plain tuple of its
parts (ids read back from JSON compare and hash the same), refused with a clear error when it is no id; and
every id the planner makes or a migration file holds is one, so that `str(id)` is its dotted name."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import re
import typing
from pathlib import Path

import pytest

from delta_contracts.errors import InputError
from delta_contracts.plan.migrations import load_history
from delta_contracts.plan.ops import Migration
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.tableid import BadTableIdError, TableId
from delta_contracts.target import Target
from tests.recipes import RECIPES, base_contract, pair

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("sales.orders", ("sales", "orders")),
        ("main.sales.orders", ("main", "sales", "orders")),
        ("Sales.Orders_2", ("Sales", "Orders_2")),
    ],
)
def test_parse_and_str_round_trip(text: str, parts: tuple[str, ...]) -> None:
    parsed = TableId.parse(text)
    assert tuple(parsed) == parts
    assert str(parsed) == text
    assert TableId.parse(str(TableId(parts))) == parsed
    assert f"table {parsed}" == f"table {text}"


@pytest.mark.parametrize(
    "parts",
    [
        ("my schema", "order lines"),
        ("we`ird", "ta`ble"),
        ("ventes", "commandes_été"),
        ("カタログ", "スキーマ", "テーブル"),
    ],
)
def test_the_parts_are_names_not_sql(parts: tuple[str, ...]) -> None:
    # no quoting in the id: quoting is the SQL builder's job, where SQL is made
    table = TableId(parts)
    assert str(table) == ".".join(parts)
    assert TableId.parse(str(table)) == table
    assert tuple(table) == parts


def test_properties() -> None:
    two, three = TableId.parse("sales.orders"), TableId.parse("main.sales.orders")
    assert (two.catalog, two.schema, two.name) == (None, "sales", "orders")
    assert (three.catalog, three.schema, three.name) == ("main", "sales", "orders")


def test_equal_to_and_hashed_as_the_plain_tuple() -> None:
    table = TableId.parse("sales.orders")
    plain = ("sales", "orders")
    assert table == plain and plain == table
    assert hash(table) == hash(plain)
    assert {plain: 1}[table] == 1 and {table: 1}[plain] == 1
    assert table in {plain} and plain in {table}
    assert TableId(plain) == TableId.parse("sales.orders")
    assert table != ("sales", "Orders") and table != ("main", "sales", "orders")
    assert table[-1] == "orders"
    schema, name = table
    assert (schema, name) == plain


def test_serialized_as_a_list_and_read_back_equal() -> None:
    table = TableId.parse("main.sales.orders")
    assert json.dumps({"table": table}) == '{"table": ["main", "sales", "orders"]}'
    assert TableId(json.loads(json.dumps(table))) == table
    assert pickle.loads(pickle.dumps(table)) == table
    assert type(pickle.loads(pickle.dumps(table))) is TableId
    assert type(copy.deepcopy(table)) is TableId

    @dataclasses.dataclass
    class Holder:
        table: TableId

    assert dataclasses.asdict(Holder(table)) == {"table": table}
    assert type(dataclasses.asdict(Holder(table))["table"]) is TableId


@pytest.mark.parametrize(
    "text", ["", "orders", "sales.", ".orders", "sales..orders", "a.b.c.d", "main.sales.orders.x"]
)
def test_a_bad_name_is_refused_naming_it(text: str) -> None:
    with pytest.raises(BadTableIdError, match=re.escape(f"'{text}' is not a table id")) as raised:
        TableId.parse(text)
    assert isinstance(raised.value, InputError) and isinstance(raised.value, ValueError)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize("value", [None, 5, ("sales", "orders")])
def test_parse_takes_text_only(value: object) -> None:
    with pytest.raises(BadTableIdError, match="is not a table id"):
        TableId.parse(value)


@pytest.mark.parametrize(
    "parts",
    [(), ("orders",), ("sales", ""), ("", "orders"), ("a", "b", "c", "d"), ("sales", 5), "sales.orders"],
)
def test_bad_parts_are_refused_naming_them(parts: object) -> None:
    with pytest.raises(BadTableIdError, match="is not a table id") as raised:
        TableId(parts)  # type: ignore[arg-type]
    assert repr(parts) in str(raised.value) or f"'{parts}'" in str(raised.value)


def test_none_is_refused() -> None:
    with pytest.raises(BadTableIdError, match="None is not a table id"):
        TableId(None)  # type: ignore[arg-type]


def _id_fields(value: object) -> list[tuple[str, object]]:
    """(field, value) of every field of a dataclass annotated as a table id."""
    assert dataclasses.is_dataclass(value) and not isinstance(value, type)
    hints = typing.get_type_hints(type(value))
    return [
        (f.name, getattr(value, f.name))
        for f in dataclasses.fields(value)
        if hints[f.name] in (TableId, TableId | None) and getattr(value, f.name) is not None
    ]


def _assert_ids(migration: Migration) -> None:
    assert type(migration.table) is TableId
    for op in migration.ops:
        for name, value in _id_fields(op):
            assert type(value) is TableId, f"{op.kind}.{name} is a {type(value).__name__}: {value!r}"


@pytest.mark.parametrize("versioning", ["in_place", "versioned"])
def test_the_planner_makes_table_ids(versioning: str) -> None:
    # `str(op.table)` is the dotted name only if it is a TableId: a plain tuple would print "('s', 't')"
    migration, _ = plan(None, base_contract(versioning), Target.DELTA_4)
    _assert_ids(migration)
    for recipe in RECIPES:
        old, new = pair(recipe, versioning)
        try:
            migration, _ = plan(old, new, Target.DELTA_4)
        except PlanError:
            continue
        _assert_ids(migration)


def test_migration_files_read_back_as_table_ids() -> None:
    folders = sorted(p for p in (ROOT / "migrations").iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        history = load_history(folder)
        assert history
        for stored in history:
            assert type(stored.state.physical) is TableId
            _assert_ids(stored.migration)
            assert str(stored.migration.table) == folder.name


# Where a dotted name may still be joined or split by hand: the id type itself, and names that are no table
# id — SQL names as query logs and parsed statements spell them (any number of parts), column paths.
# The plan modules listed last still call `table_name`, kept for them until they move to `str(id)`.
JOINS_ALLOWED = {
    "delta_contracts/tableid.py": 1,  # TableId.__str__
    "delta_contracts/sql/names.py": 1,  # a parsed SQL table's name, folded for matching query logs
    "delta_contracts/engine/spark/sql_names.py": 2,  # names in Spark's parsed plans
    "delta_contracts/engine/spark/describe.py": 1,  # nested clustering column paths
    "delta_contracts/tables/drift.py": 1,  # the name a view's SQL reads, as written
    "delta_contracts/contract/environment_checks.py": 1,  # a pydantic error's field path, not a table id
    "delta_contracts/contract/nested.py": 1,  # a struct field's path inside its column
}
_JOIN = re.compile(r"""["']\.["']\.join\(""")
_IMPORTS_TABLE_NAME = re.compile(
    r"from delta_contracts\.plan\.ops import (?:\([^)]*\btable_name\b[^)]*\)|[^\n(]*\btable_name\b)"
)


def _sources() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "delta_contracts").rglob("*.py"))
    }


def test_no_module_joins_a_table_id_by_hand() -> None:
    joins = {path: n for path, text in _sources().items() if (n := len(_JOIN.findall(text)))}
    assert joins == JOINS_ALLOWED


def test_no_module_spells_a_table_id_with_the_old_helper() -> None:
    calling = {path for path, text in _sources().items() if _IMPORTS_TABLE_NAME.search(text)}
    assert calling == set()
    assert "def table_name(" not in _sources()["delta_contracts/plan/ops.py"]


def test_an_op_built_with_a_plain_tuple_holds_a_table_id() -> None:
    """Ops built by hand (an API caller, a test) spell their tables as the planner's do."""
    from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
    from delta_contracts.plan.ops import CopyRows, Phase, RenameTable

    rename = RenameTable(table=("s", "t"), phase=Phase.CUTOVER, new_name=("s", "t__v2"))
    assert type(rename.table) is TableId and type(rename.new_name) is TableId
    assert rename.summary() == "rename table s.t -> s.t__v2"
    copy = CopyRows(table=("s", "t__v2"), phase=Phase.POPULATE, source=("c", "s", "t"), mapping=(("a", "a"),))
    assert str(copy.source) == "c.s.t" and "('c'" not in copy.summary()
    catch_up = CatchUpRows(
        table=("s", "t__v2"),
        phase=Phase.CUTOVER,
        source=("s", "t"),
        mapping=(("a", "a"),),
        strategy="merge_on_key",
        key=("a",),
    )
    assert type(catch_up.source) is TableId and catch_up.strategy is CatchUpStrategy.MERGE_ON_KEY
    with pytest.raises(BadTableIdError):
        RenameTable(table=("t",), phase=Phase.CUTOVER, new_name=("s", "t__v2"))


@pytest.mark.parametrize("name", ["orders", "main.sales.orders.x", "sales..orders"])
def test_init_refuses_a_from_table_that_is_no_table_id(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from delta_contracts.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wh").mkdir()
    args = ["init", "--from-table", name, "--owner", "team", "--warehouse", str(tmp_path / "wh")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2, done.output
    assert f"error: --from-table: '{name}' is not a table id" in done.stderr
    assert "Traceback" not in done.output
    assert "engine:" not in done.stderr  # refused before an engine started
