"""The cutover catch-up of a versioned migration, executed on real Delta (issue 13, item 12).

Rows a producer writes to the old table between populate and cutover — a new row, an updated row, a deleted
row — must be in the new table after the catch-up, and the catch-up must write only those: the counts come
from the catch-up commit's `operationMetrics` in the new table's Delta log, read with delta-rs (not through
the engine under test). Run a second time with nothing new, the catch-up changes no row. Without a key, a
partitioned table gets only its changed partitions rewritten: the files of the others stay in the log.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine, PreconditionFailedError
from delta_contracts.plan.catch_up import CLOCK_MARGIN_MS, CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import Phase
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.engine.conftest import location_of
from tests.engine.recipe_run import (
    ROWS,
    checksum,
    create_schema,
    expected_rows,
    read_through_name,
    run_migration,
    write_rows,
)
from tests.recipes import BASE, RECIPES

pytestmark = pytest.mark.engine

_schemas = itertools.count()
MORE_ROWS = (
    {
        "txn_id": "t3",
        "txn_amt_paise": 500,
        "attempts": 1,
        "status": "FAILED",
        "legacy_channel": "app",
        "txn_date": date(2026, 11, 3),
    },
    {
        "txn_id": "t4",
        "txn_amt_paise": 42,
        "attempts": 0,
        "status": "OK",
        "legacy_channel": None,
        "txn_date": date(2026, 11, 3),
    },
)
# Key-less case only: a row beside NEW_ROW's partition (so the insert lands in a partition that has rows),
# and one in a partition nobody touches.
NEIGHBOUR_ROW = {
    "txn_id": "t6",
    "txn_amt_paise": 310,
    "attempts": 2,
    "status": "OK",
    "legacy_channel": "app",
    "txn_date": date(2026, 11, 4),
}
QUIET_ROW = {
    "txn_id": "t7",
    "txn_amt_paise": 8,
    "attempts": None,
    "status": None,
    "legacy_channel": None,
    "txn_date": date(2026, 11, 5),
}
NEW_ROW = {
    "txn_id": "t5",
    "txn_amt_paise": 77,
    "attempts": 4,
    "status": "OK",
    "legacy_channel": "web",
    "txn_date": date(2026, 11, 4),
}


def contracts(
    schema: str, properties: dict[str, str] | None = None, *, keyed: bool = True
) -> tuple[Contract, Contract]:
    """A versioned table (partitioned by txn_date), keyed on txn_id or not, narrowed to a new major (a copy
    into `__v3`)."""
    old = copy.deepcopy(BASE)
    old.update(id=f"{schema}.transactions", quality={"unique": [["txn_id"]] if keyed else []})
    old["table"].update(versioning="versioned", properties=properties or {})
    new = copy.deepcopy(old)
    RECIPES["narrow_type"][1](new)
    new["version"] = "3.0.0"
    return Contract.model_validate(old), Contract.model_validate(new)


def last_commit(location: str) -> dict[str, Any]:
    from deltalake import DeltaTable

    (entry,) = DeltaTable(location).history(1)
    return dict(entry)


def data_files(location: str) -> dict[str, date]:
    """The new table's live data files (from its Delta log, read with delta-rs) and their txn_date."""
    import pyarrow as pa
    from deltalake import DeltaTable

    actions = pa.table(DeltaTable(location).get_add_actions(flatten=True)).to_pylist()
    return {a["path"]: a["partition.txn_date"] for a in actions}


def assert_wrote_nothing(first: dict[str, Any], second: dict[str, Any]) -> None:
    """The catch-up run again with nothing new: no commit at all (Sail), or a MERGE that changed no row."""
    if second["version"] == first["version"]:
        return
    assert second["operation"] == "MERGE", second
    for name in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"):
        assert int(second["operationMetrics"][name]) == 0, second["operationMetrics"]


def produce(engine: Engine, table: tuple[str, ...]) -> None:
    """What a producer of the old shape does between populate and cutover: one insert, update, delete."""
    write_rows(engine, table, [NEW_ROW])
    where = exp.EQ(this=x.column("txn_id"), expression=x.literal("t2"))
    update = exp.Update(
        this=x.table(table),
        expressions=[exp.EQ(this=x.column("attempts"), expression=x.literal(3))],
        where=exp.Where(this=where),
    )
    engine.sql(x.sql(update))
    gone = exp.EQ(this=x.column("txn_id"), expression=x.literal("t3"))
    engine.sql(x.sql(exp.Delete(this=x.table(table), where=exp.Where(this=gone))))


