"""Extraction inside the engine and the incremental collection into the readers log.

Statements are normalized (literals and spacing) in the engine, each distinct (text, structured reads) is
parsed once by `mapInArrow` — spread over the cluster, or over Sail's / local Spark's cores — and the
results are joined back to every statement carrying it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.instants import epoch_micros, from_epoch_micros
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, record_watermark, watermarks
from delta_contracts.telemetry.matching import Targets, possible_in_text, reads_of
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.statement import NUMBER_LITERAL, STRING_LITERAL, WHITESPACE

if TYPE_CHECKING:
    import pyarrow as pa

Progress = Callable[[str, int, int], None]  # (stage, done, total)

EXTRACTED_DDL = (
    "key bigint, tables_read array<string>, tables_written array<string>, columns_read array<string>, "
    "error string, hits array<struct<object:string,kind:string>>"
)


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Collected:
    source: str
    statements: int
    unparsed: int
    appended: int
    watermark: datetime | None


def keyed(frame: Any) -> Any:
    """Adds `norm` (the normalized text) and `key` (a hash of what extraction depends on)."""
    from sqlglot import exp

    def replace(value: exp.Expr, pattern: str, by: str) -> exp.Expr:
        return exp.func("regexp_replace", value, exp.Literal.string(pattern), exp.Literal.string(by))

    text = exp.column("text")
    norm = exp.func(
        "trim", replace(replace(replace(text, STRING_LITERAL, "'?'"), NUMBER_LITERAL, "0"), WHITESPACE, " ")
    )
    joined = [
        exp.func("array_join", exp.column(c), exp.Literal.string("\x1f"))
        for c in ("tables_read", "columns_read", "tables_written")
    ]
    key = exp.func("xxhash64", exp.column("norm"), *joined)
    with_norm = frame.selectExpr("*", norm.as_("norm").sql(dialect="spark"))
    return with_norm.selectExpr("*", key.as_("key").sql(dialect="spark"))


def extract_distinct(keyed_frame: Any, watched: Watched) -> Any:
    """One row per distinct key: what it reads and writes, and which watched objects it touches."""
    targets = Targets.of(watched.objects, watched.catalog.schemas, watched.locations)
    catalog = watched.catalog

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import logging

        # sqlglot warns once per statement it falls back on; a history has millions.
        logging.getLogger("sqlglot").setLevel(logging.ERROR)
        for batch in batches:
            yield extract_batch(batch, catalog, targets)

    distinct = keyed_frame.select(
        "key", "norm", "tables_read", "columns_read", "tables_written"
    ).dropDuplicates(["key"])
    return distinct.mapInArrow(run, EXTRACTED_DDL)


def extract_batch(batch: pa.RecordBatch, catalog: Any, targets: Targets) -> pa.RecordBatch:
    import pyarrow as pa

    from delta_contracts.sql.extract import extract

    rows = batch.to_pylist()
    out: dict[str, list[Any]] = {
        k: [] for k in ("key", "tables_read", "tables_written", "columns_read", "error", "hits")
    }
    for row in rows:
        known_reads, known_columns, known_writes = (
            row["tables_read"],
            row["columns_read"],
            row["tables_written"],
        )
        text = row["norm"]
        reads, writes, columns = set(known_reads or ()), set(known_writes or ()), set(known_columns or ())
        error: str | None = None
        if text:
            got = extract(text, catalog)
            reads |= set(got.tables_read)
            writes |= set(got.tables_written)
            columns |= set(got.columns_read)
            error = got.error if known_reads is None else None
        elif known_reads is None:
            error = "no statement text"
        hits = [{"object": o, "kind": "read"} for o in reads_of(reads, columns, targets)]
        if error and text:
            seen = {h["object"] for h in hits}
            hits += [
                {"object": o, "kind": "possible"} for o in possible_in_text(text, targets) if o not in seen
            ]
        out["key"].append(row["key"])
        out["tables_read"].append(sorted(reads))
        out["tables_written"].append(sorted(writes))
        out["columns_read"].append(sorted(columns))
        out["error"].append(error)
        out["hits"].append(hits)
    hit = pa.struct([("object", pa.string()), ("kind", pa.string())])
    names = pa.list_(pa.string())
    schema = pa.schema(
        [
            ("key", pa.int64()),
            ("tables_read", names),
            ("tables_written", names),
            ("columns_read", names),
            ("error", pa.string()),
            ("hits", pa.list_(hit)),
        ]
    )
    return pa.RecordBatch.from_pydict(out, schema=schema)


def extracted_statements(frame: Any, watched: Watched) -> Any:
    """Every statement with its extraction (the `telemetry extract` view)."""
    statements = keyed(frame)
    parsed = extract_distinct(statements, watched)
    return statements.select("key", "statement_id", "statement_time", "user", "client").join(parsed, "key")


def collect(
    spark: Any,
    frame: Any,
    source: str,
    watched: Watched,
    state_dir: Path,
    *,
    overlap: timedelta = timedelta(days=1),
    now: datetime | None = None,
    progress: Progress = _quiet,
) -> Collected:
    """Append the reads of watched objects in `frame` since the source's watermark (minus `overlap`, for
    statements recorded late); ids already logged are skipped, so re-runs and overlaps add nothing."""
    from sqlglot import exp

    now = now or datetime.now(UTC)
    previous = watermarks(state_dir).get(source)
    if previous is not None and previous.watermark is not None:
        since = previous.watermark - overlap
        condition = exp.or_(
            exp.column("statement_time").is_(exp.Null()),
            exp.GTE(this=exp.column("statement_time"), expression=_timestamp(since)),
        )
        frame = frame.where(condition.sql(dialect="spark"))
    progress("reading the source", 0, 1)
    bounds = frame.selectExpr(
        "count(*) AS n",
        "min(unix_micros(statement_time)) AS first",
        "max(unix_micros(statement_time)) AS last",
    )
    summary = bounds.collect()[0]
    total = int(summary["n"])
    progress("reading the source", 1, 1)
    statements = keyed(frame)
    parsed = extract_distinct(statements, watched)
    progress(f"extracting {total} statement(s)", 0, total)
    joined = statements.select("key", "statement_id", "statement_time", "user", "client").join(parsed, "key")
    tally = joined.selectExpr("count_if(error IS NOT NULL) AS unparsed").collect()[0]
    hits = joined.where("size(hits) > 0").selectExpr(
        "statement_id", "unix_micros(statement_time) AS micros", "user", "client", "explode(hits) AS hit"
    )
    rows = [
        ReaderRow(
            object=r["hit"]["object"],
            kind=r["hit"]["kind"],
            user=r["user"],
            client=r["client"],
            statement_id=r["statement_id"],
            statement_time=_instant(r["micros"]),
            source=source,
        )
        for r in hits.toLocalIterator()
    ]
    progress(f"extracting {total} statement(s)", total, total)
    appended = append_readers(state_dir, rows, now)
    last = _instant(summary["last"])
    first = _instant(summary["first"])
    mark = Watermark(
        source=source,
        watermark=_latest(previous.watermark if previous else None, last),
        collected_at=now,
        covered_from=_earliest(previous.covered_from if previous else None, first),
        statements=total,
        unparsed=int(tally["unparsed"] or 0),
    )
    record_watermark(state_dir, mark)
    progress("logged", 1, 1)
    return Collected(source, total, mark.unparsed, appended, mark.watermark)


def _timestamp(value: datetime) -> Any:
    from sqlglot import exp

    return exp.func("timestamp_micros", exp.Literal.number(epoch_micros(value)))


def _instant(micros: object) -> datetime | None:
    if not isinstance(micros, int):
        return None
    return from_epoch_micros(micros)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return max((v for v in (a, b) if v is not None), default=None)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return min((v for v in (a, b) if v is not None), default=None)
