"""One statement of a query history, whatever the source (deduplicated by `sql.normalize.fingerprint`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, slots=True)
class Statement:
    statement_id: str
    statement_time: datetime | None
    user: str | None
    client: str | None
    text: str | None
    # Reads a source already knows without parsing (lineage, an event log's plan); None: parse `text`.
    tables_read: tuple[str, ...] | None = None
    columns_read: tuple[str, ...] | None = None
    tables_written: tuple[str, ...] | None = None


def statements_schema() -> pa.Schema:
    import pyarrow as pa

    names = pa.list_(pa.string())
    return pa.schema(
        [
            ("statement_id", pa.string()),
            ("statement_time", pa.timestamp("us", tz="UTC")),
            ("user", pa.string()),
            ("client", pa.string()),
            ("text", pa.string()),
            ("tables_read", names),
            ("columns_read", names),
            ("tables_written", names),
        ]
    )


# The DataFrame every source is read into, as a Spark DDL schema.
STATEMENTS_DDL = (
    "statement_id string, statement_time timestamp, user string, client string, text string, "
    "tables_read array<string>, columns_read array<string>, tables_written array<string>"
)


def to_arrow(statements: list[Statement]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(
        [
            {
                "statement_id": s.statement_id,
                "statement_time": s.statement_time,
                "user": s.user,
                "client": s.client,
                "text": s.text,
                "tables_read": None if s.tables_read is None else list(s.tables_read),
                "columns_read": None if s.columns_read is None else list(s.columns_read),
                "tables_written": None if s.tables_written is None else list(s.tables_written),
            }
            for s in statements
        ],
        schema=statements_schema(),
    )
