"""The `delta-contracts` command line: parses arguments, calls the core, prints. Nothing else.

Heavy modules (pydantic models, sqlglot, pyspark) are imported inside the commands so that `--help`
answers at once.
"""

from __future__ import annotations

import json
import sys

import typer

from delta_contracts.cli_common import (
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_OK,
    FormatOption,
    OutputFormat,
    PathsArgument,
    default_paths,
)
from delta_contracts.cli_diff import diff_command
from delta_contracts.cli_plan import plan_command
from delta_contracts.cli_tables import create_command, drift_command, status_command

app = typer.Typer(
    name="delta-contracts",
    help="Delta Lake table governance from YAML data contracts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.command(name="diff")(diff_command)
app.command(name="plan")(plan_command)
app.command(name="create")(create_command)
app.command(name="drift")(drift_command)
app.command(name="status")(status_command)


@app.command()
def lint(paths: PathsArgument = None, fmt: FormatOption = OutputFormat.TEXT) -> None:
    """Check contracts: schema, types, checks, names. Exit 0 clean, 1 findings, 2 unreadable input."""
    from delta_contracts.contract.errors import ContractError, Problem
    from delta_contracts.contract.lint import lint_many
    from delta_contracts.contract.load import LoadedContract, contract_files, load_contract

    roots = default_paths(paths)
    missing = [p for p in roots if not p.exists()]
    if missing:
        print(f"error: no such file or folder: {', '.join(map(str, missing))}", file=sys.stderr)
        raise typer.Exit(EXIT_INPUT)
    files = contract_files(roots)
    loaded: list[LoadedContract] = []
    unreadable: list[Problem] = []
    for file in files:
        try:
            loaded.append(load_contract(file))
        except ContractError as err:
            unreadable.extend(err.problems)
    unreadable = list(dict.fromkeys(unreadable))  # a broken contracts.yml is reported once, not per contract
    findings = lint_many(loaded)
    problems = sorted([*unreadable, *findings], key=lambda p: p.location)
    code = EXIT_INPUT if unreadable else EXIT_FINDINGS if findings else EXIT_OK
    if fmt is OutputFormat.JSON:
        payload = {
            "files": len(files),
            "valid": len(loaded),
            "problems": [p.to_json() for p in problems],
        }
        print(json.dumps(payload, indent=2))
    else:
        for problem in problems:
            print(str(problem))
        if fmt is OutputFormat.MARKDOWN:
            print()
        summary = f"{len(files)} contract(s) checked: {len(unreadable)} error(s), {len(findings)} finding(s)"
        print(summary if problems else f"{len(files)} contract(s) checked: all clean")
    raise typer.Exit(code)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the contract format (for editors: yaml-language-server)."""
    from delta_contracts.contract.jsonschema import contract_json_schema

    print(json.dumps(contract_json_schema(), indent=2))


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
