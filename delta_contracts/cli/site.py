"""`delta-contracts site -o DIR`: a static, self-contained HTML site with a page per table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from delta_contracts.cli.common import EXIT_OK, ConfOption, EnvOption, PathsArgument
from delta_contracts.cli.errors import UsageError


def site_command(
    paths: PathsArgument = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the site into.")] = Path(
        "site"
    ),
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Show live state (stamp, drift, the engine's ledger) from this engine: local, spark or "
            "connect. Without it the site is built from the repository and the warehouse's files alone.",
        ),
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="sc://host:port for --engine connect.")] = None,
    warehouse: Annotated[
        Path | None,
        typer.Option(
            "--warehouse", help="Warehouse folder: its ledger and readers log (default: contracts.yml)."
        ),
    ] = None,
    validation: Annotated[
        Path | None,
        typer.Option("--validation", help="A recorded `validate --format json` result to show per table."),
    ] = None,
    conf: ConfOption = None,
    env: EnvOption = None,
) -> None:
    """Write a static HTML site (index.html and a page per table, no network needed): the contract, its
    versions in git with each change's class, the migrations and their phases, deprecations, readers over
    time, drift (with --engine) and the last recorded validate result."""
    from delta_contracts.cli.common import choose_engine, load_valid_contracts
    from delta_contracts.site.gather import gather
    from delta_contracts.site.render import write_site

    started = time.perf_counter()
    contracts = load_valid_contracts(paths, env)
    project = contracts.project
    choice = choose_engine(project, engine, url, warehouse, conf or (), contracts.environment)
    if validation is not None and not validation.is_file():
        raise UsageError(f"--validation {validation}: no such file")
    names = contracts.names
    if engine is None:
        site = gather(contracts.contracts, project, choice.warehouse, validation=validation, names=names)
    else:
        from delta_contracts.cli.tables import _open

        with _open(contracts, engine, url, warehouse, read_only=True, conf=conf) as live:
            site = gather(contracts.contracts, project, choice.warehouse, live, validation, names=names)
    if project.project.environments:
        from dataclasses import replace

        from delta_contracts.cli.matrix import matrix_cells
        from delta_contracts.cli.tables import status_rows

        site = replace(
            site, environment=contracts.environment, matrix=matrix_cells(contracts, conf, status_rows)
        )
    written = write_site(site, output)
    took = time.perf_counter() - started
    print(f"wrote {len(written)} page(s) to {output}/ in {took:.1f} s: open {output / 'index.html'}")
    raise typer.Exit(EXIT_OK)
