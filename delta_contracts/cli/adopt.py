"""`delta-contracts init`: start a project (cli/start.py), or with `--from-table NAME` / `--all SCHEMA`
write contracts for live tables that have none."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from delta_contracts.cli.common import EXIT_FINDINGS, EXIT_OK, ContractSet, print_problems
from delta_contracts.cli.errors import UsageError
from delta_contracts.cli.tables import EngineOption, UrlOption, WarehouseOption
from delta_contracts.cli.tables import _open as open_engine
from delta_contracts.tableid import BadTableIdError, TableId

if TYPE_CHECKING:
    from delta_contracts.contract.load import LoadedProject
    from delta_contracts.engine.base import Engine


@dataclass(frozen=True)
class _Found:
    physical: TableId
    alias: TableId | None  # the view readers use, for a versioned table


def init_command(
    from_table: Annotated[
        str | None, typer.Option("--from-table", help="The live table (or alias view): schema.table.")
    ] = None,
    all_in: Annotated[
        str | None, typer.Option("--all", metavar="SCHEMA", help="Adopt every table of this schema.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The contract file (with --all: a folder; default contracts/<schema>/). "
            "Without it, --from-table prints the contract.",
        ),
    ] = None,
    owner: Annotated[
        str | None, typer.Option(help="Owning team (default: defaults.owner of contracts.yml).")
    ] = None,
    target: Annotated[
        str | None, typer.Option(help="delta-3, delta-4 or databricks (default: contracts.yml).")
    ] = None,
    migrations: Annotated[
        Path | None, typer.Option(help="Migrations folder (default: contracts.yml `migrations`).")
    ] = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    ci: Annotated[
        bool, typer.Option("--ci", help="Starting a project: also write .github/workflows/contracts.yml.")
    ] = False,
    pre_commit: Annotated[
        bool, typer.Option("--pre-commit", help="Starting a project: also write .pre-commit-config.yaml.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Starting a project: overwrite files that exist.")
    ] = False,
) -> None:
    """Start a project in this folder: contracts/contracts.yml with commented defaults, an example contract,
    the JSON Schema it names (--ci, --pre-commit: the CI workflow and the pre-commit config); no file is
    overwritten without --force. With --from-table or --all: write a contract from each live Delta table and
    a baseline migration recording the table as already at that version (so the first change plans an ALTER,
    never a CREATE). Exit 0 written, 1 written with lint findings, 2 bad input or no such table."""
    from delta_contracts.cli.common import chosen_target
    from delta_contracts.contract.load import project_for

    if from_table is None and all_in is None:
        _start(owner, target, output, migrations, engine, url, warehouse, ci, pre_commit, force)
        return
    if from_table is not None and all_in is not None:
        raise UsageError("give --from-table NAME or --all SCHEMA, not both")
    if ci or pre_commit or force:
        raise UsageError(
            "--ci, --pre-commit and --force start a project: give them without --from-table/--all"
        )
    try:
        wanted = TableId.parse(from_table) if from_table is not None else None
    except BadTableIdError as err:
        raise UsageError(f"--from-table: {err}") from None
    anchor = output if output is not None else Path("contracts")
    project = project_for(anchor if anchor.is_dir() else anchor.parent)
    chosen = chosen_target(project, target)
    team = owner or (project.project.defaults.owner.team if project.project.defaults.owner else None)
    if team is None:
        raise UsageError("give --owner TEAM (contracts.yml has no defaults.owner)")
    root = migrations or project.migrations_root
    failed = False
    with open_engine(ContractSet([], project), engine, url, warehouse, read_only=True) as live:
        names = [wanted] if wanted is not None else _tables_of(live, str(all_in))
        for name in names:
            found = _find(live, name)
            if found is None:
                raise UsageError(f"no table or alias view {name}")
            if all_in is not None:
                from delta_contracts.paths import inside

                folder = output or project.root / str(all_in)
                # A catalog's table name is a file name here, never a path (OutsideRootError, exit 2).
                destination: Path | None = inside(folder, f"{(found.alias or found.physical)[-1]}.yaml")
            else:
                destination = output
            failed |= _adopt(live, found, destination, project, owner, chosen, root)
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_OK)


def _start(
    owner: str | None,
    target: str | None,
    output: Path | None,
    migrations: Path | None,
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    ci: bool,
    pre_commit: bool,
    force: bool,
) -> None:
    from delta_contracts.cli.start import start_project
    from delta_contracts.target import Target

    adopting_only = {"--output": output, "--migrations": migrations, "--engine": engine, "--url": url,
                     "--warehouse": warehouse}  # fmt: skip
    given = [flag for flag, value in adopting_only.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only with --from-table or --all (adopting live tables)")
    try:
        chosen = Target(target) if target else Target.DELTA_4
    except ValueError:
        raise UsageError(f"--target must be one of {', '.join(t.value for t in Target)}") from None
    start_project(Path("."), owner, chosen.value, ci, pre_commit, force)


def _tables_of(live: Engine, schema: str) -> list[TableId]:
    """Every table of `schema`; a versioned table's physical `<name>__vN` is adopted through its view."""
    rows = live.sql(f"SHOW TABLES IN {_quoted(schema)}")
    names = sorted({str(r.get("tableName")) for r in rows if not r.get("isTemporary")})
    views = {v[-1].casefold() for v in live.views() if len(v) >= 2 and v[-2].casefold() == schema.casefold()}
    chosen = []
    for name in names:
        behind_view = name.rsplit("__v", 1)[0].casefold() in views and "__v" in name
        if not behind_view:
            chosen.append(TableId((schema, name)))
    return chosen


