"""`apply`, `history`, `rehash`: run the planned migrations, show the ledger, accept a changed migration."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.cli.common import (
    EXIT_OK,
    ConfOption,
    EnvOption,
    FormatOption,
    OutputFormat,
    PathsArgument,
)
from delta_contracts.cli.errors import UsageError
from delta_contracts.cli.tables import EngineOption, UrlOption, WarehouseOption
from delta_contracts.engine import DEFAULT_CONFLICT_PATIENCE

if TYPE_CHECKING:
    from delta_contracts.apply import ApplyResult
    from delta_contracts.apply.reports import BatchProgress
    from delta_contracts.apply.runner import OpReport
    from delta_contracts.cli.common import ContractSet
    from delta_contracts.state.ledger import Ledger, LedgerEntry

TableOption = Annotated[
    list[str] | None, typer.Option("--table", help="Contract/table id to apply (repeatable). Default: all.")
]
PhaseChoice = Annotated[
    str, typer.Option("--phase", help="expand, populate, cutover, contract or all (default).")
]

_MARKS = {
    "succeeded": "✓",
    "forced": "!",
    "skipped": "·",
    "done": "·",
    "superseded": "·",
    "failed": "✗",
    "held": "⏸",
    "waiting": "…",
    "would run": "→",
    "would skip": "·",
}


def _migrations_root(contracts: ContractSet) -> Path:
    from delta_contracts.cli.common import migrations_root

    return migrations_root(contracts)


@contextmanager
def _ledger(
    contracts: ContractSet,
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    conf: list[str] | None = None,
) -> Iterator[Ledger]:
    """The ledger the flags, environment and contracts.yml choose: the Delta table in the warehouse, read
    with no engine started, or the catalog table contracts.yml names for `spark`/`connect` (through it)."""
    from delta_contracts.cli.common import choose_engine
    from delta_contracts.cli.tables import _open
    from delta_contracts.state.record import open_ledger

    choice = choose_engine(contracts.project, engine, url, warehouse, conf or (), contracts.environment)
    if choice.ledger is None:
        yield open_ledger(choice.warehouse / "_delta_contracts")
        return
    with _open(contracts, engine, url, warehouse, conf=conf) as live:
        yield open_ledger(live)


def _line(report: OpReport) -> str:
    where = f" — {report.path}" if report.path and report.path != report.status.value else ""
    version = f" → v{report.version}" if report.committed else ""  # only a version this op committed
    status = report.status.value
    if report.reasons and report.status.value == "waiting":
        status += ": " + "; ".join(report.reasons)
    if report.detail and report.status.value in {"succeeded", "forced"}:
        version += f"; {report.detail}"  # what it did: batches, rows a lossy conversion changed
    return (
        f"{_MARKS.get(report.status.value, ' ')} {report.table} {report.migration_id} [{report.phase}] "
        f"op {report.index}: {report.summary} ({status}{where}{version})"
    )


@dataclass(frozen=True)
class ApplyFlags:
    """`apply`'s options that shape the run, read once from the command line."""

    tables: tuple[str, ...]  # empty: every contract
    to: str | None
    phase: str
    dry_run: bool
    force: bool
    reason: str | None
    break_lease: bool
    batch_rows: int
    conflict_patience: float
    allow_rewrite: bool

    def check(self) -> None:
        """Options that contradict each other or are out of range end the command (exit 2) before any
        contract is read."""
        from delta_contracts.plan.ops import PHASES

        for flag, given in (("--force", self.force), ("--break-lease", self.break_lease)):
            if given and not (self.reason and self.reason.strip()):
                raise UsageError(f"{flag} needs --reason TEXT (it is recorded in the ledger)")
        if self.reason and not (self.force or self.break_lease):
            raise UsageError("--reason goes with --force or --break-lease")
        if self.phase != "all" and self.phase not in {p.value for p in PHASES}:
            raise UsageError(f"--phase {self.phase}: use expand, populate, cutover, contract or all")
        if self.batch_rows < 1:
            raise UsageError("--batch-rows must be at least 1")
        if not self.conflict_patience >= 0:  # also refuses nan
            raise UsageError("--conflict-patience must be 0 seconds or more")


