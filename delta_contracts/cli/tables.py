"""Commands that touch live tables: `create`, `drift`, `status`. Engine from flags, env, contracts.yml."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    ConfOption,
    ContractSet,
    EnvOption,
    FormatOption,
    OutputFormat,
    PathsArgument,
)
from delta_contracts.cli.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from delta_contracts.engine.base import Engine
    from delta_contracts.live import LiveTable
    from delta_contracts.state.record import Records
    from delta_contracts.tableid import TableId

EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="local (embedded Sail + delta-rs; starts delta-spark only for DROP COLUMNS, enabling column "
        "mapping and ALTER COLUMN ops Sail and delta-rs cannot do in place), spark or connect. "
        "Default: local.",
    ),
]
UrlOption = Annotated[str | None, typer.Option("--url", help="sc://host:port for --engine connect.")]
WarehouseOption = Annotated[
    Path | None,
    typer.Option(
        "--warehouse",
        help="Warehouse folder (default ./warehouse): the local engine's tables; on spark the managed "
        "tables' folder and its catalog (metastore_db); the ledger and leases on every engine.",
    ),
]


def _open(
    contracts: ContractSet,
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    *,
    read_only: bool = False,
    allow_rewrite: bool = False,
    conf: list[str] | None = None,
) -> Engine:
    """The engine the flags, environment and contracts.yml choose. A read-only command (status, drift)
    never creates a warehouse: a folder that does not exist is a mistake (a mistyped --warehouse)."""
    from delta_contracts.cli.common import choose_engine, start_engine

    project = contracts.project
    choice = choose_engine(project, engine, url, warehouse, conf or (), contracts.environment)
    in_environment = f", environment {contracts.environment}" if contracts.environment else ""
    print(f"engine: {choice.name} ({choice.url or choice.warehouse}){in_environment}", file=sys.stderr)
    if read_only:
        from delta_contracts.engine.select import active_spark_session

        missing = choice.missing_warehouse(active_session=active_spark_session() is not None)
        if missing is not None:
            raise UsageError(missing)
    from delta_contracts.engine.spark.errors import quiet_query_context_loggers

    quiet_query_context_loggers()
    return start_engine(choice, allow_rewrite=allow_rewrite, jars_hint=True)


def _records(contracts: ContractSet, live: Engine) -> Records:
    """The contracts' records in the engine's ledger, read once; an unreadable ledger ends the command
    (StateTableError, exit 2) with its name and why."""
    from delta_contracts.cli.common import migrations_root
    from delta_contracts.state.record import Records

    return Records.open(migrations_root(contracts), live, contracts.names)


def create_command(
    paths: PathsArgument = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """Create each contract's Delta table, or verify an existing one. Exit 1 when it differs."""
    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.engine.base import EngineError
    from delta_contracts.tables.create import ContractMismatchError, PendingMigrationError, create_table

    contracts = load_valid_contracts(paths, env)
    target = contracts.project.project.target
    results: list[dict[str, object]] = []
    failed = False
    with _open(contracts, engine, url, warehouse, conf=conf) as live:
        for item in contracts.contracts:
            entry: dict[str, object] = {"contract": item.contract.id, "version": item.contract.version}
            try:
                result = create_table(live, item.contract, target=target)
            except ContractMismatchError as err:
                entry.update(status="differs", differences=[d.to_json() for d in err.differences])
                failed = True
            except PendingMigrationError as err:
                entry.update(status="pending", error=str(err))
                failed = True
            except EngineError as err:
                entry.update(status="failed", error=str(err))
                failed = True
            else:
                entry.update(
                    table=result.table,
                    status="created" if result.created else "verified",
                    ops=[{"op": o.op_kind, "path": o.path, "version": o.version} for o in result.outcomes],
                )
            results.append(entry)
    if fmt is OutputFormat.JSON:
        print(json.dumps({"tables": results}, indent=2))
    else:
        for entry in results:
            print(
                f"{entry['contract']} {entry['version']}: {entry['status']} {entry.get('table', '')}".rstrip()
            )
            for diff in entry.get("differences", []) or []:  # type: ignore[attr-defined]
                print(f"  - {diff['message']}")
            if entry.get("error"):
                print(f"  error: {entry['error']}")
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_OK)


def _described(live: Engine) -> Callable[[TableId], LiveTable | None]:
    """`live.describe` once per table for a read-only command, without the table's version: on spark that
    is DESCRIBE HISTORY, a Spark job, and neither `status` nor `drift` needs it (drift reads the history
    itself)."""
    found: dict[TableId, LiveTable | None] = {}

    def describe(table: TableId) -> LiveTable | None:
        if table not in found:
            found[table] = live.describe(table, with_version=False)
        return found[table]

    return describe


