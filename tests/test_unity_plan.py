"""What Unity Catalog OSS 0.6.0's connector refuses (plan/unity.py, measured in tests/engine/
test_unity_catalog.py) is refused by `plan` with exit 2, the reason and the way out, before any migration file
is written, when an environment runs on such a server; Databricks' Unity Catalog plans it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app

runner = CliRunner()

HEAD = """\
apiVersion: delta-contracts/v1
id: shop.orders
version: {version}
owner: {{team: shop}}
"""
PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {{name: local, warehouse: ../wh}}
environments:
  dev: {{}}
  prod:
    engine:
      name: spark
      warehouse: ../prod
      unity_catalog: {{uri: 'http://uc:8080', catalogs: [prod]{server}}}
    catalog: prod
"""
TABLE_CREATED = (
    "columns:\n  - {name: order_id, type: bigint, nullable: false}\n  - {name: amount, type: int}\n"
)
# 2.0.0 makes the in-place table versioned with a new shape: the cutover renames shop.orders away.
TABLE_VERSIONED = (
    "table: {versioning: versioned}\ncolumns:\n  - {name: order_id, type: bigint, nullable: false}\n"
)
FIELD_CREATED = (
    "columns:\n  - {name: order_id, type: bigint, nullable: false}\n"
    "  - {name: addr, type: 'struct<zip:string,n:int>'}\n"
)
FIELD_RENAMED = (
    "columns:\n  - {name: order_id, type: bigint, nullable: false}\n"
    "  - {name: addr, type: 'struct<postal_code:string,n:int>', renamed_fields: {zip: postal_code}}\n"
)


def _plan(root: Path, server: str, first: str, second: str, version: str) -> tuple[int, str]:
    (root / "contracts").mkdir(exist_ok=True)
    (root / "contracts" / "contracts.yml").write_text(PROJECT.format(server=server))
    contract = root / "contracts" / "orders.yaml"
    contract.write_text(HEAD.format(version="1.0.0") + first)
    result = runner.invoke(app, ["plan", "contracts"])
    assert result.exit_code == 0, result.output
    contract.write_text(HEAD.format(version=version) + second)
    result = runner.invoke(app, ["plan", "contracts"])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("first", "second", "version", "said"),
    [
        (TABLE_CREATED, TABLE_VERSIONED, "2.0.0", "cannot rename a table (ALTER TABLE … RENAME TO"),
        (
            FIELD_CREATED,
            FIELD_RENAMED,
            "2.0.0",
            "cannot rename a column or field (ALTER TABLE … RENAME COLUMN",
        ),
    ],
    ids=["versioned-cutover-renames-the-table", "field-renamed"],
)
def test_what_the_oss_connector_refuses_is_refused_at_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str, second: str, version: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _plan(tmp_path, "", first, second, version)
    assert code == 2, out
    assert "prod run on Unity Catalog OSS" in out and said in out, out
    assert "engine.unity_catalog.server: databricks" in out, out  # the way out is said
    assert sorted(p.name for p in (tmp_path / "migrations" / "shop.orders").glob("*.sql")) == [
        "0001_create_1.0.0.sql"
    ]


def test_databricks_unity_catalog_plans_the_same_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _plan(tmp_path, ", server: databricks", TABLE_CREATED, TABLE_VERSIONED, "2.0.0")
    assert code == 0, out
    sql = (tmp_path / "migrations" / "shop.orders" / "0002_1.0.0_to_2.0.0.sql").read_text()
    assert "RENAME TO" in sql


