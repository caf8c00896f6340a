"""`delta-contracts engine start|status|stop`: the resident engine, one local Spark Connect server with
delta-spark per warehouse that later `--engine spark` commands on it use instead of a JVM of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from delta_contracts.cli.common import ConfOption, EnvOption, choose_engine
from delta_contracts.cli.errors import EngineStartError, UsageError
from delta_contracts.errors import ExitCode

engine_app = typer.Typer(
    help="The resident engine: one local Spark Connect server with delta-spark per warehouse, which later "
    "--engine spark commands on that warehouse use instead of starting a JVM.",
    no_args_is_help=True,
)

WarehouseOption = Annotated[
    Path | None,
    typer.Option(
        "--warehouse",
        help="Warehouse folder (default: DELTA_CONTRACTS_WAREHOUSE, else contracts.yml engine.warehouse); "
        "its server is recorded in its _delta_contracts/engine.json.",
        show_default=False,
    ),
]
ContractsOption = Annotated[
    Path, typer.Option("--contracts", help="The project's contracts folder, whose contracts.yml is read.")
]
IdleOption = Annotated[
    str,
    typer.Option("--idle", help="Stop the server after this long unused: 90s, 30m, 2h (0: never)."),
]


def _warehouse(
    contracts: Path, warehouse: Path | None, conf: list[str] | None, env: str | None
) -> tuple[Path, dict[str, str], dict[str, str]]:
    from delta_contracts.cli.common import chosen_environment
    from delta_contracts.contract.load import project_for

    project = project_for(contracts)
    environment = chosen_environment(project, env)
    choice = choose_engine(project, "spark", None, warehouse, conf or (), environment)
    return choice.warehouse, dict(choice.spark_conf), dict(choice.command_line_conf)


@engine_app.command("start")
def start_command(
    warehouse: WarehouseOption = None,
    idle: IdleOption = "30m",
    conf: ConfOption = None,
    contracts: ContractsOption = Path("contracts"),
    env: EnvOption = None,
) -> None:
    """Start the warehouse's resident engine with the settings --engine spark uses (contracts.yml
    engine.spark_conf, --conf) and print its URL. Exit 0 started or already running, 2 it cannot start (the
    catalog is locked by another process, no Java or jars)."""
    from delta_contracts.engine.spark import resident

    try:
        seconds = resident.parse_idle(idle)
    except ValueError as err:
        raise UsageError(f"--idle: {err}") from None
    where, project, command_line = _warehouse(contracts, warehouse, conf, env)
    record = resident.read_record(where)
    if record is not None:
        stale = resident.why_stale(record)
        if stale is None:
            print(f"already running: {record.url} (pid {record.pid}, {where})")
            return
        print(f"note: the recorded engine is gone ({stale}); starting a fresh one")
        resident.stop(where)
    try:
        record = resident.start(where, seconds, project, command_line)
    except Exception as err:
        from delta_contracts.contract.errors import first_line

        raise EngineStartError(f"cannot start the resident engine: {first_line(err)}") from None
    print(f"started: {record.url} (pid {record.pid}, {where}, {_idle_text(record.idle_seconds)})")


def _idle_text(seconds: float) -> str:
    if seconds <= 0:
        return "never stops when idle"
    return f"stops after {seconds:g} s idle"


@engine_app.command("status")
def status_command(
    warehouse: WarehouseOption = None,
    contracts: ContractsOption = Path("contracts"),
    env: EnvOption = None,
) -> None:
    """Whether the warehouse's resident engine runs, and its URL (for SparkSession.builder.remote(url) in a
    notebook). Exit 0 it runs, 1 it does not."""
    from delta_contracts.engine.spark import resident

    where, _, _ = _warehouse(contracts, warehouse, None, env)
    record = resident.read_record(where)
    if record is None:
        print(f"not running ({where})")
        raise typer.Exit(ExitCode.FAILED)
    stale = resident.why_stale(record)
    if stale is not None:
        print(f"not running: the record {resident.state_folder(where) / resident.RECORD} is stale ({stale})")
        raise typer.Exit(ExitCode.FAILED)
    print(f"running: {record.url}")
    print(f"pid {record.pid}, started {record.started}, {_idle_text(record.idle_seconds)}, warehouse {where}")


@engine_app.command("stop")
def stop_command(
    warehouse: WarehouseOption = None,
    contracts: ContractsOption = Path("contracts"),
    env: EnvOption = None,
) -> None:
    """Stop the warehouse's resident engine. Exit 0 stopped or none was running."""
    from delta_contracts.engine.spark import resident

    where, _, _ = _warehouse(contracts, warehouse, None, env)
    record = resident.stop(where)
    print(f"stopped: {record.url} (pid {record.pid})" if record is not None else f"not running ({where})")
