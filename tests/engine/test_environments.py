"""Environments (issue 39): one contract PR applied to dev, refused on prod, applied to staging, then prod,
each environment on the local engine with its own warehouse (ledger, leases) and table names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.state.ledger import Ledger, Status
from delta_contracts.tableid import TableId
from tests.engine.conftest import JVM

pytestmark = pytest.mark.engine
runner = CliRunner()

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouses/default}
environments:
  dev:
    engine: {warehouse: ../warehouses/dev}
    schema_prefix: dev_
  staging:
    engine: {warehouse: ../warehouses/staging}
    catalog: staging
  prod:
    engine: {warehouse: ../warehouses/prod}
    names: "{schema}_live.{table}"
promote: [dev, staging, prod]
"""

CONTRACT = """\
apiVersion: delta-contracts/v1
id: shop.orders
version: {version}
owner: {{team: shop}}
columns:
  - {{name: order_id, type: bigint, nullable: false}}
"""
NOTE = "  - {name: note, type: string}\n"


def _project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str = PROJECT, columns: str = ""
) -> Path:
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "contracts.yml").write_text(project)
    (tmp_path / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.0.0") + columns)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DELTA_CONTRACTS_ENV", raising=False)
    assert runner.invoke(app, ["plan", "contracts"]).exit_code == 0
    return tmp_path


def _invoke(*args: str) -> tuple[int, str]:
    """The exit code and stdout (with stderr, but for a JSON or Markdown report)."""
    result = runner.invoke(app, list(args))
    report = "--format" in args
    return result.exit_code, result.stdout if report else result.output


def test_a_contract_pr_goes_through_dev_staging_prod_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, monkeypatch)
    for env in ("dev", "staging", "prod"):
        code, out = _invoke("apply", "contracts", "--env", env)
        assert code == 0, out
    # Each environment has its table under its own name, in its own warehouse.
    assert (root / "warehouses/dev/dev_shop/orders").is_dir()
    assert (root / "warehouses/staging/shop/orders").is_dir()  # the local engine keeps schema.table
    assert (root / "warehouses/prod/shop_live/orders").is_dir()

    (root / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.1.0") + NOTE)
    assert _invoke("plan", "contracts")[0] == 0
    assert _invoke("apply", "contracts", "--env", "dev")[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "prod")
    assert code == 2, out
    assert "0002_1.0.0_to_1.1.0 [expand] has not finished in staging" in out
    assert "in dev" not in out  # dev has it

    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    assert code == 0, out
    matrix = {(c["contract"], c["environment"]): c for c in json.loads(out)["cells"]}
    assert matrix["shop.orders", "dev"]["stamped"] == "1.1.0"
    assert matrix["shop.orders", "staging"]["stamped"] == "1.0.0"
    assert [p["migration"] for p in matrix["shop.orders", "prod"]["pending"]] == ["0002_1.0.0_to_1.1.0"]
    assert matrix["shop.orders", "prod"]["table"] == "shop_live.orders"

    assert _invoke("apply", "contracts", "--env", "staging")[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "prod")
    assert code == 0, out
    code, out = _invoke("status", "contracts", "--all-envs", "--format", "markdown")
    assert code == 0, out
    assert out.count("1.1.0") >= 3 and "| shop.orders |" in out
    prod_ledger = Ledger(root / "warehouses/prod/_delta_contracts").entries()
    assert {e.table for e in prod_ledger if e.op_index} == {"shop_live.orders"}


def test_forcing_prod_ahead_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, monkeypatch)
    monkeypatch.setenv("DELTA_CONTRACTS_ENV", "prod")
    code, out = _invoke("apply", "contracts", "--force", "--reason", "hotfix")
    assert code == 0, out
    forced = [e for e in Ledger(root / "warehouses/prod/_delta_contracts").entries() if e.reason == "hotfix"]
    assert [e.status for e in forced] == [Status.PROMOTION_FORCED.value]
    assert "has not finished in dev" in forced[0].detail and "staging" in forced[0].detail


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("    schema_prefix: dev_\n", "environments.staging.engine.warehouse: staging and dev share"),
        (
            '    names: "{schema}.{table}"\n',
            "shop.orders becomes shop.orders in staging, the table shop.orders",
        ),
        ('    names: "{catalog}.{schema}.{table}"\n', "names no catalog"),
        ('    names: "{schema}.{table}"\n    catalog: prod\n', "names and catalog together"),
        ("    schema_prefix: bad-\n", "is not a schema prefix"),
    ],
)
def test_bad_environments_are_refused_at_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, expected: str
) -> None:
    (tmp_path / "contracts").mkdir()
    staging = (
        "    engine: {warehouse: ../warehouses/dev}\n"
        if "dev_" in change
        else ("    engine: {name: spark, warehouse: ../warehouses/s}\n")
    )
    project = (
        "environments:\n  dev:\n    engine: {name: spark, warehouse: ../warehouses/dev}\n"
        f"  staging:\n{staging}{'' if 'dev_' in change else change}"
    )
    (tmp_path / "contracts" / "contracts.yml").write_text(project)
    (tmp_path / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.0.0"))
    monkeypatch.chdir(tmp_path)
    code, out = _invoke("status", "contracts", "--env", "staging")
    assert code == 2, out
    line = next(x for x in out.splitlines() if expected in x)
    assert line.startswith("contracts/contracts.yml:") and line.split(":")[1].isdigit()


def test_an_unknown_env_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, monkeypatch)
    code, out = _invoke("apply", "contracts", "--env", "qa")
    assert code == 2
    assert (
        "contracts/contracts.yml:4:1: environments: no environment 'qa' (declared: dev, staging, prod)" in out
    )