TICK_MS = 20  # a file's time may lag the clock by a tick of the kernel's coarse clock


def wait_past_the_clock_margin(engine: Engine, table: tuple[str, ...], timeout: float = 30) -> None:
    """Until a commit made now would be stamped more than the catch-up's clock margin after the table's last
    commit: a table created from now on reads the change feed from after that commit (`change_feed_start`)."""
    last = max(commit.timestamp_ms for commit in engine.history(table))
    deadline = time.monotonic() + timeout
    while time.time() * 1000 <= last + CLOCK_MARGIN_MS + TICK_MS:
        assert time.monotonic() < deadline, f"the clock did not pass {last} + {CLOCK_MARGIN_MS} ms"
        time.sleep(0.01)


def produce_a_key_change(engine: Engine, table: tuple[str, ...]) -> None:
    """A producer that moves a row to another key: `UPDATE … SET txn_id = 't9' WHERE txn_id = 't4'`."""
    where = exp.EQ(this=x.column("txn_id"), expression=x.literal("t4"))
    update = exp.Update(
        this=x.table(table),
        expressions=[exp.EQ(this=x.column("txn_id"), expression=x.literal("t9"))],
        where=exp.Where(this=where),
    )
    engine.sql(x.sql(update))


def catch_up_case(
    engine: Engine,
    properties: dict[str, str] | None = None,
    *,
    keyed: bool = True,
    producer: Callable[[Engine, tuple[str, ...]], None] = produce,
) -> dict[str, Any]:
    """Create, fill, populate, produce, then cutover; the catch-up commit's metrics (first and second run),
    the new table's data files before and after it, and the rows read through the name against those the
    contracts say it must serve."""
    schema = f"catchup{next(_schemas)}"
    create_schema(engine, schema)
    old, new = contracts(schema, properties, keyed=keyed)
    created, state = plan(None, old, Target.DELTA_4)
    engine.check_supported(created.ops)
    run_migration(engine, created, "create")
    write_rows(engine, state.physical, [*ROWS, *MORE_ROWS, *(() if keyed else (NEIGHBOUR_ROW, QUIET_ROW))])
    if properties:  # the rows above were written before the new table: the feed is read after them
        wait_past_the_clock_margin(engine, state.physical)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    engine.check_supported(migration.ops)
    catch_up = next(op for op in migration.ops if isinstance(op, CatchUpRows))
    for op in (*migration.phase(Phase.EXPAND), *migration.phase(Phase.POPULATE)):
        engine.apply_op(op)
    producer(engine, state.physical)
    expected = checksum(
        expected_rows(old, new, engine.sql(x.sql(exp.select("*").from_(x.table(state.physical)))))
    )
    location = location_of(engine, catch_up.table)
    metrics = []
    files = [data_files(location)]
    for op in migration.phase(Phase.CUTOVER):
        engine.apply_op(op)
        if op == catch_up:
            files.append(data_files(location))
            metrics.append(last_commit(location))
            engine.apply_op(op)  # again, with nothing new
            metrics.append(last_commit(location))
    return {
        "op": catch_up,
        "first": metrics[0],
        "second": metrics[1],
        "files_before": files[0],
        "files_after": files[1],
        "served": checksum(read_through_name(engine, new)),
        "expected": expected,
    }


def test_merge_on_key_writes_only_the_changed_rows(local_or_spark: Engine) -> None:
    run = catch_up_case(local_or_spark)
    assert run["op"].strategy is CatchUpStrategy.MERGE_ON_KEY
    first, second = run["first"], run["second"]
    assert first["operation"] == "MERGE", first
    counts = {k: int(first["operationMetrics"][k]) for k in ("numTargetRowsInserted", "numTargetRowsUpdated")}
    assert counts == {"numTargetRowsInserted": 1, "numTargetRowsUpdated": 1}, first["operationMetrics"]
    assert int(first["operationMetrics"]["numTargetRowsDeleted"]) == 1, first["operationMetrics"]
    assert int(first["operationMetrics"]["numSourceRows"]) == 4  # every row of the old table is read
    assert_wrote_nothing(first, second)
    assert run["served"] == run["expected"]


