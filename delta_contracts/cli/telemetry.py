"""`delta-contracts telemetry collect|extract|report`: who still reads deprecated tables and columns."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from delta_contracts.cli.common import EXIT_OK, EnvOption, default_paths, spark_of
from delta_contracts.cli.errors import UsageError

if TYPE_CHECKING:
    from delta_contracts.contract.load import LoadedProject
    from delta_contracts.contract.model import Contract
    from delta_contracts.engine.base import Engine
    from delta_contracts.engine.select import EngineChoice
    from delta_contracts.telemetry.sources import SourceSpec

telemetry_app = typer.Typer(
    help="Deprecation telemetry: collect who reads deprecated objects from query history; report; extract.",
    no_args_is_help=True,
)


class ReportFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


class ExtractFormat(StrEnum):
    JSONL = "jsonl"


SourceOption = Annotated[
    list[str],
    typer.Option(
        "--source",
        help="KIND:LOCATION, KIND one of query-history, table-lineage, column-lineage, eventlog, statements; "
        "LOCATION a table name, or a Parquet/JSON-lines/CSV file or folder, or an event log folder.",
    ),
]
ContractsOption = Annotated[
    list[Path] | None, typer.Option("--contracts", help="Contract files or folders (default: contracts/).")
]
ObjectsOption = Annotated[
    list[str] | None,
    typer.Option("--object", help="Also watch this object (schema.table or schema.table.column)."),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="local (embedded Sail + delta-rs; starts delta-spark only for DROP COLUMNS, enabling column "
        "mapping and ALTER COLUMN ops Sail and delta-rs cannot do in place), spark or connect. "
        "Default: local.",
    ),
]
UrlOption = Annotated[str | None, typer.Option("--url", help="sc://host:port for --engine connect.")]
WarehouseOption = Annotated[
    Path | None,
    typer.Option("--warehouse", help="Warehouse folder; the readers log is in its _delta_contracts."),
]
TextColumn = Annotated[
    str | None, typer.Option("--text-column", help="statements: the statement text column.")
]
UserColumn = Annotated[str | None, typer.Option("--user-column", help="statements: the user column.")]
TimeColumn = Annotated[str | None, typer.Option("--time-column", help="statements: the start time column.")]
IdColumn = Annotated[str | None, typer.Option("--id-column", help="statements: the statement id column.")]
ClientColumn = Annotated[str | None, typer.Option("--client-column", help="statements: the client column.")]


@telemetry_app.command("collect")
def collect_command(
    source: SourceOption,
    contracts: ContractsOption = None,
    objects: ObjectsOption = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    env: EnvOption = None,
    overlap_hours: Annotated[
        float, typer.Option("--overlap-hours", help="Re-read this much before the watermark (late rows).")
    ] = 24.0,
    text_column: TextColumn = None,
    user_column: UserColumn = None,
    time_column: TimeColumn = None,
    id_column: IdColumn = None,
    client_column: ClientColumn = None,
) -> None:
    """Append the reads of deprecated objects to the readers log, incrementally (safe to run daily)."""
    from rich.progress import Progress

    from delta_contracts.engine.spark.sql_names import engine_fallback_parser
    from delta_contracts.telemetry.pipeline import collect
    from delta_contracts.telemetry.sources import read_source

    specs = _specs(source, text_column, user_column, time_column, id_column, client_column)
    loaded, environment = _contracts(contracts, env)
    choice = _choice(environment, engine, url, warehouse)
    state_dir = choice.warehouse / "_delta_contracts"
    with _engine(choice) as live:
        watched = _watched(live, loaded, objects)
        if not watched.objects:
            print(
                "no deprecated objects in the contracts or the live tables: nothing to watch", file=sys.stderr
            )
        for spec in specs:
            with Progress(transient=True, disable=not sys.stderr.isatty()) as bar:
                task = bar.add_task(spec.name, total=None)

                def progress(
                    stage: str, done: int, total: int, task: Any = task, bar: Any = bar, name: str = spec.name
                ) -> None:
                    bar.update(task, description=f"{name}: {stage}", completed=done, total=total or None)

                frame = read_source(spark_of(live), spec)
                result = collect(
                    spark_of(live),
                    frame,
                    spec.name,
                    watched,
                    state_dir,
                    overlap=timedelta(hours=overlap_hours),
                    progress=progress,
                    fallback_parser=engine_fallback_parser(live),
                )
            mark = f"{result.watermark:%Y-%m-%d %H:%M:%S} UTC" if result.watermark else "none"
            kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(result.errors.items()))
            print(
                f"{spec.name}: {result.statements} statement(s), {result.unparsed} unparsed"
                f"{f' ({kinds})' if kinds else ''}, "
                f"{result.appended} reader row(s) added"
                f"{f' ({result.possible} possible)' if result.possible else ''}; watermark {mark}"
            )
    raise typer.Exit(EXIT_OK)


@telemetry_app.command("extract")
def extract_command(
    source: SourceOption,
    fmt: Annotated[ExtractFormat, typer.Option("--format", "-f", help="jsonl.")] = ExtractFormat.JSONL,
    contracts: ContractsOption = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    env: EnvOption = None,
    text_column: TextColumn = None,
    user_column: UserColumn = None,
    time_column: TimeColumn = None,
    id_column: IdColumn = None,
    client_column: ClientColumn = None,
) -> None:
    """One JSON line per statement: statement_id, tables_read, tables_written, columns_read, error."""
    from delta_contracts.engine.spark.sql_names import engine_fallback_parser
    from delta_contracts.telemetry.names import Names
    from delta_contracts.telemetry.pipeline import extracted_statements
    from delta_contracts.telemetry.sources import read_source

    specs = _specs(source, text_column, user_column, time_column, id_column, client_column)
    loaded, environment = _contracts(contracts, env)
    choice = _choice(environment, engine, url, warehouse)
    with _engine(choice) as live:
        watched = _watched(live, loaded, None)
        names = Names.load(live.ledger_table())
        for spec in specs:
            frame = read_source(spark_of(live), spec)
            rows = extracted_statements(frame, watched, fallback_parser=engine_fallback_parser(live))
            for row in rows.toLocalIterator():
                # A view's columns are those it served when the statement ran (not every one it ever had).
                served = [c for c in row["columns_read"] or [] if names.canonical(c, row["statement_time"])]
                line = {
                    "statement_id": row["statement_id"],
                    "tables_read": list(row["tables_read"] or []),
                    "tables_written": list(row["tables_written"] or []),
                    "columns_read": served,
                    "error": row["error"],
                }
                print(json.dumps(line, ensure_ascii=False))
    raise typer.Exit(EXIT_OK)


@telemetry_app.command("report")
def report_command(
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only reads since this date (YYYY-MM-DD) or N days (e.g. 30d)."),
    ] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option("--objects", help="Only these objects (default: every deprecated one)."),
    ] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="text, json, markdown or html.")] = (
        ReportFormat.TEXT
    ),
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    contracts: ContractsOption = None,
    warehouse: WarehouseOption = None,
    env: EnvOption = None,
) -> None:
    """Readers per deprecated object from the readers log; readers not among the contract's consumers;
    each source's coverage of the window (`--since`, else the longest `reader_lookback` of the contracts)."""
    from delta_contracts.telemetry.coverage import coverage
    from delta_contracts.telemetry.log import read_rows, retirements, watermarks
    from delta_contracts.telemetry.names import Names
    from delta_contracts.telemetry.objects import unmarked_in_ledger, watched
    from delta_contracts.telemetry.report import (
        build_report,
        canonical_input,
        render_json,
        render_markdown,
        render_text,
    )
    from delta_contracts.telemetry.report_html import render_html

    loaded, environment = _contracts(contracts, env)
    state = _choice(environment, None, None, warehouse).warehouse / "_delta_contracts"
    known = watched(loaded)
    # An older version's table is deprecated once its cutover marked it (the ledger says), not before.
    unmarked = unmarked_in_ledger(state)
    # One name per object, as the gate names it: the physical table that held the data (telemetry.names).
    rows, deprecated, consumers = canonical_input(
        read_rows(state),
        list(objects or [o for o in known.objects if o not in unmarked]),
        known.consumers,
        Names.load(state),
        datetime.now(UTC),
    )
    logged = sorted({str(r["object"]) for r in rows} - set(deprecated))
    wanted = deprecated if objects else [*deprecated, *logged]
    now = datetime.now(UTC)
    start = _since(since) or now - _longest_lookback(loaded)
    covered = coverage(watermarks(state), start, now - _freshness(), retirements(state))
    reports = build_report(rows, wanted, consumers, _since(since), covered)
    renderers = {
        ReportFormat.TEXT: render_text,
        ReportFormat.JSON: render_json,
        ReportFormat.MARKDOWN: render_markdown,
        ReportFormat.HTML: render_html,
    }
    text = renderers[fmt](reports)
    if output is not None:
        output.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    else:
        print(text)
    raise typer.Exit(EXIT_OK)