def test_a_crash_in_staging_mid_migration_is_resumed_by_apply_env_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply --env staging` SIGKILLed after the migration's first op committed, before its ledger row: the
    matrix shows staging's migration pending, and `apply --env staging` finishes it, the op found done."""
    from tests.engine.apply_child import fork_server, forked_main

    root = _project(tmp_path, monkeypatch)
    for env in ("dev", "staging"):
        assert _invoke("apply", "contracts", "--env", env)[0] == 0
    (root / "contracts" / "orders.yaml").write_text(CONTRACT.format(version="1.1.0") + NOTE)
    assert _invoke("plan", "contracts")[0] == 0
    assert _invoke("apply", "contracts", "--env", "dev")[0] == 0

    staging = root / "warehouses/staging"
    cut = "0002_1.0.0_to_1.1.0 op 1 ran"
    spec = {
        "warehouse": str(staging),
        "migrations": str(root / "migrations"),
        "contract": "shop.orders",
        "kill_on": cut,
        "killed_log": str(tmp_path / "killed"),
        # staging's mapping (catalog: staging) on the local engine, as `apply --env staging` passes it
        "names": {"catalog": "staging", "one_catalog": True},
    }
    process = fork_server().Process(target=forked_main, args=(spec, str(tmp_path / "child.out")))
    process.start()
    process.join(600)
    assert process.exitcode == -9, (tmp_path / "child.out").read_text(encoding="utf-8")
    assert (tmp_path / "killed").read_text(encoding="utf-8") == cut + "\n"
    entries = Ledger(staging / "_delta_contracts").entries(["shop.orders"])
    assert [e.status for e in entries if e.migration_id.startswith("0002")] == [Status.STARTED.value]

    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    assert code == 0, out
    matrix = {c["environment"]: c for c in json.loads(out)["cells"]}
    assert matrix["staging"]["stamped"] == "1.0.0" and matrix["dev"]["stamped"] == "1.1.0"
    assert [p["migration"] for p in matrix["staging"]["pending"]] == ["0002_1.0.0_to_1.1.0"]

    code, out = _invoke("apply", "contracts", "--env", "staging")
    assert code == 0, out
    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    matrix = {c["environment"]: c for c in json.loads(out)["cells"]}
    assert matrix["staging"]["stamped"] == "1.1.0" and not matrix["staging"]["pending"], matrix
    done = Ledger(staging / "_delta_contracts").entries(["shop.orders"])
    statuses = [e.status for e in done if e.migration_id.startswith("0002") and e.op_index == 1]
    # the op that committed before the kill is found done by its postcondition, not run twice
    assert statuses[0] == Status.STARTED.value and statuses[-1] == Status.SKIPPED.value, statuses
    assert {e.table for e in done if e.op_index} == {"shop.orders"}  # staging's warehouse is its catalog
    code, out = _invoke("apply", "contracts", "--env", "prod")  # staging has it now: prod may go
    assert code == 0, out


@JVM
def test_a_fourth_environment_on_spark_with_a_schema_prefix_comes_after_the_local_ones(
    spark_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dev, staging and prod on the embedded engine, then `lake` on delta-spark (the session the command
    finds running) with a schema prefix and its ledger a catalog table: refused until prod has the migration,
    then applied, and shown in the matrix under its own name. `edge`, after it, reads lake's catalog ledger
    through lake's engine."""
    prefix = f"lk{tmp_path.name[-4:].lower().replace('-', '_')}_"
    envs = (
        f"  lake:\n    engine: {{name: spark, warehouse: ../warehouses/lake, ledger: {prefix}ops.ledger}}\n"
        f"    schema_prefix: {prefix}\n"
        "  edge:\n    engine: {warehouse: ../warehouses/edge}\n    schema_prefix: edge_\n"
        "promote: [dev, staging, prod, lake, edge]\n"
    )
    root = _project(tmp_path, monkeypatch, PROJECT.replace("promote: [dev, staging, prod]\n", envs))
    spark_engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{prefix}shop`")  # delta-spark makes no schema itself
    for env in ("dev", "staging"):
        assert _invoke("apply", "contracts", "--env", env)[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "lake")
    assert code == 2 and "0001_create_1.0.0 [expand] has not finished in prod" in out, out
    assert "in staging" not in out
    assert _invoke("apply", "contracts", "--env", "prod")[0] == 0
    code, out = _invoke("apply", "contracts", "--env", "edge")
    assert code == 2 and "0001_create_1.0.0 [expand] has not finished in lake" in out, out
    code, out = _invoke("apply", "contracts", "--env", "lake")
    assert code == 0, out
    live = spark_engine.describe(TableId((f"{prefix}shop", "orders")))
    assert live is not None and live.properties.get(STAMP_VERSION) == "1.0.0"
    rows = spark_engine.sql(f"SELECT DISTINCT `table` FROM {prefix}ops.ledger WHERE op_index > 0")
    assert [r["table"] for r in rows] == [f"{prefix}shop.orders"]
    assert not (root / "warehouses/lake/_delta_contracts/ledger").exists()
    code, out = _invoke("apply", "contracts", "--env", "edge")
    assert code == 0 and f"reading the ledger of lake ({prefix}ops.ledger) through its spark engine" in out, (
        out
    )

    code, out = _invoke("status", "contracts", "--all-envs", "--format", "json")
    assert code == 0, out
    matrix = {c["environment"]: c for c in json.loads(out)["cells"]}
    assert list(matrix) == ["dev", "staging", "prod", "lake", "edge"]
    assert matrix["lake"]["table"] == f"{prefix}shop.orders" and matrix["lake"]["stamped"] == "1.0.0"
    assert all(cell["stamped"] == "1.0.0" and not cell["pending"] for cell in matrix.values()), matrix


