"""Which engine a command uses: flags, then environment variables, then contracts.yml, then defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delta_contracts.contract.project import EngineSettings
from delta_contracts.contract.unity import UnityCatalogSettings
from delta_contracts.engine.base import Engine, EngineChoiceError
from delta_contracts.tableid import TableId

ENV_ENGINE, ENV_URL, ENV_WAREHOUSE = (
    "DELTA_CONTRACTS_ENGINE",
    "DELTA_CONTRACTS_URL",
    "DELTA_CONTRACTS_WAREHOUSE",
)
ENGINES = ("local", "spark", "connect")


@dataclass(frozen=True)
class EngineChoice:
    name: str
    url: str | None
    warehouse: Path
    ledger: TableId | None = None  # a catalog table for the ledger (spark/connect only)
    # Spark settings for the session `spark` starts: contracts.yml's, then `--conf`'s (which win)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    command_line_conf: Mapping[str, str] = field(default_factory=dict)
    unity: UnityCatalogSettings | None = None  # a Unity Catalog server's catalogs (spark/connect)

    def missing_warehouse(self, *, active_session: bool) -> str | None:
        """Why a command that only reads cannot run: the warehouse folder it reads is not there (a mistyped
        --warehouse would otherwise show every table missing and every migration pending). The folder holds
        the local engine's tables, the ledger (unless it is a catalog table) and, for a session `spark`
        starts, its catalog; a Spark Connect server or a notebook's session keeps the tables elsewhere, and
        `connect` is left as it was (the server's tables, a ledger folder made on first use)."""
        if self.warehouse.is_dir():
            return None
        # connect: the tables are the server's, and the folder only the ledger's (made on first use)
        needed = self.name == "local" or (self.name == "spark" and self.ledger is None)
        if self.name == "spark" and not active_session:
            from delta_contracts.engine.spark.session import USER_CATALOG_KEYS

            user = {**self.spark_conf, **self.command_line_conf}
            needed = needed or not any(key in user for key in USER_CATALOG_KEYS)
        if not needed:
            return None
        return (
            f"no warehouse at {self.warehouse}: check --warehouse (or contracts.yml engine.warehouse); "
            "this command only reads, `create` and `apply` make tables"
        )


def choose(
    *,
    name: str | None,
    url: str | None,
    warehouse: Path | None,
    project: EngineSettings,
    project_root: Path,
    conf: Sequence[str] = (),
) -> EngineChoice:
    """`conf`: the command line's `--conf k=v` items (Spark settings for the `spark` engine's session)."""
    from delta_contracts.engine.spark.session import SparkConfError, parse_conf

    try:
        command_line_conf = parse_conf(conf)
    except SparkConfError as err:
        raise EngineChoiceError(str(err)) from None
    chosen = name or os.environ.get(ENV_ENGINE) or project.name
    if chosen not in ENGINES:
        raise EngineChoiceError(f"unknown engine '{chosen}': use one of {', '.join(ENGINES)}")
    chosen_url = url or os.environ.get(ENV_URL) or project.url
    if chosen == "connect" and not chosen_url:
        raise EngineChoiceError("--engine connect needs --url sc://host:port (or DELTA_CONTRACTS_URL)")
    if warehouse is not None:
        where = warehouse
    elif os.environ.get(ENV_WAREHOUSE):
        where = Path(os.environ[ENV_WAREHOUSE])
    else:
        where = project_root / project.warehouse
    where = Path(os.path.normpath(where))  # said as `/repo/warehouse`, not `/repo/contracts/../warehouse`
    ledger = project.ledger_table if chosen != "local" else None
    unity = project.unity_catalog if chosen != "local" and project.unity_catalog is not None else None
    if unity is not None:
        from delta_contracts.engine.spark.unity import catalog_settings

        catalog_settings(unity)  # a server named nowhere is refused before any engine starts
    return EngineChoice(
        chosen, chosen_url, where, ledger, dict(project.spark_conf), command_line_conf, unity=unity
    )


def active_spark_session() -> object | None:
    """The process's active classic SparkSession (a notebook's `spark`), if PySpark is installed."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def open_engine(choice: EngineChoice, *, allow_rewrite: bool = False) -> Engine:
    """`allow_rewrite`: the local engine may rebuild a table where delta-spark cannot start (LocalEngine)."""
    if choice.name == "local":
        from delta_contracts.engine.local.engine import LocalEngine

        return LocalEngine(choice.warehouse, allow_rewrite=allow_rewrite)
    if choice.name == "connect":
        from delta_contracts.engine.spark.connect import connect_engine

        assert choice.url is not None
        engine = connect_engine(choice.url, choice.warehouse / "_delta_contracts", ledger=choice.ledger)
        _register_unity(engine.spark, choice, check_jar=False)  # the server's jars are the server's
        return engine
    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import command_line_session, interrupt_between_calls

    session = active_spark_session()
    if session is None and choice.unity is None:  # the resident server registers no Unity Catalog
        resident = resident_engine(choice)
        if resident is not None:
            return resident
    if session is None:  # the command's own session: Ctrl-C stops it with one line, no Py4J traces
        session = command_line_session(
            choice.warehouse, choice.spark_conf, choice.command_line_conf, unity=choice.unity
        )
        interrupt_between_calls(session)
    else:
        _register_unity(session, choice, check_jar=True)
    return SparkEngine(session, choice.warehouse / "_delta_contracts", ledger=choice.ledger)


def _register_unity(session: Any, choice: EngineChoice, *, check_jar: bool) -> None:
    if choice.unity is None:
        return
    from delta_contracts.engine.spark.unity import catalog_settings, register_on

    register_on(session, catalog_settings(choice.unity), check_jar=check_jar)


def resident_engine(choice: EngineChoice) -> Engine | None:
    """The warehouse's resident engine (`delta-contracts engine start`), when one runs with the settings this
    command asks for; a recorded one that is gone or runs with other settings is said in one line, and the
    command then starts a session of its own."""
    import sys

    from delta_contracts.engine.spark import resident

    record = resident.read_record(choice.warehouse)
    if record is None:
        return None
    where = resident.state_folder(choice.warehouse) / resident.RECORD
    stale = resident.why_stale(record)
    wanted = {**choice.spark_conf, **choice.command_line_conf}
    if stale is None and dict(record.settings) != wanted:
        stale = "it runs with other Spark settings than this command's"
    if stale is not None:
        print(
            f"note: not using the resident engine of {where}: {stale}; starting a session of this "
            "command's own",
            file=sys.stderr,
        )
        resident.forget_stale(choice.warehouse, record)
        return None
    from delta_contracts.engine.spark.connect import connect_engine

    resident.keep_alive(choice.warehouse, record)
    engine = connect_engine(record.url, choice.warehouse / "_delta_contracts", ledger=choice.ledger)
    engine.name = "spark"  # the user's engine: the same delta-spark and catalog, reached over Connect
    return engine


def as_engine(spark_or_engine: Any) -> Engine:
    """The API's argument as an engine: an Engine as it is, else a SparkSession (classic or Connect) run by
    the spark engine."""
    if isinstance(spark_or_engine, Engine):
        return spark_or_engine
    from delta_contracts.engine.spark.engine import SparkEngine

    return SparkEngine(spark_or_engine)
