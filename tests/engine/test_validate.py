"""`validate` on each example table after loading rows that break each kind of rule: exactly those rules
fail, with the right counts. What `validate_table` sends is recorded (`RecordingEngine`): one aggregate query,
plus one query for the samples of every failing rule, each a single scan of the table."""

from __future__ import annotations

import re

import pytest

from delta_contracts.contract.model import Contract, Volume
from delta_contracts.engine.base import Engine
from delta_contracts.quality.validate import TableReport, build_query, validate_table
from delta_contracts.sql import expressions as x
from tests.engine.quality_helpers import (
    RecordingEngine,
    create_without_checks,
    example,
    with_column,
    with_max,
)

pytestmark = pytest.mark.engine

OLD = "TIMESTAMP'2026-01-01 10:00:00'"


def failures(report: TableReport) -> dict[str, int]:
    return {r.name: r.failing for r in report.failed}


def insert(engine: Engine, table: str, rows: list[str]) -> None:
    engine.sql(f"INSERT INTO {table} VALUES {', '.join(rows)}")


def validate_recorded(engine: Engine, contract: Contract, table: tuple[str, ...]) -> TableReport:
    """validate_table through a recorder: it must send the aggregate query and, when a row rule or a unique
    key failed, exactly one sample query; each statement's physical plan reads the table once."""
    recorder = RecordingEngine(engine)
    report = validate_table(recorder, contract, table)
    sampled = any(r.kind not in ("schema", "volume", "freshness", "completeness") for r in report.failed)
    assert len(recorder.statements) == (2 if sampled else 1), recorder.statements
    for statement in recorder.statements:
        plan = physical_plan(engine, statement)
        assert len(scans(plan)) == 1, plan
    return report


def test_orders_rules_counts_and_samples(engine: Engine) -> None:
    contract = with_max(example("sales/orders.yaml"), "order_total", 1_000_000)
    create_without_checks(engine, contract)
    table = "`" + contract.id.split(".")[0] + "`.`orders__v3`"
    day = "DATE'2026-01-01'"
    good = [f"({i}, 7, 100, 'PLACED', 'web', {day}, {OLD})" for i in (1, 2, 3, 4, 5)]
    duplicates = [f"(3, 7, 100, 'SHIPPED', 'app', {day}, {OLD})"] * 2
    bad = [
        f"(0, 7, 100, 'PLACED', 'web', {day}, {OLD})",  # order_id_min
        f"(6, 7, -5, 'PLACED', 'web', {day}, {OLD})",  # order_total_min
        f"(7, 7, 100, 'LOST', 'web', {day}, {OLD})",  # status_enum
        f"(8, 7, 100, 'lost', 'store', {day}, {OLD})",  # status_enum
        f"(9, 7, 100, 'PLACED', 'fax', {day}, {OLD})",  # channel_enum
        f"(10, 7, 1000001, 'PLACED', 'web', {day}, {OLD})",  # order_total_max
    ]
    insert(engine, table, good + duplicates + bad)
    report = validate_recorded(engine, contract, (contract.id.split(".")[0], "orders__v3"))
    assert report.rows == 13
    assert failures(report) == {
        "order_id_min": 1,
        "order_total_min": 1,
        "order_total_max": 1,
        "status_enum": 2,
        "channel_enum": 1,
        "order_id_unique": 2,
        "volume": 1,
        "created_at_freshness": 1,
    }
    by_name = {r.name: r for r in report.results}
    assert {row["status"] for row in by_name["status_enum"].samples} == {"LOST", "lost"}
    assert [(row["order_id"], row["duplicates"]) for row in by_name["order_id_unique"].samples] == [(3, 3)]
    assert [row["order_id"] for row in by_name["order_id_min"].samples] == [0]
    assert [row["order_total"] for row in by_name["order_total_max"].samples] == [1000001]
    assert [row["channel"] for row in by_name["channel_enum"].samples] == ["fax"]
    assert by_name["volume"].detail == "13 rows (min 10000)"
    assert all(not r.samples for r in report.results if r.passed)
    assert by_name["order_id_schema"].passed and by_name["channel_not_null"].passed


