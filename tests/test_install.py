"""Issue 47 item 1: installing as users do. The wheel itself is built, installed into a fresh virtualenv and
exercised by `.ci/wheel-smoke` (run by `.ci/run` after `make test`); these tests hold the pieces the smoke
and the README's Install section rely on."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _install_section() -> str:
    return (ROOT / "README.md").read_text().split("## Install", 1)[1].split("\n## ", 1)[0]


def test_version_is_the_package_metadata() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert result.stdout == f"delta-contracts {declared}\n"
    assert version("delta-contracts") == declared


def test_the_readme_install_line_is_the_one_ci_runs() -> None:
    smoke = (ROOT / ".ci" / "wheel-smoke").read_text()
    commands = re.findall(r"^```bash\n(.*?)^```", _install_section(), re.DOTALL | re.MULTILINE)
    install = [line.split("#")[0].strip() for line in commands[0].splitlines() if "pip install dist/" in line]
    assert install == ["python -m pip install dist/delta_contracts-*.whl"]
    assert any(line.strip().startswith(install[0]) for line in smoke.splitlines())
    assert "python -m build" in commands[0] and '"$PYTHON" -m build' in smoke
    # .ci/run keeps the README's test command and runs the smoke after it
    run = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.startswith("#")]
    assert run.index("make test") < run.index(".ci/wheel-smoke")
    # each command the smoke must see exit 0 in an empty folder, and the demo
    for step in ("init", "lint", "plan", "apply", "status"):
        assert re.search(rf"^step {step}\b", smoke, re.MULTILINE), step
    assert "delta-contracts demo" in smoke


def test_nothing_in_the_docs_installs_from_a_package_index() -> None:
    pages = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *(ROOT / "docs" / "ci").glob("*.yml"),
    ]
    for page in pages:
        text = page.read_text()
        assert "pip install delta-contracts" not in text, page
        assert "github.com/example/delta-contracts" not in text, page


def test_the_package_ships_what_init_and_demo_need() -> None:
    """cli/files links the repository's own files; a build copies what they name into the package."""
    files = ROOT / "delta_contracts" / "cli" / "files"
    assert (files / "demo" / "contracts").resolve() == (ROOT / "contracts").resolve()
    assert (files / "demo" / "migrations").resolve() == (ROOT / "migrations").resolve()
    assert (files / "github-actions.yml").resolve() == (ROOT / "docs" / "ci" / "github-actions.yml").resolve()
    assert (files / "pre-commit-hooks.yaml").resolve() == (ROOT / ".pre-commit-hooks.yaml").resolve()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "cli/files/**/*" in data["delta_contracts"]


def _cache_with_jars(folder: Path) -> Path:
    jars = folder / "jars" / "delta-4-4.4.0"
    jars.mkdir(parents=True)
    (jars / "delta-spark_4.2_2.13-4.4.0.jar").write_bytes(b"")
    (jars / "delta-storage-4.4.0.jar").write_bytes(b"")
    return jars


def test_jars_reports_the_cached_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jars = _cache_with_jars(tmp_path)
    monkeypatch.setenv("DELTA_CONTRACTS_CACHE", str(tmp_path))
    result = runner.invoke(app, ["jars"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"delta-4: io.delta:delta-spark_4.2_2.13:4.4.0 -> {jars} (2 jars)\n"


def test_jars_without_maven_says_what_else_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTA_CONTRACTS_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn on it
    result = runner.invoke(app, ["jars", "delta-3"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: delta-3: Maven (mvn) is not on the PATH",
        "without Maven, a delta-spark session resolves the same jars through Spark's own Ivy when it starts "
        "(network needed then); or set DELTA_CONTRACTS_DELTA_JARS to a folder holding them",
    ]
    assert not (tmp_path / "jars").exists()


def test_jars_refuses_an_unknown_target() -> None:
    result = runner.invoke(app, ["jars", "delta-9"])
    assert result.exit_code == 2
    assert result.stderr == "error: unknown target delta-9: give delta-4, delta-3, derby, unitycatalog\n"
