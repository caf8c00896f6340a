"""What the engine's expected failures log in a session it was handed (a notebook's): nothing. PySpark 4
logs every failing statement's error with its Java stack as JSON on stderr the moment it is raised; the
engine's existence checks fail on purpose (`describe` of a table not created yet, on every `read()` and
`apply`), and must not log, while the caller's own failing statements still do."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pyspark.logger import PySparkLogger

from delta_contracts.engine.base import Engine
from delta_contracts.engine.spark.errors import QUERY_CONTEXT_LOGGERS

pytestmark = pytest.mark.engine


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    """The query-context loggers as in a notebook, where nobody has quieted them, kept in a list."""
    kept = Kept()
    for name in QUERY_CONTEXT_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        monkeypatch.setattr(logger, "level", logging.NOTSET)
        logger.addHandler(kept)
    yield kept
    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).removeHandler(kept)


def test_existence_checks_log_nothing_and_the_callers_errors_still_do(
    spark_engine: Engine, logged: Kept
) -> None:
    assert spark_engine.describe(("no_such_schema", "no_such_table")) is None
    assert spark_engine.view_text(("no_such_schema", "no_such_view")) is None
    assert logged.records == []
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark_engine.spark.sql("SELECT * FROM no_such_schema.no_such_table")  # type: ignore[attr-defined]
    assert [r.name for r in logged.records] == ["SQLQueryContextLogger"], "the caller's own error is logged"
