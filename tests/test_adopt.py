"""Adopting a table: the contract read from a live table's facts (pure; the engine tests do it for real)."""

from __future__ import annotations

from datetime import date

from delta_contracts.contract.model import Contract
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.tables.adopt import baseline, contract_data, literal_value
from delta_contracts.target import Target


def _table(**overrides: object) -> LiveTable:
    values: dict[str, object] = {
        "name": "shop.events",
        "location": "/w/shop/events",
        "columns": (
            LiveColumn("event_id", "bigint", False, "Event number."),
            LiveColumn("amount", "decimal(12,2)", True),
            LiveColumn("kind", "string", True, None, "'click'"),
            LiveColumn("seen_at", "timestamp", True, None, "current_timestamp()"),
            LiveColumn("day", "date", True),
            LiveColumn("old_code", "string", True),
        ),
        "properties": {
            "delta.enableChangeDataFeed": "true",
            "delta.feature.allowColumnDefaults": "supported",
            "delta.minReaderVersion": "1",
            "team.cost_center": "4711",
        },
        "checks": {
            "amount_min": "amount IS NULL OR amount >= 0",
            "amount_max": "amount > 5",  # not the shape `checks.max` renders: kept as a constraint
            "kind_enum": "kind IS NULL OR kind IN ( 'click' , 'view' )",
            "day_min": "day IS NULL OR day >= DATE '2024-01-01'",
            "seen_at_not_null": "seen_at IS NOT NULL",
            "sane_amounts": "amount < 1000000 OR kind = 'bulk'",
        },
        "partition_columns": ("day",),
        "comment": "One row per event.",
    }
    values.update(overrides)
    return LiveTable(**values)  # type: ignore[arg-type]


def test_rules_come_back_only_when_they_render_to_the_same_check() -> None:
    adopted = contract_data(_table(), ("shop", "events"))
    data = adopted.data
    assert data["id"] == "shop.events" and data["version"] == "1.0.0"
    assert data["description"] == "One row per event."
    assert data["table"] == {
        "partitioned_by": ["day"],
        "properties": {"delta.enableChangeDataFeed": "true", "team.cost_center": "4711"},
    }
    columns = {c["name"]: c for c in data["columns"]}
    assert columns["event_id"] == {
        "name": "event_id",
        "type": "bigint",
        "nullable": False,
        "description": "Event number.",
    }
    assert columns["amount"]["checks"] == {"min": 0}
    assert columns["kind"] == {
        "name": "kind",
        "type": "string",
        "default": "click",
        "checks": {"enum": ["click", "view"]},
    }
    assert columns["day"]["checks"] == {"min": date(2024, 1, 1)}
    assert columns["seen_at"]["nullable"] is False  # a <column>_not_null CHECK is NOT NULL on OSS Delta
    assert "default" not in columns["seen_at"]
    assert columns["seen_at"]["default_expression"] == "current_timestamp()"  # kept, no longer a note
    assert data["constraints"] == [
        {"name": "amount_max", "expression": "amount > 5"},
        {"name": "sane_amounts", "expression": "amount < 1000000 OR kind = 'bulk'"},
    ]
    assert adopted.notes == ()
    Contract.model_validate({**data, "owner": {"team": "t"}})


def test_stamp_and_deprecation_marks_are_read() -> None:
    table = _table(
        properties={
            "delta_contracts.id": "shop.events",
            "delta_contracts.version": "4.2.0",
            "delta_contracts.schema_hash": "x",
            "delta_contracts.deprecated.columns": '["old_code"]',
            "delta_contracts.deprecated.since": "4.1.0",
        }
    )
    data = contract_data(table, ("shop", "events__v4")).data
    assert (data["id"], data["version"]) == ("shop.events", "4.2.0")
    assert data["table"]["versioning"] == "versioned"
    old = next(c for c in data["columns"] if c["name"] == "old_code")
    assert old["deprecated"] == {"since": "4.1.0"}


def test_an_unstamped_versioned_name_gives_its_major() -> None:
    data = contract_data(_table(properties={}), ("shop", "events__v2")).data
    assert (data["id"], data["version"]) == ("shop.events", "2.0.0")


def test_literal_values() -> None:
    assert literal_value("'web'") == "web"
    assert literal_value("-1.5") == -1.5
    assert literal_value("TRUE") is True
    assert literal_value("7") == 7


def test_the_baseline_stamps_only_an_unstamped_table() -> None:
    live = _table(properties={})
    data = contract_data(live, ("shop", "events")).data
    contract = Contract.model_validate({**data, "owner": {"team": "t"}})
    planned = baseline(contract, live, ("shop", "events"), Target.DELTA_4)
    assert [op.kind for op in planned.migration.ops] == ["stamp_contract"]
    assert planned.migration_id == "0001_baseline_1.0.0"
    assert (planned.migration.from_version, planned.migration.to_version) == ("1.0.0", "1.0.0")


def test_the_contract_stamp_gives_back_what_no_ddl_holds() -> None:
    """Owner, consumers, tags, quality, evolution and per-column tags, pii and deprecation details come back
    from `delta_contracts.contract`; a stamp this version cannot read is ignored, not an error."""
    from delta_contracts.plan.building import stamp_op

    live = _table(properties={})
    data = contract_data(live, ("shop", "events")).data
    columns = [
        {**c, "tags": ["pii"], "pii": True} if c["name"] == "kind" else c
        for c in data["columns"]
        if c["name"] != "old_code"
    ] + [{"name": "old_code", "type": "string", "deprecated": {"since": "1.0.0", "replaced_by": "kind"}}]
    original = Contract.model_validate(
        {
            **data,
            "owner": {"team": "shop", "email": "shop@example.com"},
            "consumers": [{"name": "bi", "contact": "bi@example.com"}],
            "tags": ["gold"],
            "columns": columns,
            "quality": {"volume": {"min_rows": 5, "max_rows": 9}, "unique": [["event_id"]]},
            "evolution": {"deprecation_window": "P7D"},
        }
    )
    stamped = _table(properties=dict(stamp_op(("shop", "events"), original).properties))
    back = Contract.model_validate(contract_data(stamped, ("shop", "events")).data)
    assert back == original
    assert baseline(back, stamped, ("shop", "events"), Target.DELTA_4).migration.ops == ()

    garbled = _table(properties={"delta_contracts.contract": "{not json"})
    assert "quality" not in contract_data(garbled, ("shop", "events")).data
