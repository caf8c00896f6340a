"""`init --from-table` on tables created from the example contracts (local engine): the adopted contract
differs from the original in nothing but descriptive (patch-class) details, and planning after it never
creates."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.load import contract_files, load_contract
from delta_contracts.diff import diff
from delta_contracts.plan.planner import plan
from delta_contracts.tables.create import create_table
from delta_contracts.target import Target

pytestmark = pytest.mark.engine
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = contract_files([ROOT / "contracts"])
runner = CliRunner()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from delta_contracts.engine.local.engine import LocalEngine

    path = tmp_path_factory.mktemp("adopt-warehouse")
    with LocalEngine(path) as engine:
        for example in EXAMPLES:
            assert create_table(engine, load_contract(example).contract).created
    yield path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "contracts").mkdir()
    shutil.copy(ROOT / "contracts" / "contracts.yml", tmp_path / "contracts" / "contracts.yml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_init_gives_back_the_contract_and_plans_no_create(
    example: Path, warehouse: Path, project: Path
) -> None:
    original = load_contract(example).contract
    out = project / "contracts" / original.table_parts[0] / f"{original.table_parts[1]}.yaml"
    done = runner.invoke(
        app, ["init", "--from-table", original.id, "--warehouse", str(warehouse), "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    adopted = load_contract(out).contract

    # The DDL holds columns, types, nullability, comments, defaults, CHECKs, partitioning and properties;
    # the stamp (`delta_contracts.contract`) owner, consumers, tags, quality and evolution: nothing differs.
    changes = diff(original, adopted)
    assert changes == [], [(c.code, c.change_class.value, c.message) for c in changes]
    assert adopted.quality == original.quality and adopted.evolution == original.evolution
    assert adopted.owner == original.owner and adopted.consumers == original.consumers
    # Planning from the original to the adopted contract at the next patch version only restamps the table.
    major, minor, patch = original.version.split(".")
    later = adopted.model_copy(update={"version": f"{major}.{minor}.{int(patch) + 1}"})
    migration, _ = plan(original, later, Target.DELTA_4)
    assert {op.kind for op in migration.ops} <= {"stamp_contract"}, [op.summary() for op in migration.ops]

    # The baseline records the table as already at this version: nothing to plan, nothing to create.
    check = runner.invoke(app, ["plan", "--check", str(out)])
    assert check.exit_code == 0, check.output
    assert f"{original.id} {original.version}: up to date" in check.output

    # The first real change plans an ALTER from the baseline.
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    data["version"] = f"{major}.{int(minor) + 1}.0"
    data["columns"].append({"name": "note", "type": "string"})
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    planned = runner.invoke(app, ["plan", str(out)])
    assert planned.exit_code == 0, planned.output
    folder = project / "migrations" / original.id
    second = json.loads(next(folder.glob("0002_*.json")).read_text(encoding="utf-8"))
    kinds = [op["kind"] for op in second["migration"]["ops"]]
    assert "create_table" not in kinds and kinds[0] == "add_column", kinds


def test_init_reads_a_versioned_table_through_its_alias_view(warehouse: Path, project: Path) -> None:
    done = runner.invoke(app, ["init", "--from-table", "sales.orders", "--warehouse", str(warehouse)])
    assert done.exit_code == 0, done.output
    assert "versioning: versioned" in done.stdout
    assert "# Adopted from the live table sales.orders__v3" in done.stdout
    baseline = json.loads(next((project / "migrations" / "sales.orders").glob("0001_*.json")).read_text())
    assert baseline["state"]["physical"] == ["sales", "orders__v3"]
    assert baseline["migration"]["ops"] == []  # stamped 3.0.0 already: the baseline has nothing to do


def test_init_all_adopts_every_table_of_a_schema_once(warehouse: Path, project: Path) -> None:
    done = runner.invoke(app, ["init", "--all", "sales", "--warehouse", str(warehouse)])
    assert done.exit_code == 0, done.output
    written = sorted(p.name for p in (project / "contracts" / "sales").iterdir())
    assert written == ["customers.yaml", "orders.yaml"]  # orders__v3 is adopted through its view
    again = runner.invoke(app, ["init", "--from-table", "sales.customers", "--warehouse", str(warehouse)])
    assert again.exit_code == 2
    assert "already holds migrations" in again.stderr


def test_init_refuses_what_it_cannot_adopt(warehouse: Path, project: Path) -> None:
    missing = runner.invoke(app, ["init", "--from-table", "sales.nothing", "--warehouse", str(warehouse)])
    assert missing.exit_code == 2 and "no table or alias view sales.nothing" in missing.stderr
    both = runner.invoke(app, ["init", "--from-table", "a.b", "--all", "a", "--warehouse", str(warehouse)])
    assert both.exit_code == 2


def test_dataclass_fields_of_live_tables_are_all_read() -> None:
    """A new LiveTable field is a new fact about tables: adopt must decide what to do with it."""
    from delta_contracts.live import LiveTable

    known = {
        "name",
        "location",
        "columns",
        "properties",
        "checks",
        "partition_columns",
        "clustering_columns",
        "min_reader_version",
        "min_writer_version",
        "reader_features",
        "writer_features",
        "version",
        "comment",
    }
    assert {f.name for f in dataclasses.fields(LiveTable)} == known


def test_an_adopted_table_is_not_stamped_and_its_history_before_adoption_is_not_drift(project: Path) -> None:
    """A table a team made by hand (CTAS, then a property): `status` right after `init` says it is not
    stamped yet (not "not created"); `drift` after the baseline is applied flags neither the CTAS nor the
    ALTER made before adoption, and still flags a change made after it."""
    from delta_contracts.engine.local.engine import LocalEngine

    warehouse = project / "warehouse"
    warehouse.mkdir()
    with LocalEngine(warehouse) as engine:
        engine.sql("CREATE SCHEMA IF NOT EXISTS `ops`")
        where = engine.location(("ops", "jobs"))
        engine.sql(
            f"CREATE TABLE `ops`.`jobs` USING delta LOCATION '{where}' "
            "AS SELECT CAST(1 AS BIGINT) AS `job_id`, 'a' AS `name`"
        )
        engine.sql("ALTER TABLE `ops`.`jobs` SET TBLPROPERTIES ('team.note' = 'made by hand')")

    def cli(*args: str) -> tuple[int, str]:
        done = runner.invoke(app, [*args])
        return done.exit_code, done.stdout + done.stderr

    out = project / "contracts/ops/jobs.yaml"
    code, said = cli("init", "--from-table", "ops.jobs", "--warehouse", str(warehouse), "-o", str(out))
    assert code == 0, said
    code, said = cli("status", "--warehouse", str(warehouse), str(out))
    assert code == 0 and "table ops.jobs not stamped;" in said, said
    code, said = cli("apply", "--warehouse", str(warehouse), str(out))
    assert code == 0, said
    code, said = cli("drift", "--warehouse", str(warehouse), "--format", "json", str(out))
    assert code == 0, said
    assert "out-of-band-commit" not in said, said
    with LocalEngine(warehouse) as engine:  # a change after adoption is still drift
        engine.sql("ALTER TABLE `ops`.`jobs` SET TBLPROPERTIES ('team.note' = 'changed later')")
    code, said = cli("drift", "--warehouse", str(warehouse), "--format", "json", str(out))
    assert code == 1 and "out-of-band-commit" in said, said
