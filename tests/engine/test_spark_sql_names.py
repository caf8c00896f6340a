"""Spark's own parser names the tables of what sqlglot cannot parse (the unanalysed plan's relations)."""

from __future__ import annotations

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.sql_names import engine_fallback_parser
from delta_contracts.sql.extract import Catalog, extract
from tests.engine.conftest import JVM

pytestmark = pytest.mark.engine

CATALOG = Catalog(schemas={"logistics.shipments": ("shipment_id", "notes", "dest")})


@JVM
def test_spark_names_what_sqlglot_cannot_read(spark_engine: Engine) -> None:
    parser = engine_fallback_parser(spark_engine)
    assert parser is not None
    # sqlglot raises IndexError here; Spark's grammar reads it: the table, and the columns the text names
    got = extract(
        "SELECT s.notes, map('a' COLLATE UTF8_LCASE, 'b', 'c') FROM logistics.shipments AS s",
        CATALOG,
        fallback_parser=parser,
    )
    assert got.error is None and got.by_fallback
    assert got.tables_read == ("logistics.shipments",)
    assert "logistics.shipments.notes" in got.columns_read
    # Delta's RESTORE (no sqlglot grammar) writes its table; without Spark it is only an error
    assert extract("RESTORE TABLE db.target_table TO VERSION AS OF 3").error is not None
    restored = extract("RESTORE TABLE db.target_table TO VERSION AS OF 3", fallback_parser=parser)
    assert (restored.tables_read, restored.tables_written) == ((), ("db.target_table",))


@JVM
def test_spark_relations_keep_cte_shadowing_targets_and_time_travel(spark_engine: Engine) -> None:
    parser = engine_fallback_parser(spark_engine)
    assert parser is not None
    merge = parser(
        "WITH src AS (SELECT * FROM src WHERE k IN (SELECT k FROM ref.keys)) "
        "MERGE WITH SCHEMA EVOLUTION INTO cat.ns1.ns2.t AS x USING src ON x.k = src.k "
        "WHEN MATCHED THEN DELETE"
    )
    assert (merge.reads, merge.writes) == (("ref.keys", "src"), ("cat.ns1.ns2.t",))
    travel = parser(
        "SELECT * FROM delta.`/data/orders` VERSION AS OF 3 JOIN sales.c TIMESTAMP AS OF '2026-01-01'"
    )
    assert travel.reads == ("delta.`/data/orders`", "sales.c")
    drop = parser("DROP TABLE IF EXISTS sales.orders__v1")
    assert (drop.reads, drop.writes) == ((), ("sales.orders__v1",))


def test_an_engine_without_a_jvm_has_no_spark_parser(local_engine: Engine) -> None:
    assert engine_fallback_parser(local_engine) is None
    assert engine_fallback_parser(object()) is None
