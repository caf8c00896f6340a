"""`enforce` on a 1M-row batch with 1% bad rows, in each mode, and `write` with its tagged commits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.planner import plan
from delta_contracts.quality.enforce import ContractViolationError, enforce, quarantine_name
from delta_contracts.quality.write import ContractTableMissingError, write
from delta_contracts.sql import expressions as x
from delta_contracts.target import DEFAULT_TARGET
from tests.engine.quality_helpers import create_without_checks, example

pytestmark = pytest.mark.engine

ROWS = 1_000_000
# order_total < 0 for id % 200 == 0 (5000 rows); status unknown for id % 200 == 100 (5000 rows);
# channel 'fax' for id % 1000 == 0 (1000 rows, all also with a negative total): 10000 bad rows, 1%.
BATCH = (
    "id AS order_id",
    "id % 1000 + 1 AS customer_id",
    "CAST(CASE WHEN id % 200 = 0 THEN -1 ELSE id % 5000 END AS BIGINT) AS order_total",
    "CASE WHEN id % 200 = 100 THEN 'LOST' ELSE 'PLACED' END AS status",
    "CASE WHEN id % 1000 = 0 THEN 'fax' ELSE 'web' END AS channel",
    "DATE'2026-01-01' AS order_date",
    "TIMESTAMP'2026-01-01 00:00:00' AS created_at",
)
EXPECTED = {"order_total_min": 5000, "status_enum": 5000, "channel_enum": 1000}


def batch(engine: Engine, *columns: str, rows: int = ROWS) -> Any:
    return engine.spark.range(1, rows + 1).selectExpr(*columns)  # type: ignore[attr-defined]


def test_fail_raises_with_counts_and_samples(engine: Engine) -> None:
    contract = example("sales/orders.yaml")
    with pytest.raises(ContractViolationError) as caught:
        enforce(batch(engine, *BATCH), contract, "fail", engine=engine)
    error = caught.value
    assert error.counts == EXPECTED and error.rows == ROWS
    assert len(error.samples) == 5
    for row in error.samples:
        assert row["_violations"] and set(row["_violations"]) <= set(EXPECTED)
    assert "order_total_min: 5000 row(s)" in str(error)
    good = batch(engine, *BATCH, rows=99)  # ids 1..99 keep every rule
    assert enforce(good, contract, "fail", engine=engine) is good


def test_quarantine_splits_the_batch_exactly(engine: Engine) -> None:
    contract = example("sales/orders.yaml")
    good = enforce(batch(engine, *BATCH), contract, "quarantine", engine=engine)
    assert good.columns == [c.name for c in contract.columns]
    assert good.count() == ROWS - 10_000
    assert good.where("order_total < 0 OR status = 'LOST' OR channel = 'fax'").count() == 0
    table = x.sql(x.table(quarantine_name(contract)))
    reasons = engine.sql(
        f"SELECT concat_ws('+', _violations) AS rules, count(*) AS n, count(DISTINCT order_id) AS ids, "
        f"min(_contract_version) AS version, min(_quarantined_at) IS NOT NULL AS stamped FROM {table} "
        "GROUP BY concat_ws('+', _violations) ORDER BY rules"
    )
    assert [(r["rules"], r["n"], r["ids"]) for r in reasons] == [
        ("order_total_min", 4000, 4000),
        ("order_total_min+channel_enum", 1000, 1000),
        ("status_enum", 5000, 5000),
    ]
    assert {(r["version"], r["stamped"]) for r in reasons} == {("3.0.0", True)}
    bad_ids = engine.sql(f"SELECT count(*) AS n FROM {table} WHERE order_id % 200 IN (0, 100)")
    assert bad_ids[0]["n"] == 10_000


def test_cast_counts_lossy_casts_then_checks(engine: Engine) -> None:
    contract = example("sales/orders.yaml")
    text_totals = [
        c
        if not c.endswith("AS order_total")
        else "CASE WHEN id % 100 = 7 THEN 'n/a' ELSE CAST(id AS STRING) END AS order_total"
        for c in BATCH
    ]
    clean = [
        c.replace("-1", "1").replace("'LOST'", "'PLACED'").replace("'fax'", "'web'") for c in text_totals
    ]
    with pytest.raises(ContractViolationError) as caught:
        enforce(batch(engine, *clean), contract, "cast", engine=engine)
    # the NULL a cast left breaks NOT NULL and `order_total >= 0` too (a NULL CHECK is a violation in Delta)
    lost = {"order_total_cast": 10_000, "order_total_not_null": 10_000, "order_total_min": 10_000}
    assert caught.value.counts == lost
    ints = [
        c.replace("id % 1000 + 1 AS", "CAST(id % 1000 + 1 AS INT) AS").replace("'n/a'", "'7'") for c in clean
    ]
    cast = enforce(batch(engine, *ints, rows=99), contract, "cast", engine=engine)
    assert {f.name: f.dataType.simpleString() for f in cast.schema.fields}["customer_id"] == "bigint"
    assert cast.count() == 99


def test_schema_problems_are_named_before_rows(engine: Engine) -> None:
    contract = example("sales/orders.yaml")
    columns = [c for c in BATCH if not c.endswith("AS channel")] + ["1 AS extra"]
    columns = [
        c if not c.endswith("AS order_total") else "CAST(id AS DOUBLE) AS order_total" for c in columns
    ]
    with pytest.raises(ContractViolationError) as caught:
        enforce(batch(engine, *columns, rows=10), contract, "quarantine", engine=engine)
    assert caught.value.schema == (
        "column order_total is double, contract says bigint",
        "missing column channel (string)",
        "extra column extra (not in the contract)",
    )
    assert engine.describe(quarantine_name(contract)) is None


def test_write_appends_and_merges_with_tagged_commits(engine: Engine) -> None:
    contract: Contract = example("sales/orders.yaml")
    with pytest.raises(ContractTableMissingError):
        write(batch(engine, *BATCH, rows=5), contract, engine=engine)
    create_without_checks(engine, contract)
    table = (*contract.table_parts[:-1], "orders__v3")
    result = write(batch(engine, *BATCH, rows=99), contract, engine=engine, merge=False)
    assert result.how == "append" and result.table == ".".join(table)
    updated = [c.replace("'web'", "'app'") for c in BATCH]
    merged = write(batch(engine, *updated, rows=199), contract, "quarantine", engine=engine)
    assert merged.how == "merge"  # orders declare a unique key: upsert on it
    rows = engine.sql(f"SELECT channel, count(*) AS n FROM {x.sql(x.table(table))} GROUP BY channel")
    assert {r["channel"]: r["n"] for r in rows} == {"app": 198}  # 99 updated, 99 new, id 100 quarantined
    tags = {c.version: c.user_metadata for c in engine.history(table)}
    assert json.loads(tags[result.version] or "{}") == {
        "delta_contracts.id": contract.id,
        "delta_contracts.version": "3.0.0",
        "op": "append",
    }
    if engine.name == "spark":  # Sail ignores the session conf that names a MERGE commit (DESIGN.md)
        assert json.loads(tags[merged.version] or "{}")["op"] == "merge"


def test_quarantined_batch_appends_to_a_table_with_its_checks(engine: Engine) -> None:
    """Sail 0.7.2 evaluates a table's CHECKs on a write's input before the input's own filter, so the good
    rows of a quarantined batch were refused for the bad rows the filter had removed."""
    contract: Contract = example("sales/orders.yaml")
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.ident(contract.table_parts[0]))}")
    migration, _ = plan(None, contract, DEFAULT_TARGET)
    for op in migration.ops:  # the table with every CHECK of the contract
        engine.apply_op(op)
    result = write(batch(engine, *BATCH, rows=400), contract, "quarantine", engine=engine, merge=False)
    assert result.how == "append"
    table = x.sql(x.table((*contract.table_parts[:-1], "orders__v3")))
    assert engine.sql(f"SELECT count(*) AS n FROM {table}")[0]["n"] == 400 - 4  # ids 100, 200, 300, 400
    assert engine.sql(f"SELECT count(*) AS n FROM {table} WHERE order_total < 0")[0]["n"] == 0


def test_a_ten_million_row_batch_is_written_on_the_embedded_engine(local_engine: Engine) -> None:
    """The good rows of a quarantined 10M-row batch land in one commit: they were once turned into one Arrow
    table in the client, larger than a Spark Connect message (RESOURCE_EXHAUSTED at 530 MB)."""
    contract: Contract = example("sales/orders.yaml")
    local_engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.ident(contract.table_parts[0]))}")
    table = (*contract.table_parts[:-1], "orders__v3")
    name = x.sql(x.table(table))
    if local_engine.describe(table) is None:  # another test of the session may have made it
        migration, _ = plan(None, contract, DEFAULT_TARGET)
        for op in migration.ops:
            local_engine.apply_op(op)
    count_before = local_engine.sql(f"SELECT count(*) AS n FROM {name}")[0]["n"]
    commits_before = len(local_engine.history(table))
    rows = 10_000_000
    result = write(
        batch(local_engine, *BATCH, rows=rows), contract, "quarantine", engine=local_engine, merge=False
    )
    assert result.how == "append"
    bad = rows // 100  # 1% break a rule (EXPECTED: 10,000 in every 1M)
    assert local_engine.sql(f"SELECT count(*) AS n FROM {name}")[0]["n"] == count_before + rows - bad
    assert len(local_engine.history(table)) == commits_before + 1  # one commit
