"""Query-history sources, each read into one DataFrame of statements (see `statement.STATEMENTS_DDL`).

`--source KIND:LOCATION`, LOCATION a table name or a file/folder (Parquet, JSON lines, CSV):
- `query-history`: Databricks `system.query.history` or an export of it with the same columns;
- `table-lineage` / `column-lineage`: Databricks `system.access.table_lineage` / `column_lineage`
  (structured reads, no parsing; see docs/telemetry.md for what lineage misses);
- `eventlog`: a folder of Spark event logs (or one log);
- `statements`: any table or file with a statement column; the other columns are named by options.
Sources that know no reads of their own (a query history, `statements`) have no `tables_read`,
`columns_read` and `tables_written` columns: everything they read is found by parsing the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delta_contracts.errors import InputError
from delta_contracts.sql import expressions as x

KINDS = ("query-history", "table-lineage", "column-lineage", "eventlog", "statements")
ROLES = ("text", "user", "time", "id", "client")


class SourceError(InputError, ValueError):
    """A source that cannot be read: the message names it and says why."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    kind: str
    location: str
    columns: Mapping[str, str] = field(default_factory=dict)  # role -> column, for `statements`

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.location}"


def parse_source(text: str, columns: Mapping[str, str] | None = None) -> SourceSpec:
    kind, sep, location = text.partition(":")
    if not sep or kind not in KINDS or not location.strip():
        raise SourceError(
            f"--source {text!r}: expected KIND:LOCATION with KIND one of {', '.join(KINDS)} "
            "(e.g. query-history:system.query.history, eventlog:/logs/spark-events)"
        )
    given = {k: v for k, v in (columns or {}).items() if v}
    unknown = sorted(set(given) - set(ROLES))
    if unknown:
        raise SourceError(f"unknown column role(s) {', '.join(unknown)}: use {', '.join(ROLES)}")
    if kind == "statements" and "text" not in given:
        given["text"] = "statement"
    return SourceSpec(kind, location.strip(), given)


def read_source(spark: Any, spec: SourceSpec) -> Any:
    """The source as a DataFrame of statements; a source the engine cannot read (no such table, files that
    are not what they claim) is a SourceError naming it."""
    from delta_contracts.engine.spark.errors import spark_errors

    try:
        return _statements(spark, spec)
    except spark_errors() as err:
        lines = str(err).strip().splitlines()
        raise SourceError(f"{spec.name}: {lines[0] if lines else type(err).__name__}") from err


def _statements(spark: Any, spec: SourceSpec) -> Any:
    if spec.kind == "eventlog":
        return _eventlog(spark, spec)
    raw = _read_any(spark, spec.location)
    present = {c.casefold(): c for c in raw.columns}
    if spec.kind == "query-history":
        roles = {
            "id": "statement_id",
            "text": "statement_text",
            "user": "executed_by",
            "time": "start_time",
            "client": "client_application",
        }
        return _project(raw, spec, roles, present)
    if spec.kind in ("table-lineage", "column-lineage"):
        return _lineage(raw, spec, present)
    return _project(raw, spec, dict(spec.columns), present)


def _read_any(spark: Any, location: str) -> Any:
    path = Path(location)
    if not path.exists():
        if "/" in location or location.endswith((".parquet", ".json", ".jsonl", ".csv")):
            raise SourceError(f"{location}: no such file or folder")
        return spark.table(location)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    if path.is_dir() and (path / "_delta_log").is_dir():
        return spark.read.format("delta").load(str(path))
    suffixes = {p.suffix.casefold() for p in files if not p.name.startswith((".", "_"))}
    if suffixes & {".json", ".jsonl", ".ndjson"} or ".csv" in suffixes:
        return _read_text_files(spark, path, files, json=bool(suffixes & {".json", ".jsonl", ".ndjson"}))
    if ".parquet" in suffixes:
        return spark.read.parquet(str(path))
    raise SourceError(f"{location}: neither Parquet, JSON lines, CSV nor a Delta table")


def _read_text_files(spark: Any, path: Path, files: list[Path], *, json: bool) -> Any:
    """JSON lines or CSV. Bytes that are not UTF-8 (a damaged export) must not make the whole source
    unreadable (some engines refuse the file, Sail among them): the files are then read through a copy in
    which such bytes are replaced (U+FFFD), so only the statements holding them are affected."""
    from delta_contracts.engine.spark.errors import spark_errors

    def read(location: Path) -> Any:
        if json:
            frame = spark.read.json(str(location))
        else:
            frame = spark.read.options(header="true", multiLine="true", escape='"').csv(str(location))
        frame.schema  # noqa: B018 - inferring the schema reads the files: a decoding error shows here
        return frame

    try:
        return read(path)
    except spark_errors() as err:
        if "utf-8" not in str(err).casefold() and "utf8" not in str(err).casefold():
            raise
    return read(_utf8_copy(path, files))


