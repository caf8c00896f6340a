"""`plan` writes migrations once, byte-identically; `plan --check` catches what is missing or edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.plan.migrations import IntegrityError, load_history, verify

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_plan_writes_then_is_idempotent(project: Path) -> None:
    code, out = run("plan", "--check")
    assert code == 1 and "missing" in out
    code, out = run("plan")
    assert code == 0, out
    migrations = project / "migrations"
    first = snapshot(migrations)
    assert "sales.customers/0001_create_1.2.0.sql" in first
    assert "sales.customers/migrations.sum" in first
    code, out = run("plan")
    assert code == 0 and "up to date" in out
    assert snapshot(migrations) == first
    code, _ = run("plan", "--check")
    assert code == 0


def test_check_catches_contract_edited_without_migration(project: Path) -> None:
    assert run("plan")[0] == 0
    path = project / "contracts/sales/customers.yaml"
    text = path.read_text().replace("version: 1.2.0", "version: 1.3.0")
    text = text.replace("columns:\n", "columns:\n  - name: note\n    type: string\n", 1)
    path.write_text(text)
    code, out = run("plan", "--check")
    assert code == 1
    assert "sales.customers" in out and "0002_1.2.0_to_1.3.0" in out
    assert run("plan")[0] == 0
    sql = (project / "migrations/sales.customers/0002_1.2.0_to_1.3.0.sql").read_text()
    assert "ADD COLUMNS (`note` STRING FIRST)" in sql  # first in the contract
    assert run("plan", "--check")[0] == 0


def test_check_catches_hand_edited_migration(project: Path) -> None:
    assert run("plan")[0] == 0
    sql = project / "migrations/sales.customers/0001_create_1.2.0.sql"
    sql.write_text(sql.read_text().replace("CREATE TABLE IF NOT EXISTS", "CREATE TABLE"))
    code, out = run("plan", "--check")
    assert code == 1
    assert "0001_create_1.2.0.sql" in out and "checksum" in out
    with pytest.raises(IntegrityError) as caught:
        verify(sql.parent)
    assert caught.value.path == sql


def test_check_catches_added_and_removed_files(project: Path) -> None:
    assert run("plan")[0] == 0
    folder = project / "migrations/sales.customers"
    (folder / "0002_sneaky.sql").write_text("DROP TABLE x;\n")
    with pytest.raises(IntegrityError, match="not recorded"):
        verify(folder)
    (folder / "0002_sneaky.sql").unlink()
    (folder / "0001_create_1.2.0.json").unlink()
    with pytest.raises(IntegrityError, match="missing"):
        verify(folder)


def test_changed_contract_without_version_bump_is_refused(project: Path) -> None:
    assert run("plan")[0] == 0
    path = project / "contracts/sales/customers.yaml"
    path.write_text(path.read_text().replace("columns:\n", "columns:\n  - name: note\n    type: string\n", 1))
    code, out = run("plan")
    assert code == 1
    # the refusal diff prints, word for word
    assert "version 1.2.0 -> 1.2.0 is unchanged; the changes require minor" in out


def test_json_half_round_trips_the_migration(project: Path) -> None:
    assert run("plan")[0] == 0
    (stored,) = load_history(project / "migrations/payments.transactions")
    data = json.loads(stored.json_path.read_text())
    assert data["contract"]["id"] == "payments.transactions"
    assert stored.migration.ops[0].kind == "create_table"
    from delta_contracts.plan.migrations import next_migration

    assert next_migration([stored], stored.contract, stored.target) is None


def test_invalid_contract_stops_plan_with_exit_2(project: Path) -> None:
    path = project / "contracts/sales/customers.yaml"
    path.write_text(path.read_text().replace("type: bigint", "type: bigint2", 1))
    code, out = run("plan")
    assert code == 2
    assert "customers.yaml:15:11: columns[0].type: invalid type" in out


def test_committed_example_migrations_are_current(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out = run("plan", "--check")
    assert code == 0, out
    history = load_history(REPO / "migrations/sales.orders")
    assert [m.migration.strategy for m in history] == ["in_place", "in_place", "in_place", "versioned"]
    kinds = [{op.kind for op in m.migration.ops} for m in history]
    assert "add_column" in kinds[1] and "drop_columns" not in kinds[1]  # additive minor
    assert {"backfill", "drop_columns"} <= kinds[2]  # rename + drop in place
    assert {"copy_rows", "create_view", "drop_table"} <= kinds[3]  # versioned table behind the view
