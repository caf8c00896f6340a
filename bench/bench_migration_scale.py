"""A versioned migration at scale on delta-spark, against what a user would write by hand, same run.

The table: `events`, a versioned contract partitioned by `day` (ten days), a CHECK and a NOT NULL, filled
with N rows. The change: the contract drops the partitioning, a major change served as a new versioned table
behind the alias view. Two identical tables are made at each size, one for each way:

- **ours**: `apply` of the planned migration: create the new table, copy the rows in batches (one partition
  a batch, each recorded in the ledger), then the cutover (catch-up, fence, the old table renamed aside, the
  alias view swapped, the contract stamped). The drop of the old table is gated and not part of either way.
- **by hand** (the baseline): `CREATE TABLE … AS SELECT` of the new shape, then `CREATE OR REPLACE VIEW` of
  the alias over it. Producers must stop for the whole of it, or the rows they commit during the CTAS are
  lost.

Printed at each size: both times and their ratio (goal ≤ 1.5), and the cutover window of each way: ours is
the cutover phase, from its first statement producers must wait for to its last (the copy before it runs
while producers write); by hand it is the CTAS and the swap.

Delta's own whole-table copy is no alternative here: open-source Delta has no `DEEP CLONE` (delta-spark 4.4
answers `CREATE TABLE … DEEP CLONE …` with PARSE_SYNTAX_ERROR at DEEP), a `SHALLOW CLONE` points at the old
table's files (which the contract phase drops), and neither can drop a partitioning, narrow a type or drop a
feature, which is what a versioned copy is for; so the toolkit copies with INSERT … SELECT.

`--unique-key`: the contract declares `id` unique, so the cutover catches up by a MERGE on it (reading the
whole source) instead of copying the table again, and the fence inserts the keys the new table lacks.

Run: PYTHONPATH=. .venv/bin/python bench/bench_migration_scale.py [--rows 1000000 10000000]
[--batch-rows 1000000] [--unique-key]   (needs Java 17 and delta-spark's jars: `make jars`)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from delta_contracts.apply import apply
from delta_contracts.contract.model import Contract
from delta_contracts.plan.migrations import load_history, next_migration, table_folder, write_migration
from delta_contracts.plan.ops import Phase
from delta_contracts.target import Target

DAYS = 10


def contract(schema: str, version: str, partitioned: bool, keyed: bool = False) -> Contract:
    return Contract.model_validate(
        {
            **({"quality": {"unique": [["id"]]}} if keyed else {}),
            "apiVersion": "delta-contracts/v1",
            "id": f"{schema}.events",
            "version": version,
            "owner": {"team": "bench"},
            "table": {"partitioned_by": ["day"] if partitioned else [], "versioning": "versioned"},
            "columns": [
                {"name": "id", "type": "bigint", "nullable": False, "checks": {"min": 0}},
                {"name": "day", "type": "int", "nullable": False},
                {"name": "amount", "type": "decimal(12,2)"},
                {"name": "region", "type": "string"},
                {"name": "note", "type": "string"},
            ],
        }
    )


def planned(root: Path, new: Contract) -> None:
    folder = table_folder(root, new.id)
    history = load_history(folder) if folder.is_dir() else []
    files = next_migration(history, new, Target.DELTA_4)
    if files is None:
        raise SystemExit(f"nothing to plan for {new.id} {new.version}")
    write_migration(folder, files)


def timed(step: Callable[[], Any]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def applied(engine: Any, root: Path, table: str, phases: list[Phase], batch_rows: int) -> None:
    result = apply(engine, root, tables=[table], phases=phases, batch_rows=batch_rows)
    if result.exit_code != 0:
        raise SystemExit(f"apply of {table} failed: {result.failure or result.refused}")


def fill(engine: Any, table: str, rows: int) -> None:
    engine.sql(
        f"INSERT INTO {table} SELECT id, CAST(id % {DAYS} AS INT) AS day, "
        "CAST(id % 100000 AS DECIMAL(12,2)) / 100 AS amount, "
        "concat('region-', CAST(id % 37 AS STRING)) AS region, "
        f"CASE WHEN id % 3 = 0 THEN NULL ELSE concat('n', CAST(id AS STRING)) END AS note FROM range({rows})"
    )


def count(engine: Any, table: str) -> int:
    # a filter no statistic answers: the rows are read, not counted from the Delta log
    return int(engine.sql(f"SELECT count(*) AS n FROM {table} WHERE note IS NULL OR note <> ''")[0]["n"])


def measure(engine: Any, root: Path, rows: int, batch_rows: int, keyed: bool) -> dict[str, float]:
    ours, hand = f"ours{rows}", f"hand{rows}"
    for schema in (ours, hand):
        engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
        planned(root, contract(schema, "1.0.0", partitioned=True, keyed=keyed))
        applied(engine, root, f"{schema}.events", list(Phase), batch_rows)
        fill(engine, f"`{schema}`.`events__v1`", rows)

    planned(root, contract(ours, "2.0.0", partitioned=False, keyed=keyed))
    copy = timed(lambda: applied(engine, root, f"{ours}.events", [Phase.EXPAND, Phase.POPULATE], batch_rows))
    window = timed(lambda: applied(engine, root, f"{ours}.events", [Phase.CUTOVER], batch_rows))

    ctas = timed(
        lambda: engine.sql(
            f"CREATE TABLE `{hand}`.`events_new` USING DELTA AS SELECT * FROM `{hand}`.`events__v1`"
        )
    )
    swap = timed(
        lambda: engine.sql(f"CREATE OR REPLACE VIEW `{hand}`.`events` AS SELECT * FROM `{hand}`.`events_new`")
    )

    served, by_hand = count(engine, f"`{ours}`.`events`"), count(engine, f"`{hand}`.`events`")
    if not served == by_hand == rows:
        raise SystemExit(f"rows served: ours {served:,}, by hand {by_hand:,}, written {rows:,}")
    return {"copy": copy, "window": window, "ctas": ctas, "swap": swap}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--batch-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--unique-key",
        action="store_true",
        help="the contract declares `id` unique: the cutover catches up by MERGE on it, not by a second copy",
    )
    args = parser.parse_args()

    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as folder:
        warehouse, root = Path(folder) / "wh", Path(folder) / "migrations"
        engine = SparkEngine(local_delta_session(warehouse=warehouse), warehouse / "_delta_contracts")
        try:
            # warm-up: the JVM's classes, the ledger and leases
            measure(engine, root, 1_000, args.batch_rows, args.unique_key)
            for rows in args.rows:
                m = measure(engine, root, rows, args.batch_rows, args.unique_key)
                ours, hand = m["copy"] + m["window"], m["ctas"] + m["swap"]
                print(
                    f"{rows:>12,} rows | ours {ours:7.1f} s "
                    f"(create+copy {m['copy']:.1f}, cutover {m['window']:.1f})"
                    f" | by hand {hand:7.1f} s (CTAS {m['ctas']:.1f}, view swap {m['swap']:.2f})"
                    f" | ratio {ours / hand:4.2f} (goal <= 1.5)"
                )
                print(
                    f"{'':>12}      | cutover window: ours {m['window']:.1f} s, by hand {hand:.1f} s"
                    f" (producers stopped for the whole CTAS)"
                )
        finally:
            engine.spark.stop()


if __name__ == "__main__":
    main()
