"""Extraction of distinct statement texts, spread over worker processes, each text answered whatever it does.

A query history is millions of rows but far fewer distinct texts, and fewer distinct shapes still (the same
query with other literals or another comment). The pipeline hands this module each distinct text once; here
each text is fingerprinted (comments, spacing and literals dropped, by the tokenizer), one text per
fingerprint is parsed, and the answer is shared by every text of that fingerprint.

Parsing is pure Python (sqlglot) and holds the GIL, so the work goes to a pool of processes, one per core;
small batches stay in this process, where a pool would cost more to start than it saves.

No statement stops a run: whatever one text raises (sqlglot's IndexError on a collation inside `map(...)`,
RecursionError on deep nesting, MemoryError, a text too long to parse in reasonable time, a parse that does
not end) becomes that text's error, with a kind the summary counts; a worker process that dies is replaced
and the texts it held are retried one by one, so only the text that kills a worker is lost (as an error).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from types import FrameType
from typing import Any

from delta_contracts.sql.extract import Catalog, Extraction, FallbackParser, extract
from delta_contracts.sql.normalize import quick_fingerprint, tokenized_fingerprint
from delta_contracts.telemetry.matching import Targets, possible_in_text, possible_reads, reads_of

# Texts longer than this are not parsed: tokenizing and parsing them takes many seconds each (a 1.5 MB
# generated SELECT takes ~17 s) and they are almost always generated IN-lists or inlined data. The name
# match still logs a possible reader of any watched object such a text names, so a gate stays shut.
MAX_TEXT_CHARS = 500_000
# One statement's fingerprint and parse may not take longer than this (a safety net for texts under the
# size limit that sqlglot takes pathologically long on); the text is answered with a `timeout` error.
TIME_LIMIT_SECONDS = 30.0
# Below this many texts a batch is extracted in this process; above, in the pool.
INLINE_BELOW = 400
CHUNK = 200

# Error kinds the summary counts: extraction's own (`Extraction.error_kind`: "empty", "syntax",
# "unsupported", "too_deep", or the class of what sqlglot raised, e.g. "IndexError"), and the pipeline's.
EMPTY = "empty"
SYNTAX = "syntax"
UNSUPPORTED = "unsupported"
TOO_DEEP = "too_deep"
TOO_LONG = "too_long"
TIMEOUT = "timeout"
WORKER_DIED = "worker_died"
# Errors another parser cannot help with (no text; too big or too slow to try again on the driver; Spark's
# recursive-descent parser overflows where sqlglot's did).
_NOT_FOR_FALLBACK = frozenset({EMPTY, TOO_DEEP, TOO_LONG, TIMEOUT, WORKER_DIED})


def for_fallback(got: Answer | Extraction) -> bool:
    """Whether Spark's parser may read what extraction could not (sqlglot's syntax errors, statements it
    does not understand, what it raised on: `IndexError` on a collation in `map(...)`)."""
    return got.error_kind is not None and got.error_kind not in _NOT_FOR_FALLBACK


# Control characters (NUL, ...) are no SQL; the tokenizer would make them part of a name (`orders\x00`) and
# hide the read: they are read as spaces.
_CONTROLS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], " ")


@dataclass(frozen=True, slots=True)
class Job:
    """One distinct statement: its text, and the reads its source already knows (None: parse the text)."""

    text: str | None
    tables_read: tuple[str, ...] | None = None
    columns_read: tuple[str, ...] | None = None
    tables_written: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    tables_read: tuple[str, ...] = ()
    tables_written: tuple[str, ...] = ()
    columns_read: tuple[str, ...] = ()
    error: str | None = None
    error_kind: str | None = None
    hits: tuple[tuple[str, str], ...] = ()  # (watched object, 'read' | 'possible')
    # The views the text creates or drops: later statements of the history read through them.
    views_changed: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Context:
    """What every worker needs: the catalog to resolve names against, the watched objects, and whether
    `columns_read` must be complete (`telemetry extract`) or only for tables with watched columns."""

    catalog: Catalog
    targets: Targets
    all_columns: bool = True


class _TooSlow(BaseException):
    """A BaseException: an `except Exception` inside sqlglot must not swallow it."""


_context: Context | None = None


def _init(context: Context) -> None:
    global _context
    _context = context
    # sqlglot warns once per statement it falls back on; a history has millions.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)


def fingerprints(texts: Sequence[str | None]) -> list[str | None]:
    """The fingerprint of each text; None where there is none (no text, too long, the tokenizer failed):
    such a text is its own group."""
    return [_fingerprint(t) for t in texts]


def _fingerprint(text: str | None) -> str | None:
    if not text or len(text) > MAX_TEXT_CHARS:
        return None
    try:
        # One regex pass, linear in the text: no time limit, whose two timer calls per text cost a third of
        # the quick fingerprint's own time over a million texts.
        quick = quick_fingerprint(text)
        if quick is not None:
            return quick
        with _time_limit():
            return tokenized_fingerprint(text)
    except (Exception, _TooSlow):  # any failure only means: no sharing for this text
        return None


def answers(jobs: Sequence[Job]) -> list[Answer]:
    context = _context
    if context is None:
        raise RuntimeError("workers not initialised")
    return [answer(job, context) for job in jobs]


def answer(job: Job, context: Context, fallback_parser: FallbackParser | None = None) -> Answer:
    """What the statement reads and writes, and which watched objects it touches; never raises.
    `fallback_parser` (Spark's, on the driver only: it cannot go to a worker) answers what sqlglot cannot
    parse."""
    known = job.tables_read is not None
    reads, writes = set(job.tables_read or ()), set(job.tables_written or ())
    columns = set(job.columns_read or ())
    error: str | None = None
    kind: str | None = None
    views: tuple[tuple[str, str | None], ...] = ()
    text = job.text.translate(_CONTROLS) if job.text else job.text
    if text:
        got = _extract(text, context, fallback_parser)
        reads |= set(got.tables_read)
        writes |= set(got.tables_written)
        columns |= set(got.columns_read)
        error, kind, views = got.error, got.error_kind, got.views_changed
    elif not known:
        error, kind = "no statement text", EMPTY
    if known:  # the source knows the reads (an event log's plan): a text that does not parse is no error
        error = kind = None
    hits = [(o, "read") for o in reads_of(reads, columns, context.targets)]
    hits += [(o, "possible") for o in possible_reads(reads, columns, context.targets, [o for o, _ in hits])]
    if error and text:
        seen = {o for o, _ in hits}
        hits += [(o, "possible") for o in possible_in_text(text, context.targets) if o not in seen]
    return Answer(
        tuple(sorted(reads)),
        tuple(sorted(writes)),
        tuple(sorted(columns)),
        error,
        kind,
        tuple(hits),
        views,
    )


def _extract(text: str, context: Context, fallback: FallbackParser | None) -> Extraction:
    """`extract` never raises; what remains is the pipeline's own limits (length, time)."""
    if len(text) > MAX_TEXT_CHARS:
        error = f"not parsed: {len(text):,} characters (over {MAX_TEXT_CHARS:,})"
        return Extraction(error=error, error_kind=TOO_LONG)
    try:
        with _time_limit():
            return _extract_needed(text, context, fallback)
    except _TooSlow:
        return Extraction(error=f"not parsed: over {TIME_LIMIT_SECONDS:g} s", error_kind=TIMEOUT)


def _extract_needed(text: str, context: Context, fallback: FallbackParser | None) -> Extraction:
    """Columns are the costly part (sqlglot's qualify): for `collect` they are resolved only when the
    statement reads a table that has a watched column, which gives the same hits."""
    catalog = context.catalog
    if not context.all_columns and catalog.schemas:
        tables_only = extract(text, Catalog(views=catalog.views), fallback_parser=fallback)
        if tables_only.error or not _reads_a_watched_column_table(tables_only.tables_read, context.targets):
            return tables_only
    return extract(text, catalog, fallback_parser=fallback)


def _reads_a_watched_column_table(tables_read: Sequence[str], targets: Targets) -> bool:
    owners = Targets(tuple(dict.fromkeys(t for t, _ in targets.columns)), (), targets.locations)
    return bool(reads_of(tables_read, (), owners))


@contextmanager
def _time_limit() -> Iterator[None]:
    """SIGALRM after TIME_LIMIT_SECONDS, in the main thread of a process (workers run tasks there); nothing
    elsewhere (threads cannot take signals)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _TooSlow


class Extractor:
    """Runs `fingerprints` and `answers` over many texts: in a process pool (one worker per core) for large
    batches, in this process for small ones. Results come back in input order."""

    def __init__(self, context: Context, workers: int | None = None) -> None:
        self.context = context
        self.workers = workers or _cores()
        self._pool: ProcessPoolExecutor | None = None
        logging.getLogger("sqlglot").setLevel(logging.ERROR)  # as in the workers

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def fingerprints(self, texts: Sequence[str | None]) -> list[str | None]:
        if len(texts) < INLINE_BELOW or self.workers < 2:
            return fingerprints(texts)
        return self._map(fingerprints, texts, lambda _: None)

    def answers(self, jobs: Sequence[Job]) -> list[Answer]:
        if len(jobs) < INLINE_BELOW or self.workers < 2:
            return [answer(job, self.context) for job in jobs]
        died = Answer(error="the worker extracting this statement died", error_kind=WORKER_DIED)
        return self._map(answers, jobs, lambda _: died)

    def _map(
        self, task: Callable[[Any], list[Any]], items: Sequence[Any], lost: Callable[[Any], Any]
    ) -> list[Any]:
        chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
        futures = [self._try_submit(task, chunk) for chunk in chunks]
        out: list[Any] = []
        for chunk, future in zip(chunks, futures, strict=True):
            result = self._result(future)
            if result is None:  # a worker died: this chunk's or another's; try the chunk again, whole
                result = self._result(self._try_submit(task, chunk))
            out.extend(result if result is not None else self._one_by_one(task, chunk, lost))
        return out

    def _one_by_one(
        self, task: Callable[[Any], list[Any]], chunk: Sequence[Any], lost: Callable[[Any], Any]
    ) -> list[Any]:
        """A chunk that killed its worker twice: each item alone, so only the culprit is lost."""
        out = []
        for item in chunk:
            result = self._result(self._try_submit(task, [item]))
            out.append(result[0] if result is not None else lost(item))
        return out

    def _try_submit(self, task: Callable[[Any], list[Any]], chunk: Sequence[Any]) -> Future[list[Any]] | None:
        try:
            return self._ready_pool().submit(task, chunk)
        except BrokenProcessPool:
            self._discard_pool()
            try:
                return self._ready_pool().submit(task, chunk)
            except BrokenProcessPool:
                return None

    def _result(self, future: Future[list[Any]] | None) -> list[Any] | None:
        if future is None:
            return None
        try:
            return future.result()
        except BrokenProcessPool:
            self._discard_pool()
            return None

    def _ready_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, not fork: the engine's server threads (Sail, gRPC, a JVM gateway) must not be forked.
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=get_context("spawn"),
                initializer=_init,
                initargs=(self.context,),
            )
        return self._pool

    def _discard_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
