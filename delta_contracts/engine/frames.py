"""Columns for a DataFrame of either client: classic PySpark and Spark Connect have their own `functions`."""

from __future__ import annotations

from typing import Any


def sql_column(frame: Any, sql: str, alias: str) -> Any:
    """A Column from SQL text for `frame`, a classic or a Spark Connect DataFrame."""
    from pyspark.sql import functions

    try:
        from pyspark.sql.connect import functions as remote_functions
        from pyspark.sql.connect.dataframe import DataFrame as RemoteFrame
    except ImportError:  # pyspark without the Connect client's dependencies
        return functions.expr(sql).alias(alias)
    chosen = remote_functions if isinstance(frame, RemoteFrame) else functions
    return chosen.expr(sql).alias(alias)
