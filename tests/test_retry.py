"""engine.retry: a statement that lost a commit race is run again for as long as the run's patience lasts.

The action raises what delta-spark's Python package raises for a lost race (an exception class named
`ConcurrentAppendException`, `delta.exceptions`); the clock and the pauses are the test's, so that minutes of
patience pass in no time. The race itself, on real Delta tables with real writers, is
tests/engine/test_live_writers.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from delta_contracts.engine.retry import Backoff, CommitConflictError, retrying


class ConcurrentAppendException(Exception):  # noqa: N818 - delta.exceptions' name, which conflict_of reads
    pass


class Clock:
    def __init__(self, seconds_per_try: float) -> None:
        self.now, self.seconds_per_try = 0.0, seconds_per_try
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def losing(times: int, clock: Clock) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def action() -> str:
        calls.append(1)
        clock.now += clock.seconds_per_try
        if len(calls) <= times:
            raise ConcurrentAppendException(
                "Files were added to the root of the table by a concurrent update"
            )
        return "committed"

    return calls, action


def retried(action: Callable[[], str], clock: Clock, patience: float, told: list[str] | None = None) -> str:
    """`retrying` a batch (retried on a conflict) on the test's clock."""
    return retrying(
        action,
        what="a batch",
        retry=True,
        on_retry=(told if told is not None else []).append,
        backoff=Backoff(patience=patience),
        clock=clock,
        sleep=clock.sleep,
    )


def test_a_statement_is_run_again_until_it_commits() -> None:
    clock = Clock(seconds_per_try=3.0)
    calls, action = losing(25, clock)  # more tries than the old fixed count of ten
    told: list[str] = []
    result = retried(action, clock, 300.0, told)
    assert result == "committed"
    assert len(calls) == 26 and told == ["ConcurrentAppendException"] * 25
    assert all(0 < pause <= 2.0 for pause in clock.slept), clock.slept


def test_patience_spent_stops_with_one_line_saying_what_to_do() -> None:
    clock = Clock(seconds_per_try=10.0)
    calls, action = losing(1000, clock)
    with pytest.raises(CommitConflictError) as raised:
        retried(action, clock, 60.0)
    message = str(raised.value)
    assert clock.now <= 60.0 + 10.0  # the last try began within the patience
    assert raised.value.attempts == len(calls) and 4 <= len(calls) <= 6
    assert "\n" not in message
    assert "another writer committed to the table first (ConcurrentAppendException)" in message
    assert f"tried {len(calls)} times in" in message and "--conflict-patience" in message


def test_an_op_not_retried_stops_at_the_first_conflict() -> None:
    clock = Clock(seconds_per_try=1.0)
    calls, action = losing(1, clock)
    with pytest.raises(CommitConflictError) as raised:
        retrying(action, what="drop", retry=False, on_retry=lambda _: None, clock=clock, sleep=clock.sleep)
    assert len(calls) == 1 and clock.slept == []
    assert "not retried automatically" in str(raised.value)


def test_zero_patience_tries_once() -> None:
    clock = Clock(seconds_per_try=0.5)
    calls, action = losing(1, clock)
    with pytest.raises(CommitConflictError) as raised:
        retried(action, clock, 0.0)
    assert len(calls) == 1
    assert "tried once in" in str(raised.value)  # not "tried 1 times"


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def action() -> None:
        calls.append(1)
        raise ValueError("[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint violated")

    with pytest.raises(ValueError):
        retrying(action, what="a batch", retry=True, on_retry=lambda _: None, sleep=lambda _: None)
    assert calls == [1]
