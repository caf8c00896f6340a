"""Ids and names cannot escape the project, and every name `lint` accepts is one Spark reads.

Generated ids and names mix what a user may type with what an attacker would (path separators, `..`, quotes,
comment markers, line breaks, unicode, 300-character strings). Two properties:

- nothing the toolkit writes for a contract lands outside its root: a refused id writes nothing, an accepted
  one writes its migration files under `migrations/<id>/` and nowhere else;
- every id `lint` accepts is a table name Spark's parser reads back as the same parts, and every column and
  constraint name it accepts survives the migration's `.sql` file as `spark-sql -f` reads it (Spark's own
  statement splitter, then Spark's parser), each statement intact.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_contracts.contract.errors import ContractError
from delta_contracts.contract.lint import lint
from delta_contracts.contract.load import LoadedContract, parse_contract
from delta_contracts.paths import OutsideRootError, inside
from delta_contracts.plan.migrations import next_migration, table_folder, write_migration
from delta_contracts.plan.render import render
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.target import Target
from tests.builders import MINIMAL
from tests.spark_parser import classic_session, spark_parse
from tests.test_render_spark import jvm, needs_spark  # noqa: F401  (jvm: the fixture needs_spark uses)

# Spark's parser is a classic Delta session (tests/spark_parser.py): in the Spark lane it is the suite's own,
# so the worker runs one JVM instead of two (tests/xdist_lanes.py).
pytestmark = pytest.mark.lane("spark")

_HOSTILE = ["/", "\\", "..", ".", " ", "-", "`", "'", '"', ";", "--", "/*", "\n", "\t", "\0", "${"]
_HOSTILE += ["名", "é", "🚀"]
_PLAIN = "abcxyzABCZ019_"
_part = st.one_of(
    st.text(alphabet=_PLAIN, min_size=1, max_size=12),
    st.lists(st.sampled_from([*_HOSTILE, *_PLAIN]), min_size=1, max_size=8).map("".join),
    st.sampled_from(["select", "table", "interval", "_delta_contracts", "1d", "12L", "1e5", "a" * 300]),
)
ids = st.one_of(
    st.lists(_part, min_size=1, max_size=4).map(".".join),
    st.lists(_part, min_size=2, max_size=3).map(lambda parts: "/" + ".".join(parts)),
)
_RULES = ("min", "max", "enum", "regex")  # a column's checks are constraints named <column>_<rule>
names = st.one_of(
    st.text(min_size=1, max_size=16),  # any unicode, control characters included
    st.lists(st.sampled_from([*_HOSTILE, *_PLAIN, "x"]), min_size=1, max_size=10).map("".join),
)


def contract_text(table_id: str, column: str = "amount", constraint: str = "c1") -> str:
    doc: dict[str, Any] = yaml.safe_load(MINIMAL)
    doc["id"] = table_id
    doc["columns"][1]["name"] = column
    doc["table"] = {"properties": {"delta.columnMapping.mode": "name"}}  # any storable name may be tried
    doc["constraints"] = [{"name": constraint, "expression": "order_id > 0"}]
    return yaml.safe_dump(doc, allow_unicode=True)


def accepted(text: str, folder: Path) -> LoadedContract | None:
    """The contract when `lint` has nothing to say about it (load errors included), else None."""
    try:
        loaded = parse_contract(text, folder / "c.yaml")
    except ContractError:
        return None
    return None if lint(loaded) else loaded


def files_under(folder: Path) -> set[Path]:
    walked = list(os.walk(folder))
    return {Path(d) / f for d, _, fs in walked for f in fs} | {Path(d) for d, _, _ in walked}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table_id=ids)
def test_nothing_written_for_a_contract_lands_outside_its_root(tmp_path: Path, table_id: str) -> None:
    project = tmp_path / "project"
    root = project / "migrations"
    root.mkdir(parents=True, exist_ok=True)
    before = files_under(tmp_path) - files_under(project)
    loaded = accepted(contract_text(table_id), project)
    if loaded is not None:
        planned = next_migration([], loaded.contract, Target.DELTA_4)
        assert planned is not None
        for path in write_migration(table_folder(root, loaded.contract.id), planned):
            assert path.resolve().is_relative_to(root.resolve()), path
    else:  # refused: `plan` stops before writing; the folder helper refuses it too, or keeps it inside
        try:
            folder = table_folder(root, table_id)
        except OutsideRootError:
            pass
        else:
            assert folder.resolve().is_relative_to(root.resolve())
    assert files_under(tmp_path) - files_under(project) == before  # nothing beside the project


@settings(max_examples=100, deadline=None)
@given(name=st.one_of(names, ids))
def test_a_name_never_leads_out_of_its_root(tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    root = tmp_path_factory.getbasetemp() / "root"
    try:
        path = inside(root, name)
    except OutsideRootError:
        return
    assert path.resolve().is_relative_to(root.resolve()) and path.resolve() != root.resolve()


def test_a_link_planted_in_the_tree_does_not_lead_out(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "migrations", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "sales.orders").symlink_to(elsewhere)
    with pytest.raises(OutsideRootError, match="outside"):
        table_folder(root, "sales.orders")


def test_the_reported_ids_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    """The attack: `/tmp/x/OUTSIDE.x` passed lint and `plan` wrote beside the project; a 300-character id
    ended in `OSError: File name too long`; `t.名前` and `t.x/y` passed although Spark rejects them."""
    for table_id in ("/tmp/x/OUTSIDE.x", "s." + "a" * 300, "t.名前", "t.x/y"):
        assert accepted(contract_text(table_id), tmp_path) is None, table_id


# -- Spark's parser and `spark-sql -f` ----------------------------------------------------------------------
@cache
def _spark_sql_splitter() -> Any:
    java = classic_session()._jvm
    unsafe_field = java.java.lang.Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe")
    unsafe_field.setAccessible(True)
    driver_class = java.java.lang.Class.forName("org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver")
    # The splitter reads nothing of the driver; its constructor would start a Hive session.
    return unsafe_field.get(None).allocateInstance(driver_class)


def spark_sql_file_statements(text: str) -> list[str]:
    """The statements `spark-sql -f` runs from a file: its reader (SparkSQLCLIDriver.processReader) keeps the
    lines that do not start with `--`, each with a line break; its own splitter (splitSemiColon, called on
    the real class) cuts them at `;`; a piece ending in `\\` continues into the next (processLine)."""
    kept = "".join(line + "\n" for line in text.split("\n") if not line.strip().startswith("--"))
    statements, pending = [], ""
    for piece in _spark_sql_splitter().splitSemiColon(kept):
        if piece.endswith("\\"):
            pending += piece[:-1] + ";"
            continue
        if (pending + piece).strip():
            statements.append(pending + piece)
        pending = ""
    return statements


@needs_spark
def test_the_splitter_is_spark_sql_s_own() -> None:
    """The harness above sees what `spark-sql -f` sees: comment lines go, and a `\\` in a back-quoted name
    swallows the rest of the file into one statement."""
    sql = "-- a comment; with a semicolon\nSELECT `a`;\nSELECT `b\\`;\nSELECT 1;\n"
    statements = [s.strip() for s in spark_sql_file_statements(sql)]
    assert statements == ["SELECT `a`", "SELECT `b\\`;\nSELECT 1;"]


def _unique(values: list[str], taken: set[str]) -> list[str]:
    kept = []
    for value in values:
        if value.casefold() not in taken:
            taken.add(value.casefold())
            kept.append(value)
    return kept


@needs_spark
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table_ids=st.lists(ids, min_size=1, max_size=25),
    columns=st.lists(names, min_size=1, max_size=25),
    constraints=st.lists(names, min_size=1, max_size=25),
)
def test_every_accepted_name_survives_spark_sql_and_its_parser(
    tmp_path: Path, table_ids: list[str], columns: list[str], constraints: list[str]
) -> None:
    """Many names per example, so that one migration file and one parse loop cover them all."""
    session = classic_session()
    parser = session._jsparkSession.sessionState().sqlParser()
    for table_id in table_ids:
        with_id = accepted(contract_text(table_id), tmp_path)
        if with_id is not None:  # the id as a user types it in Spark SQL, unquoted
            seq = parser.parseMultipartIdentifier(table_id)
            parts = list(session._jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))
            assert parts == list(with_id.contract.table_parts), table_id
    good_columns = [c for c in columns if accepted(contract_text("s.t", column=c), tmp_path) is not None]
    good_constraints = [c for c in constraints if accepted(contract_text("s.t", constraint=c), tmp_path)]
    doc: dict[str, Any] = yaml.safe_load(contract_text("s.t"))
    taken = {"order_id", "amount", "c1"} | {f"{c}_{r}" for c in ("order_id", "amount") for r in _RULES}
    doc["columns"] += [{"name": c, "type": "string"} for c in _unique(good_columns, taken)]
    taken |= {f"{c}_{r}".casefold() for c in good_columns for r in _RULES}
    more = _unique(good_constraints, taken)
    doc["constraints"] += [{"name": c, "expression": "order_id > 0"} for c in more]
    loaded = accepted(yaml.safe_dump(doc, allow_unicode=True), tmp_path)
    assert loaded is not None
    planned = next_migration([], loaded.contract, Target.DELTA_4)
    assert planned is not None
    sql_file = render_sql_file(planned.migration, migration_id=planned.migration_id, target=Target.DELTA_4)
    statements = spark_sql_file_statements(sql_file)
    assert [s.strip() for s in statements] == [render(op) for op in planned.migration.ops]
    for statement in statements:
        spark_parse(statement)
