"""A planned migration as its `.json` file holds it (`plan.migrations` reads and writes the folder): its ops,
the contract it reaches, the table's planned state after it and the target it was planned for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from delta_contracts.contract.model import Contract
from delta_contracts.plan.ops import Migration
from delta_contracts.plan.planner import TableState
from delta_contracts.target import Target


@dataclass(frozen=True)
class StoredMigration:
    migration_id: str  # NNNN_<slug>
    migration: Migration
    contract: Contract
    state: TableState
    target: Target
    sql_path: Path
    json_path: Path
