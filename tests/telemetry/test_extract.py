"""Table and column extraction: TPC-H and TPC-DS (expected tables checked by hand) and every construct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_contracts.sql.extract import Catalog, extract

DATA = Path(__file__).parent.parent / "data"
EXPECTED: dict[str, dict[str, list[str]]] = json.loads((DATA / "tpc_tables.json").read_text())


def test_every_benchmark_query_has_an_expectation() -> None:
    files = {f"{p.parent.name}/{p.stem}" for p in DATA.glob("tpc*/q*.sql")}
    assert len(files) == 22 + 99
    assert files == set(EXPECTED)


SCHEMAS = Catalog(
    views={
        # a compatibility view of a versioned table: reading it reads the deprecated version's name
        "sales.orders__v1": "SELECT id, CAST(amount AS INT) AS amount FROM sales.orders__v2",
        "sales.orders": "SELECT * FROM sales.orders__v2",
        "sales.recent": "SELECT * FROM sales.orders__v1 WHERE id > 10",
    },
    schemas={
        "sales.orders__v2": ("id", "amount", "legacy_code"),
        "sales.customers": ("id", "name", "fax"),
    },
)

CASES: list[tuple[str, list[str], list[str]]] = [
    # A CTE named like the table it reads: inside its own definition the name is the table (a false
    # negative here would let a sunset gate open while someone still reads the table).
    ("WITH clicks AS (SELECT * FROM sales.clicks) SELECT * FROM clicks", ["sales.clicks"], []),
    ("WITH clicks AS (SELECT * FROM clicks) SELECT * FROM clicks", ["clicks"], []),
    ("WITH a AS (SELECT * FROM b), b AS (SELECT * FROM sales.x) SELECT * FROM a", ["b", "sales.x"], []),
    ("WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r", [], []),
    ("SELECT * FROM IDENTIFIER('sales.clicks') WHERE id > 1", ["sales.clicks"], []),
    (
        "INSERT INTO sales.archive SELECT * FROM sales.customers WHERE id > 1",
        ["sales.customers"],
        ["sales.archive"],
    ),
    ("INSERT OVERWRITE TABLE a.t (x, y) SELECT id, name FROM b.s", ["b.s"], ["a.t"]),
    (
        "MERGE INTO sales.customers AS t USING (SELECT * FROM staging.c) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT *",
        ["staging.c"],
        ["sales.customers"],
    ),
    ("MERGE INTO a.t USING b.s ON a.t.id = b.s.id WHEN MATCHED THEN DELETE", ["b.s"], ["a.t"]),
    ("CREATE TABLE a.t AS SELECT * FROM b.s JOIN c.u USING (id)", ["b.s", "c.u"], ["a.t"]),
    (
        "CREATE OR REPLACE TABLE a.t USING DELTA AS WITH x AS (SELECT 1 AS i) SELECT * FROM x, b.s",
        ["b.s"],
        ["a.t"],
    ),
    ("CREATE OR REPLACE VIEW a.v AS SELECT id FROM b.s", ["b.s"], ["a.v"]),
    (
        "UPDATE a.t SET x = 1 WHERE id IN (SELECT id FROM b.s WHERE y > (SELECT max(y) FROM c.u))",
        ["b.s", "c.u"],
        ["a.t"],
    ),
    ("DELETE FROM a.t WHERE EXISTS (SELECT 1 FROM b.s WHERE b.s.id = a.t.id)", ["b.s"], ["a.t"]),
    (
        "WITH a AS (SELECT * FROM x.one), b AS (WITH c AS (SELECT * FROM a JOIN x.two) SELECT * FROM c) "
        "SELECT * FROM b",
        ["x.one", "x.two"],
        [],
    ),
    ("WITH t AS (SELECT 1) SELECT * FROM t, s.t", ["s.t"], []),  # a qualified name is never a CTE
    (
        "SELECT a FROM x.one UNION SELECT a FROM x.two INTERSECT SELECT a FROM x.three EXCEPT SELECT 1",
        ["x.one", "x.three", "x.two"],
        [],
    ),
    ("SELECT e.v FROM x.t LATERAL VIEW OUTER explode(t.arr) e AS v", ["x.t"], []),
    ("SELECT * FROM x.t, LATERAL (SELECT * FROM x.u WHERE u.k = t.k)", ["x.t", "x.u"], []),
    ("FROM x.t |> WHERE a > 1 |> AGGREGATE count(*) GROUP BY b |> JOIN x.u USING (b)", ["x.t", "x.u"], []),
    ("SELECT * FROM x.t VERSION AS OF 12", ["x.t"], []),
    ("SELECT * FROM x.t TIMESTAMP AS OF '2026-01-01' AS old JOIN x.t AS cur ON old.id = cur.id", ["x.t"], []),
    (
        "SELECT * FROM main.sales.orders__v2 o JOIN `main`.`sales`.`Customers` c ON o.id = c.id",
        ["main.sales.customers", "main.sales.orders__v2"],
        [],
    ),
    ("SELECT * FROM delta.`/data/Sales/orders` VERSION AS OF 1", ["delta.`/data/Sales/orders`"], []),
    ("SELECT * FROM range(10) JOIN (VALUES (1), (2)) AS v(i) ON true", [], []),
    ("SELECT * FROM sales.recent", ["sales.orders__v1", "sales.orders__v2", "sales.recent"], []),
    ("CREATE TEMP VIEW tmp AS SELECT * FROM x.t; SELECT * FROM tmp JOIN x.u", ["tmp", "x.t", "x.u"], ["tmp"]),
    ("SELECT 1", [], []),
    # DROP writes its target and reads nothing (sqlglot keeps DROP's targets in `tables`)
    ("DROP TABLE sales.orders__v1", [], ["sales.orders__v1"]),
    ("DROP VIEW IF EXISTS sales.recent", [], ["sales.recent"]),
    # four-part names (a catalog with nested namespaces) parse to a Dot; they are names all the same
    ("SELECT * FROM cat.ns1.ns2.tbl", ["cat.ns1.ns2.tbl"], []),
    ("INSERT INTO cat.ns1.ns2.tbl SELECT * FROM cat.a.b.src", ["cat.a.b.src"], ["cat.ns1.ns2.tbl"]),
    (
        "MERGE INTO cat.ns1.ns2.tbl t USING cat.a.b.src s ON t.id = s.id WHEN MATCHED THEN DELETE",
        ["cat.a.b.src"],
        ["cat.ns1.ns2.tbl"],
    ),
    ("DELETE FROM cat.ns1.ns2.tbl WHERE id IN (SELECT id FROM x.y)", ["x.y"], ["cat.ns1.ns2.tbl"]),
    ("UPDATE a.b.c.d.e SET x = 1", [], ["a.b.c.d.e"]),
    # Spark/Delta syntax sqlglot cannot parse as written: respelt without changing a name
    (
        "MERGE WITH SCHEMA EVOLUTION INTO a.t USING b.s ON a.t.id = b.s.id WHEN NOT MATCHED THEN INSERT *",
        ["b.s"],
        ["a.t"],
    ),
    ("INSERT WITH SCHEMA EVOLUTION INTO a.t SELECT * FROM b.s", ["b.s"], ["a.t"]),
    ("REPLACE TABLE a.t USING DELTA AS SELECT * FROM b.s", ["b.s"], ["a.t"]),
    ("INSERT OVERWRITE a.t PARTITION (p = 1) IF NOT EXISTS SELECT * FROM b.s", ["b.s"], ["a.t"]),
    ("TABLE x.t |> WHERE a > 1", ["x.t"], []),
    ("SELECT * FROM (TABLE x.t) UNION ALL TABLE x.u", ["x.t", "x.u"], []),  # not a table named TABLE
    ("SELECT name FROM x.t WHERE name COLLATE UTF8_LCASE = 'a'", ["x.t"], []),
    ("CREATE TABLE a.t SHALLOW CLONE b.s VERSION AS OF 3", ["b.s"], ["a.t"]),
    ("SELECT * FROM x.t@v12", ["x.t"], []),
    ("SELECT /*+ BROADCAST(d) */ * FROM x.f JOIN x.d AS d ON f.k = d.k", ["x.d", "x.f"], []),
    ("SELECT * FROM table_changes('x.t', 2)", ["x.t"], []),
    ("CACHE TABLE hot AS SELECT * FROM x.t", ["x.t"], ["hot"]),
    # comments anywhere: a header, the middle of the select list, the end
    ("-- header ; FROM fake.t\nSELECT a, -- one column\n b FROM x.t -- trailer", ["x.t"], []),
    ("/* header */ UPDATE a.t SET x = 1 -- why\nWHERE id IN (SELECT id FROM b.s)", ["b.s"], ["a.t"]),
    ("-- ctas\nCREATE TABLE a.t AS SELECT * FROM b.s", ["b.s"], ["a.t"]),
    ("-- purge\nDELETE FROM a.t WHERE id IN (SELECT id FROM b.s)", ["b.s"], ["a.t"]),
]


@pytest.mark.parametrize(("sql", "reads", "writes"), CASES, ids=[c[0][:40] for c in CASES])
def test_constructs(sql: str, reads: list[str], writes: list[str]) -> None:
    got = extract(sql, SCHEMAS)
    assert got.error is None
    assert list(got.tables_read) == reads
    assert list(got.tables_written) == writes


@pytest.mark.parametrize(
    ("sql", "columns"),
    [
        ("SELECT * FROM sales.orders__v2", ["id", "amount", "legacy_code"]),
        ("SELECT id FROM orders__v2 WHERE amount > 1", ["id", "amount"]),
        ("SELECT o.legacy_code FROM main.sales.orders__v2 AS o", ["legacy_code"]),
        (
            "WITH x AS (SELECT * FROM sales.orders__v2) SELECT count(*) FROM x",
            ["id", "amount", "legacy_code"],
        ),
        ("SELECT count(*) FROM sales.orders__v2", []),
        ("FROM sales.orders__v2 |> SELECT legacy_code", ["legacy_code"]),
        ("UPDATE sales.orders__v2 SET amount = 0 WHERE legacy_code = 'x'", ["legacy_code"]),
        ("DELETE FROM sales.orders__v2 WHERE id = 1", ["id"]),
    ],
)
def test_columns_read(sql: str, columns: list[str]) -> None:
    got = extract(sql, SCHEMAS)
    assert got.error is None
    assert set(got.columns_read) == {f"sales.orders__v2.{c}" for c in columns}


def test_columns_across_a_join_and_a_merge() -> None:
    got = extract(
        "MERGE INTO sales.customers t USING sales.orders__v2 s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.name = s.legacy_code",
        SCHEMAS,
    )
    assert set(got.columns_read) == {
        "sales.customers.id",
        "sales.orders__v2.id",
        "sales.orders__v2.legacy_code",
    }
    assert "sales.customers.name" not in got.columns_read  # assigned, not read


def test_no_schema_no_columns() -> None:
    assert extract("SELECT a FROM x.t").columns_read == ()


@pytest.mark.parametrize(
    "text",
    ["", "   ", "garbage text here", "SELECT * FROM (", "SELECT 'unterminated", "\x00\x01\xff",
     "SHOW TABLES", "{\"json\": true}", "SELECT " + "(" * 5000 + "1" + ")" * 5000],
)  # fmt: skip
def test_what_does_not_parse_is_an_error_not_an_exception(text: str) -> None:
    got = extract(text, SCHEMAS)
    assert got.error
    assert got.error_kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("select map('a' COLLATE UTF8_LCASE, 'b', 'c')", "IndexError"),  # sqlglot raises IndexError
        ("SELECT " + "(" * 20000 + "1" + ")" * 20000, None),
        ("SELECT * FROM x.t WHERE a = '" + "x" * 1_000_000 + "'", None),
        ("SELECT * FROM x.t\x00 WHERE a = 1", None),
        (b"SELECT * FROM x.t WHERE a = '\xff\xfe'".decode("utf-8", "surrogateescape"), None),
        ("OPTIMIZE x.t ZORDER BY (a)", "unsupported"),
        ("", "empty"),
        ("SELECT * FROM (", "syntax"),
    ],
    ids=["sqlglot-index-error", "deep-nesting", "1mb", "nul", "invalid-utf8", "command", "empty", "syntax"],
)
def test_no_statement_raises_and_every_error_has_a_kind(text: str, kind: str | None) -> None:
    """Whatever goes wrong inside the parser is the statement's error, with its kind: one statement must
    never stop a collection."""
    got = extract(text, SCHEMAS)
    assert (got.error is None) == (got.error_kind is None)
    if kind is not None:
        assert got.error_kind == kind
        assert got.error


def test_one_bad_statement_keeps_the_reads_of_the_others() -> None:
    got = extract("SELECT * FROM x.a; select map('a', 'b', 'c') FROM x.b; SELECT * FROM x.c")
    assert got.tables_read == ("x.a", "x.c")
    assert got.error_kind == "IndexError"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_no_text_raises(text: str) -> None:
    extract(text, SCHEMAS)