def _utf8_copy(path: Path, files: list[Path]) -> Path:
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="delta-contracts-utf8-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for file in files:
        if file.name.startswith((".", "_")):
            continue
        target = folder / (file.relative_to(path) if path.is_dir() else file.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        with file.open("rb") as raw, target.open("w", encoding="utf-8") as out:
            for line in raw:
                out.write(line.decode("utf-8", errors="replace"))
    return folder if path.is_dir() else folder / path.name


def _project(raw: Any, spec: SourceSpec, roles: Mapping[str, str], present: Mapping[str, str]) -> Any:
    from sqlglot import exp

    def column(role: str, required: bool = False) -> exp.Expr:
        wanted = roles.get(role)
        actual = present.get(wanted.casefold()) if wanted else None
        if actual is None:
            if required or (wanted and role in spec.columns):
                raise SourceError(
                    f"{spec.name}: no column {wanted!r} for the statement {role} "
                    f"(columns: {', '.join(sorted(present.values()))})"
                )
            return exp.Null()
        return exp.column(actual, quoted=True)

    text = _string(column("text", required=True))
    time = exp.cast(column("time"), "TIMESTAMP")
    user, client = _string(column("user")), _string(column("client"))
    given_id = column("id")
    fallback = exp.func(
        "sha2",
        exp.func(
            "concat_ws", exp.Literal.string("\x1f"), exp.Literal.string(spec.name), _string(time), user, text
        ),
        exp.Literal.number(256),
    )
    statement_id = exp.Coalesce(this=_string(given_id), expressions=[fallback])
    return _select(
        raw,
        [
            statement_id.as_("statement_id"),
            time.as_("statement_time"),
            user.as_("user"),
            client.as_("client"),
            text.as_("text"),
        ],
    )


def _lineage(raw: Any, spec: SourceSpec, present: Mapping[str, str]) -> Any:
    from sqlglot import exp

    def col(name: str) -> exp.Expr:
        actual = present.get(name)
        return exp.column(actual, quoted=True) if actual else exp.Null()

    if "source_table_full_name" not in present:
        raise SourceError(f"{spec.name}: no column source_table_full_name: not a lineage table")
    source = exp.func("lower", col("source_table_full_name"))
    name = source
    if spec.kind == "column-lineage":
        name = exp.func(
            "concat_ws", exp.Literal.string("."), source, exp.func("lower", col("source_column_name"))
        )
    entity = exp.func(
        "concat_ws", exp.Literal.string(":"), _string(col("entity_type")), _string(col("entity_id"))
    )
    ids = [c for c in ("statement_id", "record_id", "event_id") if c in present]
    # Without an id column, the row's content is its id: re-collecting the same row must find it logged.
    content = exp.func(
        "sha2",
        exp.func(
            "concat_ws",
            exp.Literal.string("\x1f"),
            exp.Literal.string(spec.name),
            _string(col("event_time")),
            _string(col("created_by")),
            entity,
            name,
        ),
        exp.Literal.number(256),
    )
    statement_id = exp.Coalesce(
        this=_string(col(ids[0])) if ids else content,
        expressions=[*(_string(col(c)) for c in ids[1:]), content],
    )
    one = exp.Array(expressions=[source])
    frame = _select(
        raw.where(_sql(exp.Not(this=exp.Is(this=col("source_table_full_name"), expression=exp.Null())))),
        [
            statement_id.as_("statement_id"),
            exp.cast(col("event_time"), "TIMESTAMP").as_("statement_time"),
            _string(col("created_by")).as_("user"),
            entity.as_("client"),
            exp.cast(exp.Null(), "STRING").as_("text"),
            one.as_("tables_read"),
            (exp.Array(expressions=[name]) if spec.kind == "column-lineage" else _no_names()).as_(
                "columns_read"
            ),
            exp.Array(expressions=[]).as_("tables_written"),
        ],
    )
    return frame


def _eventlog(spark: Any, spec: SourceSpec) -> Any:
    from delta_contracts.telemetry.eventlog import read_statements
    from delta_contracts.telemetry.statement import STATEMENTS_DDL, to_arrow

    root = Path(spec.location)
    if not root.exists():
        raise SourceError(f"{spec.location}: no such event log folder or file")
    table = to_arrow(list(read_statements(root)))
    if table.num_rows == 0:
        return spark.createDataFrame([], STATEMENTS_DDL)
    return spark.createDataFrame(table.to_pandas(), STATEMENTS_DDL)


def _string(expression: Any) -> Any:
    from sqlglot import exp

    return exp.cast(expression, "STRING")


def _no_names() -> Any:
    from sqlglot import exp

    return exp.cast(exp.Null(), "ARRAY<STRING>")


def _sql(expression: Any) -> str:
    return x.sql(expression)


def _select(frame: Any, expressions: list[Any]) -> Any:
    return frame.selectExpr(*(_sql(e) for e in expressions))
