"""One Spark SQL statement on the in-memory engine: the Delta DDL the toolkit renders (and a user types) is
applied to the catalog's Python values, and every query or data change runs in DuckDB, its table names
resolved first to the rows of the table (as of the version asked) or to the view's query.

What Delta would refuse is refused here with Delta's error class in the message, and a statement that fails
leaves nothing: a data change runs in one DuckDB transaction, checked against the table's NOT NULL columns
and CHECKs before it commits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from delta_contracts.engine.base import USER_METADATA_CONF, EngineError
from delta_contracts.engine.memory.alter import alter_command, alter_table
from delta_contracts.engine.memory.catalog import Catalog, MemoryTable, key_of
from delta_contracts.engine.memory.definitions import column_of, table_id, text_of
from delta_contracts.sql import expressions as x
from delta_contracts.sql.dialect import DIALECT

# sqlglot reads no REORG: Delta's purge of dropped columns' data from the files
_REORG = re.compile(r"^\s*REORG\s+TABLE\s+(?P<name>.+?)\s+APPLY\s*\(\s*PURGE\s*\)\s*;?\s*$", re.I | re.S)
_OPTIMIZE = re.compile(r"^\s*(?P<name>.+?)\s*(?P<full>\bFULL\b)?\s*$", re.IGNORECASE | re.DOTALL)


class Statements:
    """Runs statements against one catalog; `user_metadata()` tags the commits they make."""

    def __init__(self, catalog: Catalog, user_metadata: Callable[[], str | None]) -> None:
        self.catalog = catalog
        self.user_metadata = user_metadata
        self.conf: dict[str, str] = {}

    def execute(self, text: str) -> list[dict[str, Any]]:
        if found := _REORG.match(text):
            return self.reorg(found["name"])
        try:
            tree = x.parse(text)
        except SqlglotError as err:
            raise EngineError(f"[PARSE_SYNTAX_ERROR] {str(err).splitlines()[0]}") from None
        handler = _HANDLERS.get(type(tree))
        if handler is None:
            if isinstance(tree, exp.Query):
                return self.query(tree)
            raise EngineError(f"the in-memory engine does not run this statement: {text.split()[0]} …")
        return handler(self, tree)

    def tag(self) -> str | None:
        return self.user_metadata() or self.conf.get(USER_METADATA_CONF)

    # -- names -----------------------------------------------------------------------------------------------
    def resolve(self, tree: exp.Expr) -> exp.Expr:
        """`tree` with each table it reads replaced by its rows (as of the version asked) and each view by its
        query, resolved in turn; CTE names are left alone."""
        tree = tree.copy()
        ctes = {cte.alias_or_name.casefold() for cte in tree.find_all(exp.CTE)}
        for node in list(tree.find_all(exp.Table)):
            if not node.name or isinstance(node.this, exp.Func):
                continue
            if not node.db and node.name.casefold() in ctes:
                continue
            node.replace(self._source(node))
        return tree

    def _source(self, node: exp.Table) -> exp.Expr:
        name = table_id(node) if node.db else None
        if name is None:
            raise EngineError(f"[TABLE_OR_VIEW_NOT_FOUND] {node.name}: name its schema too")
        alias = node.args.get("alias") or exp.TableAlias(this=x.ident(name[-1]))
        view = self.catalog.views.get(key_of(name))
        if view is not None:
            return exp.Subquery(this=self.resolve(x.parse(view[1])), alias=alias)
        table = self.catalog.existing(name)
        source = table.snapshot(self._version_asked(table, node.args.get("version")))
        source.set("alias", alias)
        return source

    def _version_asked(self, table: MemoryTable, version: exp.Version | None) -> int:
        if version is None:
            return table.version
        value = version.expression
        if str(version.this).upper() == "VERSION":
            wanted = int(value.name)
            if not 0 <= wanted <= table.version:
                raise EngineError(
                    f"[DELTA_VERSION_NOT_FOUND] {table.name} has versions 0 to {table.version}, not {wanted}"
                )
            return wanted
        text = value.name if isinstance(value, exp.Literal) else str(self.query(exp.select(value))[0])
        return table.version_at(int(datetime.fromisoformat(text).timestamp() * 1000))

    def query(self, tree: exp.Expr) -> list[dict[str, Any]]:
        return self.catalog.run(self.resolve(tree))

    # -- data changes ----------------------------------------------------------------------------------------
    def _write(
        self, table: MemoryTable, statements: list[exp.Expr], operation: str, parameters: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """Run the statements on the table's rows in one transaction; commit once they keep its rules. The
        rows written are the last statement's (an overwrite's DELETE first counts none)."""
        if table.properties.get("delta.appendOnly", "").casefold() == "true" and operation != "WRITE":
            raise EngineError(
                f"[DELTA_CANNOT_MODIFY_APPEND_ONLY] {table.name} is append-only (delta.appendOnly): "
                f"{operation} is refused"
            )
        db = self.catalog.db
        db.execute("BEGIN TRANSACTION")
        try:
            counts = [self.catalog.run(statement) for statement in statements]
            self.catalog.check_rows(table)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        self.catalog.commit(table, operation, parameters, self.tag())
        last = counts[-1]
        written = int(next(iter(last[0].values()))) if len(last) == 1 else 0
        return [{"num_affected_rows": written}]

    def _target(self, node: exp.Expr) -> MemoryTable:
        found = node.this if isinstance(node, exp.Schema) else node
        if not isinstance(found, exp.Table):
            raise EngineError("the statement writes no table")
        return self.catalog.existing(table_id(found))

    def _on_data(self, node: exp.Expr, table: MemoryTable) -> exp.Expr:
        data = table.data
        alias = node.args.get("alias") if isinstance(node, exp.Table) else None
        if alias is not None:
            data.set("alias", alias)
        return data

    def insert(self, tree: exp.Insert) -> list[dict[str, Any]]:
        table = self._target(tree.this)
        named = tree.this.expressions if isinstance(tree.this, exp.Schema) else []
        columns = []
        for node in named:
            column = table.column(node.name)
            if column is None:
                raise EngineError(f"[UNRESOLVED_COLUMN] {table.name} has no column {node.name}")
            columns.append(x.ident(column.name))
        statement = exp.Insert(
            this=exp.Schema(this=table.data, expressions=columns) if columns else table.data,
            expression=self.resolve(tree.expression),
        )
        steps: list[exp.Expr] = [statement]
        if tree.args.get("overwrite"):
            steps.insert(0, exp.Delete(this=table.data))
        mode = "Overwrite" if tree.args.get("overwrite") else "Append"
        return self._write(
            table, steps, "WRITE", {"mode": mode, "partitionBy": list(table.partition_columns)}
        )

    def change(self, tree: exp.Update | exp.Delete | exp.Merge) -> list[dict[str, Any]]:
        """UPDATE, DELETE or MERGE on the table's rows, committed as Delta names the operation."""
        table = self._target(tree.this)
        statement = self.resolve(tree)
        statement.set("this", self._on_data(tree.this, table))
        if isinstance(tree, exp.Merge):
            predicate = x.sql(tree.args["on"])
        else:
            where = tree.args.get("where")
            predicate = x.sql(where.this) if where is not None else "true"
        operation = {exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE"}[type(tree)]
        return self._write(table, [statement], operation, {"predicate": [predicate]})

    # -- DDL -------------------------------------------------------------------------------------------------
    def create(self, tree: exp.Create) -> list[dict[str, Any]]:
        kind = str(tree.kind or "").upper()
        if kind == "SCHEMA":
            return []  # a table's name is its schema here: every schema exists
        if kind == "VIEW":
            return self.create_view(tree)
        if kind != "TABLE" or not isinstance(tree.this, exp.Schema) or tree.expression is not None:
            raise EngineError("the in-memory engine creates tables from a column list only")
        name = table_id(tree.this.this)
        if self.catalog.taken(name):
            if tree.args.get("exists"):
                return []
            raise EngineError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] {name} already exists")
        columns = [column_of(c) for c in tree.this.expressions if isinstance(c, exp.ColumnDef)]
        partitioned: tuple[str, ...] = ()
        clustered: tuple[str, ...] = ()
        properties: dict[str, str] = {}
        comment = None
        for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
            if isinstance(prop, exp.PartitionedByProperty):
                partitioned = tuple(p.name for p in prop.this.expressions)
            elif isinstance(prop, exp.ClusterProperty):
                clustered = tuple(p.name for p in prop.expressions)
            elif isinstance(prop, exp.SchemaCommentProperty):
                comment = text_of(prop.this)
            elif isinstance(prop, exp.FileFormatProperty):
                continue  # USING DELTA: every table here is one
            elif type(prop) is exp.Property:
                properties[str(text_of(prop.this))] = str(text_of(prop.args.get("value")))
            else:
                raise EngineError(f"{name}: the in-memory engine does not model {x.sql(prop)}")
        table = self.catalog.new_table(
            name, columns, partitioned_by=partitioned, clustered_by=clustered, comment=comment
        )
        table.set_properties(properties)
        for column in columns:
            if column.default is not None:
                self.catalog.set_duckdb_default(table, column)
        parameters = {
            "isManaged": "true",
            "description": comment,
            "partitionBy": list(partitioned),
            "properties": properties,
        }
        if clustered:
            parameters["clusterBy"] = list(clustered)
        self.catalog.commit(table, "CREATE TABLE", parameters, self.tag())
        return []

    def create_view(self, tree: exp.Create) -> list[dict[str, Any]]:
        node = tree.this
        if not isinstance(node, exp.Table) or not isinstance(tree.expression, exp.Query):
            raise EngineError("a view is created from a query")
        name = table_id(node)
        if key_of(name) in self.catalog.tables:
            raise EngineError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] {name} is a table")
        if key_of(name) in self.catalog.views and not tree.args.get("replace"):
            if tree.args.get("exists"):
                return []
            raise EngineError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] view {name} already exists")
        query = x.sql(tree.expression)
        resolved = self.resolve(tree.expression)
        assert isinstance(resolved, exp.Query)
        self.catalog.run(resolved.limit(0))  # what it reads exists and binds
        self.catalog.views[key_of(name)] = (name, query)
        return []

    def drop(self, tree: exp.Drop) -> list[dict[str, Any]]:
        kind = str(tree.kind or "").upper()
        named = tree.args.get("tables") or []
        node = named[0] if len(named) == 1 else None
        if not isinstance(node, exp.Table):
            raise EngineError("DROP of no table")
        name = table_id(node)
        if kind == "VIEW":
            if self.catalog.views.pop(key_of(name), None) is None and not tree.args.get("exists"):
                raise EngineError(f"[TABLE_OR_VIEW_NOT_FOUND] view {name} does not exist")
            return []
        if kind != "TABLE":
            raise EngineError(f"the in-memory engine does not drop a {kind.lower()}")
        if key_of(name) in self.catalog.views:
            raise EngineError(f"[WRONG_COMMAND_FOR_OBJECT_TYPE] {name} is a view: use DROP VIEW")
        table = self.catalog.table(name)
        if table is None:
            if tree.args.get("exists"):
                return []
            raise EngineError(f"[TABLE_OR_VIEW_NOT_FOUND] table {name} does not exist")
        self.catalog.drop(table)
        return []

    def comment(self, tree: exp.Comment) -> list[dict[str, Any]]:
        if str(tree.args.get("kind")).upper() != "TABLE":
            raise EngineError("the in-memory engine comments on tables only")
        table = self.catalog.existing(table_id(tree.this))
        table.comment = text_of(tree.expression)
        self.catalog.commit(
            table, "SET TBLPROPERTIES", {"properties": {"comment": table.comment}}, self.tag()
        )
        return []

    def set(self, tree: exp.Set) -> list[dict[str, Any]]:
        for item in tree.expressions:
            pair = item.this
            if not isinstance(pair, exp.EQ):
                raise EngineError("SET takes key = value")
            key = x.sql(pair.this).replace("`", "")
            self.conf[key] = text_of(pair.expression) or ""
        return []

    def reorg(self, name: str) -> list[dict[str, Any]]:
        """REORG … APPLY (PURGE): a dropped column's data is gone from the rows here already, so it rewrites
        nothing; its commit is what the purge op's history condition reads."""
        table = self.catalog.existing(table_id(exp.to_table(name, dialect=DIALECT)))
        self.catalog.commit(table, "REORG", {"applyPurge": True}, self.tag())
        return []

    def command(self, tree: exp.Command) -> list[dict[str, Any]]:
        verb = str(tree.this).upper()
        rest = tree.expression.name if isinstance(tree.expression, exp.Literal) else str(tree.expression)
        if verb == "OPTIMIZE":
            found = _OPTIMIZE.match(rest)
            if found is None:
                raise EngineError(f"cannot read OPTIMIZE {rest}")
            table = self.catalog.existing(table_id(exp.to_table(found["name"], dialect=DIALECT)))
            parameters: dict[str, Any] = {
                "predicate": [],
                "zOrderBy": [],
                "clusterBy": list(table.clustering_columns),
            }
            if found["full"]:
                parameters["isFull"] = True
            self.catalog.commit(table, "OPTIMIZE", parameters, self.tag())
            return []
        if verb == "ALTER":
            return alter_command(self.catalog, self.tag(), rest)
        raise EngineError(
            f"the in-memory engine does not model {verb} {rest.split()[0] if rest else ''}".rstrip()
            + " (run it on the local or spark engine)"
        )

    def alter(self, tree: exp.Alter) -> list[dict[str, Any]]:
        node = tree.this
        if not isinstance(node, exp.Table):
            raise EngineError("ALTER of no table")
        return alter_table(self.catalog, self.tag(), node, list(tree.args.get("actions") or []))


_HANDLERS: dict[type[exp.Expr], Callable[[Statements, Any], list[dict[str, Any]]]] = {
    exp.Insert: Statements.insert,
    exp.Update: Statements.change,
    exp.Delete: Statements.change,
    exp.Merge: Statements.change,
    exp.Create: Statements.create,
    exp.Drop: Statements.drop,
    exp.Alter: Statements.alter,
    exp.Comment: Statements.comment,
    exp.Set: Statements.set,
    exp.Command: Statements.command,
}
