"""The embedded `local` engine: Sail in-process for SQL and data, delta-rs for the metadata ops Sail lacks,
and a rewrite where neither has a metadata-only path (DESIGN.md, "Engines").

Sail's catalog lives in memory, so it is rebuilt at start: every Delta table under
`<warehouse>/<schema>/<table>` is registered by location and views are re-created from
`<warehouse>/_delta_contracts/views.json`. A second process therefore sees the first one's tables and views.
Table ids of three parts keep only schema.table here: Sail has a single catalog.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlglot import exp

from delta_contracts.engine import deltalog
from delta_contracts.engine.base import CommitLog, Engine, EngineError, OpOutcome
from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan import expressions as x
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    Backfill,
    ColumnSpec,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropNotNull,
    DropTable,
    Op,
    RenameTable,
    SetClustering,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    WidenType,
)
from delta_contracts.plan.render import build, render

TableId = tuple[str, ...]
STATE_DIR = "_delta_contracts"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")  # referenced_columns() folds case
_INTERNAL_PROPERTIES = {"delta.columnMapping.maxColumnId", "delta.minReaderVersion", "delta.minWriterVersion"}


def _start_sail() -> tuple[Any, Any]:
    from pysail.spark import SparkConnectServer
    from pyspark.sql import SparkSession

    os.environ.setdefault("RUST_LOG", "error")  # Sail logs every session at INFO otherwise
    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    _, port = server.listening_address
    # PySpark flags the whole process as "Spark Connect mode" when a remote session is made, which would
    # turn a user's later classic SparkSession (same notebook, same process) into a Connect one.
    flagged = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    # create(), not getOrCreate(): that would hand back another engine's session in the same process.
    session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
    if not flagged:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return server, session


class LocalEngine(Engine):
    name = "local"

    def __init__(self, warehouse: Path | str = "warehouse") -> None:
        self.warehouse = Path(warehouse).resolve()
        self.warehouse.mkdir(parents=True, exist_ok=True)
        self.state = self.warehouse / STATE_DIR
        self._commits = CommitLog(self.state)
        self._server, self.spark = _start_sail()
        self._views: dict[str, str] = self._load_views()
        self.rebuild_catalog()

    # -- catalog ---------------------------------------------------------------------------------------------
    @staticmethod
    def local_id(table: TableId) -> TableId:
        return tuple(table[-2:])

    def location(self, table: TableId) -> Path:
        schema, name = self.local_id(table)
        return self.warehouse / schema / name

    def _views_file(self) -> Path:
        return self.state / "views.json"

    def _load_views(self) -> dict[str, str]:
        path = self._views_file()
        return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}

    def _save_views(self) -> None:
        path = self._views_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".views.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self._views, handle, indent=2, sort_keys=True, ensure_ascii=False)
        os.replace(tmp, path)

    def rebuild_catalog(self) -> None:
        for schema_dir in sorted(p for p in self.warehouse.iterdir() if p.is_dir() and p.name != STATE_DIR):
            for table_dir in sorted(p for p in schema_dir.iterdir() if (p / "_delta_log").is_dir()):
                self.register((schema_dir.name, table_dir.name))
        pending = dict(self._views)
        # Views may read views: create until nothing more succeeds.
        while pending:
            progressed = False
            for key, query in list(pending.items()):
                try:
                    self._create_view_sql(tuple(json.loads(key)), query)
                except Exception:  # retried once the views it depends on exist
                    continue
                del pending[key]
                progressed = True
            if not progressed:
                # A view whose table was dropped out of band must not keep the engine from starting; its
                # definition stays in views.json and drift reports the missing table.
                warnings.warn(f"views not re-created, their tables are gone: {sorted(pending)}", stacklevel=2)
                break

    def register(self, table: TableId) -> None:
        """(Re-)register a table by location; Sail caches metadata at registration (DESIGN.md)."""
        schema, name = self.local_id(table)
        self._exec(exp.Create(this=x.ident(schema), kind="SCHEMA", exists=True))
        self._exec(exp.Drop(tables=[x.table((schema, name))], kind="TABLE", exists=True))
        props = exp.Properties(
            expressions=[
                exp.FileFormatProperty(this=exp.Var(this="DELTA")),
                exp.LocationProperty(this=exp.Literal.string(str(self.location(table)))),
            ]
        )
        self._exec(exp.Create(this=x.table((schema, name)), kind="TABLE", properties=props))

    def _create_view_sql(self, view: TableId, query: str) -> None:
        schema, _ = self.local_id(view)
        self._exec(exp.Create(this=x.ident(schema), kind="SCHEMA", exists=True))
        statement = exp.Create(
            this=x.table(self.local_id(view)), kind="VIEW", replace=True, expression=x.parse(query)
        )
        self._exec(statement)

    # -- Engine interface ------------------------------------------------------------------------------------
    @property
    def commit_log(self) -> CommitLog:
        return self._commits

    def close(self) -> None:
        try:
            self.spark.stop()
        finally:
            self._server.stop()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.spark.sql(statement).collect()]

    def _exec(self, statement: exp.Expr) -> list[dict[str, Any]]:
        return self.sql(x.sql(statement))

    def describe(self, table: TableId) -> LiveTable | None:
        location = self.location(table)
        if not (location / "_delta_log").is_dir():
            return None
        return deltalog.read_table(str(location), ".".join(table))

    def views(self) -> Mapping[TableId, str]:
        return {tuple(json.loads(k)): v for k, v in self._views.items()}

    def history(self, table: TableId) -> list[Commit]:
        return deltalog.history(str(self.location(table)))

    def _version(self, table: TableId) -> int:
        return deltalog.version(str(self.location(table)))

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        reason = self.unsupported_reason(op)
        if reason is not None:
            raise EngineError(f"{op.summary()} on {'.'.join(op.table)}: the local engine cannot: {reason}")
        handler = self._handlers().get(type(op))
        if handler is None:
            raise EngineError(f"the local engine has no way to run {op.kind}")
        try:
            return handler(replace(op, table=self.local_id(op.table)), tag)
        except EngineError:
            raise
        except Exception as err:  # Sail (Spark Connect) and delta-rs errors, reported with the op
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise EngineError(f"{op.summary()} on {'.'.join(op.table)}: {reason}") from err

    def unsupported_reason(self, op: Op) -> str | None:
        """Why Sail 0.7.2 + delta-rs cannot run `op` faithfully (measured), or None."""
        if isinstance(op, SetNotNull):
            return "OSS Delta has no SET NOT NULL; plan for target delta-3/delta-4 (a CHECK is used)"
        if isinstance(op, SetClustering) or (isinstance(op, CreateTable) and op.clustered_by):
            return "Sail 0.7.2 has no CLUSTER BY; use --engine spark for liquid clustering"
        properties = dict(op.properties) if isinstance(op, SetProperties | CreateTable) else {}
        if properties.get("delta.enableChangeDataFeed", "false").lower() == "true":
            return (
                "Sail 0.7.2 cannot write Change Data Feed tables "
                "('Unsupported table features required: [ChangeDataFeed]'); use --engine spark"
            )
        if isinstance(op, AddCheck):
            awkward = sorted(c for c in x.referenced_columns(op.expression) if not _PLAIN_NAME.match(c))
            if awkward:
                return (
                    f"Sail 0.7.2 stores CHECK expressions without identifier quotes, so a rule on {awkward} "
                    "would leave a constraint no writer can parse; use --engine spark"
                )
        return None

    def _handlers(self) -> dict[type[Op], Callable[[Any, str | None], OpOutcome]]:
        handlers: dict[type[Op], Callable[[Any, str | None], OpOutcome]] = {
            CreateTable: self._create_table,
            AddColumn: self._add_column,
            SetColumnDefault: self._column_default,
            DropColumnDefault: self._column_default,
            SetColumnComment: self._set_column_comment,
            SetTableComment: self._set_table_comment,
            WidenType: self._sail_sql,
            SetProperties: self._set_properties,
            AddCheck: self._sail_sql,
            DropCheck: self._drop_check,
            DropNotNull: self._drop_not_null,
            Backfill: self._sail_sql,
            CopyRows: self._copy_rows,
            RenameTable: self._rename_table,
            CreateView: self._create_view,
            DropColumns: self._drop_columns,
            DropTable: self._drop_table,
        }
        for subclass in SetProperties.__subclasses__():  # deprecation marks and the stamp
            handlers[subclass] = self._set_properties
        return handlers

    def _outcome(self, op: Op, path: str, detail: str = "", table: TableId | None = None) -> OpOutcome:
        target = table or op.table
        return OpOutcome(op.kind, ".".join(target), self._version(target), path, detail)

    def _delta_rs(self, table: TableId) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(str(self.location(table)))

    @staticmethod
    def _commit_properties(tag: str | None) -> Any:
        from deltalake import CommitProperties

        return CommitProperties(custom_metadata={"userMetadata": tag}) if tag else None

    def _mapped(self, table: TableId) -> bool:
        live = self.describe(table)
        return live is not None and live.properties.get(COLUMN_MAPPING_MODE, "none") != "none"

    # -- op handlers -----------------------------------------------------------------------------------------
    def _sail_sql(self, op: Op, tag: str | None) -> OpOutcome:
        self.sql(render(op))
        return self._outcome(op, "sql")

    def _create_table(self, op: CreateTable, tag: str | None) -> OpOutcome:
        location = self.location(op.table)
        if location.exists() and any(location.iterdir()):
            raise EngineError(
                f"{location} already holds files: refusing to create {'.'.join(op.table)} over them"
            )
        self._exec(exp.Create(this=x.ident(op.table[0]), kind="SCHEMA", exists=True))
        self._exec(self._create_statement(op, location))
        return self._outcome(op, "sql")

    @staticmethod
    def _create_statement(op: CreateTable, location: Path) -> exp.Expr:
        statement = build(op)
        properties = statement.args["properties"]
        properties.append("expressions", exp.LocationProperty(this=exp.Literal.string(str(location))))
        return statement

    def _metadata(
        self,
        op: Op,
        tag: str | None,
        change: Callable[[Any, Any], None],
        reshape: Callable[[TableShape], TableShape],
    ) -> OpOutcome:
        """A metadata-only change through delta-rs; where delta-rs refuses the table (column mapping,
        column defaults and other writer features it lacks), the same change by a rewrite."""
        try:
            change(self._delta_rs(op.table).alter, self._commit_properties(tag))
        except Exception as err:
            message = str(err)
            if "not supported" not in message and "Unsupported table features" not in message:
                raise
            return self._rewrite(
                op, reshape, detail=f"delta-rs refused ({message.splitlines()[0]}): rewritten"
            )
        self.register(op.table)
        return self._outcome(op, "delta-rs")

    def _column_default(self, op: SetColumnDefault | DropColumnDefault, tag: str | None) -> OpOutcome:
        """Sail's ALTER COLUMN … SET/DROP DEFAULT, or a rewrite where Sail cannot resolve the column (it loses
        track of columns of a table registered again after a delta-rs change; delta-rs itself refuses tables
        with the column-defaults feature)."""
        default = op.default if isinstance(op, SetColumnDefault) else None
        try:
            return self._sail_sql(op, tag)
        except Exception as err:
            if "does not exist" not in str(err):
                raise

            def reshape(shape: TableShape) -> TableShape:
                columns = tuple(
                    replace(c, default=default) if c.name.casefold() == op.column.casefold() else c
                    for c in shape.columns
                )
                return replace(shape, columns=columns)

            return self._rewrite(op, reshape, detail="Sail could not resolve the column: rewritten")

    def _add_column(self, op: AddColumn, tag: str | None) -> OpOutcome:
        from deltalake.schema import Field

        spec = replace(op.column, nullable=True, default=None)
        metadata = {"comment": spec.comment} if spec.comment is not None else {}
        field = Field(spec.name, _delta_type(spec.type), nullable=True, metadata=metadata)
        return self._metadata(
            op,
            tag,
            lambda alter, props: alter.add_columns([field], commit_properties=props),
            lambda shape: replace(shape, columns=(*shape.columns, spec)),
        )

    def _set_column_comment(self, op: SetColumnComment, tag: str | None) -> OpOutcome:
        def reshape(shape: TableShape) -> TableShape:
            columns = tuple(
                replace(c, comment=op.comment) if c.name.casefold() == op.column.casefold() else c
                for c in shape.columns
            )
            return replace(shape, columns=columns)

        return self._metadata(
            op,
            tag,
            lambda alter, props: alter.set_column_metadata(
                op.column, {"comment": op.comment}, commit_properties=props
            ),
            reshape,
        )

    def _set_table_comment(self, op: SetTableComment, tag: str | None) -> OpOutcome:
        return self._metadata(
            op,
            tag,
            lambda alter, props: alter.set_table_description(op.comment, commit_properties=props),
            lambda shape: replace(shape, comment=op.comment),
        )

    def _drop_check(self, op: DropCheck, tag: str | None) -> OpOutcome:
        live = self.describe(op.table)
        name = next((n for n in (live.checks if live else {}) if n.casefold() == op.name.casefold()), op.name)
        return self._metadata(
            op,
            tag,
            lambda alter, props: alter.drop_constraint(
                name, raise_if_not_exists=False, commit_properties=props
            ),
            lambda shape: replace(shape, checks={k: v for k, v in shape.checks.items() if k != name}),
        )

    def _drop_not_null(self, op: DropNotNull, tag: str | None) -> OpOutcome:
        def reshape(shape: TableShape) -> TableShape:
            columns = tuple(
                replace(c, nullable=True) if c.name.casefold() == op.column.casefold() else c
                for c in shape.columns
            )
            return replace(shape, columns=columns)

        return self._metadata(
            op,
            tag,
            lambda alter, props: alter.drop_column_not_null(op.column, commit_properties=props),
            reshape,
        )

    def _set_properties(self, op: SetProperties, tag: str | None) -> OpOutcome:
        wanted = dict(op.properties)
        if wanted.get(COLUMN_MAPPING_MODE, "none") != "none" and not self._mapped(op.table):
            # Sail sets the property without giving fields physical names, which leaves a table no reader
            # can open, and delta-rs refuses; so the table is rewritten with mapping on from the start.
            mapping = {k: v for k, v in wanted.items() if k.startswith("delta.columnMapping.")}
            outcome = self._rewrite(
                op,
                lambda shape: replace(shape, properties={**shape.properties, **mapping}),
                detail="enabling column mapping needs a rewrite",
            )
            rest = {k: v for k, v in wanted.items() if k not in mapping and k not in _INTERNAL_PROPERTIES}
            if rest:
                self.sql(render(replace(op, properties=tuple(rest.items()))))
                return self._outcome(op, "rewrite", outcome.detail)
            return outcome
        self.sql(render(op))
        return self._outcome(op, "sql")

    def _copy_rows(self, op: CopyRows, tag: str | None) -> OpOutcome:
        self.sql(render(replace(op, source=self.local_id(op.source))))
        return self._outcome(op, "sql")

    def _create_view(self, op: CreateView, tag: str | None) -> OpOutcome:
        # Sail has no ALTER VIEW … AS: the alias is swapped with CREATE OR REPLACE VIEW.
        from delta_contracts.plan.render import view_query_sql

        local = replace(op, source=self.local_id(op.source), alter_existing=False)
        query = view_query_sql(local)
        self._create_view_sql(op.table, query)
        self._views[json.dumps(list(op.table))] = query
        self._save_views()
        return OpOutcome(op.kind, ".".join(op.table), None, "sql", "view stored in views.json")

    def _rename_table(self, op: RenameTable, tag: str | None) -> OpOutcome:
        target = self.local_id(op.new_name)
        source, destination = self.location(op.table), self.location(target)
        if destination.exists():
            raise EngineError(f"cannot rename {'.'.join(op.table)}: {destination} already exists")
        destination.parent.mkdir(parents=True, exist_ok=True)
        self._exec(exp.Drop(tables=[x.table(op.table)], kind="TABLE", exists=True))
        os.rename(source, destination)  # one directory move: atomic on one filesystem
        self.register(target)
        return OpOutcome(
            op.kind, ".".join(target), self._version(target), "catalog", f"moved {source} -> {destination}"
        )

    def _drop_table(self, op: DropTable, tag: str | None) -> OpOutcome:
        self._exec(exp.Drop(tables=[x.table(op.table)], kind="TABLE", exists=True))
        location = self.location(op.table)
        if location.exists():
            shutil.rmtree(location)
        return OpOutcome(op.kind, ".".join(op.table), None, "sql", f"deleted {location}")

    def _drop_columns(self, op: DropColumns, tag: str | None) -> OpOutcome:
        dropped = {c.casefold() for c in op.columns}

        def reshape(shape: TableShape) -> TableShape:
            if dropped & {c.casefold() for c in shape.partition_columns}:
                raise EngineError(f"{op.summary()}: partition columns cannot be dropped")
            return replace(
                shape,
                columns=tuple(c for c in shape.columns if c.name.casefold() not in dropped),
                checks={n: e for n, e in shape.checks.items() if not (x.referenced_columns(e) & dropped)},
            )

        return self._rewrite(op, reshape, detail="Sail has no DROP COLUMNS")

    # -- rewrite ---------------------------------------------------------------------------------------------
    def _rewrite(self, op: Op, reshape: Callable[[TableShape], TableShape], *, detail: str = "") -> OpOutcome:
        """Rebuild the table in its new shape beside the old one, then swap the directories.

        The old files stay in place until the new table is complete; a crash before the swap leaves the old
        table untouched and the half-built copy under _delta_contracts/rewrite.
        """
        table = op.table
        live = self.describe(table)
        if live is None:
            raise EngineError(f"{op.summary()}: table {'.'.join(table)} does not exist")
        shape = reshape(TableShape.of(live))
        token = uuid.uuid4().hex[:12]
        staging = self.state / "rewrite" / f"{table[0]}.{table[1]}.{token}"
        staging_id = ("__delta_contracts_rewrite", f"t_{token}")
        create = CreateTable(
            table=staging_id,
            phase=op.phase,
            columns=shape.columns,
            partitioned_by=shape.partition_columns,
            comment=shape.comment,
            properties=tuple(sorted(shape.properties.items())),
        )
        self._exec(exp.Create(this=x.ident(staging_id[0]), kind="SCHEMA", exists=True))
        self._exec(self._create_statement(create, staging))
        try:
            existing = {c.name.casefold() for c in live.columns}
            values: list[exp.Expr] = [
                x.column(c.name) if c.name.casefold() in existing else x.cast(exp.Null(), c.type)
                for c in shape.columns
            ]
            insert = exp.Insert(
                this=exp.Schema(
                    this=x.table(staging_id), expressions=[x.ident(c.name) for c in shape.columns]
                ),
                expression=exp.select(*values).from_(x.table(table)),
            )
            self._exec(insert)
            for name, expression in shape.checks.items():
                self.sql(render(AddCheck(table=staging_id, phase=op.phase, name=name, expression=expression)))
        finally:
            self._exec(exp.Drop(tables=[x.table(staging_id)], kind="TABLE", exists=True))
        location = self.location(table)
        retired = self.state / "trash" / f"{table[0]}.{table[1]}.{token}"
        retired.parent.mkdir(parents=True, exist_ok=True)
        self._exec(exp.Drop(tables=[x.table(table)], kind="TABLE", exists=True))
        os.rename(location, retired)
        os.rename(staging, location)
        self.register(table)
        shutil.rmtree(retired)
        return self._outcome(op, "rewrite", detail)


@dataclass(frozen=True)
class TableShape:
    """What a rewrite rebuilds: everything about a table but its data."""

    columns: tuple[ColumnSpec, ...]
    properties: dict[str, str]
    checks: dict[str, str]
    partition_columns: tuple[str, ...]
    comment: str | None

    @classmethod
    def of(cls, live: LiveTable) -> TableShape:
        return cls(
            columns=tuple(ColumnSpec(c.name, c.type, c.nullable, c.comment, c.default) for c in live.columns),
            properties={k: v for k, v in live.properties.items() if k not in _INTERNAL_PROPERTIES},
            checks=dict(live.checks),
            partition_columns=live.partition_columns,
            comment=live.comment,
        )


def _delta_type(type_text: str) -> Any:
    """Our canonical type as the delta-rs schema type."""
    from deltalake.schema import ArrayType, MapType, PrimitiveType, StructType

    from delta_contracts.contract import types as t

    def convert(value: t.SparkType) -> Any:
        if isinstance(value, t.PrimitiveType):
            names = {"bigint": "long", "int": "integer", "smallint": "short", "tinyint": "byte"}
            return PrimitiveType(names.get(value.name, value.name))
        if isinstance(value, t.DecimalType):
            return PrimitiveType(f"decimal({value.precision},{value.scale})")
        if isinstance(value, t.CharType | t.VarcharType):
            return PrimitiveType("string")
        if isinstance(value, t.ArrayType):
            return ArrayType(convert(value.element), contains_null=value.contains_null)
        if isinstance(value, t.MapType):
            return MapType(convert(value.key), convert(value.value))
        from deltalake.schema import Field

        return StructType([Field(f.name, convert(f.type), nullable=f.nullable) for f in value.fields])

    return convert(t.parse_type(type_text))
