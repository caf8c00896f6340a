"""`delta-contracts lint` and `delta-contracts schema`."""

from __future__ import annotations

import json

import typer

from delta_contracts.cli.common import (
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_OK,
    FormatOption,
    OutputFormat,
    PathsArgument,
    existing_paths,
)


def lint_command(paths: PathsArgument = None, fmt: FormatOption = OutputFormat.TEXT) -> None:
    """Check contracts: schema, types, checks, names. Exit 0 clean, 1 findings, 2 unreadable input."""
    from delta_contracts.contract.errors import ContractError, Problem
    from delta_contracts.contract.lint import lint_many
    from delta_contracts.contract.load import LoadedContract, contract_files, load_contract

    files = contract_files(existing_paths(paths))
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
    elif fmt is OutputFormat.GITHUB:
        from delta_contracts.cli.github import problem_annotations

        for line in problem_annotations(problems):
            print(line)
        print(f"{len(files)} contract(s) checked: {len(unreadable)} error(s), {len(findings)} finding(s)")
    else:
        for problem in problems:
            print(str(problem))
        if fmt is OutputFormat.MARKDOWN:
            print()
        summary = f"{len(files)} contract(s) checked: {len(unreadable)} error(s), {len(findings)} finding(s)"
        print(summary if problems else f"{len(files)} contract(s) checked: all clean")
    raise typer.Exit(code)


def schema_command() -> None:
    """Print the JSON Schema of the contract format (for editors: yaml-language-server)."""
    from delta_contracts.contract.jsonschema import contract_json_schema

    print(json.dumps(contract_json_schema(), indent=2))
