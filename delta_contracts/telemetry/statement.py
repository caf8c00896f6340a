"""One statement of a query history, whatever the source, and the text normalization used to deduplicate."""

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


# Statements that differ only in comments, spacing and literals read the same tables and columns: they are
# parsed once (the first text of each group is parsed; this key only groups). The tokenizer, not a regex,
# tells comments, strings and quoted names apart: a `--` inside a string is no comment, and a line comment
# ends at its line. Kept values: numbers after GROUP BY / ORDER BY and commas (ordinals name columns), and
# the string of IDENTIFIER('schema.table') (it names a table).
_STRINGS = frozenset({"STRING", "NATIONAL_STRING", "RAW_STRING", "BYTE_STRING", "HEX_STRING", "BIT_STRING"})
_ORDINAL_CONTEXT = frozenset({"GROUP_BY", "ORDER_BY", "SORT_BY", "CLUSTER_BY", "DISTRIBUTE_BY", "COMMA"})


def normalize(text: str) -> str:
    """The statement's tokens, comments dropped and literals folded, one space apart; raises what the
    tokenizer raises on text it cannot tokenize."""
    from sqlglot.dialects.dialect import Dialect

    from delta_contracts.sql.dialect import DIALECT

    tokens = Dialect.get_or_raise(DIALECT).tokenize(text)
    out: list[str] = []
    previous = ""
    for index, token in enumerate(tokens):
        kind = token.token_type.name
        piece = text[token.start : token.end + 1]
        if kind in _STRINGS and not (
            index >= 2 and previous == "L_PAREN" and _names_a_table(tokens[index - 2])
        ):
            piece = "'?'"
        elif kind == "NUMBER" and previous not in _ORDINAL_CONTEXT:
            piece = "0"
        out.append(piece)
        previous = kind
    return " ".join(out)


def _names_a_table(call: object) -> bool:
    return str(getattr(call, "text", "")).casefold() == "identifier"
