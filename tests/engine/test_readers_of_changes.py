"""`diff --readers --source`: the readers of a column nobody deprecated, read from a query-history export on
the embedded engine (the readers log would hold nothing: it records reads of deprecated objects only)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from delta_contracts.contract.load import parse_contract
from delta_contracts.diff import diff
from delta_contracts.engine.base import Engine
from delta_contracts.telemetry.impact import (
    READ,
    UNKNOWN,
    ContractChange,
    log_telemetry,
    readers_of_changes,
    source_telemetry,
    watched_for,
)
from delta_contracts.telemetry.sources import parse_source, read_source

pytestmark = pytest.mark.engine
NOW = datetime.now(UTC).replace(microsecond=0)
CONTRACT = """apiVersion: delta-contracts/v1
id: sales.orders
version: {version}
owner: {{team: commerce}}
consumers: [{{name: analytics-mart}}]
table: {{versioning: versioned}}
columns:
  - {{name: order_id, type: bigint}}
{amount}  - {{name: status, type: string}}
"""


def _contract(version: str, amount: bool):  # type: ignore[no-untyped-def]
    text = CONTRACT.format(
        version=version, amount="  - {name: amount, type: 'decimal(12,2)'}\n" if amount else ""
    )
    return parse_contract(text, Path("orders.yaml")).contract


def _history(path: Path) -> Path:
    """A `system.query.history` export, as Databricks writes it."""
    statements = [
        ("q1", "finance-recon", "SELECT amount FROM sales.orders WHERE order_id = 1", 2),
        ("q2", "finance-recon", "SELECT o.amount, o.status FROM sales.orders__v2 AS o", 3),
        ("q3", "analytics-mart", "SELECT status, count(*) FROM sales.orders GROUP BY status", 1),
        ("q4", "old-job", "SELECT amount FROM sales.orders", 30),  # before the 14-day reader_lookback
        ("q5", "analytics-mart", "SELECT * FROM sales.orders", 1),  # every column, amount among them
    ]
    with path.open("w", encoding="utf-8") as out:
        for sid, user, text, days in statements:
            row = {"statement_id": sid, "statement_text": text, "executed_by": user,
                   "start_time": (NOW - timedelta(days=days)).isoformat(),
                   "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    return path


def test_a_query_history_names_the_readers_of_a_column_nobody_deprecated(
    local_engine: Engine, tmp_path: Path
) -> None:
    old, new = _contract("2.0.0", amount=True), _contract("3.0.0", amount=False)
    changes = [ContractChange(old, new, diff(old, new))]
    # The readers log (empty here, as it is for a column nobody deprecated) cannot tell
    logged = readers_of_changes(changes, log_telemetry(tmp_path / "state"), NOW)
    assert [(o.name, o.status) for o in logged] == [("sales.orders.amount", UNKNOWN)]

    spark = local_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"query-history:{_history(tmp_path / 'history.jsonl')}")
    telemetry = source_telemetry(spark, [(spec.name, read_source(spark, spec))], watched_for(changes), NOW)
    [amount] = readers_of_changes(changes, telemetry, NOW)
    assert amount.status == READ
    readers = {r.user: r for r in amount.readers}
    assert readers.keys() == {"finance-recon", "analytics-mart"}
    assert readers["finance-recon"].reads == 2 and not readers["finance-recon"].declared
    assert readers["analytics-mart"].samples == ("q5",) and readers["analytics-mart"].declared
    assert amount.read_as == ("sales.orders.amount", "sales.orders__v2.amount")
    assert not any("deprecated objects only" in n for n in amount.notes)  # the history was read for it
    assert not (tmp_path / "state").exists()  # the project's own log is not written
