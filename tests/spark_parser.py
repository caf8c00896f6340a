"""Spark's own SQL parser, offline: a classic local SparkSession with Delta Lake, used only to parse.

A process has one classic session, and the local engine runs its delta-spark ops on the one already running
(`engine/local/delta_spark.py`), so a parser session without Delta's extension made every later local drop in
the same process fail ("has no Delta Lake extension"): `pytest tests --ignore=tests/engine` failed in
test_user_journey. With Delta's parser too, a statement parses the same whichever session came first.

`parsePlan` accepts exactly one statement (its grammar ends in EOF), so a statement that an injected `;`
split in two fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import sqlglot


class SparkParseError(AssertionError):
    def __init__(self, sql: str, message: str) -> None:
        self.sql = sql
        super().__init__(f"Spark's parser refused:\n{sql}\n{message}")


def spark_parser_available() -> tuple[bool, str]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return False, "no Java runtime (java not on PATH, JAVA_HOME unset)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False, "pyspark is not installed"
    return True, ""


@cache
def classic_session() -> Any:
    from delta_contracts.engine.spark.session import local_delta_session
    from tests.engine.session_conf import FAST_SMALL_QUERIES

    warehouse = Path(tempfile.mkdtemp(prefix="dc-spark-parser-"))
    return local_delta_session("delta-contracts-parser", warehouse, extra=FAST_SMALL_QUERIES)


def spark_parse(sql: str) -> str:
    """The logical plan Spark's parser makes of `sql`; SparkParseError when it refuses it."""
    parser = classic_session()._jsparkSession.sessionState().sqlParser()
    try:
        return str(parser.parsePlan(sql).toString())
    except Exception as err:  # py4j wraps the JVM ParseException
        raise SparkParseError(sql, str(err).splitlines()[0]) from None


def sqlglot_statements(sql: str) -> list[sqlglot.exp.Expr]:
    return [s for s in sqlglot.parse(sql, read="databricks") if s is not None]


# Delta statements sqlglot has no grammar for (it reads them as one raw command): Spark's parser holds them.
# An ALTER COLUMN … TYPE of a field inside a struct (a dotted path, `plan.fields.WidenField`) is one: sqlglot
# generates it from its own node, and reads back only a single column's name there.
SQLGLOT_HAS_NO_GRAMMAR = re.compile(
    r" ALTER COLUMN (`(?:[^`]|``)+` SYNC IDENTITY|`(?:[^`]|``)+`(?:\.`(?:[^`]|``)+`)+ TYPE [A-Z0-9(), ]+)$"
)


# Delta statements sqlglot cannot parse at all (the toolkit renders them with a node of its own,
# `plan.purge.ReorgPurge`, `plan.recluster.OptimizeFull`): Spark's parser alone holds them.
SQLGLOT_CANNOT_PARSE = re.compile(r"^(REORG TABLE .+ APPLY \(PURGE\)|OPTIMIZE .+ FULL)$", re.DOTALL)


def assert_one_statement(sql: str) -> None:
    if SQLGLOT_CANNOT_PARSE.match(sql):
        spark_parse(sql)
        return
    statements = sqlglot_statements(sql)
    assert len(statements) == 1, f"sqlglot sees {len(statements)} statements in:\n{sql}"
    raw = isinstance(statements[0], sqlglot.exp.Command)
    assert not raw or SQLGLOT_HAS_NO_GRAMMAR.search(sql), f"sqlglot fell back to a raw command:\n{sql}"
    spark_parse(sql)
