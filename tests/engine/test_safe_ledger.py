"""One ledger and one lease per warehouse, whoever runs (issue 29, items 3 and 7), on delta-spark.

The API's `apply(spark, "migrations")` kept its ledger and lease in `./.delta-contracts` of the working
directory: it ran while the CLI held the table and its runs were missing from the CLI's `history`. And a
deleted ledger silently dropped the checksum check: every op ran again as if nothing had been applied.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.apply import EXIT_DONE, EXIT_HELD, EXIT_INPUT, apply
from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.engine import SparkEngine
from delta_contracts.state.lease import Lease
from tests.builders import MINIMAL

pytestmark = pytest.mark.engine


_schemas = itertools.count()


def project_with_table(engine: Engine, root: Path) -> tuple[Path, str]:
    """A project as `init` lays it out — contracts/contracts.yml (`migrations: ../migrations`, a warehouse
    of its own) and one small contract, planned — under a schema of the test's own: (migrations, id)."""
    contract = f"safeledger{next(_schemas)}_{os.getpid()}.orders"
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{contract.split('.')[0]}`")
    folder = root / "contracts"
    folder.mkdir(parents=True)
    (folder / "contracts.yml").write_text(
        "migrations: ../migrations\nengine: {name: local, warehouse: ../warehouse}\n", encoding="utf-8"
    )
    doc = yaml.safe_load(MINIMAL)
    doc["id"] = contract
    doc["columns"][1].pop("checks")  # two ops to apply: create the table, stamp it
    (folder / "orders.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(folder)])
    assert result.exit_code == 0, result.output
    return root / "migrations", contract


def test_the_api_takes_the_cli_s_lease_and_ledger_from_any_directory(
    spark_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = spark_engine.spark  # type: ignore[attr-defined]
    project = tmp_path / "project"
    migrations, contract = project_with_table(spark_engine, project)
    state = project / "warehouse" / "_delta_contracts"  # where the CLI keeps them for this project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cli_runner = Lease(state, contract).acquire()  # a CLI run in progress
    try:
        held = apply(spark, migrations, to_version="1.0.0")
        assert held.exit_code == EXIT_HELD and [h.table for h in held.held] == [contract]
    finally:
        cli_runner.release()
    done = apply(spark, migrations, to_version="1.0.0")
    assert done.exit_code == EXIT_DONE, done.refused
    assert not (elsewhere / ".delta-contracts").exists()
    result = CliRunner().invoke(app, ["history", contract, "--contracts", str(project / "contracts")])
    assert result.exit_code == 0, result.output
    assert "0001_create_1.0.0 op 1 [expand] create_table: succeeded" in result.output


def test_a_deleted_ledger_is_noticed_and_a_new_one_needs_force(spark_engine: Engine, tmp_path: Path) -> None:
    spark = spark_engine.spark  # type: ignore[attr-defined]
    migrations, contract = project_with_table(spark_engine, tmp_path)
    engine = SparkEngine(spark, tmp_path / "state")
    assert apply(engine, migrations, to_version="1.0.0").exit_code == EXIT_DONE
    shutil.rmtree(tmp_path / "state" / "ledger")
    refused = apply(engine, migrations, to_version="1.0.0")
    assert refused.exit_code == EXIT_INPUT
    ((name, why),) = refused.refused
    assert name == contract and "is stamped 1.0.0 by delta-contracts" in why and "--force --reason" in why
    forced = apply(engine, migrations, to_version="1.0.0", force_reason="ledger lost with the old bucket")
    assert forced.exit_code == EXIT_DONE, forced.refused
    from delta_contracts.state.ledger import Ledger

    (restart, *_) = Ledger(engine.ledger_table()).entries([contract])
    assert restart.status == "ledger_restarted" and restart.reason == "ledger lost with the old bucket"
    assert apply(engine, migrations, to_version="1.0.0").exit_code == EXIT_DONE  # the new ledger counts


def test_a_successful_spark_run_logs_no_java_stack(
    spark_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PySpark logs each SQL error with its Java stack as JSON on stderr (its SQLQueryContextLogger), the
    expected ones included: `apply` on spark printed ~9 KB of them on every successful run. The CLI runs
    here on the suite's session (the active one) and every record that logger lets through is caught."""
    import logging

    from pyspark.logger import PySparkLogger

    project = tmp_path / "project"
    _, contract = project_with_table(spark_engine, project)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    loggers = [
        PySparkLogger.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
    ]
    for logger in loggers:
        logger.addHandler(keep)
    monkeypatch.delenv("DELTA_CONTRACTS_ENGINE", raising=False)
    try:
        args = [
            "apply",
            str(project / "contracts"),
            "--engine",
            "spark",
            "--table",
            contract,
            "--to",
            "1.0.0",
        ]
        result = CliRunner().invoke(app, args)
    finally:
        for logger in loggers:
            logger.removeHandler(keep)
    assert result.exit_code == 0, result.output
    assert "create table" in result.output.lower()
    assert [r.getMessage()[:120] for r in records] == []


def test_drift_after_the_api_s_create_table_finds_no_foreign_commit(
    spark_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 item 2: `create_table(spark, …)` in a notebook, then `drift` of the same warehouse, listed the
    API's own CREATE and ADD CONSTRAINT commits as out-of-band (its ledger was elsewhere). A foreign commit
    made by hand after it is still found."""
    from delta_contracts import create_table

    spark = spark_engine.spark  # type: ignore[attr-defined]
    project = tmp_path / "project"
    _, contract = project_with_table(spark_engine, project)
    result = create_table(spark, project / "contracts" / "orders.yaml")
    assert result.created
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    monkeypatch.delenv("DELTA_CONTRACTS_ENGINE", raising=False)
    args = ["drift", str(project / "contracts"), "--engine", "spark", "--warehouse", str(warehouse)]
    clean = CliRunner().invoke(app, args)
    assert clean.exit_code == 0 and "no drift" in clean.output, clean.output
    spark_engine.sql(f"ALTER TABLE {contract} SET TBLPROPERTIES ('team.note' = 'by hand')")
    drifted = CliRunner().invoke(app, args)
    assert drifted.exit_code == 1 and drifted.output.count("out-of-band-commit") == 1, drifted.output
