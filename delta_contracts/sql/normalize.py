"""Compare SQL expressions by meaning of their text, not by spelling (quoting, case, spacing)."""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from delta_contracts.sql.dialect import DIALECT


@lru_cache(maxsize=4096)
def normalized(sql: str) -> str:
    """A canonical text of an expression or query; the input itself when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except (ParseError, TokenError):
        return sql.strip()
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.casefold())
        ident.set("quoted", True)
    while isinstance(tree, exp.Paren):
        tree = tree.this
    return tree.sql(dialect=DIALECT, normalize_functions="upper")


def same_expression(left: str, right: str) -> bool:
    return left == right or normalized(left) == normalized(right)


# What a query-history text is deduplicated by: its tokens (sqlglot's tokenizer knows comments, strings and
# quoted names), comments and spacing dropped, literals folded. A regex over the raw text cannot tell a `--`
# inside a string from a comment, and folding newlines leaves a line comment running to the end of the
# statement: the tokens never change what the statement reads.
_STRINGS = ("STRING", "NATIONAL_STRING", "RAW_STRING")
# A number right after these keeps its value: `GROUP BY 1` / `ORDER BY 2, 3` name columns by position.
_ORDINAL_CONTEXT = ("GROUP_BY", "ORDER_BY", "SORT_BY", "CLUSTER_BY", "DISTRIBUTE_BY", "COMMA")
# A string right after these keeps its value: `IDENTIFIER('sales.orders')`, `table_changes('t', 1)`
# name a table.
_NAME_CALLS = frozenset({"identifier", "table_changes"})


def fingerprint(text: str, *, dialect: str = DIALECT) -> str:
    """The text with comments removed, spacing folded and literals replaced (`'?'`, `0`): statements that
    differ only there read the same tables and columns. Untokenizable text comes back stripped, unchanged."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokenizer_core import TokenType

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except Exception:  # the tokenizer raises more than TokenError on odd input
        return text.strip()
    strings = {TokenType[name] for name in _STRINGS}
    ordinal_context = {TokenType[name] for name in _ORDINAL_CONTEXT}
    number, l_paren = TokenType.NUMBER, TokenType.L_PAREN
    out: list[str] = []
    previous_end = -2
    previous_kind = None
    for index, token in enumerate(tokens):
        kind = token.token_type
        start, end = token.start, token.end
        if kind in strings and not (
            previous_kind is l_paren and index >= 2 and tokens[index - 2].text.casefold() in _NAME_CALLS
        ):
            piece = "'?'"
        elif kind is number and previous_kind not in ordinal_context:
            piece = "0"
        else:
            piece = text[start : end + 1]
        if start != previous_end + 1 and out:
            out.append(" ")
        out.append(piece)
        previous_end = end
        previous_kind = kind
    return "".join(out)
