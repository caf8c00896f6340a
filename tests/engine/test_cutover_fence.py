"""Rows a producer commits to the old table or column around a cutover are not lost (docs/migrations.md,
"Writers during a migration"), step by step on one engine:

- versioned: a row committed to the old table after the catch-up, before the producer switched, reaches the
  new table through the cutover's fence; a row committed after the fence keeps the old version's drop from
  running (it refuses, with the count), even forced;
- in place, a rename: a row an old producer writes with only the old column after the cutover gets the new
  column from the contract phase's last catch-up; one written after that keeps the drop from running.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import ChangedSinceFenceError, Engine, PreconditionFailedError
from delta_contracts.plan.ops import (
    CloseColumn,
    DropCheck,
    DropColumns,
    DropTable,
    LastCatchUp,
    Migration,
    Op,
    Phase,
    StampContract,
)
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.recipe_run import LATE_ROW, ROWS, create_schema, renamed, run_migration, write_rows
from tests.recipes import nullable_rename, pair
from tests.tiers import EXHAUSTIVE

pytestmark = pytest.mark.engine


def apply_until(engine: Engine, migration: Migration, stop: Callable[[Op], bool]) -> list[Op]:
    """Apply the migration's ops in order until `stop` says so; the ops left."""
    ops = list(migration.ops)
    while ops and not stop(ops[0]):
        engine.apply_op(ops.pop(0))
    return ops


def ids(engine: Engine, table: tuple[str, ...]) -> list[str]:
    from sqlglot import exp

    rows = engine.sql(x.sql(exp.select(x.column("txn_id")).from_(x.table(table))))
    return sorted(str(r["txn_id"]) for r in rows)


def test_versioned_cutover_fences_rows_of_the_old_table(local_engine: Engine) -> None:
    schema = "fenced"
    create_schema(local_engine, schema)
    base, wanted = pair("change_partitioning", "versioned")
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(local_engine, created, "create")
    write_rows(local_engine, state.physical, ROWS)
    migration, after = plan(old, new, Target.DELTA_4, state=state)
    # a producer still on the old table commits after the catch-up, right before the new table's stamp
    left = apply_until(local_engine, migration, lambda op: isinstance(op, StampContract))
    write_rows(local_engine, state.physical, [LATE_ROW])
    left = [op for op in left if op.phase is not Phase.CONTRACT]
    for op in left:
        local_engine.apply_op(op)
    assert ids(local_engine, new.table_parts) == ["t1", "t2", "t3"]  # read through the alias view

    # one that never switched commits after the fence: the drop of the old version refuses it, forced or not
    # (the old table differs from what the fence carried: a row it has now)
    write_rows(local_engine, state.physical, [{**LATE_ROW, "txn_id": "t4"}])
    drop = next(op for op in migration.ops if isinstance(op, DropTable))
    with pytest.raises(ChangedSinceFenceError) as refused:
        local_engine.apply_op(drop)
    assert refused.value.count == 1 and refused.value.samples[0]["txn_id"] == "t4"
    assert ids(local_engine, state.physical) == ["t1", "t2", "t3", "t4"]  # nothing dropped
    assert after.physical != state.physical


@JVM
def test_in_place_rename_drop_catches_up_the_old_column(spark_engine: Engine) -> None:
    schema = "renamed_late"
    create_schema(spark_engine, schema)
    base, wanted = nullable_rename()
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(spark_engine, created, "create")
    write_rows(spark_engine, state.physical, ROWS)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    contract = apply_until(spark_engine, migration, lambda op: op.phase is Phase.CONTRACT)
    # an old producer, after the cutover: only the old column
    write_rows(spark_engine, state.physical, [{**LATE_ROW, "legacy_channel": "kiosk"}])
    last, close, drop, unclose, *after_drop = contract  # then the list of marks and the purge
    assert isinstance(last, LastCatchUp) and isinstance(drop, DropColumns)
    assert isinstance(close, CloseColumn) and isinstance(unclose, DropCheck)
    spark_engine.apply_op(last)
    # and once more, between the last catch-up and the closing check: the check refuses to close the column
    write_rows(spark_engine, state.physical, [{**LATE_ROW, "txn_id": "t4", "legacy_channel": "post"}])
    with pytest.raises(PreconditionFailedError) as refused:
        spark_engine.apply_op(close)
    assert refused.value.count == 1
    spark_engine.apply_op(last)  # apply runs it again (the gate holds all three) before the drop
    for op in (close, drop, unclose, *after_drop):
        spark_engine.apply_op(op)
    from sqlglot import exp

    query = exp.select(x.column("txn_id"), x.column("channel")).from_(x.table(state.physical))
    got = {r["txn_id"]: r["channel"] for r in spark_engine.sql(x.sql(query))}
    assert got == {"t1": "web", "t2": None, "t3": "kiosk", "t4": "post"}


