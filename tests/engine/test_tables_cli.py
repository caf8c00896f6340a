"""`create`, `drift` and `status` through the command line on real tables: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from tests.engine.conftest import SKIP_SPARK

pytestmark = pytest.mark.engine
runner = CliRunner()

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouse}
defaults:
  owner: {team: shop}
"""

EVENTS = """\
apiVersion: delta-contracts/v1
id: shop.events
version: 1.0.0
description: What shoppers did.
columns:
  - {name: event_id, type: bigint, nullable: false, description: Event key.}
  - {name: kind, type: string, checks: {enum: [view, buy]}}
  - {name: quantity, type: int, checks: {min: 0}}
"""


def run(*args: str) -> tuple[int, str]:
    """Exit code and standard output (the engine line and errors go to standard error)."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "contracts/shop").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(PROJECT)
    (tmp_path / "contracts/shop/events.yaml").write_text(EVENTS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_create_then_verify_then_no_drift(project: Path) -> None:
    code, out = run("create")
    assert (code, out.splitlines()[-1]) == (0, "shop.events 1.0.0: created shop.events"), out
    assert (project / "warehouse").is_dir()  # where contracts.yml says, not inside contracts/
    code, out = run("create")
    assert (code, out.splitlines()[-1]) == (0, "shop.events 1.0.0: verified shop.events"), out
    code, out = run("drift")
    assert (code, out.splitlines()[-1]) == (0, "shop.events (shop.events): no drift"), out
    code, out = run("status", "--format", "json")
    assert code == 0, out
    assert '"stamped": "1.0.0"' in out and '"exists": true' in out


def test_drift_and_create_report_an_out_of_band_column(project: Path) -> None:
    assert run("create")[0] == 0
    from deltalake import DeltaTable
    from deltalake.schema import Field

    DeltaTable(project / "warehouse/shop/events").alter.add_columns([Field("sneaky", "string")])
    code, out = run("drift")
    assert code == 1, out
    assert "shop.events (shop.events): 2 drift item(s)" in out
    assert "✗ extra-column: column sneaky string is not in the contract" in out
    assert "✗ out-of-band-commit: version" in out
    code, out = run("create")
    assert code == 1, out
    assert "shop.events 1.0.0: differs" in out
    assert "column sneaky string is not in the contract" in out


def test_status_lists_the_pending_migration(project: Path) -> None:
    assert run("plan")[0] == 0
    (project / "warehouse").mkdir()  # a warehouse with no table yet
    code, out = run("status")
    assert code == 0, out
    assert out.splitlines()[-1] == (
        "shop.events contract 1.0.0, table shop.events not created; "
        "read shop.events, write: no table yet; pending: 0001_create_1.0.0 [expand/cutover]"
    ), out


def test_drift_reports_a_tampered_migration(project: Path) -> None:
    assert run("plan")[0] == 0
    assert run("create")[0] == 0
    (migration,) = (project / "migrations").rglob("0001*.sql")
    migration.write_text(migration.read_text() + "\n-- edited by hand\n")
    code, out = run("drift")
    assert code == 1, out
    assert "✗ migrations:" in out and migration.name in out, out


def test_create_does_not_take_a_versioned_table_forward(project: Path) -> None:
    contract = project / "contracts/shop/events.yaml"
    contract.write_text(EVENTS + "table: {versioning: versioned}\n")
    assert run("create")[0] == 0
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(project / "warehouse") as engine:
        engine.sql("INSERT INTO `shop`.`events__v1` VALUES (1, 'view', 2), (2, 'buy', 1)")
    contract.write_text(contract.read_text().replace("version: 1.0.0", "version: 2.0.0"))
    code, out = run("create")
    assert code == 1, out
    assert out.splitlines()[0] == "shop.events 2.0.0: pending", out
    assert "delta-contracts apply" in out
    with LocalEngine(project / "warehouse") as engine:
        assert engine.describe(("shop", "events__v2")) is None
        assert engine.sql("SELECT count(*) AS n FROM `shop`.`events`") == [{"n": 2}]


def test_create_does_not_take_an_in_place_table_forward(project: Path) -> None:
    contract = project / "contracts/shop/events.yaml"
    assert run("create")[0] == 0
    contract.write_text(contract.read_text().replace("version: 1.0.0", "version: 1.1.0"))
    code, out = run("create")
    assert code == 1, out
    assert out.splitlines()[0] == "shop.events 1.1.0: pending", out
    assert "is stamped 1.0.0; contract 1.1.0 needs a migration applied first" in out


def test_without_contracts_yml_migrations_and_warehouse_are_at_the_project_root(
    project: Path,
) -> None:
    (project / "contracts/contracts.yml").unlink()
    events = project / "contracts/shop/events.yaml"
    events.write_text(
        events.read_text().replace("description: What", "owner: {team: shop}\ndescription: What")
    )
    assert run("plan")[0] == 0
    assert run("create")[0] == 0
    assert sorted(p.name for p in project.iterdir()) == ["contracts", "migrations", "warehouse"]
    assert sorted(p.name for p in (project / "contracts").iterdir()) == ["shop"]


@pytest.mark.parametrize("command", ["status", "drift"])
def test_read_only_commands_create_nothing(project: Path, command: str) -> None:
    result = runner.invoke(app, [command, "--warehouse", "warehuose"])
    assert result.exit_code == 2, result.output
    assert "error: no warehouse at" in result.stderr and "warehuose" in result.stderr
    assert "Traceback" not in result.output
    assert sorted(p.name for p in project.iterdir()) == ["contracts"]


def test_status_names_what_readers_and_writers_use(project: Path) -> None:
    assert run("create")[0] == 0
    assert run("status")[1].splitlines()[-1] == (
        "shop.events contract 1.0.0, table shop.events stamped 1.0.0; read and write shop.events; "
        "pending: none"
    )


def test_status_of_a_versioned_table_sends_writers_to_the_table_behind_the_view(project: Path) -> None:
    contract = project / "contracts/shop/events.yaml"
    contract.write_text(EVENTS + "table: {versioning: versioned}\n")
    assert run("plan")[0] == 0
    assert run("create")[0] == 0
    _, out = run("status")
    assert "stamped 1.0.0; read shop.events (view), write shop.events__v1; pending: none" in out, out
    dropped = "  - {name: quantity, type: int, checks: {min: 0}}\n"  # a drop: major, a new __v2
    breaking = contract.read_text().replace("version: 1.0.0", "version: 2.0.0").replace(dropped, "")
    contract.write_text(breaking)
    assert run("plan")[0] == 0
    _, out = run("status", "--format", "json")
    (row,) = json.loads(out)["tables"]
    # The live table is named with its stamp; the planned __v2, not created yet, is the next one.
    assert (row["table"], row["exists"], row["stamped"], row["read"], row["write"]) == (
        "shop.events__v1",
        True,
        "1.0.0",
        "shop.events",
        "shop.events__v1",
    )
    assert row["next"] == {"table": "shop.events__v2", "exists": False, "stamped": None}


def test_status_and_drift_write_nothing(project: Path) -> None:
    assert run("create")[0] == 0

    def tree() -> dict[str, int]:
        return {str(p.relative_to(project)): p.stat().st_mtime_ns for p in project.rglob("*")}

    before = tree()
    assert run("status")[0] == 0
    assert run("drift")[0] == 0
    assert tree() == before


def test_status_and_drift_find_a_pending_versioned_table_through_its_alias_view(project: Path) -> None:
    """Issue 13 item 7: while a versioned migration is pending, both commands read the live table behind the
    alias view and its stamp, and list exactly the migrations not finished."""
    contract = project / "contracts/shop/events.yaml"
    contract.write_text(EVENTS + "table: {versioning: versioned}\n")
    assert run("plan")[0] == 0
    assert run("create")[0] == 0
    dropped = "  - {name: quantity, type: int, checks: {min: 0}}\n"
    contract.write_text(contract.read_text().replace("version: 1.0.0", "version: 2.0.0").replace(dropped, ""))
    assert run("plan")[0] == 0
    (pending,) = sorted(p.stem for p in (project / "migrations/shop.events").glob("0002_*.sql"))
    _, out = run("status", "--format", "json")
    (row,) = json.loads(out)["tables"]
    assert (row["stamped"], [p["migration"] for p in row["pending"]]) == ("1.0.0", [pending]), row
    # A planned migration not applied yet is pending, not drift (issue 38 item 12): the live table is held to
    # the contract it is stamped at, and the pending migration is named.
    code, out = run("drift")
    assert code == 0, out
    assert "missing-table" not in out and "does not read" not in out and "✗" not in out, out
    assert out.splitlines()[0].startswith("shop.events (shop.events__v1): "), out
    assert f"· pending: migration {pending} to 2.0.0 pending" in out, out
    assert "the table is at 1.0.0" in out, out


def test_status_after_a_fresh_create_lists_no_old_phases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 8: a table created at its contract's version has nothing pending, whatever the history
    of migrations that other warehouses went through (the project's own sales.orders: four migrations)."""
    import shutil

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "contracts", tmp_path / "contracts")
    shutil.copytree(repo / "migrations", tmp_path / "migrations")
    monkeypatch.chdir(tmp_path)
    assert run("create", "contracts/sales/orders.yaml")[0] == 0
    _, out = run("status", "--format", "json", "contracts/sales/orders.yaml")
    (row,) = json.loads(out)["tables"]
    assert len(list((tmp_path / "migrations/sales.orders").glob("*.sql"))) == 4
    assert (row["stamped"], row["pending"]) == ("3.0.0", []), row
    code, out = run("status", "contracts/sales/orders.yaml")
    assert code == 0 and out.splitlines()[-1].endswith("pending: none"), out


