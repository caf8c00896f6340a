"""The published JSON Schema of `delta-contracts/v1` (committed as schema/contract.schema.json)."""

from __future__ import annotations

from typing import Any

from delta_contracts.contract.model import API_VERSION, Contract

SCHEMA_ID = "https://delta-contracts.dev/schema/contract.schema.json"


def contract_json_schema() -> dict[str, Any]:
    schema = Contract.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"Data contract ({API_VERSION})",
        **schema,
    }
