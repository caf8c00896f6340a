"""Which engine a command uses: flags, then environment variables, then contracts.yml, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from delta_contracts.contract.project import EngineSettings
from delta_contracts.engine.base import Engine, EngineError

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
    ledger: tuple[str, ...] | None = None  # a catalog table for the ledger (spark/connect only)


def choose(
    *,
    name: str | None,
    url: str | None,
    warehouse: Path | None,
    project: EngineSettings,
    project_root: Path,
) -> EngineChoice:
    chosen = name or os.environ.get(ENV_ENGINE) or project.name
    if chosen not in ENGINES:
        raise EngineError(f"unknown engine '{chosen}': use one of {', '.join(ENGINES)}")
    chosen_url = url or os.environ.get(ENV_URL) or project.url
    if chosen == "connect" and not chosen_url:
        raise EngineError("--engine connect needs --url sc://host:port (or DELTA_CONTRACTS_URL)")
    if warehouse is not None:
        where = warehouse
    elif os.environ.get(ENV_WAREHOUSE):
        where = Path(os.environ[ENV_WAREHOUSE])
    else:
        where = project_root / project.warehouse
    return EngineChoice(chosen, chosen_url, where, project.ledger_table if chosen != "local" else None)


def open_engine(choice: EngineChoice, *, allow_rewrite: bool = False) -> Engine:
    """`allow_rewrite`: the local engine may rebuild a table where delta-spark cannot start (LocalEngine)."""
    if choice.name == "local":
        from delta_contracts.engine.local import LocalEngine

        return LocalEngine(choice.warehouse, allow_rewrite=allow_rewrite)
    if choice.name == "connect":
        from delta_contracts.engine.spark import connect_engine

        assert choice.url is not None
        return connect_engine(choice.url, choice.warehouse / "_delta_contracts", ledger=choice.ledger)
    from delta_contracts.engine.spark import SparkEngine, local_delta_session

    try:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
    except ImportError:
        active = None
    session = active or local_delta_session(warehouse=choice.warehouse)
    return SparkEngine(session, choice.warehouse / "_delta_contracts", ledger=choice.ledger)
