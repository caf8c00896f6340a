"""The producer hold's timing (delta_contracts/engine/spark/hold.py): when `apply` sets it, how long it lasts,
and that it ends with the op; which ops are held as one run (`apply.schedule.held_runs`); and that a commit
setting it is no drift. Executed against Delta by tests/engine/test_live_writers.py (back-to-back cases) and
tests/engine/test_producers.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlglot import exp

from delta_contracts.apply.schedule import held_runs, held_table
from delta_contracts.contract.model import Contract
from delta_contracts.engine.spark.hold import SHORTEST_HOLD, ProducerHold
from delta_contracts.live import Commit, held_until
from delta_contracts.marks import HOLD
from delta_contracts.plan.ops import Op
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.tables.drift import commit_drift
from delta_contracts.target import Target
from tests.recipes import nullable_rename, pair

TABLE = TableId(("sales", "orders"))
START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


class Timeline:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.statements: list[str] = []

    def clock(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return START + timedelta(seconds=self.seconds)

    def held_until(self) -> datetime | None:
        """The instant the last statement set, read back from its SQL as a producer reads the property."""
        alter = x.parse(self.statements[-1])
        assert isinstance(alter, exp.Alter)
        assert [t.name for t in alter.find_all(exp.Table)] == ["orders"]
        props = {p.name: p.args["value"].name for p in alter.find_all(exp.Property)}
        return held_until(props[HOLD])


def _hold(timeline: Timeline) -> ProducerHold:
    return ProducerHold(TABLE, timeline.statements.append, clock=timeline.clock, now=timeline.now)


def test_a_lost_race_holds_producers_for_the_shortest_hold_and_the_op_end_releases_them() -> None:
    timeline = Timeline()
    hold = _hold(timeline)
    hold.attempt_begins()
    timeline.seconds = 2.0  # the attempt lost after two seconds
    hold.engage()
    assert timeline.held_until() == START + timedelta(seconds=2.0 + SHORTEST_HOLD)
    hold.attempt_begins()
    timeline.seconds = 3.0
    hold.engage()  # lost again, well within the hold: nothing to lengthen
    assert len(timeline.statements) == 1
    hold.release()
    assert timeline.held_until() == START + timedelta(seconds=3.0)  # now: producers write again
    hold.release()  # once only
    assert len(timeline.statements) == 2


def test_an_attempt_that_could_outlast_the_hold_lengthens_it() -> None:
    timeline = Timeline()
    hold = _hold(timeline)
    hold.attempt_begins()
    timeline.seconds = 20.0  # a 20-second statement lost: the next one may run as long
    hold.engage()
    assert timeline.held_until() == START + timedelta(seconds=20.0 + 3 * 20.0)
    hold.attempt_begins()
    timeline.seconds = 45.0  # 35 s left on the hold, and the attempt ran 25 s: the next could outlast it
    hold.engage()
    assert len(timeline.statements) == 2
    assert timeline.held_until() == START + timedelta(seconds=45.0 + 3 * 25.0)


def test_a_hold_that_is_no_instant_holds_nobody() -> None:
    assert held_until(None) is None
    assert held_until("") is None
    assert held_until("soon") is None
    assert held_until("2026-11-27T09:00:30.000Z") == START + timedelta(seconds=30)


def test_a_run_of_ops_is_held_from_its_start_and_renewed_before_the_hold_runs_low() -> None:
    timeline = Timeline()
    hold = _hold(timeline)
    hold.keep()  # the run begins: held whether or not a race was lost
    assert timeline.held_until() == START + timedelta(seconds=SHORTEST_HOLD)
    timeline.seconds = SHORTEST_HOLD / 2 - 1
    hold.keep()  # the next statement of the run begins with more than half the hold left
    assert len(timeline.statements) == 1
    timeline.seconds = SHORTEST_HOLD / 2 + 1
    hold.keep()
    assert timeline.held_until() == START + timedelta(seconds=1.5 * SHORTEST_HOLD + 1)
    hold.release()
    assert timeline.held_until() == START + timedelta(seconds=SHORTEST_HOLD / 2 + 1)


def test_an_op_that_never_lost_a_race_sets_no_hold() -> None:
    timeline = Timeline()
    hold = _hold(timeline)
    hold.attempt_begins()
    hold.release()
    assert timeline.statements == []


def _ops(old: Contract, new: Contract) -> tuple[Op, ...]:
    _, state = plan(None, old, Target.DELTA_4)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    return tuple(migration.ops)


def test_a_catch_up_and_the_tightenings_that_read_its_column_are_held_to_the_stamp() -> None:
    ops = _ops(*pair("add_not_null_without_default"))
    assert [[op.kind for op in ops[s - 1 : e]] for s, e in held_runs(ops).items()] == [
        ["backfill", "add_check", "stamp_contract"]
    ]
    assert "region" in ops[next(iter(held_runs(ops)))].summary()
    renamed = _ops(*pair("rename_column"))  # NOT NULL: its catch-up, its NOT NULL and the rules reading it
    tightenings = ["backfill", "add_check", "add_check", "add_check"]
    # the old column's three rules go once their both-shapes forms stand (tests/golden/rename_column)
    rest_of_cutover = [
        "mark_deprecated",
        "drop_check",
        "drop_check",
        "drop_check",
        "drop_not_null",
        "stamp_contract",
    ]
    assert [[op.kind for op in renamed[s - 1 : e]] for s, e in held_runs(renamed).items()] == [
        [*tightenings, *rest_of_cutover]
    ]


def test_a_versioned_cutover_is_held_on_the_old_table_from_its_catch_up_to_the_stamp() -> None:
    for versioning in ("in_place", "versioned"):
        # in place before: the old table bears the contract's name
        ops = _ops(*pair("change_partitioning", versioning))
        runs = held_runs(ops)
        assert len(runs) == 1
        ((start, end),) = runs.items()
        held = ops[start - 1 : end]
        # the catch-up (here a copy again: the partitioning changes) through the stamp
        assert held[0].kind in ("catch_up_rows", "copy_rows") and held[0].phase.value == "cutover"
        assert held[-1].kind == "stamp_contract"
        # the old table's rename (when it bears the name) and the view's move come between; the fence,
        # after the stamp, is no part of it
        assert "create_view" in [op.kind for op in held]
        assert ("rename_table" in [op.kind for op in held]) == (versioning == "in_place")
        assert [op.kind for op in ops[end:]].count("catch_up_rows") == 1
        assert held_table(held[0]) == held[0].copies_from() != held[0].table


def test_a_catch_up_no_tightening_reads_is_no_run() -> None:
    assert held_runs(_ops(*nullable_rename())) == {}  # nothing checks the renamed nullable column
    assert held_runs(_ops(*pair("add_nullable_column"))) == {}


def _commit(version: int, properties: dict[str, str]) -> Commit:
    parameters = {"properties": json.dumps(properties)}
    return Commit(version, "SET TBLPROPERTIES", 0, None, "Apache-Spark", parameters)


def test_a_commit_setting_the_hold_alone_is_no_drift() -> None:
    commits = [
        _commit(1, {HOLD: "2026-11-27T09:00:30.000Z"}),
        _commit(2, {HOLD: "2026-11-27T09:00:30.000Z", "owner.note": "by hand"}),
    ]
    assert [item.subject for item in commit_drift(commits, lambda version: False)] == ["2"]
