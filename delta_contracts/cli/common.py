"""What every command shares: output formats, exit codes, loading contracts with located errors."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from delta_contracts.cli.errors import EngineStartError, UsageError
from delta_contracts.errors import ExitCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.errors import Problem
    from delta_contracts.contract.load import LoadedContract, LoadedProject
    from delta_contracts.engine.base import Engine
    from delta_contracts.engine.select import EngineChoice
    from delta_contracts.target import Target

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
        raise UsageError(f"no such file or folder: {', '.join(map(str, missing))}")
    return roots


def no_contracts(roots: Sequence[Path]) -> UsageError:
    """Zero contracts is a finding: a check pointed at the wrong folder must not pass (exit 2)."""
    from delta_contracts.contract.load import display_path

    shown = ", ".join(display_path(p) for p in roots)
    return UsageError(
        f"no contract in {shown}: nothing was checked (contracts are *.yaml files; "
        "`delta-contracts init` starts a project)"
    )


def chosen_target(project: LoadedProject, flag: str | None) -> Target:
    """The `--target` flag's target, else contracts.yml's; an unknown one ends the command (exit 2)."""
    from delta_contracts.target import Target

    try:
        return Target(flag) if flag else project.project.target
    except ValueError:
        raise UsageError(f"--target must be one of {', '.join(t.value for t in Target)}") from None


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
    from delta_contracts.contract.errors import ContractError
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
    raise ContractError([unknown_environment(name, list(project.project.environments), where)])


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
        unusable = ContractError(sorted(problems, key=lambda p: p.location))
        unusable.add_note("fix the contracts first (delta-contracts lint)")
        raise unusable
    project = project_for(roots[0])
    environment = chosen_environment(project, env)
    if project.project.environments:
        from delta_contracts.contract.environment_checks import contract_problems

        mapped = contract_problems(project.project, project.source, project.root, loaded)
        if mapped:
            raise ContractError(mapped)
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
            raise UsageError(
                f"the migrations of {', '.join(stray)} are in {display_path(other)}, but this "
                f"project's migrations folder is {display_path(root)}: set `migrations:` in contracts.yml "
                "(relative to it) to the folder that holds them, or move them"
            )
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
    the command with its reason (EngineChoiceError, exit 2)."""
    from delta_contracts.engine.select import choose

    return choose(
        name=engine,
        url=url,
        warehouse=warehouse,
        project=project.project.engine_settings(environment),
        project_root=project.root,
        conf=conf,
    )


def start_engine(choice: EngineChoice, *, allow_rewrite: bool = False, jars_hint: bool = False) -> Engine:
    """The chosen engine, started. One that cannot start (a JVM, jars, a server or a URL is missing) ends the
    command (EngineStartError, exit 2) with the first line of why; `jars_hint`: for spark, also say when
    delta-spark's jars are what is missing."""
    from delta_contracts.contract.errors import first_line
    from delta_contracts.engine.select import open_engine

    try:
        return open_engine(choice, allow_rewrite=allow_rewrite)
    except Exception as err:  # anything: what failed is the engine's own start, whatever it raised
        notes: list[str] = []
        if jars_hint and choice.name == "spark":
            from delta_contracts.engine.spark.session import delta_jars_available

            available, why = delta_jars_available()
            if not available:
                notes.append(f"hint: {why}")
        raise EngineStartError(f"cannot start the {choice.name} engine: {first_line(err)}", *notes) from None


def spark_of(engine: Engine) -> Any:
    """The engine's Spark session, which reading query-history sources needs; an engine without one ends
    the command (exit 2)."""
    spark = getattr(engine, "spark", None)
    if spark is None:
        raise UsageError(f"the {engine.name} engine has no Spark session to read sources with")
    return spark