def test_customers_null_safe_rules_completeness_and_fresh_data(engine: Engine) -> None:
    # volume bounded above so that 13 rows are too many; lifetime_value bounded above too
    contract = example("sales/customers.yaml")
    quality = contract.quality.model_copy(update={"volume": Volume(min_rows=1, max_rows=12)})
    contract = with_max(contract.model_copy(update={"quality": quality}), "lifetime_value", 1000)
    create_without_checks(engine, contract)
    table = x.sql(x.table(contract.table_parts))
    now = "current_timestamp()"

    def row(cid: int, email: str, country: str = "'IN'", segment: str = "'smb'", value: str = "10.00") -> str:
        return f"({cid}, {email}, {country}, {segment}, {value}, {OLD}, {now})"

    rows = [row(i, f"'c{i}@example.com'") for i in range(1, 9)]
    rows += [
        row(9, "'not-an-email'"),  # email_regex
        row(10, "NULL"),  # NULL passes the regex (nullable column), counts against completeness
        row(11, "NULL", segment="NULL", value="NULL"),  # NULLs pass segment_enum and lifetime_value_min
        row(12, "'c12@example.com'", country="'XX'"),  # country_code_enum
        row(13, "'c13@example.com'", value="-1.00"),  # lifetime_value_min
    ]
    rows[0] = row(1, "'c1@example.com'", value="1000.01")  # lifetime_value_max
    insert(engine, table, rows)
    report = validate_recorded(engine, contract, contract.table_parts)
    assert failures(report) == {
        "email_regex": 1,
        "country_code_enum": 1,
        "lifetime_value_min": 1,
        "lifetime_value_max": 1,
        "email_completeness": 2,
        "volume": 1,
    }
    by_name = {r.name: r for r in report.results}
    assert by_name["volume"].detail == "13 rows (min 1, max 12)"
    assert [row["customer_id"] for row in by_name["lifetime_value_max"].samples] == [1]
    assert [row["email"] for row in by_name["email_regex"].samples] == ["not-an-email"]
    passed = {r.name for r in report.results if r.passed}
    assert {"updated_at_freshness", "customer_id_unique", "segment_enum", "email_schema"} <= passed
    # the aggregate covered every rule kind of the contract
    live = engine.describe(contract.table_parts)
    assert live is not None
    query = build_query(contract, contract.table_parts, live)
    assert query.unique and query.completeness and query.freshness and len(query.rules) == 10


def test_transactions_constraint_and_storage_drift(engine: Engine) -> None:
    contract = example("payments/transactions.yaml")
    # The stored table lets parent_id be NULL and narrowed customer_id to int: the contract says otherwise.
    contract = with_max(contract, "txn_amt_paise", 10_000_000)
    drifted = with_column(with_column(contract, "parent_id", nullable=True), "customer_id", type="int")
    create_without_checks(engine, drifted)
    table = x.sql(x.table(contract.table_parts))

    def row(txn: str, amount: int, currency: str, status: str, parent: str, method: str) -> str:
        return (
            f"({txn}, 1, {amount}, {currency}, {status}, {parent}, NULL, {method}, DATE'2026-01-01', {OLD})"
        )

    rows = [row(f"'t{i}'", 100, "'INR'", "'CAPTURED'", "'p'", "'upi'") for i in range(5)]
    rows += [
        row("'t5'", 0, "'INR'", "'CAPTURED'", "'p'", "'card'"),  # txn_amt_paise_min
        row("'t6'", 100, "'inr'", "'CAPTURED'", "'p'", "'card'"),  # currency_enum + currency_regex
        row("'t7'", 100, "'GBP'", "'CAPTURED'", "'p'", "NULL"),  # currency_enum only; NULL method passes
        row("'t8'", 100, "'USD'", "'REFUNDED'", "NULL", "'card'"),  # refund_has_parent + parent_id_not_null
        row("'t9'", 100, "'USD'", "'CAPTURED'", "'p'", "'cash'"),  # payment_method_enum
        row("'t1'", 100, "'USD'", "'CAPTURED'", "'p'", "'card'"),  # txn_id_unique
        row("'t10'", 10_000_001, "'USD'", "'CAPTURED'", "'p'", "'card'"),  # txn_amt_paise_max
    ]
    insert(engine, table, rows)
    report = validate_recorded(engine, contract, contract.table_parts)
    assert failures(report) == {
        "customer_id_schema": 0,
        "parent_id_schema": 0,
        "txn_amt_paise_min": 1,
        "txn_amt_paise_max": 1,
        "currency_enum": 2,
        "currency_regex": 1,
        "parent_id_not_null": 1,
        "refund_has_parent": 1,
        "payment_method_enum": 1,
        "txn_id_unique": 1,
        "volume": 1,
        "created_at_freshness": 1,
    }
    by_name = {r.name: r for r in report.results}
    assert "type is int, contract says bigint" in by_name["customer_id_schema"].detail
    assert "nullable as stored" in by_name["parent_id_schema"].detail
    assert [row["txn_id"] for row in by_name["refund_has_parent"].samples] == ["t8"]
    assert [row["txn_id"] for row in by_name["txn_amt_paise_max"].samples] == ["t10"]
    assert {row["txn_id"] for row in by_name["currency_enum"].samples} == {"t6", "t7"}
    assert [(row["txn_id"], row["duplicates"]) for row in by_name["txn_id_unique"].samples] == [("t1", 2)]


