"""The embedded `local` engine: Sail in-process for SQL and data, delta-rs for the metadata ops Sail lacks,
and delta-spark — started lazily, only when such an op comes — for the ops neither can do on the table itself
(DESIGN.md, "Engines"). The table's Delta history always continues; no op restarts it.

Ops that reach delta-spark (a local JVM session, ~6-10 s to start; Java 17 and the cached jars needed):
DROP COLUMNS, and REORG … APPLY (PURGE) after it; enabling column mapping on a table; ALTER COLUMN TYPE /
SET DEFAULT / DROP DEFAULT on a table this engine did not create in this process (Sail commits those and
then fails); ADD COLUMN on a column-mapped table; and comments, DROP CONSTRAINT, DROP NOT NULL on tables
whose features delta-rs cannot write (column defaults, type widening). Which path an op takes is decided
from the Delta log before it runs, by the engine's op table (`local.ops.LOCAL_OPS`). Where delta-spark cannot
start, such ops are refused before anything runs — unless the engine was opened with `allow_rewrite=True`,
which rebuilds the table and keeps the old one as a backup (`rewrite`).

Sail's catalog lives in memory, so it is rebuilt at start: every Delta table under
`<warehouse>/<schema>/<table>` is registered by location and views are re-created from
`<warehouse>/_delta_contracts/views.json`. A second process therefore sees the first one's tables and views.
Table ids of three parts keep only schema.table here: Sail has a single catalog.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from delta_contracts.contract.errors import first_line
from delta_contracts.engine import deltalog
from delta_contracts.engine.base import Engine, EngineError, OpOutcome
from delta_contracts.engine.capabilities import How
from delta_contracts.engine.local import rewrite
from delta_contracts.engine.local.delta_spark import DELTA_SPARK_URL_ENV, DeltaSparkPath
from delta_contracts.engine.local.ops import LOCAL, LOCAL_OPS, create_statement
from delta_contracts.engine.local.rewrite import StepHook
from delta_contracts.engine.local.routes import TableFacts
from delta_contracts.engine.local.time_travel import without_time_travel
from delta_contracts.engine.row_moves import RowMover
from delta_contracts.live import Commit, LiveTable
from delta_contracts.paths import OutsideRootError, inside
from delta_contracts.plan.ops import AddCheck, CreateTable, Op
from delta_contracts.plan.render import render
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

STATE_DIR = "_delta_contracts"


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
    """Sail + delta-rs in-process; delta-spark only for the ops listed in the module docstring.

    `allow_rewrite=True` lets ops that need delta-spark run where it cannot start, by rebuilding the table
    (history restarts; the old table is kept as a named backup under `_delta_contracts/backups`).
    `on_step` is called at each step of such a rewrite (`rewrite.STEPS`), for crash tests.
    `delta_spark_url`: a running Spark Connect server with delta-spark for those ops, instead of a JVM of
    this process (default: `DELTA_CONTRACTS_DELTA_SPARK_URL`, else none).
    """

    name = "local"

    def __init__(
        self,
        warehouse: Path | str = "warehouse",
        *,
        allow_rewrite: bool = False,
        on_step: StepHook | None = None,
        delta_spark_url: str | None = None,
    ) -> None:
        self.warehouse = Path(warehouse).resolve()
        self.warehouse.mkdir(parents=True, exist_ok=True)
        self.state = self.state_dir = self.warehouse / STATE_DIR
        self.allow_rewrite = allow_rewrite
        self._on_step = on_step
        self._delta_spark = DeltaSparkPath(self.state, delta_spark_url or os.environ.get(DELTA_SPARK_URL_ENV))
        self._declared: set[TableId] = set()  # tables whose Sail catalog entry carries their schema
        self.recovered = rewrite.recover(self.state)
        for note in self.recovered:
            warnings.warn(note, stacklevel=2)
        self._server, self.spark = _start_sail()
        self._views: dict[str, str] = self._load_views()
        try:
            self.rebuild_catalog()
        except BaseException:
            self.close()
            raise

    # -- catalog ---------------------------------------------------------------------------------------------
    @staticmethod
    def local_id(table: TableId) -> TableId:
        return TableId(table[-2:])

    def location(self, table: TableId) -> Path:
        """`<warehouse>/<schema>/<table>`, proved to lie under the warehouse and outside its state folder."""
        table = TableId(table)  # a caller's plain tuple names the table as well
        schema, name = self.local_id(table)
        if schema.casefold() == STATE_DIR.casefold():
            raise EngineError(f"{table}: {schema} is the toolkit's own folder of the warehouse")
        try:
            return inside(self.warehouse, schema, name)
        except OutsideRootError as err:
            raise EngineError(f"{table}: not a table the warehouse can hold: {err}") from None

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
        """Register every table under the warehouse and re-create the stored views, those a view reads first.

        A view whose tables are gone (dropped out of band) is left out with a warning — its definition stays
        in views.json and drift reports it; any other failure to create a view is an error.
        """
        for schema_dir in sorted(p for p in self.warehouse.iterdir() if p.is_dir() and p.name != STATE_DIR):
            for table_dir in sorted(p for p in schema_dir.iterdir() if (p / "_delta_log").is_dir()):
                self.register(TableId((schema_dir.name, table_dir.name)))
        views = {TableId(json.loads(key)): query for key, query in self._views.items()}
        missing: dict[TableId, list[str]] = {}
        created: set[TableId] = set()

        def create(view: TableId, trail: tuple[TableId, ...]) -> bool:
            if view in created:
                return True
            if view in missing:
                return False
            if view in trail:
                raise EngineError(f"stored views read each other in a cycle: {[*trail, view]}")
            gone = []
            for source in _sources(views[view]):
                if source in views:
                    if not create(source, (*trail, view)):
                        gone.append(str(source))
                elif not (self.location(source) / "_delta_log").is_dir():
                    gone.append(str(source))
            if gone:
                missing[view] = gone
                return False
            try:
                self._create_view_sql(view, views[view])
            except Exception as err:  # Sail's error, reported with the view it concerns
                why = first_line(err)
                raise EngineError(f"cannot re-create the stored view {view}: {why}") from err
            created.add(view)
            return True

        for view in sorted(views):
            create(view, ())
        if missing:
            listed = "; ".join(f"{v} (reads {', '.join(t)})" for v, t in sorted(missing.items()))
            warnings.warn(f"views not re-created, the tables they read are gone: {listed}", stacklevel=2)

    def register(self, table: TableId) -> None:
        """(Re-)register a table by location; Sail caches metadata at registration (DESIGN.md)."""
        schema, name = self.local_id(table)
        self._declared.discard((schema, name))
        self.execute(exp.Create(this=x.ident(schema), kind="SCHEMA", exists=True))
        self.execute(exp.Drop(tables=[x.table((schema, name))], kind="TABLE", exists=True))
        props = exp.Properties(
            expressions=[
                exp.FileFormatProperty(this=exp.Var(this="DELTA")),
                exp.LocationProperty(this=exp.Literal.string(str(self.location(table)))),
            ]
        )
        self.execute(exp.Create(this=x.table((schema, name)), kind="TABLE", properties=props))

    def _create_view_sql(self, view: TableId, query: str) -> None:
        schema, _ = self.local_id(view)
        self.execute(exp.Create(this=x.ident(schema), kind="SCHEMA", exists=True))
        statement = exp.Create(
            this=x.table(self.local_id(view)), kind="VIEW", replace=True, expression=x.parse(query)
        )
        self.execute(statement)

    # -- Engine interface ------------------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self._delta_spark.close()
            self.spark.stop()
        finally:
            self._server.stop()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        statement = without_time_travel(
            _sail_arithmetic(statement), lambda t: str(self.location(t)), self.spark
        )
        return [row.asDict(recursive=True) for row in self.spark.sql(statement).collect()]

    def execute(self, statement: exp.Expr) -> list[dict[str, Any]]:
        return self.sql(x.sql(statement))

    def describe(self, table: TableId, *, with_version: bool = True) -> LiveTable | None:
        table = TableId(table)  # a caller's plain tuple names the table as well
        location = self.location(table)
        if not (location / "_delta_log").is_dir():
            return None
        return deltalog.read_table(str(location), str(table))

    def table_version(self, table: TableId) -> int | None:
        location = self.location(table)
        return deltalog.version(str(location)) if (location / "_delta_log").is_dir() else None

    def views(self) -> Mapping[TableId, str]:
        return {TableId(json.loads(k)): v for k, v in self._views.items()}

    def history(self, table: TableId) -> list[Commit]:
        return deltalog.history(str(self.location(table)))

    def _version(self, table: TableId) -> int:
        return deltalog.version(str(self.location(table)))

    def row_mover(self, op: Op) -> RowMover[Any] | None:
        entry = LOCAL_OPS.entry(op)
        return None if entry is None else entry.rows

    def declare(self, table: TableId) -> None:
        """The table's Sail catalog entry carries its schema (this engine created it in this process)."""
        self._declared.add(table)

    def store_view(self, view: TableId, query: str) -> None:
        """Create the view on Sail and keep its query in views.json, for the next process's catalog."""
        self._create_view_sql(view, query)
        self._views[json.dumps(list(view))] = query
        self._save_views()

    def facts(self, table: TableId) -> TableFacts:
        local = self.local_id(table)
        return TableFacts.of(self.describe(local), sail_knows_schema=local in self._declared)

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        reason = self.unsupported_reason(op)
        if reason is not None:
            raise EngineError(f"{op.summary()} on {op.table}: the local engine cannot: {reason}")
        local = replace(op, table=self.local_id(op.table))
        path = LOCAL.route(local, self.facts(local.table))
        try:
            entry = LOCAL_OPS[local]
            if path.how is How.DELTA_SPARK:
                return self._by_delta_spark(local, tag, path.why)
            if path.how is How.DELTA_RS and entry.delta_rs is not None:
                return self._by_delta_rs(local, tag)
            if path.how is How.CATALOG and entry.catalog is not None:
                return entry.catalog(self, local)
            if path.how is How.SQL:
                return entry.sail(self, local, tag)
            raise EngineError(f"{op.summary()} on {op.table}: the local engine cannot: {path.why}")
        except EngineError:
            raise
        except Exception as err:  # Sail (Spark Connect), delta-rs and delta-spark errors, told with the op
            raise EngineError(f"{op.summary()} on {op.table}: {first_line(err)}") from err

    def unsupported_reason(self, op: Op) -> str | None:
        """Why this engine cannot run `op` on the table as it is now, or None."""
        return self._reason(op, self.facts(op.table))

    def check_supported(self, ops: Sequence[Op]) -> None:
        """Every op checked against the table as the ops before it will have left it, before any runs."""
        facts: dict[TableId, TableFacts] = {}
        reasons = []
        for op in ops:
            table = self.local_id(op.table)
            current = facts.get(table) or self.facts(table)
            why = self._reason(op, current)
            if why is not None:
                reasons.append(f"{op.summary()}: {why}")
            entry = LOCAL_OPS.entry(op)
            if entry is None:
                continue
            for name, after in entry.project(op, current).items():
                facts[self.local_id(name)] = after
            if LOCAL.route(op, current).how in (How.DELTA_RS, How.DELTA_SPARK):
                # run outside Sail, which then knows the table again by location only
                facts[table] = replace(facts[table], sail_knows_schema=False)
        if reasons:
            raise EngineError(f"the {self.name} engine cannot run this migration:\n  " + "\n  ".join(reasons))

    def _reason(self, op: Op, facts: TableFacts) -> str | None:
        path = LOCAL.route(op, facts)
        if path.how is How.REFUSED:
            return path.why
        if path.how is not How.DELTA_SPARK:
            return None
        unavailable = self._delta_spark.unavailable_reason()
        if unavailable is None or self.allow_rewrite:
            return None
        if self._delta_spark.url is not None:
            return (
                f"it needs delta-spark ({path.why}), which cannot be reached: {unavailable}. Way out: start "
                f"that server, or unset {DELTA_SPARK_URL_ENV} to start delta-spark in this process"
            )
        return (
            f"it needs delta-spark ({path.why}), which cannot start here: {unavailable}. Way out: install "
            "Java 17 and run `make jars` (or set DELTA_CONTRACTS_DELTA_JARS), or use --engine spark, or "
            "pass --allow-rewrite to rebuild the table (its history restarts; the old table is kept as a "
            "backup)"
        )

    def outcome(self, op: Op, path: str, detail: str = "") -> OpOutcome:
        return OpOutcome(op.kind, op.table, self._version(op.table), path, detail)

    # -- delta-spark -----------------------------------------------------------------------------------------
    def _by_delta_spark(self, op: Op, tag: str | None, why: str) -> OpOutcome:
        if self._delta_spark.unavailable_reason() is not None:  # only reached with allow_rewrite
            return self._rewrite(op, f"delta-spark cannot start here ({why})")
        entry = LOCAL_OPS[op]
        if entry.before_delta_spark is not None:
            entry.before_delta_spark(self, op)
        self._delta_spark.run(op, entry.at_location(op, self.location(op.table)), tag)
        self.register(op.table)  # Sail caches the metadata it read at registration
        return self.outcome(op, "delta-spark", f"run by delta-spark on the table in place: {why}")

    # -- delta-rs --------------------------------------------------------------------------------------------
    def _by_delta_rs(self, op: Op, tag: str | None) -> OpOutcome:
        from deltalake import CommitProperties, DeltaTable

        properties = CommitProperties(custom_metadata={"userMetadata": tag}) if tag else None
        table = DeltaTable(str(self.location(op.table)))
        change = LOCAL_OPS[op].delta_rs
        if change is None:
            raise EngineError(f"{op.summary()}: delta-rs has no way to do this")
        change(op, table.alter, properties, dict(table.metadata().configuration or {}))
        self.register(op.table)
        return self.outcome(op, "delta-rs")

    # -- rewrite (allow_rewrite only) ------------------------------------------------------------------------
    def _rewrite(self, op: Op, why: str) -> OpOutcome:
        """Rebuild the table in its new shape beside the old one, then swap directories (`rewrite`)."""
        table = op.table
        live = self.describe(table)
        if live is None or live.version is None:
            raise EngineError(f"{op.summary()}: table {table} does not exist")
        reshape = LOCAL_OPS[op].reshape
        if reshape is None:
            raise EngineError(f"{op.summary()}: there is no rewrite for this op")
        shape = reshape(op, rewrite.TableShape.of(live))
        journal, journal_path = rewrite.plan_rewrite(self.state, table, self.location(table), live.version)
        journal_path.parent.mkdir(parents=True, exist_ok=True)
        journal.save(journal_path)
        self._step("journal")
        self._build_copy(op, live, shape, Path(journal.staging), journal_path.stem)
        self.execute(exp.Drop(tables=[x.table(table)], kind="TABLE", exists=True))
        rewrite.swap(journal, journal_path, self._step)
        self.register(table)
        return self.outcome(
            op,
            "rewrite",
            f"rewritten because {why}: the table's history restarts at version 0; the previous table "
            f"(versions 0..{live.version}) is kept at {journal.backup}",
        )

    def _build_copy(
        self, op: Op, live: LiveTable, shape: rewrite.TableShape, staging: Path, token: str
    ) -> None:
        staging_id = TableId(("__delta_contracts_rewrite", "t_" + token.rsplit(".", 1)[-1]))
        create = CreateTable(
            table=staging_id,
            phase=op.phase,
            columns=shape.columns,
            partitioned_by=shape.partition_columns,
            comment=shape.comment,
            properties=tuple(sorted(shape.properties.items())),
        )
        self.execute(exp.Create(this=x.ident(staging_id[0]), kind="SCHEMA", exists=True))
        self.execute(create_statement(create, staging))
        self._step("staging-created")
        try:
            existing = {c.name.casefold() for c in live.columns}
            values: list[exp.Expr] = [
                x.cast(x.column(c.name) if c.name.casefold() in existing else exp.Null(), c.type)
                for c in shape.columns
            ]
            insert = exp.Insert(
                this=exp.Schema(
                    this=x.table(staging_id), expressions=[x.ident(c.name) for c in shape.columns]
                ),
                expression=exp.select(*values).from_(x.table(op.table)),
            )
            self.execute(insert)
            for name, expression in shape.checks.items():
                self.sql(render(AddCheck(table=staging_id, phase=op.phase, name=name, expression=expression)))
        finally:
            self.execute(exp.Drop(tables=[x.table(staging_id)], kind="TABLE", exists=True))

    def _step(self, name: str) -> None:
        if self._on_step is not None:
            self._on_step(name)