@telemetry_app.command("retire")
def retire_command(
    source: Annotated[
        str,
        typer.Option("--source", help="The source as collected (KIND:LOCATION, as `collect` printed it)."),
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why nobody will collect it again (recorded).")],
    contracts: ContractsOption = None,
    warehouse: WarehouseOption = None,
    env: EnvOption = None,
) -> None:
    """Retire a source nobody will collect again (a one-off export): the gate stops requiring it to be fresh
    and to cover the window; the reads it logged still count. Collecting it again brings it back."""
    from delta_contracts.state.state_table import who
    from delta_contracts.telemetry.log import RetireError, retire_source

    state = _choice(_contracts(contracts, env)[1], None, None, warehouse).warehouse / "_delta_contracts"
    try:
        done = retire_source(state, source, reason, who()[0], datetime.now(UTC))
    except RetireError as err:
        raise UsageError(f"--source {source}: {err}") from None
    print(f"retired {done.source} at {done.at:%Y-%m-%d %H:%M:%S} UTC: {done.reason}")
    raise typer.Exit(EXIT_OK)


def _specs(sources: list[str], *columns: str | None) -> list[SourceSpec]:
    from delta_contracts.telemetry.sources import ROLES, parse_source

    named = dict(zip(ROLES, columns, strict=True))
    return [parse_source(s, {k: v for k, v in named.items() if v}) for s in sources]


def _contracts(paths: list[Path] | None, env: str | None) -> tuple[list[Contract], str | None]:
    """The contracts, when there are any (telemetry also runs on explicitly named objects alone), each named
    as its table is in the environment `--env` chooses; and that environment."""
    from delta_contracts.cli.common import chosen_environment, load_valid_contracts
    from delta_contracts.contract.environments import contract_in_environment

    if not paths and not default_paths(None)[0].exists():
        return [], chosen_environment(_project(), env)
    contracts = load_valid_contracts(paths, env)
    names = contracts.names
    return [contract_in_environment(c.contract, names) for c in contracts.contracts], contracts.environment


def _project() -> LoadedProject:
    from delta_contracts.contract.load import project_for

    return project_for(Path("contracts") if Path("contracts").exists() else Path("."))


def _choice(
    environment: str | None, engine: str | None, url: str | None, warehouse: Path | None
) -> EngineChoice:
    """The engine and warehouse (whose _delta_contracts holds the readers log and the sources' watermarks)
    of the environment, else of contracts.yml's `engine:`."""
    from delta_contracts.cli.common import choose_engine

    return choose_engine(_project(), engine, url, warehouse, environment=environment)


def _engine(choice: EngineChoice) -> Engine:
    from delta_contracts.cli.common import start_engine

    print(f"engine: {choice.name} ({choice.url or choice.warehouse})", file=sys.stderr)
    return start_engine(choice)


def _watched(engine: Engine, contracts: list[Contract], objects: list[str] | None) -> Any:
    from delta_contracts.telemetry.objects import watched_on

    return watched_on(engine, contracts, objects or ())


def _longest_lookback(contracts: list[Contract]) -> timedelta:
    """The window a drop's gate asks about: the contracts' longest `reader_lookback` (the default without
    contracts)."""
    from delta_contracts.contract.model import Evolution, duration

    lookbacks = [c.evolution.reader_lookback for c in contracts] or [Evolution().reader_lookback]
    return max(duration(lookback) for lookback in lookbacks)


def _freshness() -> timedelta:
    from delta_contracts.contract.model import duration

    return duration(_project().project.telemetry.freshness)


def _since(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        if text.endswith("d") and text[:-1].isdigit():
            return datetime.now(UTC) - timedelta(days=int(text[:-1]))
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:  # int() or fromisoformat(): the text is no date and no number of days
        raise UsageError(f"--since {text!r}: use YYYY-MM-DD or a number of days like 30d") from None
