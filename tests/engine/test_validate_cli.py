"""`delta-contracts validate` end to end on the embedded engine: exit codes, JSON and JUnit XML."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.local.engine import LocalEngine
from tests.builders import write
from tests.engine.quality_helpers import create_without_checks

pytestmark = pytest.mark.engine

CONTRACT = """\
apiVersion: delta-contracts/v1
id: shop.items
version: 1.0.0
owner: {team: shop}
columns:
  - {name: item_id, type: bigint, nullable: false, checks: {min: 1}}
  - {name: price, type: int, checks: {min: 0, max: 100}}
quality:
  volume: {min_rows: 2, max_rows: 10}
  unique: [[item_id]]
"""


def test_validate_command_formats_and_exit_codes(tmp_path: Path) -> None:
    from delta_contracts.contract.load import load_contract

    write(tmp_path, "contracts/contracts.yml", "engine: {name: local, warehouse: ../warehouse}\n")
    path = write(tmp_path, "contracts/shop/items.yaml", CONTRACT)
    with LocalEngine(tmp_path / "warehouse") as engine:
        create_without_checks(engine, load_contract(path).contract)
        engine.sql("INSERT INTO `shop`.`items` VALUES (1, 10), (2, 20), (3, NULL)")
    runner = CliRunner()
    args = ["validate", str(tmp_path / "contracts")]
    passing = runner.invoke(app, [*args, "--format", "json"])
    assert passing.exit_code == 0, passing.output
    (table,) = json.loads(passing.stdout)["tables"]
    assert table["passed"] and table["rows"] == 3 and table["table"] == "shop.items"

    with LocalEngine(tmp_path / "warehouse") as engine:
        engine.sql("INSERT INTO `shop`.`items` VALUES (0, 500), (2, 30)")
    failing = runner.invoke(app, [*args, "--format", "junit"])
    assert failing.exit_code == 1, failing.output
    xml = failing.stdout[failing.stdout.index("<?xml") :]
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None and suite.get("name") == "shop.items"
    failed = {
        case.get("name"): case.find("failure").get("message")  # type: ignore[union-attr]
        for case in suite.iter("testcase")
        if case.find("failure") is not None
    }
    assert set(failed) == {"item_id_min", "price_max", "item_id_unique"}
    assert suite.get("failures") == "3" and int(suite.get("tests") or 0) == len(list(suite.iter("testcase")))
    text = runner.invoke(app, args)
    assert text.exit_code == 1 and "✗ price_max: 1 row(s) break CHECK" in text.stdout

    bad = runner.invoke(app, ["validate", str(tmp_path / "nowhere")])
    assert bad.exit_code == 2
