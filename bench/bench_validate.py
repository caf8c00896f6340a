"""Quality speed, both measured against a baseline in the same run, on the embedded engine by default.

1. `validate` on a 10M-row table (the sales.orders example contract, 11 row rules, a unique key, freshness
   and volume): the one-pass aggregate against the naive way, one query per rule.
2. `enforce(mode="quarantine")` and then writing the good rows, against a bare write of the same batch.

Run: .venv/bin/python bench/bench_validate.py [--rows 10000000] [--batch 2000000] [--engine local|spark]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlglot import exp

from delta_contracts.contract.load import load_contract
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import AddCheck
from delta_contracts.plan.planner import initial_state, plan
from delta_contracts.quality import sink
from delta_contracts.quality.enforce import enforce
from delta_contracts.quality.rules import row_rules
from delta_contracts.quality.validate import validate_table
from delta_contracts.sql import expressions as x
from delta_contracts.target import DEFAULT_TARGET

REPO = Path(__file__).resolve().parents[1]
# 0.1% of rows break a rule: validate must count them, the quarantine must set them aside.
BATCH = (
    "id AS order_id",
    "id % 100000 + 1 AS customer_id",
    "CAST(CASE WHEN id % 1000 = 0 THEN -1 ELSE id % 5000 END AS BIGINT) AS order_total",
    "CASE WHEN id % 1000 = 500 THEN 'LOST' ELSE 'PLACED' END AS status",
    "CASE WHEN id % 3 = 0 THEN 'app' ELSE 'web' END AS channel",
    "DATE_ADD(DATE'2026-01-01', CAST(id % 30 AS INT)) AS order_date",
    "TIMESTAMP'2026-01-01 00:00:00' AS created_at",
)


def open_engine(name: str, warehouse: Path) -> Engine:
    if name == "local":
        from delta_contracts.engine.local.engine import LocalEngine

        return LocalEngine(warehouse)
    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session

    return SparkEngine(local_delta_session(warehouse=warehouse), warehouse / "_delta_contracts")


def create_table(engine: Engine, contract: Contract) -> None:
    """The contract's table without its CHECKs, so rows breaking the rules can be loaded."""
    engine.sql(x.sql(exp.Create(this=x.ident(contract.table_parts[0]), kind="SCHEMA", exists=True)))
    migration, _ = plan(None, contract, DEFAULT_TARGET)
    for op in migration.ops:
        if not isinstance(op, AddCheck):
            engine.apply_op(op)


def one_query_per_rule(engine: Engine, contract: Contract, table: tuple[str, ...]) -> int:
    """The baseline: a COUNT per row rule, then volume, uniqueness and freshness each on their own."""
    failing = sum(engine.count_where(table, rule.violation) for rule in row_rules(contract))
    source = x.table(table)
    engine.sql(x.sql(exp.select(exp.Count(this=exp.Star()).as_("n")).from_(source)))
    for key in contract.quality.unique:
        distinct = exp.Count(this=exp.Distinct(expressions=[x.column(k) for k in key]))
        engine.sql(x.sql(exp.select(exp.Count(this=exp.Star()), distinct).from_(source)))
    if contract.quality.freshness is not None:
        engine.sql(x.sql(exp.select(exp.Max(this=x.column(contract.quality.freshness.column))).from_(source)))
    return failing


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=2_000_000)
    parser.add_argument("--engine", choices=("local", "spark"), default="local")
    args = parser.parse_args()
    contract = load_contract(REPO / "contracts" / "sales" / "orders.yaml").contract
    contract = contract.model_copy(update={"id": "bench.orders"})
    table = initial_state(contract).physical
    with tempfile.TemporaryDirectory() as folder, open_engine(args.engine, Path(folder)) as engine:
        spark = engine.spark  # type: ignore[attr-defined]
        create_table(engine, contract)
        load, _ = timed(
            lambda: sink.append(engine, spark.range(1, args.rows + 1).selectExpr(*BATCH), table, "load")
        )
        print(f"{args.engine}: loaded {args.rows:,} rows in {load:.1f} s")

        validate_table(engine, contract, table, samples=0)  # warm the table's metadata and caches
        ours, report = timed(lambda: validate_table(engine, contract, table, samples=0))
        base, failing = timed(lambda: one_query_per_rule(engine, contract, table))
        ours_failing = sum(
            r.failing for r in report.results if r.kind not in ("volume", "freshness", "unique")
        )
        assert ours_failing == failing, (ours_failing, failing)  # the same answer, or the race means nothing
        queries = len(row_rules(contract)) + 1 + len(contract.quality.unique) + 1
        print(f"validate, one pass ({len(report.results)} rules):  {ours:7.2f} s")
        print(f"baseline, one query per rule ({queries} queries): {base:7.2f} s")
        print(f"ratio one-pass/per-rule: {ours / base:.2f}x")

        batch = spark.range(1, args.batch + 1).selectExpr(*BATCH)
        bare_table = ("bench", "bare")
        bare, _ = timed(lambda: sink.append(engine, batch, bare_table, "bare"))

        def enforced() -> None:
            good = enforce(batch, contract, "quarantine", engine=engine)
            sink.append(engine, good, ("bench", "enforced"), "enforced")

        checked, _ = timed(enforced)
        rate = args.batch / checked
        print(f"bare write of {args.batch:,} rows:          {bare:7.2f} s  ({args.batch / bare:,.0f} rows/s)")
        print(f"enforce(quarantine) + write of the good rows: {checked:7.2f} s  ({rate:,.0f} rows/s)")
        print(f"ratio enforced/bare: {checked / bare:.2f}x")


if __name__ == "__main__":
    main()
