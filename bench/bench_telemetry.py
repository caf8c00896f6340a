"""Telemetry collection speed. Prints statements/s with a baseline measured in the same run.

Generated query histories (default 1,000,000 rows, Databricks `system.query.history` columns, Parquet) with
1% and 10% distinct texts: a few thousand query shapes run over and over with other literals by a few
hundred users, a third of the distinct texts carrying a comment of their own (a run id, as generated SQL
does), plus one-off and unparseable texts. Collected on the default engine (`local`: embedded Sail): the
engine groups the rows by exact text, the distinct texts are fingerprinted and one text per shape parsed in
a pool of worker processes (one per core), and the keys with hits are joined back.

Baseline: the naive collector, which parses every row's text with the same extractor in a Python loop. It
is timed on a random sample of the rows (parsing a million rows one by one takes far too long for a bench)
and reported as a rate, which is what the ratio compares.

Also printed: peak memory (this process, which hosts Sail, plus the worker processes, sampled), and CPU
seconds over wall seconds (2.0 = both cores of a 2-core machine busy the whole time; on a machine shared
with other work it shows how much CPU the run got).

`--public N`: instead, the public history of tests/data/history (N rows; the issue's was 19,211): every
statement must be answered.

Run: PYTHONPATH=. .venv/bin/python bench/bench_telemetry.py [--rows N] [--distinct SHARE|COUNT ...]
[--sample N] [--public N]; the target at scale: `--rows 10000000 --distinct 1000000` collected in under 60 s
on two cores.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
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


def distinct_texts(rng: random.Random, count: int) -> list[str]:
    """`count` distinct texts over 3,000 shapes; a third with a comment of their own, 1% broken."""
    templates = shapes(rng, 3000)
    out: set[str] = set()
    while len(out) < count:
        if rng.random() < 0.01:  # one-off or broken texts
            out.add(rng.choice(["SELECT * FROM (", "\x00\x01", "hello"]) + str(rng.random()))
            continue
        template = templates[min(int(rng.paretovariate(1.2)) - 1, len(templates) - 1)]
        text = template.format(n=rng.randint(0, 10**6), s=f"v{rng.randint(0, 999)}")
        if rng.random() < 1 / 3:
            run = rng.getrandbits(48)
            text = f"/* run {run:x} */ {text}" if rng.random() < 0.5 else f"{text} -- run {run:x}"
        out.add(text)
    return sorted(out)


def generate(path: Path, rows: int, distinct: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    pool = distinct_texts(rng, distinct)
    rng.shuffle(pool)
    # The popular head of the distribution is real queries; broken one-offs stay at the tail.
    pool.sort(
        key=lambda text: (
            not text.lstrip("/* ").upper().startswith(("SELECT", "WITH", "INSERT", "MERGE", "RUN"))
        )
    )
    start = datetime(2026, 10, 1, tzinfo=UTC)
    batch = 200_000
    writer = None
    for offset in range(0, rows, batch):
        n = min(batch, rows - offset)
        # every distinct text once, then repeats (dashboards, jobs), the popular ones far more often
        texts = [
            pool[i] if i < len(pool) else pool[min(int(rng.paretovariate(0.8)) - 1, len(pool) - 1)]
            for i in range(offset, offset + n)
        ]
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


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class PeakMemory:
    """The peak of the summed resident memory of this process (which hosts Sail) and its children (the
    worker processes), sampled from /proc every 0.1 s."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak_mb = max(self.peak_mb, tree_rss_mb())


def tree_rss_mb() -> float:
    me = os.getpid()
    total = _rss_kb(me)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == me:
                total += _rss_kb(int(entry.name))
    return total / 1024


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def collect_once(root: Path, history: Path, label: str) -> tuple[float, int]:
    """One `collect` of `history` on a fresh local engine; prints its line, returns statements/s."""
    from delta_contracts.engine.local.engine import LocalEngine
    from delta_contracts.telemetry.log import read_rows
    from delta_contracts.telemetry.pipeline import collect
    from delta_contracts.telemetry.sources import parse_source, read_source

    state = root / f"state-{label}"
    with LocalEngine(root / f"warehouse-{label}") as engine:
        spark = engine.spark  # type: ignore[attr-defined]
        spec = parse_source(f"query-history:{history}")
        cpu, began = cpu_seconds(), time.perf_counter()
        stages: list[tuple[str, float]] = []

        def progress(stage: str, done: int, total: int) -> None:
            if not stages or stages[-1][0] != stage:
                stages.append((stage, time.perf_counter()))

        with PeakMemory() as memory:
            result = collect(spark, read_source(spark, spec), spec.name, WATCHED, state, progress=progress)
        seconds = time.perf_counter() - began
        used = cpu_seconds() - cpu
    logged = len(read_rows(state))
    rate = result.statements / seconds
    kinds = ", ".join(f"{k}: {n:,}" for k, n in sorted(result.errors.items()))
    print(
        f"  collect: {result.statements:,} statements ({result.distinct:,} distinct texts) "
        f"in {seconds:.1f} s = {rate:,.0f} statements/s; {result.unparsed:,} unparsed ({kinds}); "
        f"{logged:,} reader rows logged"
    )
    print(f"  {logged / result.statements:.2%} of the rows logged as reads of a watched object")
    ends = [t for _, t in stages[1:]] + [began + seconds]
    print(
        "  stages: "
        + "; ".join(f"{name} {end - start:.1f} s" for (name, start), end in zip(stages, ends, strict=True))
    )
    print(
        f"  CPU: {used:.1f} s over {seconds:.1f} s wall = {used / seconds:.2f} cores busy on average; "
        f"peak memory (this process with Sail, plus workers): {memory.peak_mb:,.0f} MB"
    )
    return rate, result.statements


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=5_000)
    parser.add_argument(
        "--distinct",
        type=float,
        nargs="*",
        default=[0.01, 0.10],
        help="distinct texts: a share of the rows (at most 1) or a count (above 1); several for several runs",
    )
    parser.add_argument("--public", type=int, default=0, help="run the public history of N rows instead")
    args = parser.parse_args()
    print(f"cores: {len(os.sched_getaffinity(0))}; load average now: {os.getloadavg()[0]:.1f}")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.public:
            from tests.telemetry.public_history import write_history

            history = write_history(root / "public" / "history.jsonl", args.public)
            print(f"public history: {args.public:,} rows")
            collect_once(root, history, "public")
            return
        for wanted in args.distinct:
            distinct = int(args.rows * wanted) if wanted <= 1 else int(wanted)
            share = distinct / args.rows
            history = root / f"history-{distinct}.parquet"
            began = time.perf_counter()
            generate(history, args.rows, distinct)
            print(
                f"{args.rows:,} rows, {distinct:,} distinct texts ({share:.0%}): generated in "
                f"{time.perf_counter() - began:.1f} s"
            )
            engine_rate, _ = collect_once(root, history, f"{share}")
            rate, hits = naive_rate(history, args.sample)
            print(
                f"  naive (parse every row in Python, {args.sample:,}-row sample): {rate:,.0f} statements/s; "
                f"{hits / min(args.sample, args.rows):.2%} of its rows read a watched object"
            )
            print(f"  ratio: {engine_rate / rate:.1f}x the naive rate")


if __name__ == "__main__":
    main()