def test_drift_keeps_every_deprecation_mark(project: Path) -> None:
    """Issue 13 item 4: a column deprecated by one release and awaiting its drop keeps its mark (and its
    clock) when the next release deprecates another one; drift shows both as awaiting their drop."""
    from delta_contracts.apply import apply
    from delta_contracts.engine.local.engine import LocalEngine

    contract = project / "contracts/shop/events.yaml"
    contract.write_text(EVENTS.replace("columns:\n", "columns:\n  - {name: note, type: string}\n"))
    assert run("plan")[0] == 0
    contract.write_text(EVENTS.replace("version: 1.0.0", "version: 2.0.0"))  # drops note
    assert run("plan")[0] == 0
    kind = "  - {name: kind, type: string, checks: {enum: [view, buy]}}\n"
    contract.write_text(EVENTS.replace("version: 1.0.0", "version: 3.0.0").replace(kind, ""))
    assert run("plan")[0] == 0
    with LocalEngine(project / "warehouse") as engine:
        applied = apply(engine, project / "migrations", phases=["expand", "populate", "cutover"])
        assert applied.exit_code == 0, applied.failure
        from deltalake import DeltaTable

        marks = DeltaTable(str(project / "warehouse/shop/events")).metadata().configuration
    marked = json.loads(marks["delta_contracts.deprecated.columns"])
    assert sorted(marked) == ["kind", "note"], marks
    _, out = run("drift")
    assert "extra-column" not in out, out
    assert out.count("deprecated, awaiting drop") == 2, out


