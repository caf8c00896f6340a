"""A contract's rules as named Delta CHECK constraints (built in `diff.rules`, which the comparison shares),
and its schema hash."""

from __future__ import annotations

import hashlib
import json

from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import canonical
from delta_contracts.diff.rules import RULE_KINDS, CheckRule, column_rules, contract_rules, not_null_rule


def schema_hash(contract: Contract) -> str:
    """A short digest of what readers depend on: columns, types, nullability, partitioning."""
    shape = {
        "columns": [[c.name, canonical(c.type), c.nullable] for c in contract.columns],
        "partitioned_by": list(contract.table.partitioned_by),
        "clustered_by": list(contract.table.clustered_by),
    }
    digest = hashlib.sha256(json.dumps(shape, ensure_ascii=False, separators=(",", ":")).encode())
    return digest.hexdigest()[:16]


__all__ = ["RULE_KINDS", "CheckRule", "column_rules", "contract_rules", "not_null_rule", "schema_hash"]
