"""`delta-contracts import odcs FILE` and `delta-contracts export odcs ID`: ODCS v3 in and out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from delta_contracts.cli.common import EXIT_FINDINGS, EXIT_OK, PathsArgument, print_problems
from delta_contracts.cli.errors import UsageError

import_app = typer.Typer(help="Turn another format into a contract.", no_args_is_help=True)
export_app = typer.Typer(help="Write a contract in another format.", no_args_is_help=True)

OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write here instead of to standard output.")
]


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from delta_contracts.paths import write_atomically

    write_atomically(output, text)
    print(f"wrote {output}", file=sys.stderr)


@import_app.command("odcs")
def import_odcs(
    file: Annotated[Path, typer.Argument(help="An ODCS v3 YAML (or JSON) file.", show_default=False)],
    output: OutputOption = None,
    owner: Annotated[
        str | None, typer.Option(help="Owning team, when the ODCS file names none (or to override it).")
    ] = None,
) -> None:
    """An ODCS v3 data contract as a contract; each part with no counterpart is reported as a warning.

    Exit 0 imported, 1 imported with lint findings, 2 invalid input.
    """
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.lint import lint
    from delta_contracts.contract.load import display_path, parse_contract, project_for
    from delta_contracts.contract.yamlsource import read_yaml
    from delta_contracts.interchange.odcs_import import from_odcs

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read {file}: {err}") from None
    document, source = read_yaml(text, display_path(file))
    imported = from_odcs(document, source, owner=owner)
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    yaml_text = _contract_yaml(imported.contract)
    target = output or Path.cwd() / f"{imported.contract.get('id', 'contract')}.yaml"
    try:
        loaded = parse_contract(yaml_text, target, project_for(target.parent))
    except ContractError as err:
        if any("owner" in p.field for p in err.problems):
            err.add_note("hint: give --owner TEAM, or set defaults.owner in contracts.yml")
        raise
    findings = lint(loaded)
    _emit(yaml_text, output)
    print_problems(findings)
    raise typer.Exit(EXIT_FINDINGS if findings else EXIT_OK)


def _contract_yaml(data: dict[str, object]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


@export_app.command("odcs")
def export_odcs(
    contract_id: Annotated[str, typer.Argument(metavar="ID", help="The contract id, e.g. sales.orders.")],
    paths: PathsArgument = None,
    output: OutputOption = None,
) -> None:
    """A contract as an ODCS v3 data contract (YAML), validated against the standard's JSON Schema."""
    import yaml

    from delta_contracts.cli.common import load_valid_contracts
    from delta_contracts.interchange.odcs import schema_errors, to_odcs

    contracts = load_valid_contracts(paths)
    found = [c for c in contracts.contracts if c.contract.id.casefold() == contract_id.casefold()]
    if not found:
        known = ", ".join(sorted(c.contract.id for c in contracts.contracts)) or "none"
        raise UsageError(f"no contract '{contract_id}' (known: {known})")
    document = to_odcs(found[0].contract)
    invalid = schema_errors(document)
    if invalid:  # a mapping defect of ours: say so rather than write a file other tools refuse
        first, *more = [f"the export breaks the ODCS schema at {list(path)}: {why}" for path, why in invalid]
        raise UsageError(first, *(f"error: {line}" for line in more))
    _emit(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110), output)
    raise typer.Exit(EXIT_OK)
