"""What every command shares: output formats, exit codes, loading contracts with located errors."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.errors import ExitCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.errors import Problem
    from delta_contracts.contract.load import LoadedContract, LoadedProject
    from delta_contracts.engine.select import EngineChoice

# The commands' exit codes (delta_contracts.errors.ExitCode), by the names the commands use.
EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = ExitCode.OK, ExitCode.FAILED, ExitCode.BAD_INPUT


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    GITHUB = "github"  # workflow annotations; lint, diff and plan --check (others print text)


FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        help="text, json or markdown; github (lint, diff, plan --check): workflow annotations.",
    ),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--conf",
        help="A Spark setting key=value for the session --engine spark starts (repeatable); wins over "
        "contracts.yml engine.spark_conf and spark-defaults.conf.",
        show_default=False,
    ),
]
EnvOption = Annotated[
    str | None,
    typer.Option(
        "--env",
        help="The environment of contracts.yml `environments:` to work in: its engine, warehouse, ledger and "
        "table names (default: DELTA_CONTRACTS_ENV, else the project's one `engine:`).",
        show_default=False,
    ),
]
PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="Contract files or folders (default: contracts/).", show_default=False),
]


def default_paths(paths: list[Path] | None) -> list[Path]:
    return list(paths) if paths else [Path("contracts")]


def existing_paths(paths: list[Path] | None) -> list[Path]:
    """The given contract files or folders (default contracts/); a missing one ends the command (exit 2)."""
    roots = default_paths(paths)
    missing = [p for p in roots if not p.exists()]
    if missing:
        print(f"error: no such file or folder: {', '.join(map(str, missing))}", file=sys.stderr)
        raise typer.Exit(EXIT_INPUT)
    return roots


def print_problems(problems: list[Problem] | tuple[Problem, ...]) -> None:
    for problem in problems:
        print(str(problem), file=sys.stderr)


@dataclass(frozen=True)
class ContractSet:
    contracts: list[LoadedContract]
    project: LoadedProject
    environment: str | None = None  # the environment the command works in (`--env`), if any

    @property
    def names(self) -> NameMapping:
        """How contract ids become table names in the chosen environment (the identity without one)."""
        return self.project.project.names_in(self.environment)


def chosen_environment(project: LoadedProject, flag: str | None) -> str | None:
    """The environment `--env` (or DELTA_CONTRACTS_ENV) names; one contracts.yml does not declare ends the
    command (exit 2) at the `environments:` line."""
    from delta_contracts.contract.environments import environment_name, unknown_environment
    from delta_contracts.contract.project import PROJECT_FILE
    from delta_contracts.contract.yamlsource import Path as FieldPath

    name = environment_name(flag)
    if name is None or name in project.project.environments:
        return name
    key: FieldPath = ("environments",)
    where = project.source.locate(key, key=True)
    if not project.data:
        from delta_contracts.contract.errors import Location
        from delta_contracts.contract.load import display_path

        where = Location(display_path(project.root / PROJECT_FILE), 1, 1)
    print_problems([unknown_environment(name, list(project.project.environments), where)])
    raise typer.Exit(EXIT_INPUT)


def load_valid_contracts(paths: list[Path] | None, env: str | None = None) -> ContractSet:
    """Load and lint every contract; any error or finding stops the command with exit 2 (unusable input).
    `env`: the `--env` flag; the environment it (or DELTA_CONTRACTS_ENV) names must be declared, and every
    environment's mapping must give every contract a table name of its own."""
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.lint import lint_many
    from delta_contracts.contract.load import contract_files, load_contract, project_for

    roots = existing_paths(paths)
    loaded: list[LoadedContract] = []
    problems: list[Problem] = []
    for file in contract_files(roots):
        try:
            loaded.append(load_contract(file))
        except ContractError as err:
            problems.extend(err.problems)
    problems.extend(lint_many(loaded))
    problems = list(dict.fromkeys(problems))  # a broken contracts.yml is reported once, not per contract
    if problems:
        print_problems(sorted(problems, key=lambda p: p.location))
        print("fix the contracts first (delta-contracts lint)", file=sys.stderr)
        raise typer.Exit(EXIT_INPUT)
    try:
        project = project_for(roots[0])
    except ContractError as err:
        print_problems(err.problems)
        raise typer.Exit(err.exit_code) from None
    environment = chosen_environment(project, env)
    if project.project.environments:
        from delta_contracts.contract.environment_checks import contract_problems

        mapped = contract_problems(project.project, project.source, project.root, loaded)
        if mapped:
            print_problems(mapped)
            raise typer.Exit(EXIT_INPUT)
    return ContractSet(loaded, project, environment)


def migrations_root(contracts: ContractSet, override: Path | None = None) -> Path:
    """The project's migrations folder (or `override`); a history of one of these contracts found in another
    folder the project may have used ends the command (exit 2) instead of starting a second history."""
    from delta_contracts.contract.load import display_path
    from delta_contracts.plan.migrations import table_folder

    root = override or contracts.project.migrations_root
    if override is not None:
        return root
    for other in contracts.project.other_migrations_roots():
        stray = [
            item.contract.id
            for item in contracts.contracts
            if table_folder(other, item.contract.id).is_dir()
            and not table_folder(root, item.contract.id).is_dir()
        ]
        if stray:
            print(
                f"error: the migrations of {', '.join(stray)} are in {display_path(other)}, but this "
                f"project's migrations folder is {display_path(root)}: set `migrations:` in contracts.yml "
                "(relative to it) to the folder that holds them, or move them",
                file=sys.stderr,
            )
            raise typer.Exit(EXIT_INPUT)
    return root


def choose_engine(
    project: LoadedProject,
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    conf: Sequence[str] = (),
    environment: str | None = None,
) -> EngineChoice:
    """The engine the flags, the environment variables and contracts.yml (`environment`'s settings, when
    one is chosen) choose; a wrong choice (an unknown engine, connect without a URL, a bad `--conf`) ends
    the command with its reason (exit 2)."""
    from delta_contracts.engine.base import EngineChoiceError
    from delta_contracts.engine.select import choose

    try:
        return choose(
            name=engine,
            url=url,
            warehouse=warehouse,
            project=project.project.engine_settings(environment),
            project_root=project.root,
            conf=conf,
        )
    except EngineChoiceError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(err.exit_code) from None
