"""ODCS v3 interchange: every example contract survives export → import unchanged, exports validate against
the standard's JSON Schema, and a foreign ODCS file imports with one warning per part that has no
counterpart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.load import contract_files, load_contract
from delta_contracts.contract.model import Contract
from delta_contracts.contract.yamlsource import read_yaml
from delta_contracts.interchange.odcs import duration_to_sla, schema_errors, to_odcs
from delta_contracts.interchange.odcs_import import OdcsError, from_odcs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = contract_files([ROOT / "contracts"])
FOREIGN = Path(__file__).parent / "odcs" / "shipments.odcs.yaml"
runner = CliRunner()


def _import(text: str, name: str = "in.yaml", owner: str | None = None) -> tuple[Contract, list[str]]:
    data, source = read_yaml(text, name)
    imported = from_odcs(data, source, owner=owner)
    return Contract.model_validate(imported.contract), [str(w) for w in imported.warnings]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_contracts_survive_export_and_import(path: Path) -> None:
    original = load_contract(path).contract
    document = to_odcs(original)
    assert schema_errors(document) == []
    back, warnings = _import(yaml.safe_dump(document, sort_keys=False))
    assert warnings == []
    assert back == original


def test_the_schema_check_catches_an_invalid_document() -> None:
    document = to_odcs(load_contract(EXAMPLES[0]).contract)
    document["kind"] = "Contract"
    document["schema"][0]["properties"][0]["required"] = "yes"
    document["schema"][0]["properties"][0]["shoeSize"] = 42
    found = schema_errors(document)
    assert found == [
        (("kind",), "'Contract' is not one of ['DataContract']"),
        (
            ("schema", 0, "properties", 0),
            "Unevaluated properties are not allowed ('shoeSize' was unexpected)",
        ),
        (("schema", 0, "properties", 0, "required"), "'yes' is not of type 'boolean'"),
    ]


def test_export_maps_to_odcs_fields_not_only_custom_properties() -> None:
    orders = load_contract(ROOT / "contracts" / "sales" / "orders.yaml").contract
    document = to_odcs(orders)
    properties = {p["name"]: p for p in document["schema"][0]["properties"]}
    assert properties["order_date"]["partitioned"] is True
    assert properties["order_date"]["partitionKeyPosition"] == 1
    assert properties["order_total"]["required"] is True
    assert properties["order_total"]["logicalType"] == "integer"
    assert properties["order_total"]["logicalTypeOptions"] == {"minimum": 0}
    assert [e["value"] for e in properties["status"]["enum"]] == [
        "PLACED",
        "SHIPPED",
        "DELIVERED",
        "CANCELLED",
    ]
    assert properties["order_id"]["primaryKey"] is True  # unique [[order_id]], NOT NULL by contracts.yml
    assert document["team"]["name"] == "commerce-platform"
    assert document["description"]["purpose"] == "One row per customer order."
    assert document["slaProperties"] == [
        {"property": "latency", "value": 30, "unit": "minutes", "element": "orders.created_at"}
    ]
    quality = document["schema"][0]["quality"]
    assert {
        "type": "library",
        "metric": "rowCount",
        "dimension": "completeness",
        "mustBeGreaterOrEqualTo": 10000,
    } in quality


def test_durations_map_to_a_number_and_a_unit_when_they_can() -> None:
    assert duration_to_sla("PT30M") == (30, "minutes")
    assert duration_to_sla("P2M") == (2, "months")
    assert duration_to_sla("P30D") == (30, "days")
    assert duration_to_sla("P1DT12H") == ("P1DT12H", None)


def test_a_foreign_odcs_file_imports_with_one_warning_per_unmapped_part() -> None:
    contract, warnings = _import(FOREIGN.read_text(encoding="utf-8"), FOREIGN.name)
    assert contract.id == "logistics.shipments"
    assert contract.version == "1.3.0"
    assert contract.owner.team == "fulfilment" and contract.owner.email == "fulfilment@example.com"
    assert contract.description == "One row per parcel handed to a carrier."
    assert contract.table.partitioned_by == ("shipped_on",)
    columns = {c.name: c for c in contract.columns}
    assert columns["shipment_id"].type == "bigint" and not columns["shipment_id"].nullable
    assert columns["shipment_id"].checks.min == 1
    assert columns["carrier"].type == "string" and columns["carrier"].checks.enum == ("DHL", "UPS", "FEDEX")
    assert (columns["weight_grams"].checks.min, columns["weight_grams"].checks.max) == (0, 100000)
    assert columns["tracking_code"].checks.regex == "^[A-Z0-9]{10,20}$"
    assert contract.quality.unique == (("shipment_id",),)
    assert contract.quality.volume is not None and contract.quality.volume.min_rows == 100
    assert [(c.column, c.min_ratio) for c in contract.quality.completeness] == [("weight_grams", 0.95)]
    assert contract.quality.freshness is not None
    assert (contract.quality.freshness.column, contract.quality.freshness.max_age) == ("shipped_at", "PT2H")
    assert [(c.name, c.expression) for c in contract.constraints] == [
        ("heavy_needs_tracking", "weight_grams < 30000 OR NOT tracking_code IS NULL")
    ]
    parts = [w.split(": ", 2)[1] for w in warnings]
    assert parts == [
        "id",
        "domain",
        "description.usage",
        "team.members[1]",
        "servers",
        "schema[0].businessName",
        "schema[0].properties[1].examples",
        "schema[0].properties[3].classification",
        "schema[0].properties[3].logicalTypeOptions.maxLength",
        "schema[0].quality[1]",
        "schema[0].relationships",
        "schema[1]",
        "slaProperties[1]",
        "customProperties",
    ]
    assert all(w.endswith("has no counterpart in delta-contracts; not imported") for w in warnings)
    # each warning points at the part's line in the ODCS file
    lines = FOREIGN.read_text(encoding="utf-8").splitlines()
    servers = next(w for w in warnings if ": servers: " in w)
    line = int(servers.split(":")[1])
    assert lines[line - 1].startswith("servers:")


def test_an_invalid_odcs_file_is_refused_with_locations(tmp_path: Path) -> None:
    text = FOREIGN.read_text(encoding="utf-8").replace("kind: DataContract", "kind: Contract")
    with pytest.raises(OdcsError) as caught:
        _import(text, "bad.yaml")
    [problem] = caught.value.problems
    assert str(problem).startswith("bad.yaml:3:7: kind: not valid ODCS: 'Contract' is not one of")


def test_cli_export_then_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    exported = runner.invoke(app, ["export", "odcs", "payments.transactions", "-o", "tx.odcs.yaml"])
    assert exported.exit_code == 0, exported.output
    assert schema_errors(yaml.safe_load(Path("tx.odcs.yaml").read_text())) == []
    imported = runner.invoke(app, ["import", "odcs", "tx.odcs.yaml", "-o", "tx.yaml"])
    assert imported.exit_code == 0, imported.output
    original = load_contract(tmp_path / "contracts/payments/transactions.yaml").contract
    assert load_contract(tmp_path / "tx.yaml").contract == original
    on_stdout = runner.invoke(app, ["export", "odcs", "sales.orders"])
    assert on_stdout.exit_code == 0 and yaml.safe_load(on_stdout.stdout)["name"] == "sales.orders"


def test_cli_import_reports_warnings_and_needs_an_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["import", "odcs", str(FOREIGN)])
    assert done.exit_code == 0, done.output
    assert done.stderr.count("warning: ") == 14
    assert yaml.safe_load(done.stdout)["id"] == "logistics.shipments"
    no_team = FOREIGN.read_text().replace("  name: fulfilment\n", "")
    Path("no-team.yaml").write_text(no_team)
    refused = runner.invoke(app, ["import", "odcs", "no-team.yaml"])
    assert refused.exit_code == 2
    assert "--owner TEAM" in refused.stderr
    given = runner.invoke(app, ["import", "odcs", "no-team.yaml", "--owner", "logistics-data"])
    assert given.exit_code == 0 and yaml.safe_load(given.stdout)["owner"]["team"] == "logistics-data"
    missing = runner.invoke(app, ["export", "odcs", "sales.nothing", str(ROOT / "contracts")])
    assert missing.exit_code == 2 and "no contract 'sales.nothing'" in missing.stderr