def _chosen_tables(contracts: ContractSet, tables: tuple[str, ...]) -> list[str]:
    """The contract ids `--table` names (every contract without it); an unknown id ends the command."""
    ids = [item.contract.id for item in contracts.contracts]
    if not tables:
        return ids
    unknown = [t for t in tables if t not in ids]
    if unknown:
        raise UsageError(f"no contract with id {', '.join(unknown)} (known: {', '.join(ids)})")
    return list(tables)


def _run(
    contracts: ContractSet,
    flags: ApplyFlags,
    connection: tuple[str | None, str | None, Path | None, list[str] | None],
    fmt: OutputFormat,
) -> ApplyResult:
    """Apply the chosen tables' migrations on the engine `connection` (engine, url, warehouse, conf) opens,
    each op's line printed on stderr as it ends (text), the op running shown meanwhile."""
    from rich.console import Console

    from delta_contracts.apply import apply
    from delta_contracts.cli.promotion import promotion_of
    from delta_contracts.cli.tables import _open
    from delta_contracts.contract.model import duration

    ids = _chosen_tables(contracts, flags.tables)
    # Piped (CI logs): no hard wraps at 80 columns; a terminal wraps as it always does.
    console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
    status = console.status("starting")

    def progress(report: OpReport) -> None:
        if report.status.value == "running":
            status.update(f"{report.table} {report.migration_id} op {report.index}: {report.summary}")
        elif fmt is OutputFormat.TEXT and report.status.value not in {"done", "superseded"}:
            console.print(_line(report), markup=False)

    def batch_progress(batch: BatchProgress) -> None:
        # A terminal's status line follows the batches; a log (CI, a pipe) keeps a line per batch.
        if console.is_terminal:
            status.update(batch.line())
        elif fmt is OutputFormat.TEXT:
            console.print(batch.line(), markup=False)

    engine, url, warehouse, conf = connection
    freshness = duration(contracts.project.project.telemetry.freshness)
    with (
        _open(contracts, engine, url, warehouse, allow_rewrite=flags.allow_rewrite, conf=conf) as live,
        promotion_of(contracts, _migrations_root(contracts)) as promotion,
        status,
    ):
        return apply(
            live,
            _migrations_root(contracts),
            tables=ids,
            to_version=flags.to,
            phases=None if flags.phase == "all" else [flags.phase],
            dry_run=flags.dry_run,
            force_reason=flags.reason if flags.force else None,
            break_lease_reason=flags.reason if flags.break_lease else None,
            batch_rows=flags.batch_rows,
            conflict_patience=flags.conflict_patience,
            readers_freshness=freshness,
            on_event=progress,
            on_batch=batch_progress,
            names=contracts.names,
            promotion=promotion,
        )


