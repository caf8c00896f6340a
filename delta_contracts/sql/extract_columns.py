"""Columns a statement reads, for the tables whose columns are known (sqlglot's qualify and scopes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

    from delta_contracts.sql.extract import Catalog

_SYNTHETIC = "__dc_table_"
_MAX_VIEW_DEPTH = 16


def columns_read(statement: exp.Expr, catalog: Catalog, dialect: str) -> set[str]:
    """`table.column` for every column of a known table the statement reads; `SELECT *` reads them all."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    from delta_contracts.sql.names import is_cte_reference, table_name

    tree = _views_inlined(statement.copy(), catalog, dialect)
    real: dict[str, str] = {}  # synthetic table name -> the catalog's name
    schema: dict[str, dict[str, str]] = {}
    for table in list(tree.find_all(exp.Table)):
        if is_cte_reference(table) or (name := table_name(table)) is None:
            continue
        known = catalog.schema_name(name)
        if known is None:
            continue
        synthetic = f"{_SYNTHETIC}{len(real)}"
        real[synthetic] = known
        schema[synthetic] = {c: "STRING" for c in catalog.columns(known) or ()}
        alias = table.alias or table.name
        # Keep how the query refers to it (alias or bare name), swap the name for one qualify can look up.
        table.set("this", exp.to_identifier(synthetic))
        table.set("db", None)
        table.set("catalog", None)
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    if not real:
        return set()
    found: set[str] = set()
    for query in _outer_queries(tree):
        try:
            qualified = qualify(
                query,
                schema=dict(schema),
                dialect=dialect,
                validate_qualify_columns=False,
                quote_identifiers=False,
                identify=False,
            )
            scopes = traverse_scope(qualified)
        except (SqlglotError, KeyError, ValueError, RecursionError):
            continue
        for scope in scopes:
            for column in scope.columns:
                source = scope.sources.get(column.table)
                if isinstance(source, exp.Table) and source.name in real:
                    found.add(f"{real[source.name]}.{column.name.casefold()}")
    found |= _dml_columns(tree, real, schema)
    return found


def _views_inlined(tree: exp.Expr, catalog: Catalog, dialect: str) -> exp.Expr:
    """Reads of a known view replaced by the view's query (`FROM v AS x` -> `FROM (SELECT ...) AS x`), views
    of views too: a column read through a view is a column of the table under it."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from delta_contracts.sql.names import is_cte_reference, table_name

    if not catalog.views:
        return tree
    for _ in range(_MAX_VIEW_DEPTH):
        replaced = False
        for table in list(tree.find_all(exp.Table)):
            name = table_name(table)
            if name is None or is_cte_reference(table) or catalog.schema_name(name) is not None:
                continue
            view_sql = catalog.view(name)
            if view_sql is None or not isinstance(table.parent, exp.From | exp.Join):
                continue
            try:
                query = sqlglot.parse_one(view_sql, read=dialect)
            except (SqlglotError, RecursionError):
                continue
            if not isinstance(query, exp.Query):
                continue
            alias = table.alias or table.name
            table.replace(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias))))
            replaced = True
        if not replaced:
            break
    return tree


def _outer_queries(tree: exp.Expr) -> list[exp.Query]:
    from sqlglot import exp

    if isinstance(tree, exp.Query):
        return [tree]
    out = []
    for query in tree.find_all(exp.Query):
        if not any(isinstance(a, exp.Query) for a in _ancestors(query)):
            out.append(query)
    return out


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def _dml_columns(tree: exp.Expr, real: dict[str, str], schema: dict[str, dict[str, str]]) -> set[str]:
    """Columns an UPDATE/DELETE/MERGE reads from its own tables (conditions and assigned values)."""
    from sqlglot import exp

    if not isinstance(tree, exp.Update | exp.Delete | exp.Merge):
        return set()
    own = [t for t in (tree.this, tree.args.get("using")) if isinstance(t, exp.Table) and t.name in real]
    by_alias = {t.alias_or_name.casefold(): t.name for t in own}
    found: set[str] = set()
    for column in tree.find_all(exp.Column):
        if any(isinstance(a, exp.Query) for a in _ancestors(column)):
            continue
        if _is_assignment_target(column):
            continue
        qualifier = column.table.casefold()
        name = column.name.casefold()
        if qualifier:
            synthetic = by_alias.get(qualifier)
            candidates = [synthetic] if synthetic else []
        else:
            candidates = [t.name for t in own if name in {c.casefold() for c in schema[t.name]}]
        for synthetic in candidates[:1]:
            found.add(f"{real[synthetic]}.{name}")
    return found


def _is_assignment_target(column: exp.Column) -> bool:
    """`SET x = ...` and MERGE's `INSERT (x, ...)`: written, not read."""
    from sqlglot import exp

    parent = column.parent
    if isinstance(parent, exp.EQ) and parent.this is column and isinstance(parent.parent, exp.Update):
        return True
    return (
        isinstance(parent, exp.Tuple)
        and isinstance(parent.parent, exp.Insert)
        and parent.parent.this is parent
    )
