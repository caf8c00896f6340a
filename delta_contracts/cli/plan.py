"""`delta-contracts plan [--check]`: write (or check) the next migration of every contract."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from delta_contracts.cli.common import (
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_OK,
    FormatOption,
    OutputFormat,
    PathsArgument,
    chosen_target,
)


def plan_command(
    paths: PathsArgument = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 1 if a migration is missing, stale or tampered."),
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(help="delta-3, delta-4 or databricks (default: contracts.yml, else delta-4)."),
    ] = None,
    migrations: Annotated[
        Path | None,
        typer.Option(help="Migrations folder (default: contracts.yml `migrations`, else migrations/)."),
    ] = None,
    fmt: FormatOption = OutputFormat.TEXT,
) -> None:
    """Plan the Delta migration each contract change needs and write it under migrations/."""
    from delta_contracts.cli.common import load_valid_contracts, migrations_root
    from delta_contracts.errors import ExitCode
    from delta_contracts.plan.migrations import (
        IntegrityError,
        load_history,
        next_migration,
        table_folder,
        verify,
        write_migration,
    )
    from delta_contracts.plan.planner import PlanError
    from delta_contracts.plan.unity import check_unity_catalog_oss

    loaded = load_valid_contracts(paths)
    if not loaded.contracts:
        from delta_contracts.cli.common import default_paths, no_contracts

        raise no_contracts(default_paths(paths))
    project = loaded.project
    chosen = chosen_target(project, target)
    root = migrations_root(loaded, migrations)
    results: list[dict[str, object]] = []
    failed = False
    refused_input = False
    for item in loaded.contracts:
        contract = item.contract
        folder = table_folder(root, contract.id)
        entry: dict[str, object] = {
            "contract": contract.id,
            "version": contract.version,
            "file": str(item.path),
            "line": item.locate("version").line,
            "column": item.locate("version").column,
        }
        results.append(entry)
        try:
            verify(folder)
            history = load_history(folder)
            planned = next_migration(history, contract, chosen)
            if planned is not None:
                check_unity_catalog_oss(planned.migration, project.project.unity_catalog_oss_places())
        except IntegrityError as err:
            entry.update(status="tampered", message=str(err), migration_file=str(err.path))
            failed = True
            continue
        except PlanError as err:
            entry.update(status="refused", message=str(err))
            failed = True
            refused_input = refused_input or err.exit_code == ExitCode.BAD_INPUT
            continue
        if planned is None:
            entry.update(status="up to date")
            continue
        last = history[-1].contract.version if history else None
        if last is not None and not _newer(contract.version, last):
            entry.update(
                status="refused",
                message=f"{item.path}: contract changed but version {contract.version} is not above the last "
                f"planned {last}; bump it (delta-contracts diff tells which bump)",
            )
            failed = True
            continue
        entry.update(migration=planned.migration_id, ops=len(planned.migration.ops))
        if check:
            entry.update(status="missing", message=f"{contract.id}: needs migration {planned.migration_id}")
            failed = True
            continue
        written = write_migration(folder, planned)
        entry.update(
            status="written", files=[str(p) for p in written], warnings=list(planned.migration.warnings)
        )
    _print(results, fmt)
    if refused_input:  # a change that would lose what the contract declares: refused as bad input
        raise typer.Exit(EXIT_INPUT)
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_OK)


def _newer(version: str, than: str) -> bool:
    from delta_contracts.contract.model import semver_tuple

    return semver_tuple(version) > semver_tuple(than)


def _print(results: list[dict[str, object]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.GITHUB:
        _print_github(results)
        fmt = OutputFormat.TEXT  # the summary follows the annotations, for the job log
    if fmt is OutputFormat.JSON:
        print(json.dumps({"contracts": results}, indent=2))
        return
    if fmt is OutputFormat.MARKDOWN:
        print("| contract | version | status | detail |\n| --- | --- | --- | --- |")
        for r in results:
            detail = r.get("message") or r.get("migration") or ""
            print(f"| `{r['contract']}` | {r['version']} | {r['status']} | {detail} |")
        return
    for r in results:
        line = f"{r['contract']} {r['version']}: {r['status']}"
        if r.get("migration"):
            line += f" ({r['migration']}, {r['ops']} ops)"
        print(line)
        if r.get("message"):
            print(f"  {r['message']}", file=sys.stderr if r["status"] != "missing" else sys.stdout)
        warnings = r.get("warnings")
        for warning in warnings if isinstance(warnings, list) else []:
            print(f"  warning: {warning}")


def _print_github(results: list[dict[str, object]]) -> None:
    from delta_contracts.cli.github import annotation
    from delta_contracts.contract.errors import Location
    from delta_contracts.contract.load import display_path

    for r in results:
        if r["status"] not in ("missing", "refused", "tampered"):
            continue
        if r["status"] == "tampered":
            where = Location(display_path(Path(str(r["migration_file"]))), 1, 1)
        else:
            where = Location(display_path(Path(str(r["file"]))), int(str(r["line"])), int(str(r["column"])))
        title = f"plan: {r['status']} migration" if r["status"] != "refused" else "plan: refused"
        print(annotation("error", str(r.get("message", "")), where, title))