def apply_command(
    paths: PathsArgument = None,
    table: TableOption = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
    to: Annotated[str | None, typer.Option("--to", help="Apply up to this contract version.")] = None,
    phase: PhaseChoice = "all",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print SQL, pre-checks, gates; change nothing.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Open shut gates (needs --reason).")] = False,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Why the gates are forced or the lease broken (recorded)."),
    ] = None,
    break_lease: Annotated[
        bool,
        typer.Option(
            "--break-lease",
            help="Free each table from the runner holding its lease first (needs --reason).",
        ),
    ] = False,
    batch_rows: Annotated[
        int, typer.Option("--batch-rows", help="Rows per backfill/copy batch.")
    ] = 1_000_000,
    conflict_patience: Annotated[
        float,
        typer.Option(
            "--conflict-patience",
            help="Seconds a statement that lost a commit race to a concurrent writer is run again for.",
        ),
    ] = DEFAULT_CONFLICT_PATIENCE,
    allow_rewrite: Annotated[
        bool,
        typer.Option(
            "--allow-rewrite",
            help="local engine: rebuild a table where delta-spark cannot start (old one kept as backup).",
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """Run the pending migrations, phase by phase, op by op. Exit 0 done (or waiting at gates), 1 an op
    failed, 2 bad input or no engine, 3 another runner holds a table."""
    from delta_contracts.apply.api import phases_not_run_first
    from delta_contracts.cli.common import load_valid_contracts

    flags = ApplyFlags(
        tables=tuple(table or ()),
        to=to,
        phase=phase,
        dry_run=dry_run,
        force=force,
        reason=reason,
        break_lease=break_lease,
        batch_rows=batch_rows,
        conflict_patience=conflict_patience,
        allow_rewrite=allow_rewrite,
    )
    flags.check()
    contracts = load_valid_contracts(paths, env)
    result = _run(contracts, flags, (engine, url, warehouse, conf), fmt)
    _print_result(result, fmt, dry_run)
    out_of_order = [] if dry_run else phases_not_run_first(result, phase)
    if out_of_order:
        first = f"nothing ran: --phase {phase} comes after phases that have not run"
        raise UsageError(first, *(f"  {line}" for line in out_of_order))
    raise typer.Exit(result.exit_code)


def _print_result(result: ApplyResult, fmt: OutputFormat, dry_run: bool) -> None:
    if fmt is OutputFormat.JSON:
        payload = {
            "exit_code": result.exit_code,
            "retries": result.retries,
            "ops": [r.to_json() for r in result.reports],
            "waiting": [r.to_json() for r in result.waiting],
            "refused": [{"contract": c, "error": e} for c, e in result.refused],
            "held_by_other_runner": [{"table": h.table, "holder": h.holder.describe()} for h in result.held],
            "lease_lost": [{"contract": c, "error": e} for c, e in result.lost],
            "lease_broken": [{"contract": c, "holder": h} for c, h in result.broken],
            "takeovers": [{"contract": r.contract, "from": r.takeover} for r in result.runs if r.takeover],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
        return
    for contract, holder in result.broken:
        print(f"{contract}: broke the lease of {holder}")
    for run in result.runs:
        if run.takeover:
            print(f"{run.contract}: took over the lease of {run.takeover}")
    if dry_run:
        for report in result.reports:
            if report.status.value in {"would run", "would skip"}:
                print(f"-- {report.migration_id} [{report.phase}] op {report.index}: {report.summary}")
                for needed in report.requires:
                    print(f"-- pre-check: {needed}")
                for check in report.prechecks:
                    print(f"-- pre-check, must return 0: {check}")
                if report.gate:
                    print(f"-- gate: {report.gate}")
                print(report.sql + ";" if report.sql else "-- (no SQL statement)")
    for contract, error in result.refused:
        print(f"refused {contract}: {error}")
    for held in result.held:
        print(f"{held.table}: held by another runner: {held.holder.describe()}")
    for contract, why in result.lost:
        print(f"{contract}: stopped, the lease was taken over: {why}")
    failure = result.failure
    if failure is not None:
        print(f"failed {failure.table} {failure.migration_id} op {failure.index}: {failure.detail}")
        print("the table is left where the last finished op left it; fix the cause and run `apply` again")
    for waiting in result.waiting:
        print(f"waiting {waiting.table} {waiting.migration_id} op {waiting.index}: {waiting.summary}")
        for why in waiting.reasons:
            print(f"  - {why}")
        print(f"  opens {waiting.gate}")
    if not dry_run:
        print(_counts(result))


def _counts(result: ApplyResult) -> str:
    """The run in numbers, each counting the op lines printed with that status."""
    statuses = [r.status.value for r in result.reports]
    ran = sum(s in {"succeeded", "forced"} for s in statuses)
    parts = [f"{ran} op(s) ran"]
    if skipped := statuses.count("skipped"):
        parts.append(f"{skipped} skipped (already in place)")
    parts.append(f"{len(result.waiting)} held at gates")
    if waiting := statuses.count("waiting"):
        parts.append(f"{waiting} waiting on earlier ops or --phase")
    if result.retries:
        parts.append(f"{result.retries} commit(s) retried after a concurrent writer's")
    return ", ".join(parts)


HistoryIds = Annotated[list[str] | None, typer.Argument(help="Contract/table ids (default: all).")]


def history_command(
    ids: HistoryIds = None,
    contracts_path: Annotated[
        Path, typer.Option("--contracts", help="Contracts folder (finds contracts.yml).")
    ] = Path("contracts"),
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """The apply ledger, newest first: migration, phase, op, status, the Delta version it committed, user,
    duration, reason; and each op a run left at its shut gate, with what it waits for."""
    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.state.ledger import Status

    contracts = load_valid_contracts([contracts_path], env)
    with _ledger(contracts, engine, url, warehouse, conf) as ledger:
        every = ledger.entries(retracted=True)  # people see what was undone too
        where = ledger.where
    wanted = {i.casefold() for i in ids} if ids else None
    entries = [e for e in every if wanted is None or e.contract.casefold() in wanted]
    finished = {(e.run_id, e.key) for e in entries if e.status != Status.STARTED}
    shown = [e for e in entries if e.status != Status.STARTED or (e.run_id, e.key) not in finished]
    shown.reverse()
    if fmt is OutputFormat.JSON:
        print(json.dumps({"ledger": [_entry_json(e) for e in shown]}, indent=2, default=str))
        raise typer.Exit(EXIT_OK)
    if not shown and ids:
        known = sorted({e.contract for e in every})
        print(f"no entries for {', '.join(ids)} in the ledger at {where}")
        if known:
            print(f"  it has entries for: {', '.join(known)}")
    elif not shown:
        print(f"the ledger at {where} is empty")
    for e in shown:
        print(_history_line(e))
    raise typer.Exit(EXIT_OK)


def _entry_json(entry: LedgerEntry) -> dict[str, object]:
    from dataclasses import asdict

    return asdict(entry)


def _history_line(e: LedgerEntry) -> str:
    from delta_contracts.state.ledger import Status

    took = ""
    if e.started_at is not None and e.ended_at is not None:
        took = f" {(e.ended_at - e.started_at).total_seconds():.2f}s"
    status = "started (never finished: killed?)" if e.status == "started" else e.status
    # The version the op committed; none when it committed nothing (the table's version did not move).
    committed = e.version is not None and e.version != e.version_before
    version = f" v{e.version}" if committed else ""
    when = f"{e.recorded_at:%Y-%m-%d %H:%M:%S}" if e.recorded_at else ""
    op = f" op {e.op_index} [{e.phase}] {e.op_kind}" if e.op_index else f" {e.op_kind}"
    line = f"{when} {e.contract} {e.migration_id}{op}: {status}{version} by {e.user}{took}"
    if e.reason:
        line += f" — reason: {e.reason}"
    if e.error:
        line += f" — error: {e.error.splitlines()[0] if e.error.strip() else e.error}"
    if e.status == Status.HELD and e.detail:
        line += f" — waits for: {e.detail}"
    return line


def rehash_command(
    contract_id: Annotated[str, typer.Argument(help="The contract/table id whose migrations changed.")],
    reason: Annotated[str, typer.Option("--reason", help="Why the changed files are accepted (recorded).")],
    contracts_path: Annotated[
        Path, typer.Option("--contracts", help="Contracts folder (finds contracts.yml).")
    ] = Path("contracts"),
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
) -> None:
    """Accept a changed migration: rewrite migrations.sum and record the new checksums in the ledger."""
    from delta_contracts.apply import rehash
    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.plan.migrations import table_folder

    contracts = load_valid_contracts([contracts_path], env)
    root = _migrations_root(contracts)
    folder = table_folder(root, contract_id)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no migrations folder")
    with _ledger(contracts, engine, url, warehouse, conf) as ledger:
        changed = rehash(ledger, root, contract_id, reason=reason)
    print(f"{contract_id}: migrations.sum rewritten")
    for migration_id in changed:
        print(f"  {migration_id}: new checksum recorded ({reason})")
    raise typer.Exit(EXIT_OK)


def discard_command(
    contract_id: Annotated[str, typer.Argument(help="The contract/table id.")],
    migration_id: Annotated[str, typer.Argument(help="The migration to remove, e.g. 0004_2.0.0_to_3.0.0.")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is discarded (recorded).")],
    contracts_path: Annotated[
        Path, typer.Option("--contracts", help="Contracts folder (finds contracts.yml).")
    ] = Path("contracts"),
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
) -> None:
    """Remove the last planned migration when nothing of it reached what readers or producers see: it failed
    a pre-check or never ran, or it is a versioned migration stopped before its cutover, whose new table is
    dropped. The fixed contract is then planned again at the same version. Exit 2 when it reached the
    table."""
    from delta_contracts.apply import discard
    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.cli.tables import _open
    from delta_contracts.contract.load import display_path
    from delta_contracts.state.lease import Lease
    from delta_contracts.state.record import open_ledger

    contracts = load_valid_contracts([contracts_path], env)
    root = _migrations_root(contracts)
    with _open(contracts, engine, url, warehouse, conf=conf) as live, Lease(live.state_dir, contract_id):
        done = discard(open_ledger(live), root, contract_id, migration_id, reason=reason, engine=live)
    for table in done.dropped:
        print(f"dropped {table}: {migration_id} created it, and it never served a reader")
    for path in done.removed:
        print(f"removed {display_path(path)}")
    print(f"{contract_id}: {migration_id} discarded ({reason}); change the contract and run `plan` again")