def test_several_unique_keys_share_the_scan(engine: Engine) -> None:
    contract = example("sales/customers.yaml")
    quality = contract.quality.model_copy(update={"unique": (("customer_id",), ("email", "country_code"))})
    contract = contract.model_copy(update={"quality": quality})
    create_without_checks(engine, contract)
    table = x.sql(x.table(contract.table_parts))
    ts = f"{OLD}, {OLD}"
    insert(
        engine,
        table,
        [
            f"(1, 'a@x.io', 'IN', 'smb', 1.00, {ts})",
            f"(1, 'b@x.io', 'IN', 'smb', -1.00, {ts})",  # customer_id repeats; lifetime_value_min
            f"(2, 'a@x.io', 'IN', 'smb', 1.00, {ts})",  # (email, country_code) repeats
            f"(3, 'a@x.io', 'US', 'smb', 1.00, {ts})",
            f"(4, NULL, 'US', 'smb', 1.00, {ts})",  # NULL in a key never duplicates
            f"(5, NULL, 'US', 'smb', 1.00, {ts})",
        ],
    )
    report = validate_recorded(engine, contract, contract.table_parts)
    found = failures(report)
    assert found.pop("customer_id_unique") == 1
    assert found.pop("email_country_code_unique") == 1
    assert found.pop("lifetime_value_min") == 1
    assert found.pop("email_completeness") == 2
    assert set(found) == {"volume", "updated_at_freshness"}
    assert report.rows == 6
    by_name = {r.name: r for r in report.results}
    assert [(r["customer_id"], r["duplicates"]) for r in by_name["customer_id_unique"].samples] == [(1, 2)]
    assert [
        (r["email"], r["country_code"], r["duplicates"]) for r in by_name["email_country_code_unique"].samples
    ] == [("a@x.io", "IN", 2)]


def test_samples_are_limited_per_rule_and_a_passing_table_costs_one_query(engine: Engine) -> None:
    contract = example("sales/customers.yaml")
    quality = contract.quality.model_copy(update={"volume": Volume(min_rows=1), "freshness": None})
    contract = contract.model_copy(update={"quality": quality})
    create_without_checks(engine, contract)
    table = x.sql(x.table(contract.table_parts))
    ts = f"{OLD}, {OLD}"
    insert(engine, table, [f"({i}, 'c{i}@x.io', 'IN', 'smb', 1.00, {ts})" for i in range(1, 4)])
    assert validate_recorded(engine, contract, contract.table_parts).passed

    # 9 rows break the country enum, 2 of them the segment enum too, and one key repeats 7 times
    insert(engine, table, [f"({i}, 'c{i}@x.io', 'XX', 'smb', 1.00, {ts})" for i in range(10, 17)])
    insert(engine, table, [f"(20, 'd{i}@x.io', 'ZZ', 'vip', 1.00, {ts})" for i in range(2)])
    insert(engine, table, [f"(1, 'e{i}@x.io', 'IN', 'smb', 1.00, {ts})" for i in range(6)])
    report = validate_recorded(engine, contract, contract.table_parts)
    assert failures(report) == {"country_code_enum": 9, "segment_enum": 2, "customer_id_unique": 7}
    by_name = {r.name: r for r in report.results}
    country = by_name["country_code_enum"].samples
    assert len(country) == 5 and {r["country_code"] for r in country} <= {"XX", "ZZ"}
    assert sorted(r["email"] for r in by_name["segment_enum"].samples) == ["d0@x.io", "d1@x.io"]
    assert [(r["customer_id"], r["duplicates"]) for r in by_name["customer_id_unique"].samples] == [
        (1, 7),
        (20, 2),
    ]
    assert all(not key.startswith("__dc") for r in country for key in r)


def physical_plan(engine: Engine, statement: str) -> str:
    frame = engine.spark.sql(statement)  # type: ignore[attr-defined]
    if hasattr(frame, "_jdf"):  # classic: the JVM's physical plan
        return str(frame._jdf.queryExecution().executedPlan().toString())
    return str(frame._explain_string(extended=False))  # Connect (Sail)


def scans(plan: str) -> list[str]:
    """Leaf scans of a physical plan: Spark's `FileScan`/`Scan …`, DataFusion's `DataSourceExec`."""
    return [
        line for line in plan.splitlines() if re.search(r"FileScan|Scan \w|DataSourceExec|DeltaScan", line)
    ]
