"""`delta-contracts diff OLD NEW` and `delta-contracts diff --base REF [PATH…]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    FormatOption,
    OutputFormat,
    existing_paths,
)
from delta_contracts.cli.errors import UsageError

# `--readers` (the code is in cli/readers.py, imported only when asked: a plain diff loads nothing more)
ReadersOption = Annotated[
    bool,
    typer.Option(
        "--readers",
        help="Name the readers of each object a change removes, renames, retypes, tightens or deprecates, "
        "within the contract's reader_lookback: from the readers log (in --warehouse), or from --source.",
    ),
]
ReadersSourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        help="With --readers: read this query history (KIND:LOCATION, as `telemetry collect` takes) for the "
        "changed objects instead of the readers log, which holds reads of deprecated objects only.",
    ),
]
ReadersEngineOption = Annotated[
    str | None,
    typer.Option("--engine", help="With --source: the engine that reads it (local, spark or connect)."),
]
ReadersUrlOption = Annotated[str | None, typer.Option("--url", help="sc://host:port for --engine connect.")]
ReadersWarehouseOption = Annotated[
    Path | None,
    typer.Option("--warehouse", help="With --readers: the warehouse whose _delta_contracts holds the log."),
]
ReadersEnvOption = Annotated[
    str | None,
    typer.Option(
        "--env",
        help="With --readers: the environment of contracts.yml whose readers log (or engine) to read; "
        "objects are named as its tables are (default: DELTA_CONTRACTS_ENV).",
        show_default=False,
    ),
]

if TYPE_CHECKING:
    from delta_contracts.contract.errors import Problem
    from delta_contracts.contract.load import LoadedContract, LoadedProject
    from delta_contracts.diff.report import ContractDiff
    from delta_contracts.target import Target
    from delta_contracts.telemetry.impact import ObjectReaders, Telemetry


def diff_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="OLD NEW contract files; with --base, contract files or folders (default contracts/).",
            show_default=False,
        ),
    ] = None,
    base: Annotated[str | None, typer.Option(help="Compare the working tree with this git ref.")] = None,
    fmt: FormatOption = OutputFormat.TEXT,
    readers: ReadersOption = False,
    source: ReadersSourceOption = None,
    engine: ReadersEngineOption = None,
    url: ReadersUrlOption = None,
    warehouse: ReadersWarehouseOption = None,
    env: ReadersEnvOption = None,
) -> None:
    """Classify contract changes, check the declared version bump and the evolution policy; with --readers,
    name who reads each object a change breaks."""
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.load import contract_files, load_contract, project_for

    given = list(paths or [])
    problems: list[Problem] = []
    skipped = 0
    if base is None:
        if len(given) != 2:
            raise UsageError("give OLD and NEW contract files, or --base REF")
        pairs: list[tuple[LoadedContract | None, LoadedContract | None]] = []
        old_project, note = _projects_of_pair(given[0], given[1])
        if note:
            print(f"note: {note}", file=sys.stderr)
        try:
            old, new = load_contract(given[0], old_project), load_contract(given[1])
            pairs.append((old, new))
        except ContractError as err:
            problems.extend(err.problems)
    else:
        from delta_contracts.diff.gitbase import contracts_at

        roots = existing_paths(given)
        before = contracts_at(base, roots)
        problems.extend(before.problems)
        unchanged = set(before.unchanged)
        current: list[LoadedContract] = []
        for file in contract_files(roots):
            if file.resolve() in unchanged:
                continue
            try:
                current.append(load_contract(file))
            except ContractError as err:
                problems.extend(err.problems)
        if not current and not before.contracts and not unchanged and not before.problems and not problems:
            from delta_contracts.cli.common import no_contracts

            raise no_contracts(roots)
        pairs = _match(before.contracts, current)
        skipped = len(unchanged)
    problems.extend(_invalid_types(pairs))
    if problems:
        if fmt is OutputFormat.GITHUB:
            from delta_contracts.cli.github import problem_annotations

            for line in problem_annotations(problems):
                print(line)
        raise ContractError(problems)
    project = project_for(given[-1] if given else Path("contracts"))
    results = [_compare(old, new, project.project.target) for old, new in pairs]
    who = None
    if readers or source:
        from delta_contracts.cli.readers import readers_of

        who = readers_of(pairs, results, project, source or [], engine, url, warehouse, env)
    if fmt is OutputFormat.GITHUB:
        from delta_contracts.cli.github import diff_annotations

        for line in diff_annotations([(r, old, new) for r, (old, new) in zip(results, pairs, strict=True)]):
            print(line)
        fmt = OutputFormat.TEXT  # the summary follows the annotations, for the job log
    _print(results, fmt, skipped, who)
    raise typer.Exit(EXIT_OK if all(r.ok for r in results) else EXIT_FINDINGS)


def _invalid_types(pairs: list[tuple[LoadedContract | None, LoadedContract | None]]) -> list[Problem]:
    """A column whose type is not a Spark type cannot be classified: say what lint says of it instead of
    reading a typo as a type change."""
    from delta_contracts.contract.typecheck import invalid_types

    found = [loaded for pair in pairs for loaded in pair if loaded is not None]
    return [problem for loaded in found for problem in invalid_types(loaded)]


def _projects_of_pair(old: Path, new: Path) -> tuple[LoadedProject | None, str | None]:
    """The project OLD is read with, and what to tell the user about it.

    A copy of a contract taken outside the project (OLD) has no contracts.yml of its own: it is read with
    NEW's, so that the same defaults apply to both sides. When each side has its own, each is read with it."""
    from delta_contracts.contract.load import display_path, project_for
    from delta_contracts.contract.project import find_project_file

    old_file, new_file = find_project_file(old), find_project_file(new)
    if old_file is None and new_file is not None:
        shown = display_path(new_file)
        return project_for(new), f"{old} has no contracts.yml of its own: both sides read with {shown}"
    if old_file is not None and new_file is not None and old_file.resolve() != new_file.resolve():
        return (
            None,
            f"each side read with its own project: {display_path(old_file)}, {display_path(new_file)}",
        )
    if old_file is not None and new_file is None:
        return None, f"{new} has no contracts.yml: only {old} gets defaults (from {display_path(old_file)})"
    return None, None


