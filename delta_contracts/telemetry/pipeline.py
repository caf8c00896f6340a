"""Collection of a query history into the readers log, incremental by a watermark per source.

The engine reads the source and groups its statements by exact text (a hash; one pass, in the engine, over
millions of rows); only the distinct texts come to Python, where `workers` fingerprints them and parses one
text per shape, spread over every core. The statements that touch a watched object are then found by
joining the few keys with hits back to the source, in the engine. Memory holds the distinct texts, never one
Python object per row.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from delta_contracts.instants import epoch_micros, from_epoch_micros
from delta_contracts.sql import expressions as x
from delta_contracts.sql.extract import FallbackParser, names_match
from delta_contracts.sql.history import ViewHistory
from delta_contracts.telemetry import workers
from delta_contracts.telemetry.log import (
    ReaderRow,
    Watermark,
    append_reader_rows,
    record_watermark,
    watermarks,
)
from delta_contracts.telemetry.matching import Targets
from delta_contracts.telemetry.objects import Watched
from delta_contracts.telemetry.store import STATEMENT_CHARS
from delta_contracts.telemetry.workers import Answer, Context, Extractor, Job

Progress = Callable[[str, int, int], None]  # (stage, done, total)

HITS_DDL = "key bigint, object string, kind string"
ANSWERS_DDL = (
    "key bigint, tables_read array<string>, tables_written array<string>, columns_read array<string>, "
    "error string"
)
_KNOWN = ("tables_read", "columns_read", "tables_written")


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Collected:
    source: str
    statements: int
    unparsed: int
    appended: int
    watermark: datetime | None
    errors: Mapping[str, int] = field(default_factory=dict)  # error kind -> statements
    distinct: int = 0  # distinct texts extracted
    # of `appended`, the possible readers: a text naming the object that did not parse, or a read tied to a
    # table but not to its columns (a possible read of each of its deprecated columns)
    possible: int = 0


@dataclass(frozen=True, slots=True)
class Distinct:
    """The source's distinct statements (by exact text and known reads), with how often each occurs and
    when, and what each reads."""

    keys: list[int]
    counts: list[int]
    first: int | None  # statement times, epoch micros
    last: int | None
    answers: list[Answer]

    @property
    def statements(self) -> int:
        return sum(self.counts)

    def errors(self) -> Counter[str]:
        kinds: Counter[str] = Counter()
        for answer, n in zip(self.answers, self.counts, strict=True):
            if answer.error is not None:
                kinds[answer.error_kind or "error"] += n
        return kinds


def known_reads(frame: Any) -> tuple[str, ...]:
    """The columns of reads the source already knows (`_KNOWN`) that it has: a query history has none, and
    leaves them out rather than carry nulls through the group-by (half its cost at ten million rows)."""
    present = set(frame.columns)
    return tuple(name for name in _KNOWN if name in present)


def keyed(frame: Any) -> Any:
    """Adds `key`: a hash of the exact text and the reads the source already knows (what extraction depends
    on). Nothing is normalized here: that needs the tokenizer, on distinct texts only."""
    from sqlglot import exp

    parts: list[exp.Expr] = [exp.column("text")]
    for name in known_reads(frame):
        parts.append(exp.func("array_join", exp.column(name), exp.Literal.string("\x1f")))
        parts.append(exp.Is(this=exp.column(name), expression=exp.Null()))
    key = exp.func("xxhash64", *parts)
    return frame.selectExpr("*", x.sql(key.as_("key")))


def extract_distinct(
    keyed_frame: Any,
    watched: Watched,
    *,
    all_columns: bool,
    progress: Progress = _quiet,
    fallback_parser: FallbackParser | None = None,
) -> Distinct:
    """Each distinct statement of the frame, extracted once; then, on the driver, the few that need more:
    what sqlglot could not parse, by `fallback_parser` (Spark's, where the engine has one), and reads of
    views created earlier in the same history."""
    from sqlglot import exp

    from delta_contracts.engine.frames import sql_column as _expr

    def agg(function: str, *args: exp.Expr) -> str:
        return x.sql(exp.func(function, *args))

    micros = exp.func("unix_micros", exp.column("statement_time"))
    grouped = keyed_frame.groupBy("key").agg(
        _expr(keyed_frame, agg("first", exp.cast(exp.column("text"), "STRING")), "text"),
        # As JSON text: `first` of an array column is over five times slower in the embedded engine than
        # of a string (measured: 18.6 s against 4.1 s for 1M rows, 100k groups), and a source's empty
        # array literal is array<void>, which Arrow cannot carry.
        *(
            _expr(keyed_frame, agg("first", exp.func("to_json", exp.cast(exp.column(c), "ARRAY<STRING>"))), c)
            for c in known_reads(keyed_frame)
        ),
        _expr(keyed_frame, agg("count", exp.Star()), "n"),
        _expr(keyed_frame, agg("min", micros), "first_micros"),
        _expr(keyed_frame, agg("max", micros), "last_micros"),
    )
    progress("reading the source", 0, 1)
    table = grouped.toArrow()
    progress("reading the source", 1, 1)
    keys = table.column("key").to_pylist()
    texts: list[str | None] = table.column("text").to_pylist()
    absent: list[str | None] = [None] * table.num_rows
    known: list[list[str | None]] = [
        table.column(c).to_pylist() if c in table.column_names else absent for c in _KNOWN
    ]
    jobs = [Job(text, *(_names(k[i]) for k in known)) for i, text in enumerate(texts)]
    firsts: list[int | None] = table.column("first_micros").to_pylist()
    lasts: list[int | None] = table.column("last_micros").to_pylist()
    counts = [int(n) for n in table.column("n").to_pylist()]
    del table, texts, known
    targets = Targets.of(watched.objects, watched.catalog.schemas, watched.locations)
    # A path read (``delta.`/p` ``) of a watched table's location reads that table's columns.
    catalog = replace(watched.catalog, locations={**targets.locations, **watched.catalog.locations})
    context = Context(catalog, targets, all_columns)
    with Extractor(context) as extractor:
        answers = _answer_all(extractor, jobs, progress)
    if fallback_parser is not None:
        answers = _by_fallback(jobs, answers, context, fallback_parser)
    answers = _through_history_views(jobs, answers, firsts, lasts, context, fallback_parser)
    return Distinct(
        keys,
        counts,
        min((m for m in firsts if m is not None), default=None),
        max((m for m in lasts if m is not None), default=None),
        answers,
    )


def _names(as_json: str | None) -> tuple[str, ...] | None:
    return None if as_json is None else tuple(json.loads(as_json))


def _by_fallback(
    jobs: Sequence[Job], answers: list[Answer], context: Context, fallback_parser: FallbackParser
) -> list[Answer]:
    """What sqlglot could not parse, asked again with the other parser (on the driver: Spark's parser
    lives in the engine's process; such statements are few)."""
    return [
        workers.answer(job, context, fallback_parser) if workers.for_fallback(got) and job.text else got
        for job, got in zip(jobs, answers, strict=True)
    ]


def _through_history_views(
    jobs: Sequence[Job],
    answers: list[Answer],
    firsts: Sequence[int | None],
    lasts: Sequence[int | None],
    context: Context,
    fallback_parser: FallbackParser | None,
) -> list[Answer]:
    """Statements that read a view created by an earlier statement of the history, extracted again on the
    driver with the views as the history left them then (`CREATE VIEW revenue0 AS ... FROM lineitem`, then
    `SELECT ... FROM revenue0`: a read of `lineitem`, and of its columns where known). Texts were extracted
    each on its own; a view is dated by the first run of the text that made it. A text run both before and
    after a view changed is extracted at its first and its last run and reads what either reads (a read
    too many keeps a gate shut; one too few would open it)."""
    history = ViewHistory()
    for got, first in zip(answers, firsts, strict=True):
        if got.views_changed:
            history.record(_instant(first), got.views_changed)
    if not history:
        return answers
    view_names = [name.split(".") for name in history.names()]
    last_parts = {parts[-1] for parts in view_names}  # a cheap filter before the suffix match
    out = list(answers)
    for index, (job, got) in enumerate(zip(jobs, answers, strict=True)):
        if job.text is None or job.tables_read is not None:
            continue
        named = [r.split(".") for r in got.tables_read if r.rsplit(".", 1)[-1] in last_parts]
        if not any(names_match(r, n) for r in named for n in view_names):
            continue
        instants = dict.fromkeys([_instant(firsts[index]), _instant(lasts[index])])
        again = [
            workers.answer(
                job,
                Context(history.catalog_at(context.catalog, when), context.targets, context.all_columns),
                fallback_parser,
            )
            for when in instants
        ]
        out[index] = _union(again)
    return out


def _union(answers: Sequence[Answer]) -> Answer:
    if len(answers) == 1:
        return answers[0]
    first = answers[0]
    error = next((a for a in answers if a.error is not None), first)

    def joined(field_of: Callable[[Answer], tuple[Any, ...]]) -> tuple[Any, ...]:
        return tuple(sorted({item for a in answers for item in field_of(a)}))

    return Answer(
        joined(lambda a: a.tables_read),
        joined(lambda a: a.tables_written),
        joined(lambda a: a.columns_read),
        error.error,
        error.error_kind,
        tuple(dict.fromkeys(h for a in answers for h in a.hits)),
        first.views_changed,
    )


def _answer_all(extractor: Extractor, jobs: Sequence[Job], progress: Progress) -> list[Answer]:
    """Fingerprint every distinct text, parse one text per (fingerprint, known reads), share the answer."""
    progress(f"fingerprinting {len(jobs)} distinct text(s)", 0, len(jobs))
    prints = extractor.fingerprints([j.text if j.tables_read is None else None for j in jobs])
    groups: dict[object, int] = {}
    representatives: list[Job] = []
    group_of: list[int] = []
    for index, (job, printed) in enumerate(zip(jobs, prints, strict=True)):
        group = (printed, job.tables_read, job.columns_read, job.tables_written) if printed else index
        number = groups.setdefault(group, len(representatives))
        if number == len(representatives):
            representatives.append(job)
        group_of.append(number)
    progress(f"extracting {len(representatives)} distinct statement(s)", 0, len(representatives))
    answered = extractor.answers(representatives)
    progress(
        f"extracting {len(representatives)} distinct statement(s)", len(representatives), len(representatives)
    )
    return [answered[g] for g in group_of]


def extracted_statements(
    frame: Any, watched: Watched, *, fallback_parser: FallbackParser | None = None
) -> Any:
    """Every statement with its extraction (the `telemetry extract` view)."""
    import pyarrow as pa

    statements = keyed(frame)
    distinct = extract_distinct(statements, watched, all_columns=True, fallback_parser=fallback_parser)
    names = pa.list_(pa.string())
    answers = pa.table(
        {
            "key": pa.array(distinct.keys, pa.int64()),
            "tables_read": pa.array([list(a.tables_read) for a in distinct.answers], names),
            "tables_written": pa.array([list(a.tables_written) for a in distinct.answers], names),
            "columns_read": pa.array([list(a.columns_read) for a in distinct.answers], names),
            "error": pa.array([a.error for a in distinct.answers], pa.string()),
        }
    )
    parsed = frame.sparkSession.createDataFrame(answers.to_pandas(), ANSWERS_DDL)
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
    fallback_parser: FallbackParser | None = None,
) -> Collected:
    """Append the reads of watched objects in `frame` since the source's watermark (minus `overlap`, for
    statements recorded late); ids already logged are skipped, so re-runs and overlaps add nothing. A
    statement that cannot be extracted is counted by error kind and never stops the run. `fallback_parser`:
    Spark's parser, asked for what sqlglot cannot parse (the engine layer passes it in)."""
    from sqlglot import exp

    now = now or datetime.now(UTC)
    previous = watermarks(state_dir).get(source)
    if previous is not None and previous.watermark is not None:
        since = previous.watermark - overlap
        condition = exp.or_(
            exp.column("statement_time").is_(exp.Null()),
            exp.GTE(this=exp.column("statement_time"), expression=_timestamp(since)),
        )
        frame = frame.where(x.sql(condition))
    statements = keyed(frame)
    distinct = extract_distinct(
        statements, watched, all_columns=False, progress=progress, fallback_parser=fallback_parser
    )
    total = distinct.statements
    progress("logging", 0, 1)
    # A read of the alias view (or a table's earlier name) as a whole read the version it served then, the
    # live one: logged, it would count against that table once a later cutover deprecates it.
    followers = set(watched.followers)
    rows = [r for r in _reader_rows(spark, statements, distinct, source) if r.object not in followers]
    logged = append_reader_rows(state_dir, rows, now)
    appended = len(logged)
    errors = distinct.errors()
    unparsed = sum(errors.values())
    mark = Watermark(
        source=source,
        watermark=_latest(previous.watermark if previous else None, _instant(distinct.last)),
        collected_at=now,
        covered_from=_earliest(previous.covered_from if previous else None, _instant(distinct.first)),
        statements=total,
        unparsed=unparsed,
    )
    record_watermark(state_dir, mark)
    progress("logged", 1, 1)
    possible = sum(1 for r in logged if r.kind == "possible")
    return Collected(
        source, total, unparsed, appended, mark.watermark, dict(errors), len(distinct.keys), possible
    )


def _reader_rows(spark: Any, statements: Any, distinct: Distinct, source: str) -> list[ReaderRow]:
    """One row per (statement, watched object it touches): the keys with hits joined back in the engine."""
    import pyarrow as pa

    hit_keys, objects, kinds = [], [], []
    for key, answer in zip(distinct.keys, distinct.answers, strict=True):
        for obj, kind in answer.hits:
            hit_keys.append(key)
            objects.append(obj)
            kinds.append(kind)
    if not hit_keys:
        return []
    hits = pa.table({"key": pa.array(hit_keys, pa.int64()), "object": objects, "kind": kinds})
    frame = spark.createDataFrame(hits.to_pandas(), HITS_DDL)
    columns = ("key", "statement_id", "statement_time", "user", "client", "text")
    joined = statements.select(*columns).join(frame, "key")
    selected = joined.selectExpr(
        "statement_id",
        "unix_micros(statement_time) AS micros",
        "user",
        "client",
        "object",
        "kind",
        f"substring(CAST(text AS STRING), 1, {STATEMENT_CHARS}) AS text",
    )
    return [
        ReaderRow(
            object=r["object"],
            kind=r["kind"],
            user=r["user"],
            client=r["client"],
            statement_id=r["statement_id"],
            statement_time=_instant(r["micros"]),
            source=source,
            statement=r["text"],
        )
        for r in selected.toLocalIterator()
    ]


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
