"""The part of a contract no DDL holds, stamped on the table as one compact JSON property.

Columns, types, nullability, comments, defaults, CHECKs, partitioning and properties live in the Delta log
as themselves. Ownership, consumers, tags, quality expectations, evolution settings and the per-column tags,
pii flags and deprecation details do not: the stamp carries them as `delta_contracts.contract`, so that
`init --from-table` gives back the whole contract, not only its DDL.
"""

from __future__ import annotations

import json
from typing import Any

from delta_contracts.contract.model import Contract

_TABLE_FIELDS = {"owner", "consumers", "tags", "quality", "evolution"}
_COLUMN_FIELDS = {"tags", "pii", "deprecated"}


def contract_stamp(contract: Contract) -> str:
    """The non-DDL fields of `contract` (defaults left out), as compact JSON with sorted keys."""
    data: dict[str, Any] = contract.model_dump(
        mode="json", by_alias=True, exclude_defaults=True, include=_TABLE_FIELDS
    )
    columns = []
    for column in contract.columns:
        extra = column.model_dump(mode="json", by_alias=True, exclude_defaults=True, include=_COLUMN_FIELDS)
        if extra:
            columns.append({"name": column.name, **extra})
    if columns:
        data["columns"] = columns
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_contract_stamp(text: str | None) -> dict[str, Any]:
    """The fields a stamp carries ({} for no stamp or one this version cannot read): table-level fields as
    contract YAML data, and `columns` as {casefolded name: that column's fields}."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    found: dict[str, Any] = {k: v for k, v in data.items() if k in _TABLE_FIELDS}
    columns = data.get("columns")
    if isinstance(columns, list):
        found["columns"] = {
            str(c["name"]).casefold(): {k: v for k, v in c.items() if k in _COLUMN_FIELDS}
            for c in columns
            if isinstance(c, dict) and "name" in c
        }
    return found
