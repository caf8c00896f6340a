"""Every statement the planner can emit parses once, in Spark's own parser and in sqlglot.

Hostile names and texts (quotes, backticks, semicolons, newlines, unicode) come back from both parsers as
the same identifiers and literals.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import sqlglot
from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.plan.ops import Op
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.render import render
from delta_contracts.plan.serialize import known_ops
from delta_contracts.plan.sqlfile import precheck_queries
from delta_contracts.target import Target
from tests.engine.conftest import SKIP_SPARK
from tests.recipes import BASE, RECIPES, base_contract, pair
from tests.spark_parser import (
    SQLGLOT_CANNOT_PARSE,
    assert_one_statement,
    classic_session,
    spark_parser_available,
)

# Spark's own parser is part of every run: without a JVM the run fails and says why. Only the user's explicit
# opt-out (the same variable as the engine suite's) skips it.
F = TypeVar("F", bound=Callable[..., Any])
_OPTED_OUT = pytest.mark.skipif(SKIP_SPARK, reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user")
# Spark's parser is a classic Delta session (tests/spark_parser.py): in the Spark lane it is the suite's own,
# so the worker runs one JVM instead of two (tests/xdist_lanes.py).
pytestmark = pytest.mark.lane("spark")


@pytest.fixture
def jvm() -> None:
    available, why = spark_parser_available()
    if not available:
        pytest.fail(f"Spark's parser needs a JVM: {why} (DELTA_CONTRACTS_SKIP_SPARK=1 opts out)")


def needs_spark(test: F) -> F:
    return _OPTED_OUT(pytest.mark.usefixtures("jvm")(test))  # type: ignore[no-any-return]


def every_planned_op() -> list[Op]:
    ops: list[Op] = []
    for target in Target:
        for versioning in ("in_place", "versioned"):
            ops.extend(plan(None, base_contract(versioning), target)[0].ops)
            for recipe in RECIPES:
                old, new = pair(recipe, versioning)
                try:
                    ops.extend(plan(old, new, target)[0].ops)
                except PlanError:
                    continue
    unique: dict[tuple[str, str], Op] = {}
    for op in ops:  # a last catch-up renders the UPDATE of its backfill: both are kept
        unique.setdefault((op.kind, render(op)), op)
    return list(unique.values())


ALL_OPS = every_planned_op()


def test_recipes_cover_every_op_kind() -> None:
    # Every kind a migration file can hold, those defined beside `ops` (the cutover catch-up) included.
    known = set(known_ops().values())
    covered = {type(op) for op in ALL_OPS}
    assert covered == known, known ^ covered


@needs_spark
def test_every_emitted_statement_parses_once() -> None:
    for op in ALL_OPS:
        assert_one_statement(render(op))
        for check in precheck_queries(op):
            assert_one_statement(check)


HOSTILE_NAMES = [
    "it's",
    'say "hi"',
    "back`tick",
    "semi;colon",
    "new\nline",
    "tab\tand space",
    "ünïcødé_列",
    "--comment",
    "DROP TABLE x; --",
    "emoji 🚀",
]
HOSTILE_TEXTS = [
    "it's",
    "back\\slash",
    "semi;colon'; DROP TABLE x; --",
    "new\nline\r\n",
    "\\'",
    "unicode ✓ 列",
]


def hostile_contract(name: str, text: str) -> Contract:
    doc: dict[str, Any] = copy.deepcopy(BASE)
    doc["description"] = text
    doc["table"]["properties"] = {"delta.columnMapping.mode": "name", "owner.note": text}
    doc["columns"].insert(
        1,
        {
            "name": name,
            "type": "string",
            "description": text,
            "default": text,
            "checks": {"enum": [text, "plain"], "regex": text},
        },
    )
    return Contract.model_validate(doc)


def literals_and_identifiers(sql: str) -> tuple[set[str], set[str]]:
    tree = sqlglot.parse_one(sql, read="databricks")
    literals = {lit.this for lit in tree.find_all(exp.Literal) if lit.is_string}
    identifiers = {i.this for i in tree.find_all(exp.Identifier)}
    return literals, identifiers


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_hostile_names_and_texts_round_trip_in_sqlglot(name: str, text: str) -> None:
    contract = hostile_contract(name, text)
    renamed = contract.model_copy(
        update={
            "version": "3.0.0",
            "columns": tuple(
                c.model_copy(update={"name": name + "_2", "renamed_from": name}) if c.name == name else c
                for c in contract.columns
            ),
        }
    )
    migrations = [plan(None, contract, Target.DELTA_4)[0], plan(contract, renamed, Target.DATABRICKS)[0]]
    seen_name = seen_text = False
    for migration in migrations:
        for op in migration.ops:
            sql = render(op)
            if SQLGLOT_CANNOT_PARSE.match(sql):  # Spark's parser reads it (test_every_emitted_…)
                continue
            statements = [s for s in sqlglot.parse(sql, read="databricks") if s is not None]
            assert len(statements) == 1, sql
            literals, identifiers = literals_and_identifiers(sql)
            seen_name |= name in identifiers
            seen_text |= text in literals
    assert seen_name and seen_text


@needs_spark
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_parse_in_spark(name: str) -> None:
    text = HOSTILE_TEXTS[2]
    contract = hostile_contract(name, text)
    spark = classic_session()
    for op in plan(None, contract, Target.DATABRICKS)[0].ops:
        assert_one_statement(render(op))
    # Spark reads our rendering of the identifier and of the literal back as the same values.
    column = exp.Alias(this=exp.Literal.string(text), alias=exp.to_identifier(name, quoted=True))
    query = exp.select(column).sql(dialect="databricks")
    frame = spark.sql(query)
    assert frame.columns == [name]
    assert frame.collect()[0][0] == text


@needs_spark
@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_hostile_literals_read_back_by_spark(text: str) -> None:
    query = exp.select(exp.Alias(this=exp.Literal.string(text), alias=exp.to_identifier("v"))).sql(
        dialect="databricks"
    )
    assert classic_session().sql(query).collect()[0][0] == text


@needs_spark
def test_catch_up_merges_parse_once() -> None:
    """The cutover catch-up MERGE of each strategy (no recipe has a unique key): the migration file's form,
    with its `:start_version` placeholder, and the form the engine runs with the version bound."""
    import dataclasses

    from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy, merge_statement
    from delta_contracts.sql import expressions as x

    old, new = pair("narrow_type", "versioned")
    quality = new.quality.model_copy(update={"unique": (("txn_id",),)})
    table = new.table.model_copy(update={"properties": {"delta.enableChangeDataFeed": "true"}})
    old, new = (c.model_copy(update={"quality": quality, "table": table}) for c in (old, new))
    migration, _ = plan(old, new, Target.DELTA_4)
    op, fence = [o for o in migration.ops if isinstance(o, CatchUpRows)]
    assert fence.strategy is CatchUpStrategy.INSERT_MISSING  # the cutover's last catch-up
    statements = [render(op), x.sql(merge_statement(op, 12)), render(fence)]
    keyed = dataclasses.replace(op, strategy=CatchUpStrategy.MERGE_ON_KEY)
    statements.append(render(keyed))
    by_partition = dataclasses.replace(
        op, strategy=CatchUpStrategy.PARTITIONS, key=(), partition_by=("txn_date",)
    )
    statements.append(render(by_partition))
    for statement in statements:
        assert_one_statement(statement)