@pytest.mark.skipif(SKIP_SPARK, reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user")
def test_create_drift_status_through_spark_connect(project: Path, connect_url: str) -> None:
    """The commands against delta-spark behind a Spark Connect server, chosen on the command line."""
    contract = project / "contracts/shop/events.yaml"
    contract.write_text(EVENTS.replace("id: shop.events", "id: cliconnect.events"))
    flags = ("--engine", "connect", "--url", connect_url)
    code, out = run("create", *flags)
    assert (code, out.splitlines()[-1]) == (0, "cliconnect.events 1.0.0: created cliconnect.events"), out
    code, out = run("create", *flags)
    assert (code, out.splitlines()[-1]) == (0, "cliconnect.events 1.0.0: verified cliconnect.events"), out
    code, out = run("drift", *flags)
    assert (code, out.splitlines()[-1]) == (0, "cliconnect.events (cliconnect.events): no drift"), out
    code, out = run("status", "--format", "json", *flags)
    (row,) = json.loads(out)["tables"]
    assert (code, row["stamped"], row["exists"]) == (0, "1.0.0", True), out
    # the table lives behind the server: locally there is at most the toolkit's own state (its ledger)
    local = project / "warehouse"
    assert not local.exists() or sorted(p.name for p in local.iterdir()) == ["_delta_contracts"]
