"""What each op of a table's pending migrations does in this run: runs, is held at its gate, waits (and why),
or was done before.

The rules, in the order they are checked:
- an op the ledger says finished is done, unless it is a catch-up that must run again right before a later op
  of its migration that has not finished (rows it must catch may have come since it ran): a last catch-up
  before its drop, and the cutover's catch-up before the tightenings of its held run (`held_runs`);
- a contract-phase op waits behind an earlier contract op that has not run; an expand, populate or cutover op
  waits behind an earlier one of those that has not run;
- a later *versioned* migration's cutover also waits behind an earlier contract op that has not run: its new
  table lacks what that drop still keeps for readers, and pointing the contract's name at it would take that
  from them past the gate;
- a contract op waits until its migration's earlier phases have finished, and any op whose phase was not
  selected (`--phase`) waits;
- a destructive op, and a catch-up that must run right before one, waits for its gate (held), unless the run
  forces gates with a reason.

A held contract phase does not hold back later migrations' expand and populate (as pgroll's expand/contract).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from delta_contracts.apply.reports import OpInFlight
from delta_contracts.plan.ops import Op, Phase
from delta_contracts.plan.stored import StoredMigration
from delta_contracts.tableid import TableId


class Verdict(StrEnum):
    DONE = "done"
    RUN = "run"
    HELD = "held"  # its own gate is shut
    WAITING = "waiting"  # behind another op, or its phase was not selected


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    forced: str | None = None  # the reason a shut gate is forced open


# Why the op's gate is shut (empty: open). Called only for ops that have a gate or destroy something.
GateCheck = Callable[[OpInFlight], tuple[str, ...]]


def moves_readers(stored: StoredMigration, op: Op) -> bool:
    """Whether `op` belongs to a versioned migration's cutover: from its first op on, the contract's name is
    on its way to the new table, which holds only what the new contract version has."""
    return stored.migration.strategy == "versioned" and op.phase is Phase.CUTOVER


def held_runs(ops: Sequence[Op]) -> dict[int, int]:
    """The runs of a migration's ops that no producer's row may come between, from the index (from 1) of the
    first to that of the last, held on the table producers write until the stamp (`held_table`):

    - the cutover's catch-up backfill of a column that a tightening right after it reads (a NOT NULL column's
      fill, a renamed NOT NULL column), through the end of the cutover (the stamp). A producer writing the old
      shape until the stamp writes the column NULL: a row of it landing between the catch-up and the
      tightening breaks the tightening's pre-check, and one landing after the tightening is refused by it
      until the stamp switches the producer;
    - a versioned cutover's catch-up from the old table through the stamp of the new one (the old table's
      rename and the alias view's move between them). A change a producer commits to the old table after the
      catch-up and before it switches is carried by the fence only after producers switched, and by then a
      producer may have deleted or updated that key on the new table (where it was not yet): the fence would
      bring the key back, or overwrite the later value. Held, the old table gets no change between the
      catch-up and the stamp, so a producer that obeys the hold switches to a new table equal to the old one.

    So the runner holds producers off the table for the whole run (`Engine.holding_producers`): a producer
    that obeys the hold finds the stamp when it ends. A run resumed after a refusal runs its catch-up again
    first."""
    runs: dict[int, int] = {}
    for start, op in enumerate(ops, start=1):
        if op.phase is not Phase.CUTOVER:
            continue
        if op.copies_from() is not None:
            stamps = [i for i, later in enumerate(ops[start:], start + 1) if later.switches_producers()]
            if stamps:
                runs[start] = stamps[0]
            continue
        filled = op.fills()
        if filled is None:
            continue
        reads = False
        for later in ops[start:]:
            read = later.tightening_reads()
            if read is None or later.table != op.table:
                break
            reads = reads or filled.casefold() in {c.casefold() for c in read}
        if reads:
            runs[start] = start + sum(1 for later in ops[start:] if later.phase is Phase.CUTOVER)
    return runs


def held_table(op: Op) -> TableId:
    """The table a held run starting with `op` holds producers off: the one they write until the stamp (a
    versioned catch-up's source, else the op's own table)."""
    return op.copies_from() or op.table


class Schedule:
    """The decisions for one table's migrations, in order; it carries across them what blocks what."""

    def __init__(
        self, contract: str, phases: Collection[Phase], force_reason: str | None, gate: GateCheck
    ) -> None:
        self.contract, self.phases, self.force_reason, self.gate = contract, phases, force_reason, gate
        self.blocked: str | None = None  # why expand/populate/cutover ops wait
        self.contract_blocked: str | None = None  # why contract ops wait

    def decisions(
        self, stored: StoredMigration, done: Collection[int]
    ) -> Iterator[tuple[OpInFlight, Decision]]:
        """Each op of `stored` with what to do with it; `done`: the indexes the ledger says finished."""
        ops = stored.migration.ops
        runs = held_runs(ops)
        early_pending = False
        for index, op in enumerate(ops, start=1):
            flight = OpInFlight(self.contract, stored, index, op)
            last = runs.get(index, len(ops) if op.checked_again else index)
            rerun = any(i not in done for i in range(index + 1, last + 1))
            if index in done and not rerun:
                yield flight, Decision(Verdict.DONE)
                continue
            wait, own = self._wait(flight, early_pending)
            if wait is not None:
                decision, shut = self._waiting(flight, wait)
                # The ops after it wait on this one when it waits for a reason of its own (named, with that
                # reason), else on the op it waits on in turn (named already).
                blocker = self._not_run(flight, wait, shut) if own else wait
                if op.phase is Phase.CONTRACT:
                    self.contract_blocked = blocker
                else:
                    self.blocked, early_pending = blocker, True
                yield flight, decision
                continue
            decision = self._at_gate(flight)
            if decision.verdict is Verdict.HELD:
                self.contract_blocked = f"{flight.name} is held by its gate"
            yield flight, decision

    def _wait(self, flight: OpInFlight, early_pending: bool) -> tuple[str | None, bool]:
        """Why the op waits (None: it does not), and whether the reason is its own rather than an earlier
        op's that it waits on."""
        stored, op = flight.stored, flight.op
        is_contract = op.phase is Phase.CONTRACT
        wait = self.contract_blocked if is_contract else self.blocked
        if wait is None and self.contract_blocked and moves_readers(stored, op):
            wait = f"{self.contract_blocked}; this versioned cutover would take from readers what it keeps"
        if wait is not None:
            return wait, False
        if is_contract and early_pending:
            return f"{stored.migration_id}: earlier phases have not finished", True
        if op.phase not in self.phases:
            return f"phase {op.phase.value} not selected (--phase)", True
        return None, False

    def _at_gate(self, flight: OpInFlight) -> Decision:
        """Run, forced or held: a destructive op waits for its gate, and so does a catch-up that must run
        right before it."""
        op = flight.op
        if op.phase is not Phase.CONTRACT or not (op.destructive or op.gated_by()):
            return Decision(Verdict.RUN)
        shut = self.gate(flight)
        if not shut:
            return Decision(Verdict.RUN)
        if self.force_reason:
            return Decision(Verdict.RUN, forced=self.force_reason)
        return Decision(Verdict.HELD, shut)

    def _waiting(self, flight: OpInFlight, wait: str) -> tuple[Decision, bool]:
        """An op that cannot run yet, and whether its own gate is shut. A drop among them still says what its
        own gate waits for: with several drops pending, each is listed (held) with its own reasons, not only
        the first one; a drop whose phase was not selected says so, and that its gate is shut too."""
        op = flight.op
        if not (op.phase is Phase.CONTRACT and op.destructive):
            return Decision(Verdict.WAITING, (wait,)), False
        shut = self.gate(flight)
        if op.phase not in self.phases:
            if shut:
                return Decision(Verdict.WAITING, (wait, f"its gate is shut too: {'; '.join(shut)}")), True
            return Decision(Verdict.WAITING, (wait,)), False
        if shut:
            return Decision(Verdict.HELD, (*shut, f"and {wait}")), True
        return Decision(Verdict.WAITING, (wait, "its own gate is open")), False

    @staticmethod
    def _not_run(flight: OpInFlight, wait: str, shut: bool) -> str:
        """What the ops after a waiting op wait on: that op, what it does, and why it did not run."""
        gate = ", and its gate is shut" if shut else ""
        return f"{flight.name} ({flight.op.summary()}) has not run: {wait}{gate}"