def _sources(query: str) -> set[TableId]:
    """The tables and views a stored view's query reads (its CTE names excluded)."""
    tree = x.parse(query)
    ctes = {cte.alias_or_name.casefold() for cte in tree.find_all(exp.CTE)}
    found = set()
    for node in tree.find_all(exp.Table):
        if node.name.casefold() in ctes and not node.db:
            continue
        found.add(TableId(part.name for part in node.parts))
    return found


_PLAIN_ARITHMETIC: dict[type[exp.Expr], type[exp.Binary]] = {
    exp.SafeAdd: exp.Add,
    exp.SafeSubtract: exp.Sub,
    exp.SafeMultiply: exp.Mul,
    exp.SafeDivide: exp.Div,
}


def _sail_arithmetic(statement: str) -> str:
    """Sail 0.7.2's `try_add`/`try_multiply`/… take integers and intervals only (not a decimal column times
    an integer, which Spark's take): on this engine they run as the plain operators, as before the planner
    used them. Spark keeps its `try_` functions (NULL on overflow whatever the ANSI mode)."""
    if "TRY_" not in statement.upper():
        return statement
    try:
        tree = x.parse(statement)
    except SqlglotError:
        return statement  # not one of ours: Sail says what it makes of it
    found = [n for n in tree.walk() if type(n) in _PLAIN_ARITHMETIC]
    for node in reversed(found):
        plain = _PLAIN_ARITHMETIC[type(node)]
        node.replace(exp.Paren(this=plain(this=node.this, expression=node.expression)))
    return x.sql(tree) if found else statement
