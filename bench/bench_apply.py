"""Apply speed on the embedded engine, each figure against a baseline measured in the same run.

1. ADD COLUMN through `apply` on a small and on a 20x larger table: metadata only, so the ratio should be ~1.
2. A batched backfill (UPDATE … WHERE col IS NULL, one batch per partition, each recorded in the ledger):
   rows/s against a bare `count(*)` scan of the same table.

Run: .venv/bin/python bench/bench_apply.py [--rows 1000000] [--factor 20] [--batch-rows 250000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from delta_contracts.apply import apply
from delta_contracts.engine.local import LocalEngine
from delta_contracts.plan.migrations import SUM_FILE, compute_sum, migration_files
from delta_contracts.plan.ops import AddColumn, Backfill, ColumnSpec, CreateTable, Migration, Phase
from delta_contracts.plan.serialize import migration_to_data
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.target import Target

SNAPSHOT = Path(__file__).resolve().parents[1] / "migrations" / "sales.orders" / "0001_create_1.0.0.json"


def write_migration(root: Path, contract: str, number: int, migration: Migration) -> None:
    """A hand-made migration folder entry (bench only: the planner needs a contract per step)."""
    from delta_contracts.plan.migrations import FORMAT

    folder = root / contract
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{number:04d}_bench"
    payload = {
        "format": FORMAT,
        "target": Target.DELTA_4.value,
        "migration": migration_to_data(migration),
        "state": {"physical": list(migration.table), "properties": []},
        # load_history wants a contract snapshot; any valid one serves (apply runs the ops, not the contract)
        "contract": json.loads(SNAPSHOT.read_text(encoding="utf-8"))["contract"],
    }
    (folder / f"{name}.json").write_text(json.dumps(payload), encoding="utf-8")
    sql = render_sql_file(migration, migration_id=name, target=Target.DELTA_4)
    (folder / f"{name}.sql").write_text(sql, encoding="utf-8")
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")


def make_table(engine: LocalEngine, table: tuple[str, str], rows: int) -> None:
    columns = (ColumnSpec("id", "bigint"), ColumnSpec("day", "int"), ColumnSpec("amount", "double"))
    create = CreateTable(table=table, phase=Phase.EXPAND, columns=columns, partitioned_by=("day",))
    engine.apply_op(create)
    engine.sql(
        f"INSERT INTO `{table[0]}`.`{table[1]}` "
        f"SELECT id, CAST(id % 8 AS INT) AS day, CAST(id AS DOUBLE) * 0.5 AS amount FROM range({rows})"
    )


def timed_apply(engine: LocalEngine, root: Path, contract: str, batch_rows: int) -> float:
    start = time.perf_counter()
    result = apply(engine, root, tables=[contract], batch_rows=batch_rows)
    if result.exit_code != 0:
        raise SystemExit(f"apply failed: {result.failure or result.refused}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--factor", type=int, default=20)
    parser.add_argument("--batch-rows", type=int, default=250_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LocalEngine(Path(folder) / "wh") as engine:
        root = Path(folder) / "migrations"
        add = {}
        # warm-up: the first apply creates the ledger and lease tables and loads the modules
        for label, rows in (("warmup", 10), ("small", args.rows), ("large", args.rows * args.factor)):
            table = (f"bench_{label}", "t")
            make_table(engine, table, rows)
            migration = Migration(
                table=table,
                from_version="1.0.0",
                to_version="1.1.0",
                strategy="in_place",
                ops=(AddColumn(table=table, phase=Phase.EXPAND, column=ColumnSpec("note", "string")),),
            )
            write_migration(root, ".".join(table), 1, migration)
            add[label] = (rows, timed_apply(engine, root, ".".join(table), args.batch_rows))
        (small_rows, small_s), (large_rows, large_s) = add["small"], add["large"]
        print(f"ADD COLUMN via apply: {small_rows:,} rows {small_s:.2f}s, {large_rows:,} rows {large_s:.2f}s")
        print(f"  ratio large/small: {large_s / small_s:.2f} (metadata only: ~1 expected)")

        table = ("bench_large", "t")
        start = time.perf_counter()
        count = engine.sql(f"SELECT count(*) AS n FROM `{table[0]}`.`{table[1]}`")[0]["n"]
        scan_s = time.perf_counter() - start
        backfill = Migration(
            table=table,
            from_version="1.1.0",
            to_version="1.2.0",
            strategy="in_place",
            ops=(Backfill(table=table, phase=Phase.POPULATE, column="note", expression="'filled'"),),
        )
        write_migration(root, ".".join(table), 2, backfill)
        fill_s = timed_apply(engine, root, ".".join(table), args.batch_rows)
        print(f"count(*) scan: {count:,} rows in {scan_s:.2f}s ({count / scan_s:,.0f} rows/s)")
        print(f"batched backfill: {count:,} rows in {fill_s:.2f}s ({count / fill_s:,.0f} rows/s)")
        print(f"  ratio backfill/scan rows/s: {(count / fill_s) / (count / scan_s):.3f}")


if __name__ == "__main__":
    main()
