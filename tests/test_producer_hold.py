"""The producer hold's timing (delta_contracts/engine/spark/hold.py): when `apply` sets it, how long it lasts,
and that it ends with the op. Executed against Delta by tests/engine/test_live_writers.py (back-to-back
cases)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlglot import exp

from delta_contracts.engine.spark.hold import SHORTEST_HOLD, ProducerHold, held_until
from delta_contracts.marks import HOLD
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

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


def test_an_op_that_never_lost_a_race_sets_no_hold() -> None:
    timeline = Timeline()
    hold = _hold(timeline)
    hold.attempt_begins()
    hold.release()
    assert timeline.statements == []
