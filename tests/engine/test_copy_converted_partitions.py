"""copy_converted_partitions on real Delta tables with rows, on the embedded engine and on delta-spark: a
versioned copy whose partition column reaches the new table retyped runs in batches of the old table's
partitions, and a run killed between two batches resumes after those the ledger recorded (through `apply`),
or finds in the new table a batch that committed without its ledger row (the mover itself, on a conversion
that gives two partitions one value). Each time the rows read back are the old rows converted, each once."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.apply import apply
from delta_contracts.apply.reports import BatchProgress
from delta_contracts.engine.base import Engine
from delta_contracts.engine.row_moves import BatchDone
from delta_contracts.plan.migrations import load_history, next_migration, write_migration
from delta_contracts.plan.ops import ColumnSpec, CreateTable, Phase
from delta_contracts.plan.versioned import CopyConvertedPartitions
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.recipe_run import create_schema, expected_rows, read_through_name, renamed, write_rows
from tests.recipes import pair

pytestmark = pytest.mark.engine
_schemas = itertools.count()


@pytest.fixture(params=["local", pytest.param("spark", marks=JVM)])
def either(request: pytest.FixtureRequest) -> Engine:
    """The embedded engine and delta-spark, both in `make test`."""
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


class KilledError(Exception):
    pass


def _row(n: int, day: int) -> dict[str, Any]:
    return {
        "txn_id": f"t{n}",
        "txn_amt_paise": 100 + n,
        "attempts": n % 3,
        "status": "OK" if n % 2 else "FAILED",
        "legacy_channel": None if n % 4 == 0 else "web",
        "txn_date": date(2026, 11, day),
    }


# five partitions (days) of two rows each, the last of one row
ROWS = [_row(n, 1 + n // 2) for n in range(9)]


def _schema(engine: Engine, name: str) -> str:
    schema = f"ccp_{engine.name}_{name}_{next(_schemas)}"
    create_schema(engine, schema)
    return schema


def _as_text(rows: list[dict[str, Any]]) -> Counter[tuple[tuple[str, str], ...]]:
    return Counter(tuple(sorted((k.casefold(), str(v)) for k, v in row.items())) for row in rows)


def test_a_retyped_partition_column_is_copied_by_partitions_and_resumes_after_a_kill(
    either: Engine, tmp_path: Path
) -> None:
    engine = either
    schema = _schema(engine, "apply")
    base, wanted = pair("retype_partition_column")
    old, new = renamed(base, schema), renamed(wanted, schema)
    root = tmp_path / "migrations"
    folder = root / old.id
    folder.mkdir(parents=True)
    for contract in (old, new):
        planned = next_migration(load_history(folder), contract, Target.DELTA_4)
        assert planned is not None
        write_migration(folder, planned)
    first = apply(engine, root, tables=[old.id], to_version=old.version)
    assert first.exit_code == 0, first.failure
    write_rows(engine, TableId((schema, "transactions")), ROWS)

    copy_at = next(
        i
        for i, op in enumerate(load_history(folder)[1].migration.ops, 1)
        if op.kind == "copy_converted_partitions"
    )
    seen: list[BatchProgress] = []

    def killed_after_two_batches(boundary: str) -> None:
        if boundary.endswith(f" op {copy_at} batch 2"):
            raise KilledError

    with pytest.raises(KilledError):
        apply(
            engine,
            root,
            tables=[old.id],
            batch_rows=2,
            on_batch=seen.append,
            on_boundary=killed_after_two_batches,
        )
    # each batch is one day's partition (two rows a batch): the copy followed the old table's partitions
    assert [(b.done, b.total) for b in seen] == [(1, 5), (2, 5)]
    copied = engine.sql(x.sql(exp.select(x.column("txn_date")).from_(x.table((schema, "transactions__v3")))))
    assert sorted(r["txn_date"] for r in copied) == ["2026-11-01"] * 2 + ["2026-11-02"] * 2

    seen.clear()
    rest = apply(engine, root, tables=[old.id], batch_rows=2, on_batch=seen.append)
    assert rest.exit_code == 0, rest.failure
    migration_id = load_history(folder)[1].migration_id
    report = next(r for r in rest.reports if (r.migration_id, r.index) == (migration_id, copy_at))
    assert report.detail.startswith("3 batch(es), resumed after 2 recorded"), report.detail
    assert [(b.done, b.total) for b in seen if b.name.endswith(f" op {copy_at}")] == [(3, 5), (4, 5), (5, 5)]
    served = read_through_name(engine, new)
    assert _as_text(served) == _as_text(expected_rows(old, new, ROWS))
    assert {r["txn_date"] for r in served} == {f"2026-11-0{d}" for d in range(1, 6)}


def test_a_batch_committed_without_its_ledger_row_is_found_in_the_target(either: Engine) -> None:
    """Hourly partitions copied into a day column: the two hours of one day are one batch, and a batch
    killed between its commit and its ledger row is found by its day and not written again."""
    engine = either
    schema = _schema(engine, "mover")
    source, target = TableId((schema, "events")), TableId((schema, "events__v2"))
    engine.apply_op(
        CreateTable(
            table=source,
            phase=Phase.EXPAND,
            columns=(ColumnSpec("id", "bigint"), ColumnSpec("hour", "string")),
            partitioned_by=("hour",),
        )
    )
    engine.apply_op(
        CreateTable(
            table=target,
            phase=Phase.EXPAND,
            columns=(ColumnSpec("id", "bigint"), ColumnSpec("day", "date")),
            partitioned_by=("day",),
        )
    )
    hours = ["2026-11-01 10", "2026-11-01 11", "2026-11-02 09", "2026-11-03 08", "2026-11-03 17"]
    rows = [(n, hour) for n, hour in enumerate(hour for hour in hours for _ in range(2))]
    values = exp.values([tuple(x.literal(v) for v in row) for row in rows])
    engine.sql(x.sql(exp.insert(values, x.table(source))))
    day = "CAST(SUBSTRING(`hour`, 1, 10) AS DATE)"
    op = CopyConvertedPartitions(
        table=target,
        phase=Phase.POPULATE,
        source=source,
        mapping=(("id", "`id`"), ("day", day)),
        partitioned_by=("hour",),
    )
    mover = engine.row_mover(op)
    assert mover is not None
    batches = mover.plan(engine, op, 2, [])
    assert batches is not None
    # one batch a day: the two hours of 2026-11-01 (4 rows), 2026-11-02 (2) and 2026-11-03 (4)
    assert [len(b.mark["partitions"]) for b in batches] == [2, 1, 2]
    recorded: list[dict[str, Any]] = []

    def killed_before_recording_the_second(done: BatchDone) -> None:
        if len(recorded) == 1:
            raise KilledError  # its commit landed, its ledger row was never written
        recorded.append(done.mark)

    with pytest.raises(KilledError):
        mover.run(engine, op, batches, fresh=True, tag=None, on_batch=killed_before_recording_the_second)
    assert len(engine.sql(x.sql(exp.select(x.column("id")).from_(x.table(target))))) == 6

    resumed = mover.plan(engine, op, 2, recorded)
    assert resumed is not None and [b.mark for b in resumed] == [b.mark for b in batches[1:]]
    ends: list[BatchDone] = []
    mover.run(engine, op, resumed, fresh=False, tag=None, on_batch=ends.append)
    assert [d.rows_found for d in ends] == [True, False]  # 2026-11-02 found, not written twice

    query = exp.select(x.column("id"), x.column("day")).from_(x.table(target)).order_by(x.column("id"))
    got = [(r["id"], str(r["day"])) for r in engine.sql(x.sql(query))]
    assert got == [(n, hour[:10]) for n, hour in rows]