def test_fence_refuses_old_rows_sharing_a_key_after_the_rename(local_engine: Engine) -> None:
    """The first versioned migration renames the old table to `__v1` and gives its name to the alias view over
    `__v2`: the fence's duplicate-key check reads `__v1` by that physical name, so two rows an old producer
    committed there with one key are refused, not both copied into `__v2`."""
    from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy

    schema = "fenced_keys"
    create_schema(local_engine, schema)
    base, wanted = pair("change_partitioning", "in_place")  # the old table bears the contract's name
    quality = wanted.quality.model_copy(update={"unique": (("txn_id",),)})
    base, wanted = (c.model_copy(update={"quality": quality}) for c in (base, wanted))
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(local_engine, created, "create")
    write_rows(local_engine, state.physical, ROWS)
    migration, after = plan(old, new, Target.DELTA_4, state=state)

    def is_fence(op: Op) -> bool:
        return isinstance(op, CatchUpRows) and op.strategy is CatchUpStrategy.INSERT_MISSING

    left = apply_until(local_engine, migration, is_fence)
    fence = left[0]
    assert isinstance(fence, CatchUpRows) and fence.source != new.table_parts  # renamed to __v1
    # an old producer that never checked the stamp commits two rows with one key to the old table
    write_rows(local_engine, fence.source, [LATE_ROW, {**LATE_ROW, "attempts": 3}])
    with pytest.raises(PreconditionFailedError) as refused:
        local_engine.apply_op(fence)
    assert refused.value.count == 2
    assert ids(local_engine, after.physical) == ["t1", "t2"]  # nothing copied


@JVM
@pytest.mark.parametrize("engine_name", ["local_engine", "spark_engine"])
def test_in_place_drop_leaves_no_gap_between_its_check_and_the_drop(
    engine_name: str, request: pytest.FixtureRequest
) -> None:
    """An old producer commits a row carrying a value only in the old column after the drop's check has
    passed and before `DROP COLUMNS` commits (hooked between the two, deterministically): the closing CHECK
    refuses the commit, so the producer keeps its row (it switches and writes it again) and the drop loses
    nothing. Before the CHECK the row landed, and the drop took its value with the column."""
    engine: Engine = request.getfixturevalue(engine_name)
    schema = f"closed_{engine_name}"
    create_schema(engine, schema)
    base, wanted = nullable_rename()
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(engine, created, "create")
    write_rows(engine, state.physical, ROWS)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    contract = apply_until(engine, migration, lambda op: op.phase is Phase.CONTRACT)
    drop = next(op for op in contract if isinstance(op, DropColumns))
    for op in contract[: contract.index(drop)]:
        engine.apply_op(op)
    late = {**LATE_ROW, "txn_id": "t4", "legacy_channel": "post"}
    assert not engine.skip_or_check(drop)  # the drop's check passed: no row with a value only in the old one
    try:  # the race: an old-shape commit right after the check
        write_rows(engine, state.physical, [late])
    except Exception as err:
        landed = False
        assert "dc_legacy_channel_closed" in str(err), err
    else:
        landed = True
    engine.run_verified(drop)
    # Until the closing CHECK is dropped right after, it reads a column that is gone: delta-spark passes a
    # new-shape row (the missing column reads NULL), the embedded engine refuses it; neither loses a value.
    window = {**LATE_ROW, "txn_id": "t5", "channel": "web"}
    try:
        write_rows(engine, state.physical, [window])
    except Exception as err:
        assert "legacy_channel" in str(err), err
        expected: dict[str, str] = {}
    else:
        expected = {"t5": "web"}
    for op in contract[contract.index(drop) + 1 :]:
        engine.apply_op(op)
    write_rows(engine, state.physical, [{**LATE_ROW, "txn_id": "t6", "channel": "app"}])  # open again
    from sqlglot import exp

    query = exp.select(x.column("txn_id"), x.column("channel")).from_(x.table(state.physical))
    got = {r["txn_id"]: r["channel"] for r in engine.sql(x.sql(query))}
    # the old-shape row's value is not lost: the CHECK refused its commit (before, it landed and lost it)
    assert not landed and got == {"t1": "web", "t2": None, **expected, "t6": "app"}, (landed, got)
    live = engine.describe(state.physical)
    assert live is not None and live.check("dc_legacy_channel_closed") is None


