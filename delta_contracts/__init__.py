"""delta-contracts: Delta Lake table governance from YAML data contracts."""

__version__ = "0.1.0"
