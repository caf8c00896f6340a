"""Apply speed on the embedded engine, each figure against a baseline measured in the same run.

1. ADD COLUMN through `apply` on a small and on a 20x larger table: metadata only, so the ratio should be ~1.
2. A batched backfill through `apply` (UPDATE … WHERE col IS NULL, one batch per partition, each recorded in
   the ledger) against what a user would run without us: one unbatched UPDATE of the same rows, on an
   identical copy of the table.

Run: .venv/bin/python bench/bench_apply.py [--rows 1000000] [--factor 20] [--batch-rows 250000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from delta_contracts.apply import apply
from delta_contracts.engine.local.engine import LocalEngine
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

        # The baseline: an identical copy of the large table, filled by one UPDATE as a user would by hand.
        copy = ("bench_baseline", "t")
        make_table(engine, copy, args.rows * args.factor)
        engine.apply_op(AddColumn(table=copy, phase=Phase.EXPAND, column=ColumnSpec("note", "string")))
        start = time.perf_counter()
        engine.sql(f"UPDATE `{copy[0]}`.`{copy[1]}` SET `note` = 'filled' WHERE `note` IS NULL")
        update_s = time.perf_counter() - start
        count = engine.sql(f"SELECT count(*) AS n FROM `{copy[0]}`.`{copy[1]}` WHERE `note` = 'filled'")[0][
            "n"
        ]

        table = ("bench_large", "t")
        backfill = Migration(
            table=table,
            from_version="1.1.0",
            to_version="1.2.0",
            strategy="in_place",
            ops=(Backfill(table=table, phase=Phase.POPULATE, column="note", expression="'filled'"),),
        )
        write_migration(root, ".".join(table), 2, backfill)
        fill_s = timed_apply(engine, root, ".".join(table), args.batch_rows)
        filled = engine.sql(f"SELECT count(*) AS n FROM `{table[0]}`.`{table[1]}` WHERE `note` = 'filled'")[
            0
        ]["n"]
        if filled != count:
            raise SystemExit(f"the backfill filled {filled:,} rows, the UPDATE {count:,}")
        rate = f"{count / update_s:,.0f} rows/s"
        print(f"one unbatched UPDATE (baseline): {count:,} rows in {update_s:.2f}s ({rate})")
        print(
            f"batched backfill via apply:      {count:,} rows in {fill_s:.2f}s ({count / fill_s:,.0f} rows/s)"
        )
        ratio = fill_s / update_s
        print(f"  ratio backfill/UPDATE time: {ratio:.2f} (the price of resumable, recorded batches)")


if __name__ == "__main__":
    main()
