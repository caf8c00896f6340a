"""Engine settings: flags win over environment variables, which win over contracts.yml."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.contract.project import EngineSettings
from delta_contracts.engine.base import EngineError
from delta_contracts.engine.select import choose

PROJECT = EngineSettings(name="spark", url=None, warehouse="../wh-from-yml")
ROOT = Path("/repo/contracts")


def test_contracts_yml_applies_without_flags_or_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("DELTA_CONTRACTS_ENGINE", "DELTA_CONTRACTS_URL", "DELTA_CONTRACTS_WAREHOUSE"):
        monkeypatch.delenv(key, raising=False)
    choice = choose(name=None, url=None, warehouse=None, project=PROJECT, project_root=ROOT)
    # relative to contracts.yml, and said without `..` (issue 38 item 13)
    assert (choice.name, str(choice.warehouse)) == ("spark", "/repo/wh-from-yml")


def test_environment_beats_contracts_yml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTA_CONTRACTS_ENGINE", "local")
    monkeypatch.setenv("DELTA_CONTRACTS_WAREHOUSE", "/tmp/env-wh")
    choice = choose(name=None, url=None, warehouse=None, project=PROJECT, project_root=ROOT)
    assert (choice.name, choice.warehouse) == ("local", Path("/tmp/env-wh"))


def test_flags_beat_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTA_CONTRACTS_ENGINE", "local")
    monkeypatch.setenv("DELTA_CONTRACTS_URL", "sc://env:15002")
    choice = choose(
        name="connect", url="sc://flag:15002", warehouse=Path("w"), project=PROJECT, project_root=ROOT
    )
    assert (choice.name, choice.url, choice.warehouse) == ("connect", "sc://flag:15002", Path("w"))


def test_connect_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELTA_CONTRACTS_URL", raising=False)
    with pytest.raises(EngineError, match="needs --url"):
        choose(name="connect", url=None, warehouse=None, project=PROJECT, project_root=ROOT)


def test_unknown_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EngineError, match="unknown engine 'duckdb'"):
        choose(name="duckdb", url=None, warehouse=None, project=PROJECT, project_root=ROOT)


def test_unreachable_connect_server_is_a_clear_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from typer.testing import CliRunner

    from delta_contracts.cli import app

    shutil.copytree(Path(__file__).resolve().parents[1] / "contracts", tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["drift", "--engine", "connect", "--url", "sc://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "cannot reach Spark Connect at 127.0.0.1:1" in result.output
    assert "Traceback" not in result.output


def test_the_ledger_table_goes_to_spark_and_connect_not_to_local(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("DELTA_CONTRACTS_ENGINE", "DELTA_CONTRACTS_URL", "DELTA_CONTRACTS_WAREHOUSE"):
        monkeypatch.delenv(key, raising=False)
    project = EngineSettings(name="spark", ledger="main.`ops-team`.ledger")
    chosen = {
        name: choose(name=name, url="sc://h:1", warehouse=None, project=project, project_root=ROOT).ledger
        for name in ("local", "spark", "connect")
    }
    assert chosen == {
        "local": None,
        "spark": ("main", "ops-team", "ledger"),
        "connect": ("main", "ops-team", "ledger"),
    }


@pytest.mark.parametrize("name", ["ledger", "a.b.c.d", "ops.", "ops.led ger", "ops.`x"])
def test_a_ledger_that_is_no_table_name_is_refused_with_file_line_and_field(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil

    from typer.testing import CliRunner

    from delta_contracts.cli import app

    shutil.copytree(Path(__file__).resolve().parents[1] / "contracts", tmp_path / "contracts")
    settings = tmp_path / "contracts" / "contracts.yml"
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace(
            "  warehouse: ../warehouse\n", f"  warehouse: ../warehouse\n  ledger: {json.dumps(name)}\n"
        ),
        encoding="utf-8",
    )
    line = settings.read_text(encoding="utf-8").splitlines().index(f"  ledger: {json.dumps(name)}") + 1
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["history"])
    assert result.exit_code == 2, result.output
    assert f"contracts.yml:{line}" in result.output and "engine.ledger" in result.output, result.output
    assert "is not a table name" in result.output and "Traceback" not in result.output


def test_the_engines_old_import_paths_still_find_their_names() -> None:
    """`delta_contracts.engine.local` and `.spark` were modules before each became a subpackage: the names
    callers imported from them (the docs' `from delta_contracts.engine.local import LocalEngine`) are still
    there, imported lazily, and nothing else is."""
    import delta_contracts.engine.local as local
    import delta_contracts.engine.spark as spark
    from delta_contracts.engine.local.engine import LocalEngine
    from delta_contracts.engine.spark.connect import connect_engine
    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session

    assert local.LocalEngine is LocalEngine
    assert (spark.SparkEngine, spark.connect_engine) == (SparkEngine, connect_engine)
    assert spark.local_delta_session is local_delta_session
    with pytest.raises(AttributeError):
        _ = spark.no_such_name
