"""The public SQL corpora of tests/data and their expected reads and writes, derived without the extractor.

TPC statements (Sail's, sqlglot's and a sample of Spark's query files, as the files stand) get two
derivations that must agree: the TPC schema's table names among the statement's words (comments and strings
removed by sqlglot's tokenizer), and sqlglot's optimizer scopes (the `exp.Table` sources of every scope: CTEs
and derived tables are scopes, not tables). A third, Spark's own parser, was run once offline and saved
(`spark_relations.json`, written by `python -m tests.telemetry.corpora --spark`). The hand-labelled
statements (`hand_labelled.yaml`) carry their expected reads and writes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent.parent / "data"

TPCH_TABLES = frozenset(
    {"customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"}
)
TPCDS_TABLES = frozenset(
    {
        "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer", "customer_address",
        "customer_demographics", "date_dim", "household_demographics", "income_band", "inventory", "item",
        "promotion", "reason", "ship_mode", "store", "store_returns", "store_sales", "time_dim", "warehouse",
        "web_page", "web_returns", "web_sales", "web_site",
    }
)  # fmt: skip
# Where the word list is wrong, checked by hand: a TPC table's name used as an alias, not as a table.
WORD_LIST_WRONG = {
    # `store` and `catalog`-style subquery aliases, `item` as a column alias (q49 of every TPC-DS edition)
    "q49": {"item", "store"},
    # `store` as the alias of the CTE `store_v1` in the window-functions query
    "q51": {"store"},
}


@dataclass(frozen=True, slots=True)
class Case:
    corpus: str
    key: str
    text: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]


def tpc_cases() -> list[Case]:
    """Every TPC statement of tests/data with its expected tables (the scope derivation; see `agree`)."""
    cases: list[Case] = []
    sail = json.loads((DATA / "tpc_tables.json").read_text())
    for key, expected in sorted(sail.items()):
        text = (DATA / f"{key}.sql").read_text()
        cases.append(
            Case(f"sail-{key.split('/')[0]}", key, text, tuple(expected["read"]), tuple(expected["written"]))
        )
    for path in sorted((DATA / "spark").glob("*.sql")):
        text = path.read_text()
        reads, writes = scope_tables(text)
        cases.append(Case("spark-tpc", path.stem, text, reads, writes))
    for path in sorted((DATA / "sqlglot").glob("*.sql")):
        for key, text in _banner_cases(path.read_text()):
            reads, writes = scope_tables(text)
            cases.append(Case(f"sqlglot-{path.stem}", key, text, reads, writes))
    return cases


def hand_cases() -> list[Case]:
    raw: list[dict[str, Any]] = yaml.safe_load((DATA / "hand_labelled.yaml").read_text())
    return [
        Case(
            f"hand-{item['kind']}",
            item["id"],
            item["sql"],
            tuple(sorted(item.get("reads") or ())),
            tuple(sorted(item.get("writes") or ())),
        )
        for item in raw
    ]


def hand_limitations() -> dict[str, dict[str, Any]]:
    """The hand-labelled statements the extractor is known to get wrong, and why (with what it gives)."""
    raw: list[dict[str, Any]] = yaml.safe_load((DATA / "hand_labelled.yaml").read_text())
    return {item["id"]: item["limitation"] for item in raw if item.get("limitation")}


def _banner_cases(text: str) -> list[tuple[str, str]]:
    banner = re.compile(r"^-{5,}\n-- (TPC-[A-Z]+ \d+[a-z]?)\n-{5,}\n", re.M)
    marks = list(banner.finditer(text))
    return [
        (m.group(1), text[m.start() : marks[i + 1].start() if i + 1 < len(marks) else len(text)])
        for i, m in enumerate(marks)
    ]


def word_list_tables(case: Case) -> tuple[str, ...]:
    """Derivation 1: the benchmark's table names among the words of the statement (comments and strings
    are not words), less the aliases `WORD_LIST_WRONG` lists."""
    from sqlglot.dialects.dialect import Dialect

    is_tpch = any(mark in f"{case.corpus}/{case.key}".casefold() for mark in ("tpch", "tpc-h"))
    names = TPCH_TABLES if is_tpch else TPCDS_TABLES
    tokens = Dialect.get_or_raise("databricks").tokenize(case.text)
    words = {t.text.casefold() for t in tokens if t.token_type.name not in _LITERALS}
    found = words & names
    number = re.search(r"(?:q|TPC-DS )(\d+)", case.key)
    if not is_tpch and number is not None:
        found -= WORD_LIST_WRONG.get(f"q{int(number.group(1))}", set())
    return tuple(sorted(found))


_LITERALS = frozenset({"STRING", "NATIONAL_STRING", "RAW_STRING", "NUMBER"})


def scope_tables(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Derivation 2: sqlglot's optimizer scopes. Every `exp.Table` a scope selects from is a read (CTEs and
    subqueries are scopes of their own); a view created earlier in the text is read through."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    reads: set[str] = set()
    writes: set[str] = set()
    views: dict[str, set[str]] = {}
    for statement in sqlglot.parse(text, read="databricks"):
        if statement is None:
            continue
        query = statement if isinstance(statement, exp.Query) else statement.expression
        found: set[str] = set()
        if isinstance(query, exp.Query):
            for scope in traverse_scope(query):
                found |= {s.name.casefold() for s in scope.sources.values() if isinstance(s, exp.Table)}
        for name in list(found):
            found |= views.get(name, set())
        reads |= found
        if isinstance(statement, exp.Create | exp.Drop):
            targets = [statement.this, *(statement.args.get("tables") or [])]
            for target in targets:
                if isinstance(target, exp.Table):
                    writes.add(target.name.casefold())
                    if isinstance(statement, exp.Create):
                        views[target.name.casefold()] = found
    return tuple(sorted(reads)), tuple(sorted(writes))


def spark_relations() -> dict[str, dict[str, list[str]]]:
    path = DATA / "spark_relations.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _write_spark_relations() -> None:
    """Run once, offline, on a classic delta-spark session: Spark's parser's names for every case."""
    from delta_contracts.engine.spark.sql_names import spark_fallback_parser
    from delta_contracts.sql.rewrite import split_statements, tokenize
    from tests.spark_parser import classic_session

    parser = spark_fallback_parser(classic_session())
    assert parser is not None
    out: dict[str, dict[str, list[str]]] = {}
    for case in [*tpc_cases(), *hand_cases()]:
        reads: set[str] = set()
        writes: set[str] = set()
        try:
            for chunk in split_statements(case.text, tokenize(case.text)):
                got = parser(chunk.text)
                reads |= set(got.reads)
                writes |= set(got.writes)
        except Exception as err:  # what Spark refuses is recorded as refused
            message = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
            out[f"{case.corpus}:{case.key}"] = {"error": [message[:200]]}
            continue
        out[f"{case.corpus}:{case.key}"] = {"read": sorted(reads), "written": sorted(writes)}
    (DATA / "spark_relations.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__" and "--spark" in sys.argv:
    _write_spark_relations()