def _match(
    before: list[LoadedContract], after: list[LoadedContract]
) -> list[tuple[LoadedContract | None, LoadedContract | None]]:
    """Pair contracts by table id, so a moved file is the same contract."""
    old_by_id = {c.contract.id.casefold(): c for c in before}
    pairs: list[tuple[LoadedContract | None, LoadedContract | None]] = []
    for item in after:
        pairs.append((old_by_id.pop(item.contract.id.casefold(), None), item))
    pairs.extend((gone, None) for gone in old_by_id.values())
    return pairs


def _compare(old: LoadedContract | None, new: LoadedContract | None, target: Target) -> ContractDiff:
    from delta_contracts.diff import diff, verdict
    from delta_contracts.diff.changes import change
    from delta_contracts.diff.report import ContractDiff

    if new is None:
        assert old is not None
        gone = change("DC-DS101", f"contract {old.contract.id} deleted ({old.path})", "")
        return ContractDiff(old.contract.id, "deleted", old.contract.version, None, None, gone)
    if old is None:
        return ContractDiff(new.contract.id, "new", None, new.contract.version, None)
    changes = diff(old.contract, new.contract, target)
    result = verdict(old.contract, new.contract, changes)
    status = "changed" if changes else "unchanged"
    if not (changes and result.ok):
        return ContractDiff(new.contract.id, status, old.contract.version, new.contract.version, result)
    from delta_contracts.plan.outlook import outlook  # the planner, only for a change that needs its plan

    ahead = outlook(old.contract, new.contract, target)
    return ContractDiff(
        new.contract.id,
        status,
        old.contract.version,
        new.contract.version,
        result,
        not_kept=ahead.not_kept,
        becomes=ahead.becomes,
    )


def _print(
    results: list[ContractDiff],
    fmt: OutputFormat,
    unchanged: int,
    who: tuple[list[ObjectReaders], Telemetry] | None = None,
) -> None:
    from delta_contracts.diff.report import render_json, render_markdown, render_text

    render = {
        OutputFormat.TEXT: render_text,
        OutputFormat.JSON: render_json,
        OutputFormat.MARKDOWN: render_markdown,
        OutputFormat.GITHUB: render_text,
    }
    text = render[fmt](results, unchanged)
    if who is not None:
        from delta_contracts.cli.readers import with_readers

        text = with_readers(text, fmt, *who)
    print(text)
