"""What a Spark session raises and logs: the errors of a statement (classic and Connect), an error's
condition and Java causes, and PySpark's query-context loggers, quiet for the errors the engine expects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from delta_contracts.engine.retry import one_line


def spark_statement_errors() -> tuple[type[BaseException], ...]:
    """What a statement run on a session may raise for a reason of its own: PySpark's errors (classic and
    Connect), and on a classic session py4j's `Py4JJavaError`, which is what PySpark leaves of a JVM exception
    it does not convert (Delta's commit conflicts among them)."""
    from pyspark.errors import PySparkException

    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # a Connect-only client has no py4j
        return (PySparkException,)
    return (PySparkException, Py4JJavaError)


def spark_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a Spark session (classic or Connect) raises for a statement it refuses, for callers
    outside the engine layer that run DataFrame reads on a session they were handed."""
    from pyspark.errors import PySparkException

    return (PySparkException,)


def error_condition(err: BaseException) -> str | None:
    """A Spark error's class (classic or Connect) without its sub-class, e.g. `EXPECT_TABLE_NOT_VIEW`."""
    getter = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)  # 4.x / 3.5
    condition = getter() if callable(getter) else None
    return str(condition).split(".", 1)[0] if condition else None


def java_causes(err: BaseException) -> list[str]:
    """A Spark error's Java exception and its causes, outermost first, each as `class: message` (Derby's own
    also carry their SQLState: `ERROR XSDB6: …`); the Python error's first line when it has no Java side."""
    texts: list[str] = []
    throwable = getattr(err, "_origin", None)  # classic PySpark keeps the Py4J Throwable there
    while throwable is not None and len(texts) < 50:
        texts.append(" ".join(str(throwable.toString()).split()))
        throwable = throwable.getCause()
    return texts or [one_line(err)]


QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_query_context_loggers() -> None:
    """PySpark logs every error of a statement that has a query context — its Java stack as ~2 KB of JSON on
    stderr — the moment the error is raised, caught or not: the engine's expected ones too (a DESCRIBE of a
    table that does not exist yet, on every run). The CLI reports the errors that matter itself."""
    import logging

    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark 3.5 has no such logger
        return
    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


@contextmanager
def errors_expected() -> Iterator[None]:
    """Around a statement whose failure the engine expects and handles (a DESCRIBE of a table that may not
    exist yet): PySpark would log the error with its Java stack the moment it is raised, in the caller's
    own session too (`read(spark, …)`), so its query-context loggers are off for that statement only."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark 3.5 has no such logger
        yield
        return
    loggers = [PySparkLogger.getLogger(name) for name in QUERY_CONTEXT_LOGGERS]
    disabled = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was
