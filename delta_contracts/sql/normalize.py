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
