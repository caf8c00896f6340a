"""Where a contract's data lives: the table its last planned migration reaches, else the contract's own."""

from __future__ import annotations

from pathlib import Path

from delta_contracts.contract.model import Contract
from delta_contracts.errors import InputError
from delta_contracts.plan.stored import StoredMigration
from delta_contracts.state.record import TableRecord
from delta_contracts.tableid import TableId


class ContractNotFoundError(InputError, LookupError):
    """No contract under the contracts folder has the id a caller named."""


def history_of(contract_id: str, migrations_root: Path | None) -> list[StoredMigration]:
    """The table's committed migrations, oldest first ([] without a migrations folder for it)."""
    return list(TableRecord.open(migrations_root, contract_id, verified=False).history)


def physical_table(contract: Contract, migrations_root: Path | None = None) -> TableId:
    return TableRecord.open(migrations_root, contract.id, verified=False).planned_table(contract)


def resolve_contract(contract: Contract | str | Path, contracts: Path | None = None) -> Contract:
    """A contract given as a loaded model, a file path, or an id looked up under `contracts` (./contracts)."""
    if isinstance(contract, Contract):
        return contract
    from delta_contracts.contract.lint import as_contract

    path = Path(contract)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return as_contract(path)
    from delta_contracts.contract.load import contract_files, load_contract

    root = contracts if contracts is not None else Path("contracts")
    wanted = str(contract).casefold()
    for file in contract_files([root]) if root.exists() else []:
        loaded = load_contract(file)
        if loaded.contract.id.casefold() == wanted:
            return as_contract(file)
    raise ContractNotFoundError(f"no contract with id {contract} under {root}")
