"""`delta-contracts lint` and `delta-contracts schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.cli.common import (
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_OK,
    FormatOption,
    OutputFormat,
    PathsArgument,
    existing_paths,
    no_contracts,
)
from delta_contracts.cli.errors import UsageError

if TYPE_CHECKING:
    from delta_contracts.contract.errors import Problem


def lint_command(paths: PathsArgument = None, fmt: FormatOption = OutputFormat.TEXT) -> None:
    """Check contracts: schema, types, checks, names. Exit 0 clean, 1 findings, 2 unreadable input."""
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.lint import lint_many
    from delta_contracts.contract.load import LoadedContract, contract_files, load_contract

    roots = existing_paths(paths)
    files = contract_files(roots)
    if not files:
        raise no_contracts(roots)
    loaded: list[LoadedContract] = []
    unreadable: list[Problem] = []
    partial: list[LoadedContract] = []
    for file in files:
        try:
            loaded.append(load_contract(file))
        except ContractError as err:
            unreadable.extend(err.problems)
            if isinstance(err.partial, LoadedContract):
                partial.append(err.partial)
    unreadable = list(dict.fromkeys(unreadable))  # a broken contracts.yml is reported once, not per contract
    # the partial contracts' findings too: one run reports every problem of a file, not the first kind only
    findings = [f for f in dict.fromkeys(lint_many([*loaded, *partial])) if f not in unreadable]
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
        print(_summary(len(files), unreadable, findings))
    else:
        for problem in problems:
            print(str(problem))
        if fmt is OutputFormat.MARKDOWN:
            print()
        print(_summary(len(files), unreadable, findings))
    raise typer.Exit(code)


def _summary(files: int, unreadable: list[Problem], findings: list[Problem]) -> str:
    if not unreadable and not findings:
        return f"{files} contract(s) checked: all clean"
    total = f"{files} contract(s) checked: {len(unreadable) + len(findings)} problem(s)"
    if unreadable:  # the exit code differs, so say which problems made a file unusable
        total += f", {len(unreadable)} of them make a contract unusable (exit 2)"
    return total


def schema_command(
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write the schema to this file instead of printing it (e.g. contracts/contract.schema.json, "
            "which a contract at contracts/<schema>/<table>.yaml names as $schema=../contract.schema.json).",
        ),
    ] = None,
) -> None:
    """Print the JSON Schema of the contract format (for editors: yaml-language-server), or write it (-o)."""
    from delta_contracts.contract.jsonschema import contract_json_schema
    from delta_contracts.contract.load import display_path

    text = json.dumps(contract_json_schema(), indent=2) + "\n"
    if output is None:
        print(text, end="")
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot write {output}: {err.strerror or err}") from None
    print(f"wrote {display_path(output)}")
