"""Each engine's op table: complete over the registered ops, matched by the implementations its routes name,
and the one place a refusal is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine import capabilities as c
from delta_contracts.engine.capabilities import How
from delta_contracts.engine.local import ops as lo
from delta_contracts.engine.local.ops import LOCAL, LOCAL_OPS
from delta_contracts.engine.local.routes import TableFacts
from delta_contracts.engine.spark.ops import SPARK_DATABRICKS, SPARK_OSS_DELTA
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    ColumnSpec,
    CreateTable,
    DropColumns,
    DropFeature,
    Gate,
    MarkDeprecated,
    Phase,
    SetColumnComment,
    SetNotNull,
    SetProperties,
    WidenType,
)
from delta_contracts.plan.serialize import known_ops

PACKAGE = Path(__file__).resolve().parents[1] / "delta_contracts"
T = ("sales", "orders")


def test_the_local_table_names_every_op_kind() -> None:
    # The local engine has no catch-all: a new op must say how it runs there (or why it cannot).
    assert LOCAL.otherwise is None
    assert set(LOCAL.kinds) == set(known_ops())


def test_spark_runs_every_op_as_sql_but_set_not_null_off_databricks() -> None:
    for kind, op_type in known_ops().items():
        expected = How.REFUSED if op_type is SetNotNull else How.SQL
        assert SPARK_OSS_DELTA.capability(kind) is not None
        assert {How.SQL} == SPARK_DATABRICKS.capability(kind).hows()  # type: ignore[union-attr]
        assert SPARK_OSS_DELTA.capability(kind).hows() == {expected}  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", sorted(LOCAL.kinds))
def test_every_tool_the_local_table_names_has_an_implementation(kind: str) -> None:
    entry = LOCAL_OPS[known_ops()[kind]]
    hows = entry.capability.hows()
    if How.DELTA_RS in hows:
        assert entry.delta_rs is not None, f"{kind}: no delta-rs change"
    if How.DELTA_SPARK in hows:  # where delta-spark cannot start, --allow-rewrite rebuilds the table
        assert entry.reshape is not None, f"{kind}: no rewrite"
    if How.CATALOG in hows:
        assert entry.catalog is not None, f"{kind}: no catalog move"


def test_set_not_null_is_said_once_in_the_package() -> None:
    sentence = "OSS Delta has no SET NOT NULL"
    found = [p for p in PACKAGE.rglob("*.py") for _ in range(p.read_text(encoding="utf-8").count(sentence))]
    assert [p.relative_to(PACKAGE).as_posix() for p in found] == ["target.py"]


def test_oss_engines_refuse_set_not_null_as_before() -> None:
    op = SetNotNull(table=T, phase=Phase.CUTOVER, column="status")
    before = "OSS Delta has no SET NOT NULL; plan for target delta-3/delta-4 (a CHECK is used)"
    assert SPARK_OSS_DELTA.refusal(op) == before
    assert LOCAL.refusal(op, TableFacts()) == before
    assert SPARK_DATABRICKS.refusal(op) is None


def test_local_routes_read_the_table() -> None:
    widened = TableFacts(exists=True, writer_features=frozenset({"typeWidening", "appendOnly"}))
    plain = TableFacts(exists=True, writer_features=frozenset({"appendOnly"}))
    mapped = TableFacts(exists=True, writer_features=frozenset({"columnMapping"}), mapped=True)
    comment = SetColumnComment(table=T, phase=Phase.EXPAND, column="a", comment="x")
    assert LOCAL.route(comment, plain) == c.Route(How.DELTA_RS)
    assert LOCAL.route(comment, widened) == c.Route(
        How.DELTA_SPARK, "delta-rs cannot commit to a table with the writer features ['typeWidening']"
    )
    add = AddColumn(table=T, phase=Phase.EXPAND, column=ColumnSpec("b", "int"))
    assert LOCAL.route(add, plain).how is How.DELTA_RS
    assert LOCAL.route(add, mapped) == lo.DELTA_RS_NO_MAPPED_ADD
    widen = WidenType(table=T, phase=Phase.EXPAND, column="a", from_type="int", to_type="bigint")
    assert LOCAL.route(widen, plain) == lo.SAIL_ALTER_BY_LOCATION
    assert LOCAL.route(widen, TableFacts(exists=True, sail_knows_schema=True)).how is How.SQL
    mapping = SetProperties(table=T, phase=Phase.EXPAND, properties=(("delta.columnMapping.mode", "name"),))
    assert LOCAL.route(mapping, plain) == lo.SAIL_MAPPING
    assert LOCAL.route(mapping, mapped).how is How.SQL
    gate = Gate("P7D", "P7D", "p", ("a",))
    assert LOCAL.route(DropColumns(table=T, phase=Phase.CONTRACT, columns=("a",), gate=gate), mapped).how is (
        How.DELTA_SPARK
    )


def test_local_refusals_read_the_op() -> None:
    feed = (("delta.enableChangeDataFeed", "true"),)
    columns = (ColumnSpec("a", "int"),)
    assert LOCAL.refusal(CreateTable(table=T, phase=Phase.EXPAND, columns=columns), TableFacts()) is None
    clustered = CreateTable(
        table=T, phase=Phase.EXPAND, columns=columns, clustered_by=("a",), properties=feed
    )
    assert LOCAL.refusal(clustered, TableFacts()) == lo.NO_CLUSTER_BY.why  # the first case that holds
    marked = MarkDeprecated(table=T, phase=Phase.CUTOVER, properties=feed)
    assert LOCAL.refusal(marked, TableFacts()) == lo.NO_CHANGE_DATA_FEED_WRITES.why
    check = AddCheck(table=T, phase=Phase.CUTOVER, name="ok", expression="`amount; paid` > 0 AND plain > 0")
    assert LOCAL.refusal(check, TableFacts()) == (
        "Sail 0.7.2 stores CHECK expressions without identifier quotes, so a rule on ['amount; paid'] would "
        "leave a constraint no writer can parse; use --engine spark"
    )
    catch_up = CatchUpRows(table=T, phase=Phase.CUTOVER, source=("sales", "old"), mapping=(), key=("a",))
    assert LOCAL.refusal(catch_up, TableFacts()) is None
    by_feed = CatchUpRows(
        table=T,
        phase=Phase.CUTOVER,
        source=("s", "o"),
        mapping=(),
        key=("a",),
        strategy=CatchUpStrategy.CHANGE_FEED,
    )
    assert LOCAL.refusal(by_feed, TableFacts()) == lo.NO_CHANGE_DATA_FEED_READS.why


def test_local_refuses_to_drop_a_feature_and_spark_runs_it_as_sql() -> None:
    # Measured: Sail 0.7.2's parser stops at FEATURE ("expected 'COLUMN', 'COLUMNS', 'IF', or 'PARTITION'");
    # deltalake 1.6.6's TableAlterer has add_feature and no drop.
    drop = DropFeature(table=T, phase=Phase.CONTRACT, feature="typeWidening")
    assert LOCAL.refusal(drop, TableFacts(exists=True)) == (
        "Sail 0.7.2 has no DROP FEATURE and delta-rs can only add table features; use --engine spark"
    )
    assert SPARK_OSS_DELTA.route(drop).how is How.SQL
    assert SPARK_DATABRICKS.route(drop).how is How.SQL


def test_a_route_on_the_table_needs_its_facts() -> None:
    comment = SetColumnComment(table=T, phase=Phase.EXPAND, column="a", comment="x")
    with pytest.raises(TypeError, match="set_column_comment op is routed on its table's facts"):
        LOCAL.route(comment)
