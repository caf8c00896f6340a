"""Planning speed: 500 generated contract changes, planned and rendered to SQL.

Baseline, measured in the same run: the naive "recreate" planner most schema tools start from — render the
new contract's CREATE TABLE and CHECKs from scratch — over the same 500 changes. The ratio says what the
phased, change-aware planning costs on top of that.

Run: .venv/bin/python bench/bench_plan.py
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from delta_contracts.contract.model import Contract
from delta_contracts.plan.ops import AddCheck, CreateTable, Phase
from delta_contracts.plan.planner import PlanError, column_spec, plan
from delta_contracts.plan.render import render
from delta_contracts.plan.rules import contract_rules
from delta_contracts.target import Target

TYPES = ["bigint", "int", "string", "decimal(12,2)", "date", "timestamp", "double"]


def generated_pair(rng: random.Random, n: int) -> tuple[Contract, Contract]:
    columns: list[dict[str, Any]] = []
    for i in range(30):
        kind = rng.choice(TYPES)
        col: dict[str, Any] = {"name": f"c{i}", "type": kind, "nullable": rng.random() < 0.7}
        if kind in ("bigint", "int", "double", "decimal(12,2)") and rng.random() < 0.4:
            col["checks"] = {"min": 0}
        if kind == "string" and rng.random() < 0.3:
            col["checks"] = {"enum": ["A", "B", "C"]}
        columns.append(col)
    old = {
        "apiVersion": "delta-contracts/v1",
        "id": f"bench.t{n}",
        "version": "1.0.0",
        "owner": {"team": "bench"},
        "columns": columns,
    }
    new: dict[str, Any] = {**old, "version": "2.0.0", "columns": [dict(c) for c in columns]}
    edits = rng.sample(range(30), 3)
    for i in edits:
        col = new["columns"][i]
        choice = rng.random()
        if choice < 0.3:
            col["description"] = "changed"
        elif choice < 0.5 and col["type"] == "int":
            col["type"] = "bigint"
        elif choice < 0.7:
            col["nullable"] = not col["nullable"]
        else:
            col["checks"] = {"min": 1} if col["type"] in ("bigint", "int") else col.get("checks", {})
    new["columns"].append({"name": "added", "type": "string"})
    if rng.random() < 0.3:
        new["columns"][5] = {**new["columns"][5], "name": "renamed5", "renamed_from": "c5"}
    return Contract.model_validate(old), Contract.model_validate(new)


def phased(pairs: list[tuple[Contract, Contract]]) -> int:
    statements = 0
    for old, new in pairs:
        try:
            migration, _ = plan(old, new, Target.DELTA_4)
        except PlanError:
            continue
        statements += sum(1 for op in migration.ops if render(op))
    return statements


def recreate(pairs: list[tuple[Contract, Contract]]) -> int:
    statements = 0
    for _, new in pairs:
        table = new.table_parts
        ops = [
            CreateTable(table=table, phase=Phase.EXPAND, columns=tuple(column_spec(c) for c in new.columns))
        ]
        ops += [
            AddCheck(table=table, phase=Phase.EXPAND, name=r.name, expression=r.expression)
            for r in contract_rules(new).values()
        ]
        statements += sum(1 for op in ops if render(op))
    return statements


def timed(
    fn: Callable[[list[tuple[Contract, Contract]]], int], pairs: list[tuple[Contract, Contract]]
) -> float:
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        fn(pairs)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    rng = random.Random(7)
    pairs = [generated_pair(rng, n) for n in range(500)]
    phased(pairs[:5])  # warm caches (sqlglot dialect tables, lru caches)
    ours = timed(phased, pairs)
    base = timed(recreate, pairs)
    print(
        f"plan+render 500 contract changes (phased): {ours * 1000:8.1f} ms  ({ours / 500 * 1000:.2f} ms each)"
    )
    print(f"baseline: render CREATE+CHECKs of 500 contracts: {base * 1000:8.1f} ms")
    print(f"ratio phased/baseline: {ours / base:.2f}x")


if __name__ == "__main__":
    main()
