"""The apply ledger as a catalog table the Spark session owns (contracts.yml `engine.ledger`, for `spark` and
`connect`): a Unity Catalog or Hive metastore table, read and written through the session. The table's rows
cross as `state.state_table` says: Arrow-typed dicts of strings, ints and UTC datetimes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from delta_contracts.instants import epoch_micros, from_epoch_micros
from delta_contracts.state.state_table import LEDGER_COMMIT, StateTableError


class CatalogStateTable:
    """A Delta table known to the session's catalog by name, read and written through the session.

    Timestamps cross as epoch microseconds (`unix_micros` / `timestamp_micros`): the instant is then the same
    whatever the session's time zone, on classic Spark and over Spark Connect alike."""

    def __init__(self, spark: Any, name: Sequence[str]) -> None:
        self.spark = spark
        self.name = tuple(name)
        self._created = False  # CREATE … IF NOT EXISTS once per instance: each costs a catalog round trip

    @property
    def where(self) -> str:
        from delta_contracts.sql import expressions as x

        return x.sql(x.table(self.name))

    def append(self, rows: Sequence[dict[str, Any]], schema: Any) -> None:
        with self._errors("write"):
            self._append(rows, schema)

    def read(self, schema: Any) -> list[dict[str, Any]]:
        with self._errors("read"):
            return self._read(schema)

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        from pyspark.errors import PySparkException

        from delta_contracts.contract.errors import first_line

        try:
            yield
        except PySparkException as err:
            raise StateTableError(
                f"cannot {doing} the ledger table {self.where} (contracts.yml engine.ledger): "
                f"{first_line(err)}"
            ) from err

    def _append(self, rows: Sequence[dict[str, Any]], schema: Any) -> None:
        self._create(schema)
        stamps = {f.name for f in schema if _is_timestamp(f.type)}
        data = [
            tuple(_micros(row.get(f.name)) if f.name in stamps else row.get(f.name) for f in schema)
            for row in rows
        ]
        # SQL expressions, not pyspark.sql.functions: those pick classic or Connect by a process-wide flag
        # that the connect engine leaves unset, and the DataFrame here may be either.
        frame = self.spark.createDataFrame(data, schema=_columns_ddl(schema, stamps_as_micros=True))
        frame = frame.selectExpr(*(_convert("timestamp_micros", f.name, f.name in stamps) for f in schema))
        # mergeSchema: a table made by an older release gets the columns added since
        writer = frame.write.format("delta").mode("append").option("mergeSchema", "true")
        writer.option("userMetadata", LEDGER_COMMIT).saveAsTable(self.where)

    def _read(self, schema: Any) -> list[dict[str, Any]]:
        if not self.spark.catalog.tableExists(self.where):
            return []
        frame = self.spark.table(self.where)
        present = {c.casefold() for c in frame.columns}
        stamps = {f.name for f in schema if _is_timestamp(f.type)}
        picked = [
            _convert("unix_micros", f.name, f.name in stamps, missing=f.name.casefold() not in present)
            for f in schema
        ]
        return [
            {k: _from_micros(v) if k in stamps else v for k, v in row.asDict().items()}
            for row in frame.selectExpr(*picked).collect()
        ]

    def _create(self, schema: Any) -> None:
        """CREATE TABLE IF NOT EXISTS, its schema first when the name has one."""
        from sqlglot import exp

        if self._created:
            return

        from delta_contracts.sql import expressions as x

        if len(self.name) > 1:
            self.spark.sql(x.sql(exp.Create(this=x.table(self.name[:-1]), kind="SCHEMA", exists=True)))
        create = exp.Create(
            this=exp.Schema(this=x.table(self.name), expressions=_columns(schema, stamps_as_micros=False)),
            kind="TABLE",
            exists=True,
            properties=exp.Properties(expressions=[exp.FileFormatProperty(this=exp.var("DELTA"))]),
        )
        self.spark.sql(x.sql(create))
        self._created = True


def _convert(function: str, name: str, stamp: bool, *, missing: bool = False) -> str:
    """`function(name) AS name` for a timestamp column, else `name` (NULL when the table lacks it)."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    value: exp.Expr = exp.Null() if missing else x.column(name)
    if stamp and not missing:
        value = exp.Anonymous(this=function, expressions=[value])
    return x.sql(exp.Alias(this=value, alias=x.ident(name)))


def _is_timestamp(arrow_type: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_timestamp(arrow_type))


def _spark_type(arrow_type: Any, *, micros: bool) -> str:
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type):
        return "bigint" if micros else "timestamp"
    if pa.types.is_int64(arrow_type):
        return "bigint"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_string(arrow_type):
        return "string"
    raise TypeError(f"no Spark type for the state table's Arrow type {arrow_type}")


def _columns(schema: Any, *, stamps_as_micros: bool) -> list[Any]:
    """The state table's columns as sqlglot column definitions."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    return [
        exp.ColumnDef(this=x.ident(f.name), kind=x.data_type(_spark_type(f.type, micros=stamps_as_micros)))
        for f in schema
    ]


def _columns_ddl(schema: Any, *, stamps_as_micros: bool) -> str:
    """The columns as a DDL schema string, which `createDataFrame` takes on classic Spark and Connect."""
    from delta_contracts.sql import expressions as x

    return ", ".join(x.sql(c) for c in _columns(schema, stamps_as_micros=stamps_as_micros))


def _micros(value: datetime | None) -> int | None:
    return None if value is None else epoch_micros(value)


def _from_micros(value: int | None) -> datetime | None:
    return None if value is None else from_epoch_micros(int(value))
