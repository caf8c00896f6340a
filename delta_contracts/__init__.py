"""delta-contracts: Delta Lake table governance from YAML data contracts."""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_contracts.create import create_table as create_table


def __getattr__(name: str) -> Any:
    # Lazy, so that `import delta_contracts` (and the CLI's --help) stays light.
    if name == "create_table":
        from delta_contracts.create import create_table

        return create_table
    raise AttributeError(name)
