"""Statement splitting and the token-level rewrites that turn Spark/Delta syntax sqlglot cannot parse into an
equivalent that names the same tables (pure; sqlglot's tokenizer only).

Every rewrite keeps every name of the statement where it was and only removes or respells keywords: it
cannot add or drop a read. The ones applied to every statement fix texts sqlglot would otherwise misread
silently (`(TABLE t)` parses as a table named TABLE); the others are tried only after a parse failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from delta_contracts.sql.dialect import DIALECT

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token

# Where `TABLE name` is a query (Spark's `TABLE t`, the head of a pipe `TABLE t |> ...`), not a keyword of
# a DDL/DML statement (`CREATE TABLE t`, `INSERT INTO TABLE t`).
_QUERY_TABLE_AFTER = frozenset({"L_PAREN", "UNION", "EXCEPT", "INTERSECT", "ALL", "DISTINCT"})
_NAME_PARTS = frozenset({"VAR", "IDENTIFIER"})


@dataclass(frozen=True, slots=True)
class Chunk:
    """One statement of a text: its own text (comments inside it kept) and its tokens."""

    text: str
    tokens: tuple[Token, ...]


def tokenize(text: str, dialect: str = DIALECT) -> list[Token]:
    from sqlglot.dialects.dialect import Dialect

    return list(Dialect.get_or_raise(dialect).tokenize(text))


def split_statements(text: str, tokens: list[Token]) -> list[Chunk]:
    """The statements of a text, split at its semicolons (the tokenizer knows strings and comments)."""
    chunks: list[Chunk] = []
    current: list[Token] = []
    for token in [*tokens, None]:
        if token is None or token.token_type.name == "SEMICOLON":
            if current:
                chunks.append(Chunk(text[current[0].start : current[-1].end + 1], tuple(current)))
            current = []
        else:
            current.append(token)
    return chunks


def always(chunk: Chunk) -> str:
    """The statement with the rewrites that are right for every text (sqlglot misreads the original)."""
    return _apply(chunk, _query_table_edits(chunk))


def on_failure(chunk: Chunk) -> str | None:
    """The statement respelt for sqlglot (schema evolution, REPLACE TABLE, COLLATE, ...), or None when
    there is nothing to respell."""
    tokens = chunk.tokens
    edits = _query_table_edits(chunk) + _schema_evolution(tokens) + _replace_table(tokens)
    edits += _insert_if_not_exists(tokens) + _collate(tokens) + _clone_time_travel(tokens)
    edits += _values_pipe_head(tokens)
    if not edits:
        return None
    return _apply(chunk, edits)


Edit = tuple[int, int, str]  # (first token, last token, replacement text) in token indexes


def _apply(chunk: Chunk, edits: list[Edit]) -> str:
    if not edits:
        return chunk.text
    base = chunk.tokens[0].start
    out: list[str] = []
    position = 0
    for first, last, replacement in sorted(edits):
        start = chunk.tokens[first].start - base
        if start < position:  # overlapping edits: keep the first
            continue
        out.append(chunk.text[position:start])
        out.append(replacement)
        position = chunk.tokens[last].end + 1 - base
    out.append(chunk.text[position:])
    return "".join(out)


def _name_end(tokens: tuple[Token, ...], index: int) -> int:
    """The index after the dotted name starting at `index` (`index` itself when none starts there)."""
    if index >= len(tokens) or tokens[index].token_type.name not in _NAME_PARTS:
        return index
    end = index + 1
    while (
        end + 1 < len(tokens)
        and tokens[end].token_type.name == "DOT"
        and (tokens[end + 1].token_type.name in _NAME_PARTS)
    ):
        end += 2
    return end


def _words(tokens: tuple[Token, ...], index: int, count: int) -> list[str]:
    return [t.text.casefold() for t in tokens[index : index + count]]


def _query_table_edits(chunk: Chunk) -> list[Edit]:
    """`TABLE t` as a query: `SELECT * FROM t`, `FROM t` when a pipe follows, `(SELECT * FROM t)` as the
    operand of a set operation (`|> UNION ALL TABLE t`)."""
    tokens = chunk.tokens
    edits: list[Edit] = []
    for index, token in enumerate(tokens):
        if token.token_type.name != "TABLE":
            continue
        before = tokens[index - 1] if index else None
        if before is not None and not _opens_a_query(before):
            continue
        end = _name_end(tokens, index + 1)
        if end == index + 1:
            continue
        if end < len(tokens) and tokens[end].text == "|>":
            edits.append((index, index, "FROM"))
        elif before is not None and before.token_type.name != "L_PAREN":
            base = tokens[0].start
            name = chunk.text[tokens[index + 1].start - base : tokens[end - 1].end + 1 - base]
            edits.append((index, end - 1, f"(SELECT * FROM {name})"))
        else:
            edits.append((index, index, "SELECT * FROM"))
    return edits


def _opens_a_query(token: Token) -> bool:
    return token.token_type.name in _QUERY_TABLE_AFTER or token.text.casefold() == "minus"


def _schema_evolution(tokens: tuple[Token, ...]) -> list[Edit]:
    """`MERGE WITH SCHEMA EVOLUTION INTO` / `INSERT WITH SCHEMA EVOLUTION INTO`: the clause only lets the
    write add columns; it names nothing."""
    return [
        (index, index + 2, "")
        for index in range(1, len(tokens) - 2)
        if _words(tokens, index, 3) == ["with", "schema", "evolution"]
        and tokens[index - 1].text.casefold() in ("merge", "insert")
    ]


def _replace_table(tokens: tuple[Token, ...]) -> list[Edit]:
    """Spark's `REPLACE TABLE t ... AS SELECT` is `CREATE OR REPLACE TABLE` without the create."""
    if _words(tokens, 0, 2) == ["replace", "table"]:
        return [(0, 0, "CREATE OR REPLACE")]
    return []


