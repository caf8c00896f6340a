"""The collection pipeline end to end on real query-history files: public TPC files as they stand, views
created earlier in the same history, and Spark's own parser for what sqlglot cannot parse."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.sql_names import engine_fallback_parser
from delta_contracts.sql.extract import Catalog
from delta_contracts.telemetry.log import read_rows
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.pipeline import collect, extracted_statements
from delta_contracts.telemetry.sources import parse_source, read_source
from tests.engine.conftest import JVM
from tests.telemetry.corpora import tpc_cases

pytestmark = pytest.mark.engine
BASE = datetime(2026, 11, 1, tzinfo=UTC)


def _history(path: Path, texts: list[tuple[str, str]]) -> str:
    """A Databricks `system.query.history` export (JSON lines), one statement an hour, in the order given."""
    rows = [
        {
            "statement_id": sid,
            "executed_by": "analyst@example.com",
            "statement_text": text,
            "client_application": "Databricks SQL Editor",
            "start_time": (BASE + timedelta(hours=index)).isoformat(),
        }
        for index, (sid, text) in enumerate(texts)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return f"query-history:{path}"


def test_tpc_files_as_they_stand_are_read_exactly(local_engine: Engine, tmp_path: Path) -> None:
    """Spark's, Sail's and sqlglot's TPC query files (licence headers, comments, Spark's q12 with a `--`
    comment in the select list), one history, one `telemetry extract` run: every `tables_read` exact."""
    spark = local_engine.spark  # type: ignore[attr-defined]
    cases = tpc_cases()
    ids = [f"{c.corpus}:{c.key}" for c in cases]
    spec = parse_source(
        _history(tmp_path / "tpc.jsonl", [(i, c.text) for i, c in zip(ids, cases, strict=True)])
    )
    rows = {
        r["statement_id"]: r for r in extracted_statements(read_source(spark, spec), Watched(())).collect()
    }
    assert len(rows) == len(cases)
    wrong = {
        sid: (rows[sid]["tables_read"], list(case.reads))
        for sid, case in zip(ids, cases, strict=True)
        if rows[sid]["tables_read"] != list(case.reads) or rows[sid]["error"] is not None
    }
    assert wrong == {}
    assert "item" in rows["spark-tpc:tpcds-v2.7.0_q12"]["tables_read"]  # after the mid-select comment


VIEW_CATALOG = Catalog(schemas={"lineitem": ("l_suppkey", "l_extendedprice", "l_comment", "l_shipdate")})
WATCH_PRICE = Watched(("lineitem.l_extendedprice",), catalog=VIEW_CATALOG)
VIEW_HISTORY = [
    ("before", "SELECT supplier_no FROM revenue0"),  # revenue0 is not yet the history's view
    (
        "create",
        "CREATE VIEW revenue0 AS SELECT l_suppkey AS supplier_no, sum(l_extendedprice) AS total_revenue "
        "FROM lineitem WHERE l_shipdate >= date '1996-01-01' GROUP BY l_suppkey",
    ),
    ("after", "-- the top supplier\nSELECT supplier_no, total_revenue FROM revenue0 ORDER BY 2 DESC LIMIT 1"),
    ("other", "SELECT l_comment FROM lineitem"),
]


def test_a_view_created_earlier_in_the_history_is_read_through(local_engine: Engine, tmp_path: Path) -> None:
    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(_history(tmp_path / "views.jsonl", VIEW_HISTORY))
    rows = {
        r["statement_id"]: r for r in extracted_statements(read_source(spark, spec), WATCH_PRICE).collect()
    }
    assert rows["after"]["tables_read"] == ["lineitem", "revenue0"]
    assert "lineitem.l_extendedprice" in rows["after"]["columns_read"]
    assert rows["before"]["tables_read"] == ["revenue0"]  # ran before the view existed
    state = tmp_path / "state"
    collected = collect(spark, read_source(spark, spec), spec.name, WATCH_PRICE, state)
    assert collected.unparsed == 0
    logged = sorted((r["statement_id"], r["object"], r["kind"]) for r in read_rows(state))
    assert logged == [
        ("after", "lineitem.l_extendedprice", "read"),
        ("create", "lineitem.l_extendedprice", "read"),
    ]


# sqlglot raises IndexError on the first, has no grammar for the second; Spark's parser reads both.
SPARK_ONLY = [
    ("collation", "SELECT s.notes, map('a' COLLATE UTF8_LCASE, 'b', 'c') FROM logistics.shipments AS s"),
    ("restore", "RESTORE TABLE logistics.shipments TO VERSION AS OF 3"),
    ("typo", "SELEC notes FROM logistics.shipments"),  # nobody's grammar: a possible reader
]
WATCH_NOTES = Watched(
    ("logistics.shipments.notes",),
    catalog=Catalog(schemas={"logistics.shipments": ("shipment_id", "notes")}),
)


@JVM
def test_spark_parses_what_sqlglot_cannot(spark_engine: Engine, tmp_path: Path) -> None:
    spark = spark_engine.spark  # type: ignore[attr-defined]
    parser = engine_fallback_parser(spark_engine)
    assert parser is not None
    spec = parse_source(_history(tmp_path / "spark.jsonl", SPARK_ONLY))
    # One collection (a Spark test must be cheap): the collation and RESTORE statements are no errors
    state = tmp_path / "state"
    collected = collect(
        spark, read_source(spark, spec), spec.name, WATCH_NOTES, state, fallback_parser=parser
    )
    assert collected.errors == {"syntax": 1}
    logged = Counter((r["statement_id"], r["kind"]) for r in read_rows(state))
    assert logged == Counter({("collation", "read"): 1, ("typo", "possible"): 1})