def _keyed_pair(schema: str) -> tuple[Contract, Contract]:
    base, wanted = pair("change_partitioning", "in_place")  # the old table bears the contract's name
    quality = wanted.quality.model_copy(update={"unique": (("txn_id",),)})
    base, wanted = (c.model_copy(update={"quality": quality}) for c in (base, wanted))
    return renamed(base, schema), renamed(wanted, schema)


def _amounts(engine: Engine, table: tuple[str, ...]) -> dict[str, int]:
    from sqlglot import exp

    query = exp.select(x.column("txn_id"), x.column("txn_amt_paise")).from_(x.table(table))
    return {str(r["txn_id"]): int(r["txn_amt_paise"]) for r in engine.sql(x.sql(query))}


def _set_amount(engine: Engine, table: tuple[str, ...], key: str, amount: int) -> None:
    from sqlglot import exp

    update = exp.update(
        x.table(table),
        {"txn_amt_paise": exp.Literal.number(amount)},
        where=exp.EQ(this=x.column("txn_id"), expression=exp.Literal.string(key)),
    )
    engine.sql(x.sql(update))


def _delete(engine: Engine, table: tuple[str, ...], key: str) -> None:
    from sqlglot import exp

    delete = exp.delete(
        x.table(table), where=exp.EQ(this=x.column("txn_id"), expression=exp.Literal.string(key))
    )
    engine.sql(x.sql(delete))


