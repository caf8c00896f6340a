"""Unity Catalog OSS 0.6.0 as the catalog the spark engine runs on (issue 48): three environments as three
catalogs of one server, the CLI's plan, apply, ledger and status on three-level names, with rows; a versioned
contract's alias view swapped there as DROP VIEW + CREATE VIEW; what the connector refuses refused at `plan`.

One server (`unity_server`) and one Spark session (`spark_engine`, the connector on it) per test process; the
CLI runs in this process and finds that session running, as a notebook's would be found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.tableid import TableId
from tests.unity import UnityServer

pytestmark = pytest.mark.engine
runner = CliRunner()

CONTRACT = """\
apiVersion: delta-contracts/v1
id: shop.orders
version: {version}
owner: {{team: shop}}
{table}columns:
  - {{name: order_id, type: bigint, nullable: false}}
  - {{name: amount, type: int, checks: {{min: 0}}}}
"""
NOTE = "  - {name: note, type: string}\n"
ROWS = "(1, 10), (2, 20), (3, 30)"


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout if "--format" in args else result.output


def _project(root: Path, server: UnityServer, catalogs: dict[str, str], table: str = "") -> Path:
    """A project whose environments are catalogs of one server, each with its ledger in its own catalog."""
    listed = ", ".join(catalogs.values())
    envs = "".join(
        f"  {env}:\n    engine: {{ledger: {catalog}.ops.ledger, warehouse: ../wh/{env}}}\n"
        f"    catalog: {catalog}\n"
        for env, catalog in catalogs.items()
    )
    (root / "contracts").mkdir()
    (root / "contracts" / "contracts.yml").write_text(
        "target: delta-4\nmigrations: ../migrations\n"
        f"engine:\n  name: spark\n  unity_catalog: {{uri: '{server.uri}', catalogs: [{listed}]}}\n"
        f"environments:\n{envs}promote: [{', '.join(catalogs)}]\n"
    )
    (root / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.0.0", table=table))
    return root


def _rows(engine: Engine, name: str) -> list[tuple[int, int]]:
    return sorted((r["order_id"], r["amount"]) for r in engine.sql(f"SELECT order_id, amount FROM {name}"))


@pytest.mark.exhaustive  # 2-4 minutes on two loaded cores: each apply commits its ledger through the server
def test_three_environments_as_three_catalogs_of_one_server(
    spark_engine: Engine, unity_server: UnityServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration applied to dev, refused in prod until staging has it, then applied to staging and prod;
    each environment's table and ledger in its own catalog, with rows kept; `status --all-envs` shows the
    three."""
    catalogs = {env: unity_server.fresh_catalog(env) for env in ("dev", "staging", "prod")}
    root = _project(tmp_path, unity_server, catalogs)
    monkeypatch.chdir(root)
    monkeypatch.delenv("DELTA_CONTRACTS_ENV", raising=False)
    assert _invoke("plan", "contracts")[0] == 0
    for env, catalog in catalogs.items():
        code, out = _invoke("apply", "contracts", "--env", env)
        assert code == 0, out
        assert f"create table {catalog}.shop.orders" in out, out
        spark_engine.sql(f"INSERT INTO {catalog}.shop.orders VALUES {ROWS}")

    (root / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.1.0", table="") + NOTE)
    assert _invoke("plan", "contracts")[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "dev")
    assert code == 0, out
    code, out = _invoke("apply", "contracts", "--env", "prod")
    assert code == 2 and "has not finished in staging" in out, out
    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    assert code == 0, out
    cells = {c["environment"]: c for c in json.loads(out)["cells"]}
    assert list(cells) == ["dev", "staging", "prod"]
    assert {env: cell["table"] for env, cell in cells.items()} == {
        env: f"{catalog}.shop.orders" for env, catalog in catalogs.items()
    }
    assert [cells[env]["stamped"] for env in cells] == ["1.1.0", "1.0.0", "1.0.0"]

    for env in ("staging", "prod"):
        code, out = _invoke("apply", "contracts", "--env", env)
        assert code == 0, out
    for catalog in catalogs.values():
        table = f"{catalog}.shop.orders"
        assert _rows(spark_engine, table) == [(1, 10), (2, 20), (3, 30)]
        live = spark_engine.describe(TableId.parse(table))
        assert live is not None and live.properties.get(STAMP_VERSION) == "1.1.0"
        assert "note" in [c.name for c in live.columns]
        ledger = spark_engine.sql(f"SELECT DISTINCT `table` FROM {catalog}.ops.ledger WHERE op_index > 0")
        assert [r["table"] for r in ledger] == [table]
    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    assert code == 0, out
    assert [c["stamped"] for c in json.loads(out)["cells"]] == ["1.1.0"] * 3


VERSIONED = "table: {versioning: versioned}\n"


def test_create_table_in_a_notebook_makes_and_then_verifies_a_versioned_table_and_its_alias_view(
    spark_engine: Engine, unity_catalog: str
) -> None:
    """`create_table(spark, …)` on the notebook's session, the contract's id naming a catalog of the server:
    the table `<catalog>.shop.orders__v1` and the alias view `<catalog>.shop.orders` (CREATE VIEW: the
    connector refuses CREATE OR REPLACE VIEW), rows read through the view; called again, it verifies both."""
    from delta_contracts import create_table
    from delta_contracts.contract.load import parse_contract

    text = CONTRACT.format(version="1.0.0", table=VERSIONED).replace(
        "id: shop.orders", f"id: {unity_catalog}.shop.orders"
    )
    contract = parse_contract(text, Path("orders.yaml")).contract
    first = create_table(spark_engine.spark, contract)  # type: ignore[attr-defined]
    assert first.created, first
    spark_engine.sql(f"INSERT INTO {unity_catalog}.shop.orders__v1 VALUES {ROWS}")
    assert _rows(spark_engine, f"{unity_catalog}.shop.orders") == [(1, 10), (2, 20), (3, 30)]
    kinds = {r["tableName"]: r for r in spark_engine.sql(f"SHOW TABLES IN {unity_catalog}.shop")}
    assert set(kinds) == {"orders", "orders__v1"}
    again = create_table(spark_engine.spark, contract)  # type: ignore[attr-defined]
    assert not again.created and not [d for d in again.notes if d.is_drift], again


@pytest.mark.exhaustive  # a copy, a catch-up and a view swap through the server: minutes on two loaded cores
def test_a_versioned_cutover_swaps_the_alias_view_by_drop_and_create(
    spark_engine: Engine, unity_server: UnityServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A contract versioned from its first version (its table `orders__v1` behind the alias view): its major
    version copies the rows into `orders__v2` and moves the view there, which the OSS connector allows only as
    DROP VIEW + CREATE VIEW; the rows read through the alias are the old ones in the new shape, and the view
    reads the new table."""
    catalog = unity_server.fresh_catalog("versioned")
    root = _project(tmp_path, unity_server, {"dev": catalog}, table=VERSIONED)
    monkeypatch.chdir(root)
    monkeypatch.delenv("DELTA_CONTRACTS_ENV", raising=False)
    assert _invoke("plan", "contracts")[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "dev")
    assert code == 0, out
    spark_engine.sql(f"INSERT INTO {catalog}.shop.orders__v1 VALUES {ROWS}")

    # 2.0.0 narrows amount to smallint (converted by a declared expression): a new shape, so a new table
    narrower = CONTRACT.format(version="2.0.0", table=VERSIONED).replace(
        "type: int, checks: {min: 0}", "type: smallint, convert: {expression: 'CAST(amount AS SMALLINT)'}"
    )
    (root / "contracts" / "orders.yaml").write_text(narrower)
    code, out = _invoke("plan", "contracts")
    assert code == 0, out
    code, out = _invoke("apply", "contracts", "--env", "dev")
    assert code == 0, out
    alias = f"{catalog}.shop.orders"
    rows = spark_engine.sql(f"SELECT order_id, amount FROM {alias}")
    assert sorted((r["order_id"], r["amount"]) for r in rows) == [(1, 10), (2, 20), (3, 30)]
    live = spark_engine.describe(TableId.parse(f"{catalog}.shop.orders__v2"))
    assert live is not None and [c.type for c in live.columns if c.name == "amount"] == ["smallint"]
    text = spark_engine.view_text(TableId.parse(alias))  # type: ignore[attr-defined]
    assert text is not None and "orders__v2" in text and "orders__v1" not in text, text


@pytest.mark.exhaustive
def test_telemetry_attributes_reads_of_three_level_names_to_the_contract(
    spark_engine: Engine, unity_catalog: str, tmp_path: Path
) -> None:
    """A query history naming `<catalog>.shop.orders` (the alias view, its text read from the server) and
    `<catalog>.shop.orders__v1` (its table): a read of the watched column is logged under the name the
    statement used (telemetry/impact.py); a statement that reads other columns, or another catalog's table of
    the same name, is not."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from delta_contracts import create_table
    from delta_contracts.contract.load import parse_contract
    from delta_contracts.telemetry.log import read_rows
    from delta_contracts.telemetry.objects import watched_on
    from delta_contracts.telemetry.pipeline import collect
    from delta_contracts.telemetry.sources import parse_source, read_source

    text = CONTRACT.format(version="1.0.0", table=VERSIONED).replace(
        "id: shop.orders", f"id: {unity_catalog}.shop.orders"
    )
    contract = parse_contract(text, Path("orders.yaml")).contract
    assert create_table(spark_engine.spark, contract).created  # type: ignore[attr-defined]
    watched_column = f"{unity_catalog}.shop.orders.amount"
    physical_column = f"{unity_catalog}.shop.orders__v1.amount"
    watched = watched_on(spark_engine, [contract], extra=[watched_column, physical_column])
    statements = {
        "q1": f"SELECT amount FROM {unity_catalog}.shop.orders WHERE order_id = 1",
        "q2": f"SELECT order_id, amount FROM {unity_catalog}.shop.orders__v1",
        "q3": f"SELECT order_id FROM {unity_catalog}.shop.orders",
        "q4": "SELECT amount FROM other.shop.orders",
    }
    export = tmp_path / "history.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"statement_id": sid, "statement_text": sql, "executed_by": "ana", "start_time": None}
                for sid, sql in statements.items()
            ]
        ),
        export,
    )
    spark = spark_engine.spark  # type: ignore[attr-defined]
    spec = parse_source(f"query-history:{export}")
    collect(spark, read_source(spark, spec), spec.name, watched, tmp_path / "state")
    logged = {(r["object"], r["statement_id"]) for r in read_rows(tmp_path / "state")}
    assert logged == {(watched_column, "q1"), (physical_column, "q2")}, logged