def drift_command(
    paths: PathsArgument = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """Compare every live table with its contract and stamp, and list out-of-band commits. Exit 1 on drift.

    While a planned migration has not finished, the table is compared with the contract it is stamped at and
    the migration is reported as pending, with why it waits: pending is not drift."""
    from delta_contracts.apply.status import contract_drift
    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.quality.read import unreadable_view

    contracts = load_valid_contracts(paths, env)
    report: list[dict[str, object]] = []
    drifted = False
    with _open(contracts, engine, url, warehouse, read_only=True, conf=conf) as live:
        records = _records(contracts, live)
        views = live.views()
        describe = _described(live)

        def unreadable(view: TableId) -> str | None:
            return unreadable_view(live, view)

        for item in contracts.contracts:
            record = records.of(item.contract.id)
            physical, items = contract_drift(record, item.contract, live, views, describe, unreadable)
            drifted |= any(i.is_drift for i in items)
            report.append(
                {
                    "contract": item.contract.id,
                    "table": str(physical),
                    "drift": [i.to_json() for i in items],
                }
            )
    _print_drift(report, fmt)
    raise typer.Exit(EXIT_FINDINGS if drifted else EXIT_OK)


def _print_drift(report: list[dict[str, object]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.JSON:
        print(json.dumps({"tables": report}, indent=2))
        return
    markdown = fmt is OutputFormat.MARKDOWN
    if markdown:
        print("| table | kind | detail |\n| --- | --- | --- |")
    for entry in report:
        items = entry["drift"]
        assert isinstance(items, list)
        real = [i for i in items if i["drift"]]
        if markdown:
            for i in items:
                print(f"| `{entry['table']}` | {i['kind']} | {str(i['message']).replace('|', '/')} |")
            continue
        state = f"{len(real)} drift item(s)" if real else "no drift"
        print(f"{entry['contract']} ({entry['table']}): {state}")
        for i in items:
            print(f"  {'✗' if i['drift'] else '·'} {i['kind']}: {i['message']}")


def status_command(
    paths: PathsArgument = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    conf: ConfOption = None,
    env: EnvOption = None,
    all_envs: Annotated[
        bool,
        typer.Option(
            "--all-envs",
            help="A matrix of contract × environment (each of contracts.yml `environments:`): live version, "
            "pending migrations and phases, waiting gates.",
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """Per table: contract version, the live table and its stamped version (and the next table a pending
    versioned migration fills), and the migrations (and phases) still pending."""
    from delta_contracts.cli.common import load_valid_contracts

    contracts = load_valid_contracts(paths, env)
    if all_envs:
        from delta_contracts.cli.matrix import print_matrix

        print_matrix(contracts, conf, fmt, status_rows)
        raise typer.Exit(EXIT_OK)
    rows = status_rows(contracts, engine, url, warehouse, conf)
    _print_status(rows, fmt)
    raise typer.Exit(EXIT_OK)


def status_rows(
    contracts: ContractSet,
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    conf: list[str] | None,
) -> list[dict[str, object]]:
    """`status`'s row per contract in the contract set's environment."""
    from delta_contracts.apply.status import status_row
    from delta_contracts.quality.read import unreadable_view

    rows: list[dict[str, object]] = []
    with _open(contracts, engine, url, warehouse, read_only=True, conf=conf) as live:
        records = _records(contracts, live)
        views = live.views()
        describe = _described(live)
        for item in contracts.contracts:
            record = records.of(item.contract.id)
            rows.append(
                status_row(record, item.contract, views, describe, lambda v: unreadable_view(live, v))
            )
    return rows


def _print_status(rows: list[dict[str, object]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.JSON:
        print(json.dumps({"tables": rows}, indent=2))
    else:
        for row in rows:
            if "error" in row:
                print(f"{row['contract']}: {row['error']}")
                continue
            pend = row["pending"]
            assert isinstance(pend, list)
            shown = ", ".join(f"{p['migration']} [{'/'.join(p['phases'])}]" for p in pend) or "none"
            after = ""
            if isinstance(row["next"], dict):
                after = f", next {row['next']['table']} ({_next_state(row['next'])})"
            print(
                f"{row['contract']} contract {row['version']}, table {row['table']} "
                f"{_stamp_state(row)}{after}; {_objects(row)}; pending: {shown}"
            )
            for broken in row["broken"]:  # type: ignore[attr-defined]
                print(f"  ✗ {broken}")


def _stamp_state(row: dict[str, object]) -> str:
    if row["stamped"]:
        return f"stamped {row['stamped']}"
    return "not stamped" if row["exists"] else "not created"


def _next_state(upcoming: dict[str, object]) -> str:
    """The state of the table a pending versioned migration is filling."""
    if upcoming["stamped"]:
        return f"stamped {upcoming['stamped']}"
    return "not stamped yet" if upcoming["exists"] else "not created yet"


def _objects(row: dict[str, object]) -> str:
    """Which object readers query and which one producers write to (a view cannot be written)."""
    read, write = row["read"], row["write"]
    if write is None:
        return f"read {read}, write: no table yet"
    if str(write).casefold() == str(read).casefold():
        return f"read and write {read}"
    return f"read {read} (view), write {write}"
