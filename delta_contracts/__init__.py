"""delta-contracts: Delta Lake table governance from YAML data contracts."""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_contracts.errors import DeltaContractsError as DeltaContractsError
    from delta_contracts.quality.enforce import ContractViolationError as ContractViolationError
    from delta_contracts.quality.enforce import enforce as enforce
    from delta_contracts.quality.read import read as read
    from delta_contracts.quality.write import write as write
    from delta_contracts.tables.create import create_table as create_table

# Lazy, so that `import delta_contracts` (and the CLI's --help) stays light: name -> defining module.
_EXPORTS = {
    "create_table": "delta_contracts.tables.create",
    "DeltaContractsError": "delta_contracts.errors",
    "enforce": "delta_contracts.quality.enforce",
    "ContractViolationError": "delta_contracts.quality.enforce",
    "write": "delta_contracts.quality.write",
    "read": "delta_contracts.quality.read",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(module), name)


__all__ = ["ContractViolationError", "DeltaContractsError", "create_table", "enforce", "read", "write"]