def test_change_feed_reads_only_the_changes(spark_engine: Engine) -> None:
    run = catch_up_case(spark_engine, {"delta.enableChangeDataFeed": "true"})
    assert run["op"].strategy is CatchUpStrategy.CHANGE_FEED
    first, second = run["first"], run["second"]
    assert first["operation"] == "MERGE", first
    metrics = {k: int(v) for k, v in first["operationMetrics"].items() if k.startswith("numTarget")}
    assert metrics["numTargetRowsInserted"] == 1, metrics
    assert metrics["numTargetRowsUpdated"] == 1, metrics
    assert metrics["numTargetRowsDeleted"] == 1, metrics
    # The source is the latest change of each changed key (t2, t3, t5), not the old table's 4 rows.
    assert int(first["operationMetrics"]["numSourceRows"]) == 3, first["operationMetrics"]
    assert_wrote_nothing(first, second)
    assert run["served"] == run["expected"]


def test_change_feed_follows_an_update_of_the_key(spark_engine: Engine) -> None:
    """Issue 36, item 6a: the pre-image of key t4 ends that key; without it both t4 and t9 stood."""
    feed = {"delta.enableChangeDataFeed": "true"}
    run = catch_up_case(spark_engine, feed, producer=produce_a_key_change)
    assert run["op"].strategy is CatchUpStrategy.CHANGE_FEED
    metrics = {k: int(v) for k, v in run["first"]["operationMetrics"].items() if k.startswith("numTarget")}
    assert metrics["numTargetRowsInserted"] == 1 and metrics["numTargetRowsDeleted"] == 1, metrics
    assert run["served"] == run["expected"]


def test_local_refuses_the_change_feed_catch_up_before_running(local_engine: Engine) -> None:
    old, new = contracts("refused", {"delta.enableChangeDataFeed": "true"})
    migration, _ = plan(old, new, Target.DELTA_4)
    catch_up = next(op for op in migration.ops if isinstance(op, CatchUpRows))
    reason = local_engine.unsupported_reason(catch_up)
    assert reason is not None and "table_changes" in reason


def test_partitions_without_a_key_rewrites_only_the_changed_partitions(local_or_spark: Engine) -> None:
    """No unique key, partitioned by txn_date: the producer inserts into 11-04, updates a row of 11-02 and
    deletes one of 11-03's two rows; 11-01 and 11-05 are untouched and keep their files."""
    run = catch_up_case(local_or_spark, keyed=False)
    op = run["op"]
    assert op.strategy is CatchUpStrategy.PARTITIONS and op.partition_by == ("txn_date",) and op.key == ()
    first, second = run["first"], run["second"]
    assert first["operation"] == "MERGE", first
    metrics = {k: int(v) for k, v in first["operationMetrics"].items() if k.startswith("numTarget")}
    # Deleted: the new table's rows of the three changed partitions (t2; t3, t4; t6). Inserted: the old
    # table's rows of those partitions now (t2 updated; t4; t6, t5). No row is updated in place.
    assert metrics["numTargetRowsDeleted"] == 4, metrics
    assert metrics["numTargetRowsInserted"] == 4, metrics
    assert metrics["numTargetRowsUpdated"] == 0, metrics
    # The source: one delete marker per changed partition, and the 4 rows to insert.
    assert int(first["operationMetrics"]["numSourceRows"]) == 3 + 4, first["operationMetrics"]
    changed = {date(2026, 11, 2), date(2026, 11, 3), date(2026, 11, 4)}
    before, after = run["files_before"], run["files_after"]
    assert set(before.values()) == changed | {date(2026, 11, 1), date(2026, 11, 5)}
    untouched = {path for path, day in before.items() if day not in changed}
    assert untouched and untouched <= set(after), (before, after)  # the same files, not rewritten
    rewritten = {path for path, day in before.items() if day in changed}
    assert rewritten.isdisjoint(after), (before, after)
    assert metrics["numTargetFilesRemoved"] == len(rewritten), metrics
    assert {day for path, day in after.items() if path not in before} == changed
    assert_wrote_nothing(first, second)
    assert run["served"] == run["expected"]