def _quoted(name: str) -> str:
    from delta_contracts.sql import expressions as x

    return x.sql(x.ident(name))


def _find(live: Engine, name: TableId) -> _Found | None:
    if live.describe(name) is not None:
        return _Found(name, None)
    query = next(
        (
            q
            for v, q in live.views().items()
            if tuple(p.casefold() for p in v[-2:]) == tuple(p.casefold() for p in name[-2:])
        ),
        None,
    )
    if query is None:
        return None
    import sqlglot
    from sqlglot import exp

    from delta_contracts.sql.dialect import DIALECT  # sqlglot: only when a view's query is read

    tables = list(sqlglot.parse_one(query, read=DIALECT).find_all(exp.Table))
    if len(tables) != 1:
        return None
    named = tuple(p for p in (tables[0].catalog, tables[0].db, tables[0].name) if p)
    source = TableId(named if len(named) >= 2 else (*name[:-1], *named))  # unqualified: the view's schema
    return _Found(source, name) if live.describe(source) is not None else None


def _adopt(
    live: Engine,
    found: _Found,
    destination: Path | None,
    project: LoadedProject,
    owner: str | None,
    target: Any,
    root: Path,
) -> bool:
    """Write one contract and its baseline; True when lint found something to fix."""
    import yaml

    from delta_contracts.contract.lint import lint
    from delta_contracts.contract.load import parse_contract
    from delta_contracts.paths import write_atomically
    from delta_contracts.plan.migrations import migration_files, table_folder, write_migration
    from delta_contracts.tables.adopt import baseline, contract_data

    table = live.describe(found.physical)
    assert table is not None
    adopted = contract_data(table, found.physical, alias=found.alias)
    data = dict(adopted.data)
    if owner is not None:  # --owner wins over the owner stamped on the table
        data = {
            **{k: v for k, v in data.items() if k in ("apiVersion", "id", "version")},
            "owner": {"team": owner},
            **{k: v for k, v in data.items() if k != "owner"},
        }
    header = f"# Adopted from the live table {found.physical} by delta-contracts init --from-table.\n"
    text = header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)
    shown = destination or project.root / data["id"].split(".")[-2] / f"{data['id'].split('.')[-1]}.yaml"
    loaded = parse_contract(text, shown, project)
    folder = table_folder(root, loaded.contract.id)
    if migration_files(folder):
        raise UsageError(
            f"{folder} already holds migrations: {loaded.contract.id} is managed already "
            "(init adopts tables that have none)"
        )
    if destination is not None and destination.exists():
        raise UsageError(f"{destination} exists; not overwritten")
    for note in adopted.notes:
        print(f"note: {note}", file=sys.stderr)
    written = write_migration(folder, baseline(loaded.contract, table, found.physical, target))
    if destination is None:
        sys.stdout.write(text)
    else:
        write_atomically(destination, text)
        print(f"wrote {destination}", file=sys.stderr)
    print(f"wrote {written[0].parent}/ (baseline {loaded.contract.version})", file=sys.stderr)
    findings = lint(loaded)
    print_problems(findings)
    return bool(findings)
