"""Commits that lose a race with another writer of the same table.

Delta commits optimistically: a transaction that finds a conflicting commit made since it read the table
(rows appended where it read, a file it rewrites deleted, the metadata or protocol changed) fails with one
of Delta's concurrent-modification exceptions and commits nothing (delta-spark
`io/delta/exceptions/DeltaConcurrentExceptions.scala`; the error classes `DELTA_CONCURRENT_*`,
`DELTA_METADATA_CHANGED`, `DELTA_PROTOCOL_CHANGED`). So running the same statement again is safe whenever
the statement means the same thing on the newer table: the backfill `UPDATE … WHERE new IS NULL`, `ADD
CONSTRAINT` (Delta checks the rows again), the catch-up `MERGE`, `SET TBLPROPERTIES` and the other metadata
changes are retried here with a short, growing, jittered pause, for as long as the run's patience lasts
(`--conflict-patience`, five minutes by default). A destructive op (a drop) is not: its pre-check
must count again first, which the next `apply` does; it stops with one line saying so.

The exception reaches Python in several forms: classic PySpark leaves Delta's exceptions unconverted (a
`Py4JJavaError` naming the Java class), delta-spark's Python package turns them into
`delta.exceptions.ConcurrentAppendException` and its siblings, and Spark Connect raises a
`SparkConnectGrpcException` carrying the error class. All are recognised (`conflict_of`).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from delta_contracts.engine import DEFAULT_CONFLICT_PATIENCE
from delta_contracts.engine.base import EngineError

T = TypeVar("T")

CONFLICT_EXCEPTIONS = frozenset(
    {
        "ConcurrentAppendException",
        "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException",
        "ConcurrentTransactionException",
        "ConcurrentWriteException",
        "MetadataChangedException",
        "ProtocolChangedException",
        "DeltaConcurrentModificationException",
    }
)
# Delta's error classes for the same exceptions (delta-error-classes.json), without their sub-classes.
CONFLICT_CONDITIONS = {
    "DELTA_CONCURRENT_APPEND": "ConcurrentAppendException",
    "DELTA_CONCURRENT_DELETE_READ": "ConcurrentDeleteReadException",
    "DELTA_CONCURRENT_DELETE_DELETE": "ConcurrentDeleteDeleteException",
    "DELTA_CONCURRENT_TRANSACTION": "ConcurrentTransactionException",
    "DELTA_CONCURRENT_WRITE": "ConcurrentWriteException",
    "DELTA_METADATA_CHANGED": "MetadataChangedException",
    "DELTA_PROTOCOL_CHANGED": "ProtocolChangedException",
}
_JAVA_CLASS = re.compile(r"\b(?:io\.delta\.exceptions|org\.apache\.spark\.sql\.delta)\.(\w+)")
_ERROR_CLASS = re.compile(r"\[(DELTA_[A-Z_]+)(?:\.[A-Z_]+)?\]")


def conflict_of(err: BaseException) -> str | None:
    """The name of the Delta commit conflict `err` is (e.g. `ConcurrentAppendException`), or None."""
    for cls in type(err).__mro__:
        if cls.__name__ in CONFLICT_EXCEPTIONS:
            return cls.__name__
    getter = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)
    try:
        condition = getter() if callable(getter) else None
    except Exception:  # a classic exception whose JVM side is gone cannot be asked
        condition = None
    if condition and str(condition).split(".", 1)[0] in CONFLICT_CONDITIONS:
        return CONFLICT_CONDITIONS[str(condition).split(".", 1)[0]]
    java = getattr(err, "java_exception", None)  # py4j's Py4JJavaError
    text = _text(java) if java is not None else _text(err)
    for match in _JAVA_CLASS.finditer(text):
        if match.group(1) in CONFLICT_EXCEPTIONS:
            return match.group(1)
    for match in _ERROR_CLASS.finditer(text):
        if match.group(1) in CONFLICT_CONDITIONS:
            return CONFLICT_CONDITIONS[match.group(1)]
    return None


def one_line(err: BaseException) -> str:
    """A Spark error as one line: the JVM exception's own message for a Py4JJavaError (whose text starts
    with `An error occurred while calling o123.sql`), else the error's first non-empty line."""
    java = getattr(err, "java_exception", None)
    text = _text(java) if java is not None else _text(err)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def _text(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return type(value).__name__


class CommitConflictError(EngineError):
    """An op's commit lost to another writer's and was not (or no longer) retried; nothing of it was
    committed. The message is one line and says what to do."""

    committed_nothing = True  # Delta aborted the transaction: the table's new versions are the others'

    def __init__(self, what: str, conflict: str, attempts: int, retried: bool, seconds: float = 0.0) -> None:
        self.conflict, self.attempts = conflict, attempts
        if retried:
            tried = "once" if attempts == 1 else f"{attempts} times"
            advice = (
                f"tried {tried} in {seconds:.0f} s; run `apply` again when the writers are quieter "
                "(it resumes here), or give it more time with --conflict-patience"
            )
        else:
            advice = (
                "not retried automatically, as its pre-check must count again first: run `apply` again "
                "(it checks and resumes here)"
            )
        super().__init__(
            f"{what}: another writer committed to the table first ({conflict}); nothing of this op was "
            f"committed; {advice}"
        )


@dataclass(frozen=True)
class Backoff:
    """How a statement that lost a commit race is run again: until it commits or `patience` seconds have
    passed since its first try. Bounded by time, not by a count of tries, because what decides whether a
    statement ever commits is the gap between a producer's appends against how long the statement runs,
    and that is a matter of seconds: a machine under load runs each try slower, and a count of tries that
    suffices on an idle one runs out there."""

    patience: float = DEFAULT_CONFLICT_PATIENCE  # seconds
    first_pause: float = 0.1  # seconds; doubled after every conflict
    longest_pause: float = 2.0  # short: a producer's next append is seconds away, the gap is now

    def pause(self, conflicts: int) -> float:
        """How long to wait after the `conflicts`-th conflict: doubling, capped, with jitter so that two
        retrying writers do not collide again in step."""
        ceiling = min(self.longest_pause, self.first_pause * 2.0 ** (conflicts - 1))
        return ceiling * random.uniform(0.5, 1.0)


def retrying(
    action: Callable[[], T],
    *,
    what: str,
    retry: bool,
    on_retry: Callable[[str], None],
    backoff: Backoff = Backoff(),  # frozen: one shared default is harmless
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `action`; after a commit conflict run it again (when `retry`) until it commits or the backoff's
    patience is spent. `on_retry` is told each conflict that is retried. Any other error propagates
    unchanged."""
    conflicts = 0
    began = clock()
    while True:
        try:
            return action()
        except Exception as err:
            conflict = conflict_of(err)
            if conflict is None:
                raise
            conflicts += 1
            pause = backoff.pause(conflicts)
            elapsed = clock() - began
            if not retry or elapsed + pause > backoff.patience:
                raise CommitConflictError(what, conflict, conflicts, retry, elapsed) from None
            on_retry(conflict)
            sleep(pause)
