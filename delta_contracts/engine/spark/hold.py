"""Holding producers off a table for one statement, when a statement of `apply` keeps losing commit races to
their appends.

Open-source Delta knows one isolation level, Serializable, and refuses any other (`delta.isolationLevel must
be Serializable`, measured on delta-spark 4): an `UPDATE`, `MERGE` or `ADD CONSTRAINT` reads the table, and
every append committed while it ran into the part of the table it read fails it (delta-spark
`ConflictChecker.checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn`: only partition predicates narrow
that part). A producer appending back to back leaves no gap, so such a statement never commits. Producers are
asked to watch the table's `TBLPROPERTIES` before each write anyway (the stamp, docs/migrations.md): the hold
is one more property there, `delta_contracts.hold`, holding the UTC instant until which they wait.

After the first lost race of an op on a table, `apply` sets the hold — a metadata commit, so every append
still in flight fails and its producer, checking again, waits — runs the statement again, and sets the hold to
the present instant when the op ends, committed or not. A run of ops that no producer's row may come between
(the cutover's catch-up and the tightenings that read its column) is held from its first statement to its
last, lost race or not (`keep`). The hold runs out by itself: if `apply` dies holding it, producers resume
when its instant passes, and if a statement outlasts it, producers resume, the statement may lose again, and
the next hold is longer. Correctness never rests on the hold: Delta's conflict check
still refuses every commit that would lose a row; the hold only lets the statement find a gap.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlglot import exp

from delta_contracts.marks import HOLD
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

SHORTEST_HOLD = 30.0  # seconds: a statement's run and a producer's next check of the stamp, with room
HOLD_PER_RUN = 3.0  # a hold lasts this many times the last lost attempt, at least SHORTEST_HOLD


def hold_statement(table: TableId, until: datetime) -> str:
    """`ALTER TABLE … SET TBLPROPERTIES ('delta_contracts.hold' = '<UTC instant>')`."""
    value = until.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    prop = exp.Property(this=exp.Literal.string(HOLD), value=exp.Literal.string(value))
    properties = exp.Properties(expressions=[prop])
    alter = exp.Alter(this=x.table(table), kind="TABLE", actions=[exp.AlterSet(expressions=[properties])])
    return x.sql(alter)


@dataclass
class ProducerHold:
    """The hold of one op on one table: `engage` after each lost race (it sets or lengthens the hold), then
    `release` once the op ends. `run` executes a statement (the engine's own, with its retries)."""

    table: TableId  # where the hold is set: a run's table follows a rename within the run (`renamed`)
    run: Callable[[str], None]
    shortest: float = SHORTEST_HOLD  # a run's hold: at least as long as its longest statement may run
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    engaged: bool = False
    _attempt_began: float = field(default=0.0, repr=False)
    _expires: float = field(default=0.0, repr=False)

    def attempt_begins(self) -> None:
        self._attempt_began = self.clock()

    def engage(self) -> None:
        """Set the hold, or lengthen it when the last attempt ran so long that the hold could run out before
        the next one ends."""
        lost = self.clock() - self._attempt_began
        length = max(self.shortest, HOLD_PER_RUN * lost)
        if self.engaged and self._expires - self.clock() > 2 * lost:
            return
        self.run(hold_statement(self.table, self.now() + timedelta(seconds=length)))
        self.engaged, self._expires = True, self.clock() + length

    def keep(self) -> None:
        """Engaged for at least `shortest` seconds from now: the hold of a run of ops
        (`apply.schedule.held_runs`), set when the run begins whether or not a race was lost, and renewed as
        each of its statements on the held table begins."""
        if self.engaged and self._expires - self.clock() > self.shortest / 2:
            return
        self.run(hold_statement(self.table, self.now() + timedelta(seconds=self.shortest)))
        self.engaged, self._expires = True, self.clock() + self.shortest

    def release(self) -> None:
        if self.engaged:
            self.run(hold_statement(self.table, self.now()))
            self.engaged = False