def _insert_if_not_exists(tokens: tuple[Token, ...]) -> list[Edit]:
    """`INSERT OVERWRITE t PARTITION (p = 1) IF NOT EXISTS SELECT ...`: the clause only skips the write."""
    if not tokens or tokens[0].text.casefold() != "insert":
        return []
    return [
        (index, index + 2, "")
        for index in range(1, len(tokens) - 2)
        if _words(tokens, index, 3) == ["if", "not", "exists"]
    ]


def _collate(tokens: tuple[Token, ...]) -> list[Edit]:
    """`expr COLLATE UTF8_LCASE`: a collation changes comparisons, never what is read."""
    return [
        (index, index + 1, "")
        for index in range(1, len(tokens) - 1)
        if tokens[index].text.casefold() == "collate"
        and tokens[index + 1].token_type.name in ("VAR", "IDENTIFIER", "STRING")
    ]


_CLONE_CLAUSES = frozenset({"tblproperties", "location"})


def _clone_time_travel(tokens: tuple[Token, ...]) -> list[Edit]:
    """`CREATE TABLE t SHALLOW CLONE s VERSION AS OF 3`: which version is cloned does not change what is
    read (the source) or written (the target)."""
    for index, token in enumerate(tokens):
        if token.text.casefold() != "clone":
            continue
        start = _name_end(tokens, index + 1)
        if (
            start >= len(tokens)
            or _words(tokens, start, 3)[1:] != ["as", "of"]
            or tokens[start].text.casefold()
            not in (
                "version",
                "timestamp",
            )
        ):
            return []
        end = start + 3
        while end < len(tokens) and tokens[end].text.casefold() not in _CLONE_CLAUSES:
            end += 1
        return [(start, end - 1, "")]
    return []


def _values_pipe_head(tokens: tuple[Token, ...]) -> list[Edit]:
    """`VALUES (0, 'a') tab(x, y) |> ...`: a pipe starting from a VALUES list reads as `FROM VALUES ...`."""
    if tokens and tokens[0].token_type.name == "VALUES" and any(t.text == "|>" for t in tokens):
        return [(0, 0, "FROM VALUES")]
    return []
