"""Which objects telemetry watches: from contracts, from live deprecation marks; and how reads match them."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from delta_contracts.contract.load import parse_contract
from delta_contracts.contract.model import Contract
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.telemetry.matching import Targets, possible_in_text, reads_of
from delta_contracts.telemetry.objects import deprecated_in_contract, deprecated_in_live, watched

ORDERS = dedent(
    """\
    apiVersion: delta-contracts/v1
    id: sales.orders
    version: 3.1.0
    owner: {team: commerce}
    consumers: [{name: billing-service}, {name: analytics-mart}]
    table: {versioning: versioned}
    columns:
      - {name: order_id, type: bigint}
      - {name: channel, type: string, renamed_from: legacy_channel}
      - {name: fax, type: string, deprecated: {since: 3.0.0}}
    """
)


def _contract(text: str = ORDERS) -> Contract:
    return parse_contract(text, Path("contracts/sales/orders.yaml")).contract


def test_deprecated_columns_renamed_sources_and_old_versions() -> None:
    assert deprecated_in_contract(_contract()) == [
        "sales.orders.legacy_channel",
        "sales.orders.fax",
        "sales.orders__v1",
        "sales.orders__v2",
    ]


def test_live_marks() -> None:
    live = LiveTable(
        "sales.payments",
        "file:/w/sales/payments",
        (LiveColumn("id", "bigint"), LiveColumn("Old_Code", "string")),
        properties={
            "delta_contracts.deprecated.columns": '["Old_Code"]',
            "delta_contracts.deprecated.table": "true",
        },
    )
    assert deprecated_in_live("sales.payments", live) == ["sales.payments", "sales.payments.old_code"]
    found = watched([_contract()], {"sales.payments": live})
    assert {"sales.payments", "sales.payments.old_code", "sales.orders.fax"} <= set(found.objects)
    assert found.consumers["sales.orders.fax"] == ("billing-service", "analytics-mart")
    assert found.locations == {"/w/sales/payments": "sales.payments"}
    # queries may still name deprecated and renamed-away columns: the schema knows them
    assert {"legacy_channel", "fax", "channel"} <= set(found.catalog.schemas["sales.orders__v3"])


def test_reads_match_by_suffix_path_and_column() -> None:
    targets = Targets.of(
        ["sales.orders.fax", "sales.orders__v1"],
        ["sales.orders"],
        {"/w/sales/orders__v1": "sales.orders__v1"},
    )
    assert targets.tables == ("sales.orders__v1",) and targets.columns == (("sales.orders", "fax"),)
    assert reads_of(["main.sales.orders__v1"], [], targets) == ["sales.orders__v1"]
    assert reads_of(["orders__v1"], [], targets) == ["sales.orders__v1"]
    assert reads_of(["delta.`/w/sales/orders__v1`"], [], targets) == ["sales.orders__v1"]
    assert reads_of(["other.orders__v1x"], [], targets) == []
    assert reads_of(["sales.orders"], ["spark_catalog.sales.orders.fax"], targets) == ["sales.orders.fax"]
    assert reads_of(["sales.orders"], ["sales.orders.order_id"], targets) == []


def test_possible_readers_need_the_names_in_the_text() -> None:
    targets = Targets.of(["sales.orders.fax", "sales.orders__v1"], ["sales.orders"], {})
    assert possible_in_text("SELECT fax FROM orders WHERE", targets) == ["sales.orders.fax"]
    assert possible_in_text("select * from sales.orders__v1 (", targets) == ["sales.orders__v1"]
    assert possible_in_text("send the fax to orders team", targets) == ["sales.orders.fax"]
    assert possible_in_text("hello", targets) == []