def test_partitions_catch_up_converges_from_any_state_of_the_new_table(local_or_spark: Engine) -> None:
    """The catch-up is one MERGE (one commit), so a killed run leaves the new table as it was; whatever that
    is, the next run converges: here a partition emptied, a row duplicated and a partition the old table
    does not have. Then a second run writes nothing."""
    schema = f"catchup{next(_schemas)}"
    create_schema(local_or_spark, schema)
    old, new = contracts(schema, keyed=False)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(local_or_spark, created, "create")
    write_rows(local_or_spark, state.physical, [*ROWS, *MORE_ROWS, NEIGHBOUR_ROW, QUIET_ROW])
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    catch_up = next(op for op in migration.ops if isinstance(op, CatchUpRows))
    for op in (*migration.phase(Phase.EXPAND), *migration.phase(Phase.POPULATE)):
        local_or_spark.apply_op(op)
    emptied = exp.EQ(this=x.column("txn_date"), expression=x.literal(date(2026, 11, 1)))
    local_or_spark.sql(x.sql(exp.Delete(this=x.table(catch_up.table), where=exp.Where(this=emptied))))
    write_rows(local_or_spark, catch_up.table, [MORE_ROWS[0], {**NEW_ROW, "txn_date": date(2026, 11, 9)}])
    source_rows = local_or_spark.sql(x.sql(exp.select("*").from_(x.table(state.physical))))
    expected = checksum(expected_rows(old, new, source_rows))
    local_or_spark.apply_op(catch_up)
    location = location_of(local_or_spark, catch_up.table)
    first = last_commit(location)
    stored = local_or_spark.sql(x.sql(exp.select("*").from_(x.table(catch_up.table))))
    assert checksum(stored) == expected
    local_or_spark.apply_op(catch_up)
    assert_wrote_nothing(first, last_commit(location))


def _twin(row: dict[str, Any], **changed: Any) -> dict[str, Any]:
    return {**row, **changed}


def _delete(engine: Engine, table: tuple[str, ...], column: str, value: Any) -> None:
    where = exp.EQ(this=x.column(column), expression=x.literal(value))
    engine.sql(x.sql(exp.Delete(this=x.table(table), where=exp.Where(this=where))))


def test_a_shared_key_is_refused_before_the_merge_writes(local_or_spark: Engine) -> None:
    """Delta does not enforce a contract's unique key, and a key MERGE over rows sharing a key either fails
    (several source rows for one target row) or writes one row's values over its twin. So the populate copy
    refuses an old table with two rows of one key, and the cutover catch-up refuses one in either table; each
    refusal counts the rows, shows them and writes nothing. With the twins gone, the catch-up runs."""
    engine = local_or_spark
    schema = f"catchup{next(_schemas)}"
    create_schema(engine, schema)
    old, new = contracts(schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(engine, created, "create")
    twin = _twin(ROWS[0], attempts=7, txn_date=date(2026, 11, 9))
    write_rows(engine, state.physical, [*ROWS, twin])
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    (copy_op,) = migration.phase(Phase.POPULATE)
    catch_up = next(op for op in migration.ops if isinstance(op, CatchUpRows))
    assert catch_up.strategy is CatchUpStrategy.MERGE_ON_KEY
    for op in migration.phase(Phase.EXPAND):
        engine.apply_op(op)
    new_version = engine.table_version(catch_up.table)

    def refused(op: Any, table: tuple[str, ...]) -> list[dict[str, Any]]:
        with pytest.raises(PreconditionFailedError) as failed:
            engine.apply_op(op)
        assert failed.value.count == 2 and ".".join(table) in str(failed.value)
        assert engine.table_version(catch_up.table) == new_version  # nothing written
        return failed.value.samples

    samples = refused(copy_op, state.physical)
    assert sorted((r["txn_id"], r["attempts"]) for r in samples) == [("t1", 1), ("t1", 7)]
    _delete(engine, state.physical, "attempts", 7)
    engine.apply_op(copy_op)
    new_version = engine.table_version(catch_up.table)
    # A producer writes a second t2 to the old table between populate and cutover.
    write_rows(engine, state.physical, [_twin(ROWS[1], attempts=9)])
    samples = refused(catch_up, state.physical)
    assert {r["txn_id"] for r in samples} == {ROWS[1]["txn_id"]}
    _delete(engine, state.physical, "attempts", 9)
    # The new table got a twin of its own (a writer that went to it early).
    write_rows(engine, catch_up.table, [_twin(ROWS[1], attempts=9)])
    new_version = engine.table_version(catch_up.table)
    samples = refused(catch_up, catch_up.table)
    assert {r["attempts"] for r in samples} == {ROWS[1]["attempts"], 9}
    _delete(engine, catch_up.table, "attempts", 9)
    expected = checksum(
        expected_rows(old, new, engine.sql(x.sql(exp.select("*").from_(x.table(state.physical)))))
    )
    for op in migration.phase(Phase.CUTOVER):
        engine.apply_op(op)
    assert checksum(read_through_name(engine, new)) == expected