def test_fence_carries_updates_and_deletes_of_the_old_table(local_engine: Engine) -> None:
    """An upserting producer's changes to the old table after the catch-up — an update and a delete of
    existing keys, an insert, an update after the stamp it has not seen yet — reach the new table through
    the fence; a key the producer wrote to the new table after switching keeps that value. Then one change
    to the old table after the fence keeps the drop from running, naming the key, forced or not."""
    schema = "fenced_upserts"
    create_schema(local_engine, schema)
    old, new = _keyed_pair(schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(local_engine, created, "create")
    write_rows(local_engine, state.physical, [*ROWS, {**LATE_ROW, "txn_id": "t9"}])
    migration, after = plan(old, new, Target.DELTA_4, state=state)
    left = apply_until(local_engine, migration, lambda op: isinstance(op, StampContract))
    old_table = next(op for op in left if isinstance(op, DropTable)).table  # renamed to __v1 by now
    # still on the old table, after the catch-up: an update, a delete and an insert
    _set_amount(local_engine, old_table, "t1", 5001)
    _delete(local_engine, old_table, "t2")
    write_rows(local_engine, old_table, [LATE_ROW])
    local_engine.apply_op(left.pop(0))  # the stamp
    _set_amount(local_engine, old_table, "t1", 5002)  # the producer has not seen the stamp yet
    _set_amount(local_engine, old_table, "t9", 6001)  # … nor here, and then it switched:
    _set_amount(local_engine, after.physical, "t9", 6002)
    write_rows(local_engine, after.physical, [{**LATE_ROW, "txn_id": "t5", "txn_amt_paise": 55}])
    for op in [op for op in left if op.phase is not Phase.CONTRACT]:
        local_engine.apply_op(op)
    served = _amounts(local_engine, new.table_parts)  # read through the alias view
    assert served == {"t1": 5002, "t3": 7, "t5": 55, "t9": 6002}, served
    assert _amounts(local_engine, after.physical) == served

    # a producer that never switched updates a key after the fence: the drop refuses, naming it
    _set_amount(local_engine, old_table, "t3", 8)
    drop = next(op for op in migration.ops if isinstance(op, DropTable))
    with pytest.raises(ChangedSinceFenceError) as refused:
        local_engine.apply_op(drop)
    assert refused.value.count == 2  # the row as it is now, and as the fence read it
    assert {(r["change"], r["txn_id"], r["txn_amt_paise"]) for r in refused.value.samples} == {
        ("has now", "t3", 8),
        ("had, gone since", "t3", 7),
    }
    assert "t3" in str(refused.value)
    assert _amounts(local_engine, old_table)["t3"] == 8  # nothing dropped


def _set_channel(engine: Engine, table: tuple[str, ...], key: str, column: str, value: str) -> None:
    from sqlglot import exp

    update = exp.update(
        x.table(table),
        {column: exp.Literal.string(value)},
        where=exp.EQ(this=x.column("txn_id"), expression=exp.Literal.string(key)),
    )
    engine.sql(x.sql(update))


@pytest.mark.parametrize(
    "engine_name", [pytest.param("spark", marks=JVM), pytest.param("local", marks=EXHAUSTIVE)]
)
def test_in_place_rename_carries_an_upserting_old_producers_updates(
    request: pytest.FixtureRequest, engine_name: str
) -> None:
    """An old producer that upserts updates the old column of keys whose new column the backfill had already
    filled: before the cutover, and after the stamp before it switched. The last catch-up carries those
    updates into the new column (with the contract's unique key), except where a producer that switched
    wrote the new column since: its value is the later one. On the embedded engine the catch-up reads the
    column-mapped table as of the deprecation mark from its data files (delta-rs cannot read it)."""
    engine: Engine = request.getfixturevalue(f"{engine_name}_engine")
    schema = f"renamed_upserts_{engine_name}"
    create_schema(engine, schema)
    base, wanted = nullable_rename()
    quality = wanted.quality.model_copy(update={"unique": (("txn_id",),)})
    old, new = (renamed(c.model_copy(update={"quality": quality}), schema) for c in (base, wanted))
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(engine, created, "create")
    table = state.physical
    more = [{**ROWS[0], "txn_id": t} for t in ("t3", "t4")]
    write_rows(engine, table, [*ROWS, *more])
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    left = apply_until(engine, migration, lambda op: op.phase is Phase.CUTOVER)
    _set_channel(engine, table, "t1", "legacy_channel", "app")  # after the backfill filled `channel`
    _set_channel(engine, table, "t4", "legacy_channel", "app")
    while not isinstance(left[0], StampContract):
        engine.apply_op(left.pop(0))
    engine.apply_op(left.pop(0))  # the stamp
    _set_channel(engine, table, "t1", "channel", "kiosk")  # switched, and wrote t1 again
    _set_channel(engine, table, "t3", "legacy_channel", "fax")  # not yet switched
    _set_channel(engine, table, "t2", "legacy_channel", "mail")
    for op in left:
        engine.apply_op(op)
    from sqlglot import exp

    query = exp.select(x.column("txn_id"), x.column("channel")).from_(x.table(table))
    got = {r["txn_id"]: r["channel"] for r in engine.sql(x.sql(query))}
    assert got == {"t1": "kiosk", "t2": "mail", "t3": "fax", "t4": "app"}, got


def test_fence_without_a_key_refuses_an_update_it_cannot_place(local_engine: Engine) -> None:
    """Without a unique key the fence cannot tell which of equal rows an update of the old table changed:
    it refuses, naming the row the new table still holds, instead of keeping both values."""
    from delta_contracts.engine.base import EngineError

    schema = "fenced_unkeyed"
    create_schema(local_engine, schema)
    base, wanted = pair("change_partitioning", "in_place")
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(local_engine, created, "create")
    write_rows(local_engine, state.physical, ROWS)
    migration, after = plan(old, new, Target.DELTA_4, state=state)
    left = apply_until(local_engine, migration, lambda op: isinstance(op, StampContract))
    old_table = next(op for op in left if isinstance(op, DropTable)).table
    _set_amount(local_engine, old_table, "t1", 5001)  # after the catch-up, before the stamp
    with pytest.raises(EngineError) as refused:
        for op in [op for op in left if op.phase is not Phase.CONTRACT]:
            local_engine.apply_op(op)
    assert "without a unique key" in str(refused.value) and '"txn_amt_paise": 1250' in str(refused.value)
    assert _amounts(local_engine, after.physical) == {"t1": 1250, "t2": 99}  # nothing half-applied
