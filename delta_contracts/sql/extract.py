"""Which tables and columns a SQL text reads and which tables it writes (pure; sqlglot only).

Names come out lower-case and dotted as written (`orders`, `sales.orders`, `main.sales.orders`); a path read
keeps its path: ``delta.`/data/orders` ``. CTE names, table-valued functions, VALUES and lateral views are not
tables. A read of a view whose SQL is known is a read of the view and of every table the view reads
(recursively). Columns are reported as `table.column` for the tables whose schema is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from sqlglot import exp

from delta_contracts.sql.dialect import DIALECT

# Spark's `format.\`path\`` reads: the "schema" names a file format, the "table" is a path.
PATH_FORMATS = frozenset({"delta", "parquet", "json", "csv", "orc", "avro", "text", "binaryfile"})
_MAX_VIEW_DEPTH = 16
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Extraction:
    tables_read: tuple[str, ...] = ()
    tables_written: tuple[str, ...] = ()
    columns_read: tuple[str, ...] = ()
    error: str | None = None  # None when the whole text parsed

    def as_json(self, statement_id: str) -> dict[str, object]:
        return {
            "statement_id": statement_id,
            "tables_read": list(self.tables_read),
            "tables_written": list(self.tables_written),
            "columns_read": list(self.columns_read),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class Catalog:
    """What is known about the objects a statement may name: view texts and table schemas."""

    views: Mapping[str, str] = field(default_factory=dict)  # dotted lower-case name -> view SQL
    schemas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dotted name -> column names

    def view(self, name: str) -> str | None:
        return _by_suffix(self.views, name)

    def columns(self, name: str) -> tuple[str, ...] | None:
        return _by_suffix(self.schemas, name)

    def schema_name(self, name: str) -> str | None:
        """The catalog's own name for a table written `name` (unique suffix match), or None."""
        return _key_by_suffix(self.schemas, name)


def extract(text: str, catalog: Catalog | None = None, *, dialect: str = DIALECT) -> Extraction:
    """Reads, writes and columns of every statement in `text`; never raises on bad SQL."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    catalog = catalog or Catalog()
    if not text or not text.strip():
        return Extraction(error="empty statement")
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except (SqlglotError, RecursionError, ValueError) as err:
        return Extraction(error=_first_line(err))
    if not statements:
        return Extraction(error="no statement")
    reads: set[str] = set()
    writes: set[str] = set()
    columns: set[str] = set()
    views = dict(catalog.views)
    for statement in statements:
        if _is_command(statement):
            return Extraction(error=f"not understood: {_first_line(statement.sql(dialect=dialect))[:80]}")
        local = Catalog(views, catalog.schemas)
        stmt_reads, stmt_writes = _tables(statement, local, dialect, depth=0)
        reads |= stmt_reads
        writes |= stmt_writes
        columns |= _columns(statement, local, dialect)
        view = _created_view(statement)
        if view is not None:  # later statements of the same text may read it
            views[view[0]] = view[1]
    return Extraction(tuple(sorted(reads)), tuple(sorted(writes)), tuple(sorted(columns)))


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
    if not isinstance(table.this, exp.Identifier):
        return None
    parts = [p.name for p in table.parts]
    if len(parts) == 2 and parts[0].casefold() in PATH_FORMATS and table.this.quoted and "/" in parts[1]:
        return f"{parts[0].casefold()}.`{parts[1]}`"
    return ".".join(p.casefold() for p in parts)


def _is_identifier_call(node: exp.Expr | None) -> bool:
    from sqlglot import exp

    return (
        isinstance(node, exp.Anonymous)
        and str(node.this).casefold() == "identifier"
        and len(node.expressions) == 1
        and isinstance(node.expressions[0], exp.Literal)
        and node.expressions[0].is_string
    )


def _tables(statement: exp.Expr, catalog: Catalog, dialect: str, depth: int) -> tuple[set[str], set[str]]:
    from sqlglot import exp

    targets = _write_targets(statement)
    writes = {name for t in targets if (name := table_name(t)) is not None}
    reads: set[str] = set()
    target_ids = {id(t) for t in targets}
    for table in statement.find_all(exp.Table):
        if id(table) in target_ids or _is_cte_reference(table):
            continue
        name = table_name(table)
        if name is None:
            continue
        reads.add(name)
        view_sql = catalog.view(name)
        if view_sql is not None and depth < _MAX_VIEW_DEPTH:
            reads |= _view_reads(view_sql, catalog, dialect, depth + 1)
    return reads, writes


def _view_reads(view_sql: str, catalog: Catalog, dialect: str, depth: int) -> set[str]:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        parsed = sqlglot.parse_one(view_sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return set()
    return _tables(parsed, catalog, dialect, depth)[0]


def _write_targets(statement: exp.Expr) -> list[exp.Table]:
    from sqlglot import exp

    targets: list[exp.Table] = []
    writers = (exp.Insert, exp.Merge, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.TruncateTable)
    for node in statement.find_all(*writers, exp.Alter, exp.Copy):
        if isinstance(node, exp.TruncateTable):
            targets.extend(t for t in node.expressions if isinstance(t, exp.Table))
            continue
        if isinstance(node, exp.Create | exp.Drop) and str(node.args.get("kind", "")).upper() not in (
            "TABLE",
            "VIEW",
        ):
            continue
        target = node.this
        if isinstance(target, exp.Schema):  # INSERT INTO t (a, b) / CREATE TABLE t (a INT)
            target = target.this
        if isinstance(target, exp.Table):
            targets.append(target)
    return targets


def _is_cte_reference(table: exp.Table) -> bool:
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


def _created_view(statement: exp.Expr) -> tuple[str, str] | None:
    from sqlglot import exp

    if not isinstance(statement, exp.Create) or str(statement.args.get("kind", "")).upper() != "VIEW":
        return None
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    query = statement.expression
    if not isinstance(target, exp.Table) or query is None or (name := table_name(target)) is None:
        return None
    return name, query.sql(dialect=DIALECT)


def _is_command(statement: exp.Expr) -> bool:
    """Not understood as a statement: sqlglot's opaque Command, or a bare expression (`garbage`)."""
    from sqlglot import exp

    statements = (
        exp.Query, exp.DML, exp.DDL, exp.Use, exp.Set, exp.Describe, exp.Cache, exp.Uncache, exp.Refresh,
        exp.Drop, exp.Alter, exp.Copy, exp.Analyze, exp.TruncateTable, exp.Transaction, exp.Commit,
        exp.Rollback, exp.Show, exp.Grant,
    )  # fmt: skip
    return isinstance(statement, exp.Command) or not isinstance(statement, statements)


def _columns(statement: exp.Expr, catalog: Catalog, dialect: str) -> set[str]:
    from delta_contracts.sql.extract_columns import columns_read

    if not catalog.schemas:
        return set()
    return columns_read(statement, catalog, dialect)


def _first_line(err: object) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def _by_suffix(mapping: Mapping[str, V], name: str) -> V | None:
    key = _key_by_suffix(mapping, name)
    return None if key is None else mapping[key]


def _key_by_suffix(mapping: Mapping[str, object], name: str) -> str | None:
    """`orders` finds `sales.orders` and `main.sales.orders` finds `sales.orders`, when unambiguous."""
    folded = name.casefold()
    if folded in mapping:
        return folded
    parts = folded.split(".")
    found = [k for k in mapping if names_match(k.split("."), parts)]
    return found[0] if len(found) == 1 else None


def names_match(a: list[str], b: list[str]) -> bool:
    """Two dotted names denote the same object when the shorter is a suffix of the longer."""
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]
