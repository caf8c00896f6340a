"""Column order is part of the contract: a table migrated to a contract (columns added by `ADD COLUMNS …
AFTER/FIRST`) has the order of the table `create` makes from it, and `drift` names an order that differs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app

pytestmark = pytest.mark.engine
runner = CliRunner()

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouse}
defaults:
  owner: {team: crew}
"""

V1 = """\
apiVersion: delta-contracts/v1
id: crew.duty
version: 1.0.0
table: {partitioned_by: [roster_date]}
columns:
  - {name: duty_id, type: bigint, nullable: false}
  - {name: crew_id, type: string}
  - {name: roster_date, type: date, nullable: false}
"""

# 1.1.0 adds a column first, one in the middle, one before the partition column and one last.
V2 = """\
apiVersion: delta-contracts/v1
id: crew.duty
version: 1.1.0
table: {partitioned_by: [roster_date]}
columns:
  - {name: airline, type: string}
  - {name: duty_id, type: bigint, nullable: false}
  - {name: base, type: string}
  - {name: crew_id, type: string}
  - {name: deadhead, type: boolean}
  - {name: roster_date, type: date, nullable: false}
  - {name: remarks, type: string}
"""
V2_ORDER = ["airline", "duty_id", "base", "crew_id", "deadhead", "roster_date", "remarks"]


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def column_order(table: Path) -> list[str]:
    from deltalake import DeltaTable

    return [field.name for field in DeltaTable(table).schema().fields]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "contracts/crew").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(PROJECT)
    (tmp_path / "contracts/crew/duty.yaml").write_text(V1)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_migrated_table_has_the_column_order_of_a_created_one(
    project: Path, connect_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # delta-rs adds columns only at the end: the placed ones go to delta-spark (the suite's Connect server)
    monkeypatch.setenv("DELTA_CONTRACTS_DELTA_SPARK_URL", connect_url)
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 0, out
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(project / "warehouse") as engine:
        engine.sql("INSERT INTO `crew`.`duty` VALUES (1, 'c-7', DATE'2026-11-01')")
    (project / "contracts/crew/duty.yaml").write_text(V2)
    assert run("plan")[0] == 0
    (sql,) = (project / "migrations/crew.duty").glob("0002_*.sql")
    assert "ADD COLUMNS (`base` STRING AFTER `duty_id`)" in sql.read_text()
    code, out = run("apply")
    assert code == 0, out

    code, out = run("create", "--warehouse", str(project / "created"))
    assert (code, out.splitlines()[-1]) == (0, "crew.duty 1.1.0: created crew.duty"), out

    migrated = column_order(project / "warehouse/crew/duty")
    created = column_order(project / "created/crew/duty")
    assert migrated == created == V2_ORDER
    with LocalEngine(project / "warehouse") as engine:  # a positional INSERT means the same on both
        engine.sql("INSERT INTO `crew`.`duty` VALUES ('XY', 2, 'LHR', 'c-8', true, DATE'2026-11-02', 'r')")
        rows = engine.sql("SELECT `base`, `deadhead`, `remarks` FROM `crew`.`duty` WHERE `duty_id` = 2")
    assert rows == [{"base": "LHR", "deadhead": True, "remarks": "r"}]
    code, out = run("drift")
    assert (code, out.splitlines()[-1]) == (0, "crew.duty (crew.duty): no drift"), out


def test_drift_names_a_column_order_that_differs(project: Path) -> None:
    assert run("create")[0] == 0
    from deltalake import DeltaTable
    from deltalake.schema import Field

    # an ADD COLUMNS that appended, where the contract has the column before roster_date
    DeltaTable(project / "warehouse/crew/duty").alter.add_columns([Field("deadhead", "boolean")])
    contract = project / "contracts/crew/duty.yaml"
    contract.write_text(
        V1.replace("  - {name: roster_date", "  - {name: deadhead, type: boolean}\n  - {name: roster_date")
    )
    code, out = run("drift")
    assert code == 1, out
    assert (
        "✗ column-order: column order is (duty_id, crew_id, roster_date, deadhead), "
        "contract says (duty_id, crew_id, deadhead, roster_date)"
    ) in out, out
    code, out = run("drift", "--format", "json")
    assert code == 1
    assert '"kind": "column-order"' in out
