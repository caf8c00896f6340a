"""Which tables and columns a SQL text reads and which tables it writes (pure; sqlglot only).

Names come out lower-case and dotted as written (`orders`, `sales.orders`, `main.sales.orders`); a path read
keeps its path: ``delta.`/data/orders` ``. CTE names, table-valued functions, VALUES and lateral views are not
tables. A read of a view whose SQL is known is a read of the view and of every table the view reads
(recursively). Columns are reported as `table.column` for the tables whose schema is known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from sqlglot import exp
    from sqlglot.tokenizer_core import Token

    from delta_contracts.sql.rewrite import Chunk

from delta_contracts.sql.dialect import DIALECT
from delta_contracts.sql.names import PATH_FORMATS, is_cte_reference, names_match, path_of, table_name

__all__ = [
    "PATH_FORMATS",
    "Catalog",
    "Extraction",
    "FallbackParser",
    "Relations",
    "extract",
    "names_match",
    "table_name",
]

_MAX_VIEW_DEPTH = 16
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Extraction:
    tables_read: tuple[str, ...] = ()
    tables_written: tuple[str, ...] = ()
    columns_read: tuple[str, ...] = ()
    error: str | None = None  # None when every statement of the text was understood
    # Why not: "empty", "syntax", "unsupported" (parsed, but not a statement sqlglot understands),
    # "too_deep", or the class of an unexpected exception ("IndexError", ...).
    error_kind: str | None = None
    # The views the text creates (name, SQL) or drops (name, None), in order: later statements of the same
    # history read through them (see `delta_contracts.sql.history.ViewHistory`).
    views_changed: tuple[tuple[str, str | None], ...] = ()
    # Names that came from another parser (`fallback_parser`): Spark's grammar decided, not sqlglot's.
    by_fallback: bool = False

    def as_json(self, statement_id: str) -> dict[str, object]:
        return {
            "statement_id": statement_id,
            "tables_read": list(self.tables_read),
            "tables_written": list(self.tables_written),
            "columns_read": list(self.columns_read),
            "error": self.error,
            "error_kind": self.error_kind,
        }


@dataclass(frozen=True, slots=True)
class Relations:
    """The tables a statement names, as another parser (Spark's own) found them."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


# Asked for a statement sqlglot cannot parse; raises (anything) when it cannot parse it either.
FallbackParser = Callable[[str], Relations]


@dataclass(frozen=True, slots=True)
class Catalog:
    """What is known about the objects a statement may name: view texts and table schemas."""

    views: Mapping[str, str] = field(default_factory=dict)  # dotted lower-case name -> view SQL
    schemas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dotted name -> column names
    # canonical storage path (`names.canonical_path`) -> dotted name: a path read (``delta.`/p` ``) of a table
    # whose location is known reads that table's columns
    locations: Mapping[str, str] = field(default_factory=dict)

    def view(self, name: str) -> str | None:
        return _by_suffix(self.views, name)

    def columns(self, name: str) -> tuple[str, ...] | None:
        return _by_suffix(self.schemas, name)

    def schema_name(self, name: str) -> str | None:
        """The catalog's own name for a table written `name` (unique suffix match, or its location for a path
        read), or None."""
        path = path_of(name)
        if path is not None:
            table = self.locations.get(path)
            return None if table is None else _key_by_suffix(self.schemas, table)
        return _key_by_suffix(self.schemas, name)

    def with_views(self, views: Mapping[str, str | None]) -> Catalog:
        """This catalog with `views` defined (a None text: the view was dropped)."""
        merged = dict(self.views)
        for name, sql in views.items():
            if sql is None:
                merged.pop(name, None)
            else:
                merged[name] = sql
        return Catalog(merged, self.schemas, self.locations)


def extract(
    text: str,
    catalog: Catalog | None = None,
    *,
    dialect: str = DIALECT,
    fallback_parser: FallbackParser | None = None,
) -> Extraction:
    """Reads, writes and columns of every statement in `text`. Never raises: whatever goes wrong while
    reading one text (sqlglot raises IndexError on some inputs) is that text's `error`."""
    try:
        return _extract(text, catalog or Catalog(), dialect, fallback_parser)
    except RecursionError:
        return Extraction(error="too deeply nested to read", error_kind="too_deep")
    except Exception as err:  # one statement must never stop a collection
        kind = type(err).__name__
        return Extraction(error=f"{kind}: {_first_line(err)}", error_kind=kind)


def _extract(text: str, catalog: Catalog, dialect: str, fallback: FallbackParser | None) -> Extraction:
    from delta_contracts.sql.rewrite import always, split_statements, tokenize

    if not text or not text.strip():
        return Extraction(error="empty statement", error_kind="empty")
    try:
        tokens = tokenize(text, dialect)
    except Exception as err:  # the tokenizer raises more than TokenError on odd input
        whole = _by_fallback(text, catalog, fallback)
        if whole is not None:
            return whole
        return Extraction(error=_first_line(err), error_kind="syntax")
    chunks = split_statements(text, tokens)
    if not chunks:
        return Extraction(error="no statement", error_kind="empty")
    result = _Accumulator(catalog)
    for chunk in chunks:
        rewritten = always(chunk)
        if rewritten == chunk.text:
            statement, failure = _parse_one(rewritten, dialect, chunk.tokens, text)
        else:
            statement, failure = _parse_one(rewritten, dialect)
        if statement is None:
            statement, failure = _retry(chunk, dialect, failure)
        if statement is not None:
            result.add_tree(statement, dialect)
            continue
        relations = _ask(fallback, chunk.text)
        if relations is not None:
            result.add_relations(relations, chunk.text, dialect)
            continue
        result.fail(*failure)
    return result.extraction()


def _parse_one(
    text: str, dialect: str, tokens: tuple[Token, ...] | None = None, source: str = ""
) -> tuple[exp.Expr | None, tuple[str, str]]:
    """The statement's tree, or None and (error, kind). `tokens` (of `source`): the text already tokenized."""
    import sqlglot
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        if tokens is None:
            parsed = sqlglot.parse(text, read=dialect)
        else:
            parsed = Dialect.get_or_raise(dialect).parser().parse(list(tokens), source)
        trees = [t for t in parsed if t is not None]
    except SqlglotError as err:
        return None, (_first_line(err), "syntax")
    except RecursionError:
        return None, ("too deeply nested to read", "too_deep")
    except Exception as err:  # sqlglot raises IndexError and others on some valid Spark SQL
        return None, (f"{type(err).__name__}: {_first_line(err)}", type(err).__name__)
    if len(trees) != 1:
        return None, ("no statement" if not trees else "several statements", "syntax")
    if _is_command(trees[0]):
        return None, (f"not understood: {_first_line(text)[:80]}", "unsupported")
    return trees[0], ("", "")


def _retry(chunk: Chunk, dialect: str, failure: tuple[str, str]) -> tuple[exp.Expr | None, tuple[str, str]]:
    from delta_contracts.sql.rewrite import on_failure

    respelt = on_failure(chunk)
    if respelt is None:
        return None, failure
    try:
        statement, _ = _parse_one(respelt, dialect)
    except Exception:  # the respelt text failing is the original failure
        return None, failure
    return statement, failure


def _ask(fallback: FallbackParser | None, text: str) -> Relations | None:
    if fallback is None:
        return None
    try:
        return fallback(text)
    except Exception:  # the other parser could not read it either
        return None


def _by_fallback(text: str, catalog: Catalog, fallback: FallbackParser | None) -> Extraction | None:
    relations = _ask(fallback, text)
    if relations is None:
        return None
    result = _Accumulator(catalog)
    result.add_relations(relations, text, DIALECT)
    return result.extraction()


class _Accumulator:
    """Reads and writes of the statements of one text, in order (a view created earlier is read through)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.views = dict(catalog.views)
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.columns: set[str] = set()
        self.changed: list[tuple[str, str | None]] = []
        self.errors: list[tuple[str, str]] = []
        self.by_fallback = False

    def local(self) -> Catalog:
        return Catalog(self.views, self.catalog.schemas, self.catalog.locations)

    def add_tree(self, statement: exp.Expr, dialect: str) -> None:
        local = self.local()
        reads, writes = _tables(statement, local, dialect, depth=0)
        self.reads |= reads
        self.writes |= writes
        self.columns |= _columns(statement, local, dialect)
        for name, sql in _view_changes(statement, dialect):
            self._change_view(name, sql)

    def add_relations(self, relations: Relations, text: str, dialect: str) -> None:
        """Names from another parser: views read are expanded; the columns are those of the tables read
        whose names the text mentions (the other parser resolves no columns: err towards reading)."""
        local = self.local()
        self.by_fallback = True
        reads = {r.casefold() for r in relations.reads}
        for name in list(reads):
            view_sql = local.view(name)
            if view_sql is not None:
                reads |= _view_reads(view_sql, local, dialect, 1)
        self.reads |= reads
        self.writes |= {w.casefold() for w in relations.writes}
        self.columns |= _columns_named(text, reads, local, dialect)
        for name in relations.writes:  # a view replaced by a statement only Spark reads: unknown now
            if self.views.pop(name.casefold(), None) is not None:
                self.changed.append((name.casefold(), None))

    def _change_view(self, name: str, sql: str | None) -> None:
        if sql is None:
            self.views.pop(name, None)
        else:
            self.views[name] = sql
        self.changed.append((name, sql))

    def fail(self, error: str, kind: str) -> None:
        self.errors.append((error, kind))

    def extraction(self) -> Extraction:
        error, kind = self.errors[0] if self.errors else (None, None)
        return Extraction(
            tuple(sorted(self.reads)),
            tuple(sorted(self.writes)),
            tuple(sorted(self.columns)),
            error,
            kind,
            tuple(self.changed),
            self.by_fallback,
        )


def _tables(statement: exp.Expr, catalog: Catalog, dialect: str, depth: int) -> tuple[set[str], set[str]]:
    from sqlglot import exp

    targets = _write_targets(statement)
    writes = {name for t in targets if (name := table_name(t)) is not None}
    reads: set[str] = set()
    target_ids = {id(t) for t in targets}
    named = [t for t in statement.find_all(exp.Table) if not _in_hint(t)]
    for table in named + _change_feed_tables(statement):
        if id(table) in target_ids or is_cte_reference(table):
            continue
        name = table_name(table)
        if name is None:
            continue
        reads.add(name)
        view_sql = catalog.view(name)
        if view_sql is not None and depth < _MAX_VIEW_DEPTH:
            reads |= _view_reads(view_sql, catalog, dialect, depth + 1)
    return reads, writes


def _in_hint(table: exp.Table) -> bool:
    """`/*+ BROADCAST(d) */` names an alias, not a table."""
    from sqlglot import exp

    return table.find_ancestor(exp.Hint) is not None


def _change_feed_tables(statement: exp.Expr) -> list[exp.Table]:
    """`table_changes('sales.orders', 2)`: Delta's change feed of a table named by a string."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    found = []
    for call in statement.find_all(exp.Anonymous):
        if str(call.this).casefold() != "table_changes" or not call.expressions:
            continue
        first = call.expressions[0]
        if isinstance(first, exp.Literal) and first.is_string:
            try:
                found.append(exp.to_table(first.name, dialect=DIALECT))
            except (SqlglotError, ValueError):
                continue
    return found


def _view_reads(view_sql: str, catalog: Catalog, dialect: str, depth: int) -> set[str]:
    import sqlglot

    try:
        parsed = sqlglot.parse_one(view_sql, read=dialect)
    except Exception:  # a view text we cannot read adds no reads; the view itself is read
        return set()
    return _tables(parsed, catalog, dialect, depth)[0]


def _write_targets(statement: exp.Expr) -> list[exp.Table]:
    from sqlglot import exp

    targets: list[exp.Table] = []
    writers = (exp.Insert, exp.Merge, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.TruncateTable)
    for node in statement.find_all(*writers, exp.Alter, exp.Copy, exp.Cache):
        if isinstance(node, exp.TruncateTable):
            targets.extend(t for t in node.expressions if isinstance(t, exp.Table))
            continue
        if isinstance(node, exp.Create | exp.Drop) and str(node.args.get("kind", "")).upper() not in (
            "TABLE",
            "VIEW",
        ):
            continue
        if isinstance(node, exp.Drop):  # sqlglot keeps DROP's targets in `tables`, not in `this`
            targets.extend(
                t for t in [node.this, *(node.args.get("tables") or [])] if isinstance(t, exp.Table)
            )
            continue
        target = node.this
        if isinstance(target, exp.Schema):  # INSERT INTO t (a, b) / CREATE TABLE t (a INT)
            target = target.this
        if isinstance(target, exp.Table):
            targets.append(target)
    return targets


def _view_changes(statement: exp.Expr, dialect: str) -> list[tuple[str, str | None]]:
    """(name, SQL) for a view the statement creates or alters, (name, None) for each view it drops."""
    from sqlglot import exp

    kind = str(statement.args.get("kind", "")).upper()
    if isinstance(statement, exp.Drop) and kind == "VIEW":
        tables = [statement.this, *(statement.args.get("tables") or [])]
        return [(name, None) for t in tables if isinstance(t, exp.Table) and (name := table_name(t))]
    if not isinstance(statement, exp.Create | exp.Alter) or kind != "VIEW":
        return []
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    query = statement.expression
    if isinstance(statement, exp.Alter):
        query = next(
            (a.expression for a in statement.args.get("actions") or [] if isinstance(a, exp.Query)), None
        )
        query = query or next(
            (a for a in statement.args.get("actions") or [] if isinstance(a, exp.Query)), None
        )
    if (
        not isinstance(target, exp.Table)
        or not isinstance(query, exp.Query)
        or (name := table_name(target)) is None
    ):
        return []
    return [(name, query.sql(dialect=dialect))]


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


def _columns_named(text: str, tables: set[str], catalog: Catalog, dialect: str) -> set[str]:
    """Columns of the tables read whose names the statement mentions as a word (a quoted name included)."""
    from delta_contracts.sql.rewrite import tokenize

    if not catalog.schemas:
        return set()
    try:
        words = {
            t.text.casefold() for t in tokenize(text, dialect) if t.token_type.name in ("VAR", "IDENTIFIER")
        }
    except Exception:  # what the tokenizer cannot read, a word match can
        import re

        words = {w.casefold() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
    found: set[str] = set()
    for table in tables:
        known = catalog.schema_name(table)
        if known is None:
            continue
        star = "*" in text
        found |= {
            f"{known}.{c.casefold()}" for c in catalog.columns(known) or () if star or c.casefold() in words
        }
    return found


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
