"""Issue 47 items 3 and 4: `init` starts a project from nothing, and a check that finds no contract fails."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_init_in_an_empty_folder_starts_a_project_that_lints_and_plans(folder: Path) -> None:
    code, _, err = cli("init")
    assert code == 0, err
    assert sorted(_files(folder)) == [
        "contracts/contract.schema.json",
        "contracts/contracts.yml",
        "contracts/example/orders.yaml",
    ]
    settings = (folder / "contracts/contracts.yml").read_text()
    assert re.search(r"^target: delta-4\b", settings, re.M)
    assert '  owner: {team: "my-team"}' in settings
    assert sum("#" in line for line in settings.splitlines()) >= 10  # the defaults explained, not bare
    # the example's yaml-language-server line names the schema init wrote, and it is the `schema` command's
    example = (folder / "contracts/example/orders.yaml").read_text()
    named = re.match(r"# yaml-language-server: \$schema=(\S+)\n", example)
    assert named is not None
    schema_file = (folder / "contracts/example" / named.group(1)).resolve()
    assert schema_file == (folder / "contracts/contract.schema.json").resolve()
    code, printed, _ = cli("schema")
    assert json.loads(schema_file.read_text()) == json.loads(printed)

    code, out, err = cli("lint")
    assert (code, out.strip()) == (0, "1 contract(s) checked: all clean"), err
    code, out, err = cli("plan")
    assert code == 0, err
    assert out.startswith("example.orders 1.0.0: written (0001_create_1.0.0,")
    assert (folder / "migrations/example.orders/0001_create_1.0.0.sql").is_file()
    assert cli("plan", "--check")[0] == 0


def test_init_writes_the_ci_workflow_and_the_pre_commit_config_on_request(folder: Path) -> None:
    (folder / "README.md").write_text("a repository without contracts\n")
    code, _, err = cli("init", "--ci", "--pre-commit", "--owner", "crew: rostering", "--target", "delta-3")
    assert code == 0, err
    assert (folder / "README.md").read_text() == "a repository without contracts\n"
    workflow = folder / ".github/workflows/contracts.yml"
    assert workflow.read_text() == (ROOT / "docs/ci/github-actions.yml").read_text()
    config = yaml.safe_load((folder / ".pre-commit-config.yaml").read_text())
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert config == {"repos": [{"repo": "local", "hooks": manifest}]}
    settings = yaml.safe_load((folder / "contracts/contracts.yml").read_text())
    assert settings["defaults"]["owner"] == {"team": "crew: rostering"}
    assert settings["target"] == "delta-3"
    assert cli("lint")[0] == 0


def test_init_overwrites_nothing_without_force(folder: Path) -> None:
    mine = "# my own settings\ntarget: delta-3\n"
    (folder / "contracts").mkdir()
    (folder / "contracts/contracts.yml").write_text(mine)
    code, _, err = cli("init", "--pre-commit")
    assert code == 2
    assert err.strip() == "error: contracts/contracts.yml exists: nothing written (--force overwrites)"
    assert _files(folder) == {"contracts/contracts.yml": mine.encode()}  # nothing else written either

    code, _, err = cli("init", "--force")
    assert code == 0, err
    assert (folder / "contracts/contracts.yml").read_text() != mine
    assert not (folder / ".pre-commit-config.yaml").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-table", "s.t", "--ci"], "--ci, --pre-commit and --force start a project"),
        (["--output", "x.yaml"], "--output: only with --from-table or --all"),
        (["--target", "delta-9"], "--target must be one of delta-3, delta-4, databricks"),
    ],
)
def test_init_refuses_options_that_do_not_fit(folder: Path, args: list[str], message: str) -> None:
    code, _, err = cli("init", *args)
    assert code == 2
    assert message in err
    assert _files(folder) == {}


def _git(folder: Path, *args: str) -> None:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *identity, *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.parametrize(
    "command",
    [["lint"], ["plan", "--check"], ["plan"], ["diff", "--base", "HEAD"], ["lint", "--format", "json"]],
    ids=lambda c: " ".join(c),
)
def test_a_check_that_finds_no_contract_fails(folder: Path, command: list[str]) -> None:
    """Issue 47 item 4: a CI job pointed at the wrong folder must not go green."""
    (folder / "contracts").mkdir()
    (folder / "contracts/contracts.yml").write_text("target: delta-4\n")
    (folder / "contracts/notes.txt").write_text("not a contract\n")
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "no contracts")
    code, out, err = cli(*command)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        "error: no contract in contracts: nothing was checked (contracts are *.yaml files; "
        "`delta-contracts init` starts a project)"
    ]


def test_diff_base_of_contracts_all_deleted_is_a_change_not_zero_contracts(folder: Path) -> None:
    code, _, _ = cli("init")
    assert code == 0
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "start")
    (folder / "contracts/example/orders.yaml").unlink()
    code, out, _ = cli("diff", "--base", "HEAD")
    assert code == 1
    assert "contract example.orders deleted" in out


def test_demo_refuses_a_folder_that_is_not_empty(folder: Path) -> None:
    (folder / "kept").mkdir()
    (folder / "kept" / "notes.txt").write_text("mine\n")
    code, _, err = cli("demo", "--folder", "kept")
    assert code == 2
    assert err.strip() == (
        "error: kept is not an empty folder: the demo builds its project in a folder of its own"
    )
    assert _files(folder) == {"kept/notes.txt": b"mine\n"}
