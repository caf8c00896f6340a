"""`status --all-envs`: every contract in every environment of contracts.yml — the live version, the
migrations (and phases) still pending, and what a gate waits for — as text, JSON or Markdown."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from delta_contracts.apply.status import cell_summary
from delta_contracts.cli.common import ContractSet, OutputFormat
from delta_contracts.cli.errors import UsageError, report
from delta_contracts.errors import InputError

if TYPE_CHECKING:
    from delta_contracts.state.record import Records

# `status`'s rows of one environment (cli.tables.status_rows), passed in: this module sits below `status`.
StatusRows = Callable[[ContractSet, None, None, None, "list[str] | None"], list[dict[str, object]]]


def matrix_cells(
    contracts: ContractSet, conf: list[str] | None, status_rows: StatusRows
) -> list[dict[str, object]]:
    """One cell per contract and environment, in `promote:` order (then the other environments)."""
    project = contracts.project.project
    if not project.environments:
        raise UsageError("--all-envs: contracts.yml declares no environments")
    order = [*project.promote, *(n for n in project.environments if n not in project.promote)]
    cells: list[dict[str, object]] = []
    for name in order:
        here = replace(contracts, environment=name)
        waiting = _waiting(here)
        try:
            rows = _unapplied(here) or status_rows(here, None, None, None, conf)
        except InputError as err:  # its engine could not start, or its warehouse is not there
            report(err)  # the other environments' cells still follow
            why = f"{name} could not be read (see the error above)"
            rows = [{"contract": c.contract.id, "error": why} for c in contracts.contracts]
        for row in rows:
            pending = row.get("pending") or []
            assert isinstance(pending, list)
            record = (
                waiting.of(str(row["contract"]), verified=False) if waiting is not None and pending else None
            )
            waits = {p["migration"]: record.waiting_for(p["migration"]) for p in pending} if record else {}
            cells.append(
                {
                    "contract": row["contract"],
                    "environment": name,
                    "table": row.get("table"),
                    "stamped": row.get("stamped"),
                    "pending": pending,
                    "waiting": [
                        {"migration": migration, "waits_for": why} for migration, why in waits.items() if why
                    ],
                    **({"error": row["error"]} if "error" in row else {}),
                }
            )
    return cells


def _unapplied(contracts: ContractSet) -> list[dict[str, object]]:
    """The rows of an environment on the local engine whose warehouse is not there yet (nothing was applied
    in it): every migration pending, nothing stamped. None for any other environment."""
    from delta_contracts.cli.common import migrations_root
    from delta_contracts.state.record import Records

    settings = contracts.project.project.engine_settings(contracts.environment)
    if settings.name != "local" or (contracts.project.root / settings.warehouse).is_dir():
        return []
    records = Records(migrations_root(contracts), [], contracts.names)
    rows: list[dict[str, object]] = []
    for item in contracts.contracts:
        contract = item.contract
        record = records.of(contract.id, verified=False)
        if record.unreadable is not None:
            rows.append({"contract": contract.id, "error": record.unreadable})
            continue
        pending = [p.to_json() for p in record.pending()]
        table = contracts.names.physical(contract.table_parts)
        rows.append({"contract": contract.id, "table": str(table), "stamped": None, "pending": pending})
    return rows


def _waiting(contracts: ContractSet) -> Records | None:
    """The records of an environment whose ledger is in its warehouse, for what the latest run left each
    migration waiting for (its `held` rows); None for a catalog ledger (`status --env` reads it itself) or
    one that cannot be read."""
    from delta_contracts.cli.common import migrations_root
    from delta_contracts.state.record import Records
    from delta_contracts.state.state_table import StateTableError

    settings = contracts.project.project.engine_settings(contracts.environment)
    if settings.name != "local" and settings.ledger is not None:
        return None  # a catalog ledger is read by `status --env` itself; the matrix reads warehouse ledgers
    folder = Path(os.path.normpath(contracts.project.root / settings.warehouse)) / "_delta_contracts"
    try:
        return Records.open(migrations_root(contracts), folder, contracts.names)
    except StateTableError:
        return None


def print_matrix(
    contracts: ContractSet, conf: list[str] | None, fmt: OutputFormat, status_rows: StatusRows
) -> None:
    cells = matrix_cells(contracts, conf, status_rows)
    if fmt is OutputFormat.JSON:
        print(json.dumps({"cells": cells}, indent=2, ensure_ascii=False))
        return
    environments = list(dict.fromkeys(str(c["environment"]) for c in cells))
    by_contract: dict[str, dict[str, dict[str, object]]] = {}
    for cell in cells:
        by_contract.setdefault(str(cell["contract"]), {})[str(cell["environment"])] = cell
    if fmt is OutputFormat.MARKDOWN:
        print("| contract | " + " | ".join(environments) + " |")
        print("| --- |" + " --- |" * len(environments))
        for contract, row in by_contract.items():
            shown = [cell_summary(row[e]).replace("|", "\\|") if e in row else "" for e in environments]
            print(f"| {contract} | " + " | ".join(shown) + " |")
        return
    for contract, row in by_contract.items():
        print(contract)
        for name in environments:
            if name in row:
                print(f"  {name} ({row[name]['table']}): {cell_summary(row[name])}")