def test_telemetry_diff_readers_and_the_site_name_objects_as_the_environment_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`telemetry collect --env prod` watches prod's names and fills prod's readers log only; `diff --readers
    --env prod` and `telemetry report --env prod` name the objects as prod does; `site --env prod` shows the
    matrix of every environment on its index."""
    deprecated = "  - {name: note, type: string, deprecated: {since: 1.0.0, reason: unused}}\n"
    root = _project(tmp_path, monkeypatch, columns=deprecated)
    assert _invoke("apply", "contracts", "--env", "prod", "--force", "--reason", "test")[0] == 0
    export = tmp_path / "history.jsonl"
    reads = [("alice", "SELECT note FROM shop_live.orders"), ("bob", "SELECT note FROM dev_shop.orders")]
    export.write_text(
        "".join(
            json.dumps({"statement_id": f"q{n}", "statement_text": text, "executed_by": user,
                        "start_time": "2026-11-20T10:00:00+00:00", "client_application": "notebook"}) + "\n"
            for n, (user, text) in enumerate(reads)
        )
    )  # fmt: skip
    code, out = _invoke("telemetry", "collect", "--env", "prod", "--source", f"query-history:{export}")
    assert code == 0 and "1 reader row(s) added" in out, out
    assert not (root / "warehouses/dev/_delta_contracts/readers").exists()
    code, out = _invoke("telemetry", "report", "--env", "prod", "--format", "json")
    assert code == 0, out
    (entry,) = json.loads(out)["objects"]
    assert entry["object"] == "shop_live.orders.note" and [r["user"] for r in entry["readers"]] == ["alice"]

    (root / "next").mkdir()
    (root / "next" / "contracts.yml").write_text(PROJECT)
    (root / "next" / "orders.yaml").write_text(CONTRACT.format(version="2.0.0"))
    args = ("diff", "contracts/orders.yaml", "next/orders.yaml", "--readers", "--format", "json")
    code, out = _invoke(*args, "--env", "prod")
    readers = json.loads(out)["readers"]
    assert "shop_live.orders.note" in json.dumps(readers) and "alice" in json.dumps(readers), readers
    unknown = runner.invoke(app, [*args, "--env", "qa"])
    assert unknown.exit_code == 2 and "contracts.yml:4:1: environments: no environment 'qa'" in unknown.output

    code, out = _invoke("site", "contracts", "--env", "prod", "-o", "site")
    assert code == 0, out
    index = (root / "site" / "index.html").read_text(encoding="utf-8")
    assert "<h2>Environments (these pages: prod)</h2>" in index
    assert "shop_live.orders<br>1.0.0" in index
    assert "dev_shop.orders<br>not created; pending 0001_create_1.0.0 [expand/cutover]" in index