def test_the_catalogs_are_registered_through_the_connector(monkeypatch: pytest.MonkeyPatch) -> None:
    from delta_contracts.contract.unity import UnityCatalogSettings
    from delta_contracts.engine.spark.unity import NO_TOKEN, catalog_settings

    monkeypatch.delenv("DELTA_CONTRACTS_UC_TOKEN", raising=False)
    settings = catalog_settings(UnityCatalogSettings(uri="http://uc:8080", catalogs=("dev", "prod")))
    assert settings == {
        "spark.sql.catalog.dev": "io.unitycatalog.spark.UCSingleCatalog",
        "spark.sql.catalog.dev.uri": "http://uc:8080",
        "spark.sql.catalog.dev.token": NO_TOKEN,
        "spark.sql.catalog.prod": "io.unitycatalog.spark.UCSingleCatalog",
        "spark.sql.catalog.prod.uri": "http://uc:8080",
        "spark.sql.catalog.prod.token": NO_TOKEN,
    }
    monkeypatch.setenv("DELTA_CONTRACTS_UC_TOKEN", "dapi-secret")
    assert catalog_settings(UnityCatalogSettings(uri="u", catalogs=("a",)))["spark.sql.catalog.a.token"] == (
        "dapi-secret"
    )


def test_a_server_named_nowhere_is_refused_before_any_engine_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DELTA_CONTRACTS_UC_URI", raising=False)
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "contracts.yml").write_text(
        "engine: {name: spark, warehouse: ../wh, unity_catalog: {catalogs: [prod]}}\n"
    )
    (tmp_path / "contracts" / "orders.yaml").write_text(HEAD.format(version="1.0.0") + TABLE_CREATED)
    assert runner.invoke(app, ["plan", "contracts"]).exit_code == 0
    result = runner.invoke(app, ["apply", "contracts"])
    assert result.exit_code == 2, result.output
    assert "engine.unity_catalog names catalogs (prod) but no server" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "wh").exists()


def test_a_purge_is_refused_on_a_catalog_managed_table_only() -> None:
    """Unity Catalog OSS blocks REORG … APPLY (PURGE) on its managed tables (their protocol lists
    catalogManaged), not on external ones; no other op is refused for it."""
    from delta_contracts.plan.ops import AddColumn, ColumnSpec, Phase
    from delta_contracts.plan.purge import PurgeDroppedColumns
    from delta_contracts.plan.recluster import ReclusterRows
    from delta_contracts.plan.unity import catalog_managed_refusal
    from delta_contracts.tableid import TableId

    table = TableId(("uc", "shop", "orders"))
    purge = PurgeDroppedColumns(table=table, phase=Phase.CONTRACT, columns=("note",))
    managed = ("deletionVectors", "catalogManaged", "columnMapping")
    why = catalog_managed_refusal(purge, managed)
    assert why is not None and "Unity Catalog OSS 0.6.0 blocks" in why and "external" in why, why
    assert catalog_managed_refusal(purge, ("deletionVectors", "columnMapping")) is None
    add = AddColumn(table=table, phase=Phase.EXPAND, column=ColumnSpec(name="n", type="int"))
    assert catalog_managed_refusal(add, managed) is None
    # the recluster after new clustering keys is an OPTIMIZE … FULL: blocked the same way
    recluster = ReclusterRows(table=table, phase=Phase.POPULATE, columns=("day",))
    assert catalog_managed_refusal(recluster, managed) is not None
    assert catalog_managed_refusal(recluster, ("clustering",)) is None


def test_an_alias_view_is_found_in_its_own_catalog_only() -> None:
    """Two catalogs of one server may each hold `shop.orders`: a three-level alias finds its own catalog's
    view, never the other's (the exhaustive UC run found another catalog's alias view for a fresh table); a
    name without its catalog still matches by schema and view (the local engine lists views so)."""
    from delta_contracts.tableid import TableId
    from delta_contracts.tables.drift import alias_view_query

    views = {TableId(("versioned_1", "shop", "orders")): "SELECT * FROM versioned_1.shop.orders__v2"}
    assert alias_view_query(TableId(("telemetry_1", "shop", "orders")), views) is None
    assert alias_view_query(TableId(("versioned_1", "shop", "orders")), views) == next(iter(views.values()))
    assert alias_view_query(TableId(("shop", "orders")), views) == next(iter(views.values()))
    local = {TableId(("shop", "orders")): "SELECT * FROM shop.orders__v1"}
    session_alias = TableId(("spark_catalog", "shop", "orders"))
    assert alias_view_query(session_alias, local) == "SELECT * FROM shop.orders__v1"
