"""Run a table's pending migrations in order, phase by phase, op by op, under its lease, into the ledger.

Each op: skip when the ledger says it finished; otherwise record `started`, skip when its postcondition
already holds (state-based idempotency: a crash anywhere converges), check its precondition (counts and
sample rows, nothing applied), run it — in batches for backfills and copies — and record how it ran and the
Delta version it produced. Which ops run, and which wait or are held at their gates, is
`apply.schedule`'s.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlglot import exp

from delta_contracts.apply.gates import canonical_gate_objects, evaluate, find_mark, mark_in_commits
from delta_contracts.apply.live_check import left_behind_by_copy, refused_by_live_tables
from delta_contracts.apply.reports import (
    ApplyOptions,
    Attempt,
    BatchProgress,
    OpInFlight,
    OpReport,
    OpStatus,
    TableRun,
    op_sql,
    prechecks,
    requirements,
)
from delta_contracts.apply.schedule import Schedule, Verdict, held_runs, held_table
from delta_contracts.engine.base import (
    SKIPPED_DETAIL,
    Engine,
    EngineError,
    OpOutcome,
    PreconditionFailedError,
)
from delta_contracts.engine.row_moves import BatchDone
from delta_contracts.errors import InputError
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.plan.catch_up import as_of
from delta_contracts.plan.ops import Op
from delta_contracts.sql import expressions as x
from delta_contracts.state import ledger as lg
from delta_contracts.state.lease import Lease
from delta_contracts.state.record import TableRecord, open_ledger
from delta_contracts.tableid import TableId
from delta_contracts.telemetry.names import Names

if TYPE_CHECKING:
    from delta_contracts.contract.environments import NameMapping

# Importers of the runner find what it reports here, as before.
__all__ = [
    "ApplyOptions",
    "ApplyRefusedError",
    "ChecksumMismatchError",
    "OpInFlight",
    "OpReport",
    "OpStatus",
    "Runner",
    "TableRun",
    "prechecks",
    "requirements",
]


class ApplyRefusedError(InputError):
    """Nothing ran: the input cannot be applied as it is (a changed migration, an op the engine lacks)."""


class ChecksumMismatchError(ApplyRefusedError):
    def __init__(self, path: Path, recorded: str, current: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: changed since it was applied (ledger {recorded[:19]}…, file {current[:19]}…); "
            "restore it, or accept the change with `delta-contracts rehash`"
        )


def _joined(detail: str, more: str) -> str:
    return f"{detail}; {more}" if detail else more


class Runner:
    def __init__(self, engine: Engine, options: ApplyOptions) -> None:
        self.engine = engine
        self.options = options
        self.ledger = open_ledger(engine)
        self.run_id = lg.now().strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        self.record = TableRecord("", (), [], self.ledger)  # the current table's, see `apply_table`
        # In a held run (`held_runs`), after its catch-up: the table it filled and the version it left.
        self._caught_up: tuple[TableId, int] | None = None

    def open(self, root: Path, contract: str, names: NameMapping | None = None) -> TableRecord:
        """The record of `contract` in this runner's ledger (its migrations under `root`, verified)."""
        return TableRecord.open(root, contract, self.ledger, names)

    # -- one table -------------------------------------------------------------------------------------------
    def apply_table(self, record: TableRecord) -> TableRun:
        """Run the record's pending migrations; its ledger rows are re-read under the table's lease."""
        contract = record.contract
        run = TableRun(contract)
        if self.options.dry_run:
            self._run_table(run, record)
            return run
        lease = Lease(self.engine.state_dir, contract, ttl=self.options.lease_ttl)
        with lease:
            if lease.taken_over is not None:
                run.takeover = lease.taken_over.describe()
            self._run_table(run, record, lease)
        return run

    def _check_ledger_knows(self) -> None:
        """A ledger with no row of `contract` while one of its tables carries the toolkit's stamp was deleted,
        moved or is another one: without its rows no applied migration is checked against its checksum, and
        every op would run again. Refused, unless forced with a reason (recorded as a row of its own)."""
        contract = self.record.contract
        for name in sorted({stored.state.physical for stored in self.record.history}):
            live = self.engine.describe(name, with_version=False)
            stamped = live.properties.get(STAMP_VERSION) if live is not None else None
            if stamped is None:
                continue
            why = (
                f"{name} is stamped {stamped} by delta-contracts, but the ledger at "
                f"{self.ledger.where} has no record of {contract}"
            )
            if not self.options.force_reason:
                raise ApplyRefusedError(
                    f"{why}: the ledger was deleted, moved, or is not the one this table was migrated "
                    "with, and without it changed migrations go unnoticed. Point the engine at the table's "
                    "ledger, or start a new one here with --force --reason"
                )
            self.record.append_event(
                "ledger_restarted",
                table=str(name),
                run_id=self.run_id,
                reason=self.options.force_reason,
                detail=why,
            )
            return

    def _run_table(self, run: TableRun, record: TableRecord, lease: Lease | None = None) -> None:
        from delta_contracts.contract.model import semver_tuple

        # Read now that the lease is ours: the rows of a runner that held it before count.
        self.record = record.refreshed()
        contract, history = record.contract, record.history
        if not self.record.rows and not self.options.dry_run:
            self._check_ledger_knows()
        self._verify_checksums()
        wanted = [
            m
            for m in history
            if self.options.to_version is None
            or semver_tuple(m.migration.to_version) <= semver_tuple(self.options.to_version)
        ]
        schedule = Schedule(contract, self.options.phases, self.options.force_reason, self._gate)
        for stored in wanted:
            ops = stored.migration.ops
            if self.record.before_baseline(stored):
                for index, op in enumerate(ops, start=1):
                    superseded = OpInFlight(contract, stored, index, op)
                    self._emit(run, self._report(superseded, OpStatus.SUPERSEDED))
                continue
            done = self.record.done_ops(stored)
            todo = [op for i, op in enumerate(ops, start=1) if i not in done]
            self.engine.resumed([op for i, op in enumerate(ops, start=1) if i in done])
            try:
                self.engine.check_supported(todo)
            except EngineError as err:
                raise ApplyRefusedError(f"{stored.json_path}: {err}") from None
            position = history.index(stored)
            previous = history[position - 1].contract if position else None
            lost = left_behind_by_copy(self.engine, stored, previous, todo)
            if lost is not None:
                raise ApplyRefusedError(f"{stored.json_path}: {lost}")
            refused = refused_by_live_tables(self.engine, stored, todo)
            if refused is not None:
                raise ApplyRefusedError(f"{stored.json_path}: {refused}")
            runs = held_runs(ops)
            with ExitStack() as holding:  # producers held off a run of ops as one (`held_runs`)
                held_to = 0
                self._caught_up = None
                for flight, decision in schedule.decisions(stored, done):
                    index, op = flight.index, flight.op
                    if decision.verdict is not Verdict.RUN:
                        status = OpStatus(decision.verdict.value)
                        reasons = decision.reasons
                        if status is OpStatus.HELD and not self.options.dry_run:
                            self._record_held(flight, reasons)
                        self._emit(run, self._report(flight, status, reasons=reasons))
                        continue
                    end = next((e for s, e in runs.items() if s <= index <= e), 0)
                    if end > held_to and not self.options.dry_run:
                        holding.close()
                        held = held_table(op)
                        # A run resumed past its rename holds nothing: the old table's name is gone (or is
                        # the alias view), so no producer writes the old table by it any more.
                        if self.engine.describe(held, with_version=False) is not None:
                            holding.enter_context(self.engine.holding_producers(held))
                        held_to = end
                    report = self._run_op(flight, lease, decision.forced)
                    self._emit(run, report)
                    if report.status is OpStatus.FAILED:
                        run.failure = report
                        return
                    if index in runs and report.version_before is not None:
                        self._caught_up = (op.table, report.version_before)
                    if index >= held_to:
                        holding.close()
                        self._caught_up = None

    def _written_since_catch_up(self, err: PreconditionFailedError) -> str:
        """What a pre-check that fails inside a held run (`held_runs`) after its catch-up found: when every
        row breaking it is a row the table did not have as the catch-up began (rows it had then were filled
        by it, or broke it already), a producer that does not wait for the hold wrote them since, in the old
        shape, and a run of `apply` again fixes them (it runs the catch-up again first). Empty when some
        were there already, or outside such a run."""
        if self._caught_up is None or self._caught_up[0] != err.condition.table:
            return ""
        table, version = self._caught_up
        now = exp.select(exp.Star()).from_(x.table(table)).where(x.parse(err.condition.predicate))
        then = exp.select(exp.Star()).from_(as_of(x.table(table), version))
        try:
            written_since = self.engine.count_rows(exp.Except(this=now, expression=then, distinct=False))
        except Exception:  # any engine's error (Spark compares no map in EXCEPT): only a diagnosis
            return ""
        if written_since < err.count:
            return ""
        return (
            f"\nNone of them was in the table at version {version}, as this run's catch-up began: a producer "
            "that does not wait while the table is held (`delta_contracts.hold`, docs/migrations.md) wrote "
            "them since, in the old shape. There is nothing to fix by hand: run `apply` again once producers "
            "obey the hold or are quieter (it runs the catch-up again first)."
        )

    def _record_held(self, flight: OpInFlight, reasons: tuple[str, ...]) -> None:
        """A row saying the run left the op at its shut gate, and why: `history` shows what waited when."""
        detail = "; ".join(reasons)
        held = self._entry(flight, lg.Status.HELD, ended_at=lg.now(), detail=detail)
        self._record(held)

    def _verify_checksums(self) -> None:
        for stored in self.record.history:
            recorded = self.record.recorded_checksum(stored.migration_id)
            current = lg.migration_checksum(stored.sql_path, stored.json_path)
            if recorded is not None and recorded != current:
                raise ChecksumMismatchError(stored.json_path, recorded, current)

    def _gate(self, flight: OpInFlight) -> tuple[str, ...]:
        """Why the op's gate is shut; empty when it is open."""
        op = flight.op
        gate = op.gated_by()
        if gate is None:
            return ()
        mark = find_mark(flight, gate, self.record)
        if mark is None and self.engine.describe(op.table, with_version=False) is not None:
            mark = mark_in_commits(self.record.history, gate, self.engine.history(op.table))
        objects = self.record.under_later_names(canonical_gate_objects(gate, op, flight.contract))
        verdict = evaluate(
            replace(gate, objects=objects),
            marked=mark.at if mark else None,
            state_dir=self.engine.state_dir,
            now=self.options.clock(),
            freshness=self.options.readers_freshness,
            names=Names.from_ledger(self.record.rows),
        )
        return () if verdict.open else verdict.reasons or ("the gate is shut",)

    # -- one op ----------------------------------------------------------------------------------------------
    def _report(self, flight: OpInFlight, status: OpStatus, **extra: object) -> OpReport:
        op = flight.op
        base = OpReport(
            flight.contract,
            flight.stored.migration_id,
            flight.index,
            op.phase.value,
            op.kind,
            op.summary(),
            str(op.table),
            status,
            sql=op_sql(op),
            prechecks=prechecks(op),
            requires=requirements(op),
            gate=gate.describe() if (gate := op.gated_by()) is not None else "",
        )
        return replace(base, **extra)  # type: ignore[arg-type]

    def _emit(self, run: TableRun, report: OpReport) -> None:
        if report.status is not OpStatus.RUNNING:
            run.reports.append(report)
        if self.options.on_event is not None:
            self.options.on_event(report)

    def _boundary(self, name: str) -> None:
        if self.options.on_boundary is not None:
            self.options.on_boundary(name)

    def _entry(self, flight: OpInFlight, status: lg.Status, **values: object) -> lg.LedgerEntry:
        op, stored = flight.op, flight.stored
        return lg.op_row(
            flight.contract,
            stored.migration_id,
            flight.index,
            op,
            status,
            run_id=self.run_id,
            sql=op_sql(op),
            checksum=lg.migration_checksum(stored.sql_path, stored.json_path),
            engine=self.engine.name,
            to_version=stored.migration.to_version,
            **values,
        )

    def _record(self, *entries: lg.LedgerEntry) -> None:
        self.record.append(*entries)

    def _version(self, op: Op) -> int | None:
        return self.engine.table_version(op.table)

    def _run_op(self, flight: OpInFlight, lease: Lease | None, forced: str | None) -> OpReport:
        """Start (a ledger row, nothing run yet), attempt (skip, pre-check, run), then record how it ended."""
        op = flight.op
        if self.options.dry_run:
            holds = self.engine.postcondition_holds(op)
            return self._report(flight, OpStatus.WOULD_SKIP if holds else OpStatus.PLANNED)
        assert lease is not None
        lease.renew_if_due()
        started, before = lg.now(), self._version(op)
        self._record(
            self._entry(
                flight, lg.Status.STARTED, started_at=started, version_before=before, reason=forced or ""
            )
        )
        self._emit(TableRun(flight.contract), self._report(flight, OpStatus.RUNNING))
        self._boundary(f"{flight.name} started")
        retried_before = self.engine.retried
        try:
            attempt = self._attempt(flight, lease, forced, before)
        except (EngineError, PreconditionFailedError) as err:
            message = str(err) or type(err).__name__
            if isinstance(err, PreconditionFailedError):
                message += self._written_since_catch_up(err)
            self._record(
                self._entry(
                    flight,
                    lg.Status.FAILED,
                    started_at=started,
                    ended_at=lg.now(),
                    version_before=before,
                    version=self._version(op),
                    error=message,
                )
            )
            retries = self.engine.retried - retried_before
            return self._report(flight, OpStatus.FAILED, detail=message, retries=retries)
        retries = self.engine.retried - retried_before
        if retries:
            attempt = replace(
                attempt,
                detail=_joined(attempt.detail, f"{retries} commit(s) retried after another writer's won"),
            )
        self._boundary(f"{flight.name} ran")
        self._record(
            self._entry(
                flight,
                attempt.status,
                table=str(attempt.table),
                renamed_from=str(op.table) if attempt.table != op.table else "",
                started_at=started,
                ended_at=lg.now(),
                version_before=before,
                version=attempt.version,
                path=attempt.path,
                detail=attempt.detail,
                reason=forced or "",
            )
        )
        self._boundary(f"{flight.name} recorded")
        return self._report(
            flight,
            OpStatus(attempt.status.value),
            path=attempt.path,
            version=attempt.version,
            version_before=before,
            detail=attempt.detail,
            table=str(attempt.table),
            retries=retries,
        )

    def _attempt(self, flight: OpInFlight, lease: Lease, forced: str | None, before: int | None) -> Attempt:
        """Skip the op when its postcondition holds, else check its precondition and run it (the lease keeps
        other runners off the table meanwhile)."""
        op = flight.op
        if self.engine.skip_or_check(op):
            return Attempt(lg.Status.SKIPPED, op.table, "skipped", None, SKIPPED_DETAIL)
        mover = self.engine.row_mover(op)
        changed = mover.before_run(self.engine, op) if mover is not None else ""
        outcome = self._execute(flight, flight.tag(forced), lease, before)
        status = lg.Status.FORCED if forced else lg.Status.SUCCEEDED
        detail = _joined(changed, outcome.detail) if changed else outcome.detail
        return Attempt(status, outcome.table, outcome.path, outcome.version, detail)

    def _execute(self, flight: OpInFlight, tag: str, lease: Lease, before: int | None) -> OpOutcome:
        """Run the op (in batches where its engine moves its rows so). `before`: the table's version read
        when the op started (the lease keeps other runners off)."""
        op = flight.op
        mover = self.engine.row_mover(op)
        if mover is not None:
            marks = self.record.batch_marks(flight.key, lg.op_checksum(op))
            batches = mover.plan(self.engine, op, self.options.batch_rows, marks)
            if batches is not None:
                count = 0
                written: int | None = None
                started = time.monotonic()

                def finished(done: BatchDone) -> None:
                    nonlocal count, written
                    count += 1
                    if done.rows is not None:
                        written = (written or 0) + done.rows
                    self._record(
                        self._entry(
                            flight,
                            lg.Status.BATCH,
                            version=done.version,
                            watermark=json.dumps(done.mark),
                            ended_at=lg.now(),
                            detail="found already in the target" if done.rows_found else "",
                        )
                    )
                    if self.options.on_batch is not None:
                        total = len(marks) + len(batches)
                        self.options.on_batch(
                            BatchProgress(
                                flight.name,
                                op.summary(),
                                str(op.table),
                                len(marks) + count,
                                total,
                                written,
                                time.monotonic() - started,
                            )
                        )
                    # Numbered from the op's first batch, resumed or not, so a boundary names one batch.
                    self._boundary(f"{flight.name} batch {len(marks) + count}")
                    lease.renew_if_due()  # a long backfill outlives the lease's TTL otherwise

                mover.run(self.engine, op, batches, fresh=not marks, tag=tag, on_batch=finished)
                resumed = f", resumed after {len(marks)} recorded" if marks else ""
                return OpOutcome(op.kind, op.table, self._version(op), "sql", f"{count} batch(es){resumed}")
        outcome = self.engine.run_verified(op, tag=tag, before=before)
        return outcome
