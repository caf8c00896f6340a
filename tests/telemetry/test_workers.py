"""Extraction of distinct texts: every text answered whatever sqlglot does with it, in this process and in
the worker pool, and texts that differ only in comments and literals parsed once."""

from __future__ import annotations

import pytest

from delta_contracts.sql.extract import Catalog
from delta_contracts.sql.normalize import fingerprint
from delta_contracts.telemetry import workers
from delta_contracts.telemetry.matching import Targets
from delta_contracts.telemetry.workers import Context, Extractor, Job

CATALOG = Catalog(schemas={"sales.orders": ("id", "legacy_code", "amount"), "sales.customers": ("id", "fax")})
TARGETS = Targets.of(["sales.orders.legacy_code", "sales.customers"], CATALOG.schemas, {})
CONTEXT = Context(CATALOG, TARGETS, all_columns=False)

HOSTILE = [
    "select map('a' COLLATE UTF8_LCASE, 'b', 'c')",  # sqlglot: IndexError
    "SELECT " + "(" * 5000 + "1" + ")" * 5000,
    "SELECT legacy_code FROM sales.orders WHERE id IN (" + "1, " * 200_000 + "1)",  # 600 kB
    "SELECT legacy_code FROM sales.orders\x00",
    "SELECT * FROM sales.customers \udcff",  # a lone surrogate: invalid UTF-8 decoded with surrogateescape
    "",
]


def test_every_hostile_text_is_answered_with_a_kind() -> None:
    got = [workers.answer(Job(text), CONTEXT) for text in HOSTILE]
    assert got[0].error is not None and got[0].error.startswith("IndexError")
    assert got[0].error_kind == "IndexError"  # extraction's own kind: the class sqlglot raised
    assert got[1].error_kind in (workers.TOO_DEEP, workers.SYNTAX)
    assert got[2].error_kind == workers.TOO_LONG
    assert got[2].hits == (("sales.orders.legacy_code", "possible"),)  # not parsed: a possible reader
    assert got[3].hits == (("sales.orders.legacy_code", "read"),)
    assert all(a.error is not None or a.tables_read for a in got)
    assert got[5].error_kind == workers.EMPTY


def test_a_parse_over_the_time_limit_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # A parse that outlasts the limit, made certain: the 1 ms limit against a real 5000-column parse raced
    # (twice a parse on a loaded 2-core machine came back whole), so the parse also waits past the limit.
    import time

    monkeypatch.setattr(workers, "TIME_LIMIT_SECONDS", 0.05)
    parse = workers._extract_needed

    def slow_parse(*args: object) -> object:
        time.sleep(5)
        return parse(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(workers, "_extract_needed", slow_parse)
    text = "SELECT " + ", ".join(f"c{i} + {i}" for i in range(5000)) + " FROM sales.orders"
    started = time.monotonic()
    got = workers.answer(Job(text), CONTEXT)
    assert time.monotonic() - started < 2  # the alarm ended the parse, not the parse itself
    assert got.error_kind == workers.TIMEOUT
    assert got.hits == ()  # names no watched column


def test_the_pool_answers_as_this_process_does(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = [Job(t) for t in HOSTILE] + [
        Job(f"SELECT legacy_code FROM sales.orders WHERE id = {i}") for i in range(8)
    ]
    inline = [workers.answer(job, CONTEXT) for job in jobs]
    monkeypatch.setattr(workers, "INLINE_BELOW", 0)
    monkeypatch.setattr(workers, "CHUNK", 3)
    with Extractor(CONTEXT, workers=2) as extractor:
        pooled = extractor.answers(jobs)
        printed = extractor.fingerprints([j.text for j in jobs])
    assert pooled == inline
    assert len(set(printed[len(HOSTILE) :])) == 1  # the same statement with other literals


def test_columns_are_resolved_only_where_a_watched_column_may_be_read() -> None:
    text = "SELECT c.fax, o.legacy_code FROM sales.customers c JOIN sales.orders o ON c.id = o.id"
    full = workers.answer(Job(text), Context(CATALOG, TARGETS, all_columns=True))
    assert full.columns_read == (
        "sales.customers.fax",
        "sales.customers.id",
        "sales.orders.id",
        "sales.orders.legacy_code",
    )
    assert workers.answer(Job(text), CONTEXT).hits == full.hits
    other = "SELECT fax FROM sales.customers"
    assert workers.answer(Job(other), CONTEXT).columns_read == ()  # no watched column there: not resolved
    assert workers.answer(Job(other), CONTEXT).hits == (("sales.customers", "read"),)


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("SELECT a -- the id\nFROM t WHERE x = 1", "SELECT a FROM t WHERE x = 2", True),
        ("/* run 7 */ SELECT a FROM t", "SELECT a\n  FROM t -- run 8", True),
        ("SELECT '--' FROM t", "SELECT '/*' FROM t", True),
        ("SELECT a -- FROM t\nFROM u", "SELECT a FROM t", False),  # a line comment ends at its line
        ("SELECT * FROM IDENTIFIER('s.t1')", "SELECT * FROM IDENTIFIER('s.t2')", False),
        ("SELECT a, b FROM t ORDER BY 1", "SELECT a, b FROM t ORDER BY 2", False),
        ("SELECT * FROM delta.`/data/a`", "SELECT * FROM delta.`/data/b`", False),
    ],
)
def test_fingerprints_drop_comments_and_literals_only(left: str, right: str, same: bool) -> None:
    assert (fingerprint(left) == fingerprint(right)) is same
