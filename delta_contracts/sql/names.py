"""Names of tables as a statement writes them: dotted, lower-case, paths kept (pure; sqlglot only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_contracts.sql.dialect import DIALECT

if TYPE_CHECKING:
    from sqlglot import exp

# Spark's `format.\`path\`` reads: the "schema" names a file format, the "table" is a path.
PATH_FORMATS = frozenset({"delta", "parquet", "json", "csv", "orc", "avro", "text", "binaryfile"})


def canonical_path(location: str) -> str:
    """One spelling per storage location: `file:` dropped, a run of leading slashes one, no trailing slash
    (`file:///tmp/x`, `file:/tmp/x`, `///tmp/x/` and `/tmp/x` are one table); another scheme
    (`s3://bucket/key`) is kept. Compare with `path_key`."""
    text = location.strip()
    if text[:5].casefold() == "file:":
        text = text[5:]
    if text.startswith("/"):
        text = "/" + text.lstrip("/")
    return text.rstrip("/") or text


def path_key(location: str) -> str:
    """A location as a lookup key: canonical, case-folded (names in a history come case-folded)."""
    return canonical_path(location).casefold()


def path_of(name: str) -> str | None:
    """The lookup key (`path_key`) of the storage path a table name reads, for a path read (``delta.`/p` ``
    or a bare path), else None."""
    head, sep, rest = name.partition(".`")
    if sep and rest.endswith("`") and head.casefold() in PATH_FORMATS:
        return path_key(rest[:-1])
    if name.startswith("/") or "://" in name or name[:5].casefold() == "file:":
        return path_key(name)
    return None


def table_name(table: exp.Table) -> str | None:
    """The dotted name of a table reference, or None for what is not a named table (functions, ...)."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    if _is_identifier_call(table.this):  # IDENTIFIER('sales.orders'): the name is a string literal
        literal = table.this.expressions[0]
        try:
            table = exp.to_table(literal.name, dialect=DIALECT)
        except (SqlglotError, ValueError):
            return None
    parts = _name_parts(table)
    if parts is None:
        return None
    if (
        len(parts) == 2
        and parts[0].name.casefold() in PATH_FORMATS
        and parts[1].quoted
        and "/" in parts[1].name
    ):
        return f"{parts[0].name.casefold()}.`{parts[1].name}`"
    return ".".join(p.name.casefold() for p in parts)


def _name_parts(table: exp.Table) -> list[exp.Identifier] | None:
    """The identifiers of a name, four parts and more included (`cat.ns1.ns2.tbl` parses to a Dot)."""
    from sqlglot import exp

    head: list[exp.Identifier] = []
    for key in ("catalog", "db"):
        part = table.args.get(key)
        if isinstance(part, exp.Identifier):
            head.append(part)
        elif part is not None:
            return None
    tail = _dotted(table.this)
    return None if tail is None else head + tail


def _dotted(node: exp.Expr | None) -> list[exp.Identifier] | None:
    from sqlglot import exp

    if isinstance(node, exp.Identifier):
        return [node]
    if isinstance(node, exp.Dot):
        left, right = _dotted(node.this), _dotted(node.expression)
        return None if left is None or right is None else left + right
    return None


def _is_identifier_call(node: exp.Expr | None) -> bool:
    from sqlglot import exp

    return (
        isinstance(node, exp.Anonymous)
        and str(node.this).casefold() == "identifier"
        and len(node.expressions) == 1
        and isinstance(node.expressions[0], exp.Literal)
        and node.expressions[0].is_string
    )


def names_match(a: list[str], b: list[str]) -> bool:
    """Two dotted names denote the same object when the shorter is a suffix of the longer."""
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


def is_cte_reference(table: exp.Table) -> bool:
    """Whether an unqualified table reference names a CTE visible where it stands, not a table."""
    from sqlglot import exp

    if table.args.get("db") or table.args.get("catalog"):
        return False
    name = table.name.casefold()
    child: exp.Expr = table
    node: exp.Expr | None = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            # Inside the definition of a CTE only the CTEs defined before it are visible (all of them under
            # WITH RECURSIVE): `WITH orders AS (SELECT * FROM orders)` reads the table `orders`.
            ctes = list(node.expressions)
            index = next((i for i, cte in enumerate(ctes) if cte is child), len(ctes))
            visible = ctes if node.args.get("recursive") else ctes[:index]
            if any(cte.alias_or_name.casefold() == name for cte in visible):
                return True
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if (
                isinstance(with_, exp.With)
                and with_ is not child
                and any(cte.alias_or_name.casefold() == name for cte in with_.expressions)
            ):
                return True
        child = node
        node = node.parent
    return False
