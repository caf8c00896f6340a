"""Engines side by side, same run: start, `create` of the example contracts (every table created from
nothing), and one full migration history (the committed sales.orders 0001-0004 under a schema of its own, a
row written after its create), on `local` (Sail) and `spark` (local delta-spark, the reference). Prints
seconds per step and the spark/local ratios.

Run: .venv/bin/python bench/bench_engines.py   (needs Java 17 and delta-spark's jars: `make jars`)
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = step()
    return time.perf_counter() - start, result


def create_examples(engine: Any) -> int:
    from delta_contracts.contract.load import contract_files, load_contract
    from delta_contracts.tables.create import create_table

    files = contract_files([REPO / "contracts"])
    for path in files:
        create_table(engine, load_contract(path).contract)
    return len(files)


def history_copy(root: Path, schema: str) -> Path:
    """migrations/sales.orders with its schema renamed, so that the history runs beside the created tables."""
    from delta_contracts.plan.migrations import SUM_FILE, compute_sum, migration_files

    source = REPO / "migrations" / "sales.orders"
    folder = root / f"{schema}.orders"
    folder.mkdir(parents=True)
    for name in migration_files(source):
        text = (source / name).read_text(encoding="utf-8")
        (folder / name).write_text(re.sub(r"\bsales\b", schema, text), encoding="utf-8")
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")
    return folder


def apply_history(engine: Any, folder: Path, schema: str) -> int:
    """sales.orders from nothing to 3.0.0 (create, additive, rename + drop in place, versioned copy), with a
    row written after the create so that the copies move data."""
    from delta_contracts.plan.migrations import load_history

    engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
    ran = 0
    for stored in load_history(folder):
        for i, op in enumerate(stored.migration.ops):
            ran += engine.apply_op(op, tag=f"{stored.migration_id} op {i + 1}").path != "skipped"
        if stored.migration_id.startswith("0001"):
            engine.sql(
                f"INSERT INTO `{schema}`.`orders` VALUES (1, 7, 12.00, 'PLACED', DATE'2026-11-01', "
                "TIMESTAMP'2026-11-01 10:00:00')"
            )
    return ran


def measure(name: str, start: Callable[[Path], Any], warehouse: Path) -> dict[str, float]:
    started, engine = timed(lambda: start(warehouse))
    folder = history_copy(warehouse.parent / f"{name}-migrations", "bench_history")
    try:
        created, count = timed(lambda: create_examples(engine))
        migrated, ran = timed(lambda: apply_history(engine, folder, "bench_history"))
    finally:
        engine.close()
    print(
        f"{name:6} start {started:6.2f} s | create of {count} example contracts {created:6.2f} s | "
        f"sales.orders 0001-0004 ({ran} ops) {migrated:6.2f} s"
    )
    return {"start": started, "create": created, "migrate": migrated}


def start_local(warehouse: Path) -> Any:
    from delta_contracts.engine.local.engine import LocalEngine

    return LocalEngine(warehouse)


def start_spark(warehouse: Path) -> Any:
    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session

    session = local_delta_session(warehouse=warehouse)
    return SparkEngine(session, warehouse / "_delta_contracts", owns_session=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as root:
        # spark first: its session is stopped before the local engine may start its own lazy delta-spark one
        # (for ops Sail and delta-rs cannot do), which would otherwise be handed the spark engine's session.
        spark = measure("spark", start_spark, Path(root) / "spark")
        local = measure("local", start_local, Path(root) / "local")
    for step in ("start", "create", "migrate"):
        print(f"{step:8} spark/local = {spark[step] / local[step]:5.1f}x")


if __name__ == "__main__":
    main()