CHANGED = """\
apiVersion: delta-contracts/v1
id: shop.orders
version: 1.1.0
owner: {team: shop}
table: {properties: {delta.appendOnly: 'false', team.tier: gold}}
columns:
  - {name: order_id, type: bigint, nullable: false}
  - {name: amount, type: bigint, checks: {min: 0}}
  - {name: note, type: string, description: added in 1.1.0}
"""


def _end_state(engine: Engine, name: str) -> dict[str, object]:
    live = engine.describe(TableId.parse(name))
    assert live is not None, name
    return {
        "rows": _rows(engine, name),
        "columns": [(c.name, c.type, c.nullable) for c in live.columns],
        "checks": live.checks,
        "properties": {k: v for k, v in live.properties.items() if not k.startswith(("delta.", "io."))},
        "appendOnly": live.properties.get("delta.appendOnly"),
    }


@pytest.mark.exhaustive  # each apply commits its ledger through the server: minutes on two loaded cores
def test_an_in_place_migration_ends_on_unity_catalog_where_it_ends_on_the_session_catalog(
    spark_engine: Engine, unity_server: UnityServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same contracts applied through the CLI to a managed table of a Unity Catalog catalog and to the
    session catalog, rows written between: a column added, a type widened, table
    properties set; rows by key, columns, CHECKs and properties equal."""
    catalog = unity_server.fresh_catalog("in_place")
    (tmp_path / "uc").mkdir()
    uc = _project(tmp_path / "uc", unity_server, {"dev": catalog})
    session = tmp_path / "session"
    (session / "contracts").mkdir(parents=True)
    prefix = f"s{tmp_path.name[-6:].lower().replace('-', '_')}_"
    (session / "contracts" / "contracts.yml").write_text(
        "target: delta-4\nmigrations: ../migrations\nengine: {name: spark, warehouse: ../wh}\n"
        f"environments:\n  dev: {{schema_prefix: {prefix}}}\n"
    )
    spark_engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{prefix}shop`")
    names = {uc: f"{catalog}.shop.orders", session: f"{prefix}shop.orders"}
    for root, name in names.items():
        (root / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.0.0", table=""))
        monkeypatch.chdir(root)
        assert _invoke("plan", "contracts")[0] == 0
        code, out = _invoke("apply", "contracts", "--env", "dev")
        assert code == 0, out
        spark_engine.sql(f"INSERT INTO {name} VALUES {ROWS}")
        (root / "contracts" / "orders.yaml").write_text(CHANGED)
        assert _invoke("plan", "contracts")[0] == 0
        code, out = _invoke("apply", "contracts", "--env", "dev")
        assert code == 0, out
        spark_engine.sql(f"INSERT INTO {name} VALUES (4, 3000000000, 'big')")
    on_uc, on_session = (_end_state(spark_engine, name) for name in names.values())
    assert on_uc == on_session
    assert on_uc["rows"] == [(1, 10), (2, 20), (3, 30), (4, 3000000000)]
    properties = on_uc["properties"]
    assert isinstance(properties, dict) and properties["team.tier"] == "gold", properties
