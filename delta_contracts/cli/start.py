"""`delta-contracts init` without `--from-table`/`--all`: start a project in the working folder.

It writes `contracts/contracts.yml` (the defaults, commented), one example contract, the contract JSON
Schema its `yaml-language-server` line names, and on request the GitHub Actions workflow (`--ci`) and the
pre-commit config (`--pre-commit`). The files ship inside the package (`cli/files/`), so an installed
wheel writes the same files as a clone; a file that exists is never overwritten without `--force`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from delta_contracts.cli.errors import UsageError

FILES = Path(__file__).resolve().parent / "files"
CONTRACTS = Path("contracts")
EXAMPLE = CONTRACTS / "example" / "orders.yaml"
SCHEMA = CONTRACTS / "contract.schema.json"
WORKFLOW = Path(".github") / "workflows" / "contracts.yml"
PRE_COMMIT = Path(".pre-commit-config.yaml")
DEFAULT_OWNER = "my-team"


@dataclass(frozen=True)
class _File:
    path: Path  # relative to the project's folder
    text: str


def project_files(owner: str | None, target: str, ci: bool, pre_commit: bool) -> list[_File]:
    """What `init` writes, in the order it writes it."""
    from delta_contracts.contract.jsonschema import contract_json_schema
    from delta_contracts.contract.project import PROJECT_FILE

    # A JSON string is a YAML scalar: a team name with a colon or a quote stays one value.
    settings = (FILES / "start" / "contracts.yml").read_text(encoding="utf-8")
    settings = settings.replace("__OWNER__", json.dumps(owner or DEFAULT_OWNER)).replace("__TARGET__", target)
    files = [
        _File(CONTRACTS / PROJECT_FILE, settings),
        _File(EXAMPLE, (FILES / "start" / "example.yaml").read_text(encoding="utf-8")),
        _File(SCHEMA, json.dumps(contract_json_schema(), indent=2) + "\n"),
    ]
    if ci:
        files.append(_File(WORKFLOW, (FILES / "github-actions.yml").read_text(encoding="utf-8")))
    if pre_commit:
        files.append(_File(PRE_COMMIT, pre_commit_config()))
    return files


def pre_commit_config() -> str:
    """A `.pre-commit-config.yaml` running the hooks of `.pre-commit-hooks.yaml` as local hooks: they run the
    `delta-contracts` installed where pre-commit runs, so the config names no repository to fetch."""
    import yaml

    hooks = yaml.safe_load((FILES / "pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    header = (
        "# delta-contracts' checks as pre-commit hooks (`pre-commit install`). They run the delta-contracts\n"
        "# installed in the environment pre-commit runs in, the version your CI uses.\n"
    )
    return header + yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False, width=110)


def start_project(
    folder: Path, owner: str | None, target: str, ci: bool, pre_commit: bool, force: bool
) -> None:
    """Write the project's files under `folder`; refuse (exit 2, nothing written) when one exists and
    `force` is not given."""
    from delta_contracts.contract.load import display_path

    files = project_files(owner, target, ci, pre_commit)
    existing = [folder / f.path for f in files if (folder / f.path).exists()]
    if existing and not force:
        shown = ", ".join(display_path(p) for p in existing)
        raise UsageError(
            f"{shown} {'exists' if len(existing) == 1 else 'exist'}: nothing written (--force overwrites)"
        )
    for file in files:
        destination = folder / file.path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(file.text, encoding="utf-8")
        print(f"wrote {display_path(destination)}", file=sys.stderr)
    print(
        "next: edit contracts/example/orders.yaml into one of your tables, then "
        "delta-contracts lint, plan, apply",
        file=sys.stderr,
    )
    if ci:  # no package index serves delta-contracts: the workflow installs it from a git URL
        print(
            "the workflow installs delta-contracts from the repository variable DELTA_CONTRACTS_GIT: set it "
            "to the git URL your team gets delta-contracts from, at a version (…/delta-contracts@v0.1.0)",
            file=sys.stderr,
        )
