"""Telemetry collection speed. Prints statements/s with a baseline measured in the same run.

A generated query history (default 1,000,000 rows, Databricks `system.query.history` columns, Parquet) with
realistic repetition: a few thousand query shapes run over and over with different literals by a few hundred
users, plus 1% one-off and unparseable texts. Collected on the default engine (`local`: embedded Sail):
normalize in the engine, parse each distinct text once inside `mapInArrow`, append the readers log.

Baseline: the naive collector, which parses every row's text with the same extractor in a Python loop. It
is timed on a random sample of the rows (parsing a million rows one by one takes far too long for a bench)
and reported as a rate, which is what the ratio compares.

Run: .venv/bin/python bench/bench_telemetry.py [--rows N] [--sample N]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from delta_contracts.sql.extract import Catalog, extract
from delta_contracts.telemetry.matching import Targets, reads_of
from delta_contracts.telemetry.objects import Watched

TABLES = [f"sales.t{i}" for i in range(40)] + ["sales.orders", "sales.orders__v1", "sales.customers"]
COLUMNS = ["id", "amount", "legacy_code", "region", "created_at", "status", "customer_id"]
USERS = [f"user{i}@example.com" for i in range(300)]
CLIENTS = ["Databricks SQL Editor", "Notebook", "Jobs", "PowerBI", "dbt", "Tableau"]
WATCHED = Watched(
    objects=("sales.orders.legacy_code", "sales.orders__v1"),
    catalog=Catalog(schemas={t: tuple(COLUMNS) for t in TABLES}),
)


def shapes(rng: random.Random, count: int) -> list[str]:
    """Query shapes with {n} and {s} literal slots."""
    out = []
    for _ in range(count):
        a, b = rng.sample(TABLES, 2)
        cols = ", ".join(rng.sample(COLUMNS, rng.randint(1, 4)))
        kind = rng.random()
        if kind < 0.4:
            out.append(f"SELECT {cols} FROM {a} WHERE id = {{n}} AND region = '{{s}}'")
        elif kind < 0.6:
            out.append(
                f"SELECT x.{COLUMNS[0]}, count(*) FROM {a} x JOIN {b} y ON x.id = y.customer_id "
                f"WHERE x.created_at > '{{s}}' GROUP BY x.{COLUMNS[0]} LIMIT {{n}}"
            )
        elif kind < 0.75:
            out.append(
                f"WITH recent AS (SELECT * FROM {a} WHERE amount > {{n}}) "
                f"SELECT {cols} FROM recent UNION ALL SELECT {cols} FROM {b} WHERE status = '{{s}}'"
            )
        elif kind < 0.9:
            out.append(f"INSERT INTO {b} SELECT * FROM {a} WHERE created_at >= '{{s}}' AND id > {{n}}")
        else:
            out.append(
                f"MERGE INTO {a} t USING {b} s ON t.id = s.id AND s.amount > {{n}} WHEN MATCHED THEN DELETE"
            )
    return out


def generate(path: Path, rows: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    templates = shapes(rng, 3000)
    start = datetime(2026, 10, 1, tzinfo=UTC)
    batch = 200_000
    writer = None
    for offset in range(0, rows, batch):
        n = min(batch, rows - offset)
        texts = []
        for _ in range(n):
            if rng.random() < 0.01:  # one-off or broken texts
                texts.append(rng.choice(["SELECT * FROM (", "", "\x00\x01", "hello"]) + str(rng.random()))
            else:
                template = templates[min(int(rng.paretovariate(1.2)) - 1, len(templates) - 1)]
                texts.append(template.format(n=rng.randint(0, 10**6), s=f"v{rng.randint(0, 999)}"))
        table = pa.table(
            {
                "statement_id": [f"s{offset + i}" for i in range(n)],
                "statement_text": texts,
                "executed_by": [rng.choice(USERS) for _ in range(n)],
                "start_time": [start + timedelta(seconds=(offset + i) * 2.5) for i in range(n)],
                "client_application": [rng.choice(CLIENTS) for _ in range(n)],
            }
        )
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()


def naive_rate(path: Path, sample: int) -> tuple[float, int]:
    table = pq.read_table(path, columns=["statement_text"])
    texts = table.column("statement_text").to_pylist()
    picked = random.Random(1).sample(texts, min(sample, len(texts)))
    targets = Targets.of(WATCHED.objects, WATCHED.catalog.schemas, {})
    hits = 0
    began = time.perf_counter()
    for text in picked:
        got = extract(text or "", WATCHED.catalog)
        hits += bool(reads_of(got.tables_read, got.columns_read, targets))
    return len(picked) / (time.perf_counter() - began), hits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=20_000)
    args = parser.parse_args()

    from delta_contracts.engine.local import LocalEngine
    from delta_contracts.telemetry.log import read_rows
    from delta_contracts.telemetry.pipeline import collect
    from delta_contracts.telemetry.sources import parse_source, read_source

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        history = root / "history.parquet"
        began = time.perf_counter()
        generate(history, args.rows)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - began:.1f} s")

        with LocalEngine(root / "warehouse") as engine:
            spark = engine.spark  # type: ignore[attr-defined]
            spec = parse_source(f"query-history:{history}")
            began = time.perf_counter()
            result = collect(spark, read_source(spark, spec), spec.name, WATCHED, root / "state")
            engine_seconds = time.perf_counter() - began
            logged = len(read_rows(root / "state"))
        engine_rate = result.statements / engine_seconds
        print(
            f"engine (local/Sail, mapInArrow over distinct normalized texts): {result.statements:,} stmts "
            f"in {engine_seconds:.1f} s = {engine_rate:,.0f} statements/s; {result.unparsed:,} unparsed; "
            f"{logged:,} reader rows logged"
        )
        rate, _ = naive_rate(history, args.sample)
        print(f"naive (parse every row in Python, {args.sample:,}-row sample): {rate:,.0f} statements/s")
        print(f"ratio: {engine_rate / rate:.1f}x the naive rate")


if __name__ == "__main__":
    main()
