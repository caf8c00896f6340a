"""The `spark` and `connect` engines: any SparkSession with delta-spark runs the migration SQL as written.

Databricks notebooks, clusters, a local session built with `configure_spark_with_delta_pip`, or — for
air-gapped sites — a local session whose Delta jars come from the folder named by DELTA_CONTRACTS_DELTA_JARS.
Table state is read through SQL only (DESCRIBE EXTENDED, SHOW TBLPROPERTIES, DESCRIBE HISTORY, the table's
schema): delta-spark's Python DeltaTable API needs Delta's Connect server plugin over Spark Connect, SQL does
not. The sessions themselves are made in `session` (a local or command-line one) and `connect` (a Spark
Connect server's, which the `connect` engine runs on).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from delta_contracts.engine.base import USER_METADATA_CONF, Engine, EngineError, OpOutcome, rows_written
from delta_contracts.engine.deltalog import CONSTRAINT_PREFIX
from delta_contracts.engine.jars import UNITY_CATALOG_CLASS
from delta_contracts.engine.retry import Backoff, one_line, retrying
from delta_contracts.engine.row_moves import RowMover
from delta_contracts.engine.schema_json import columns_from_schema
from delta_contracts.engine.spark.describe import TableInformation, TableProperties
from delta_contracts.engine.spark.errors import error_condition, errors_expected, spark_statement_errors
from delta_contracts.engine.spark.hold import HOLD_PER_RUN, SHORTEST_HOLD, ProducerHold
from delta_contracts.engine.spark.log_version import LogVersions
from delta_contracts.engine.spark.ops import SPARK_DATABRICKS, SPARK_OPS, SPARK_OSS_DELTA, UNITY_CATALOG_OSS
from delta_contracts.engine.spark.state_table import CatalogStateTable
from delta_contracts.engine.spark.unity import unity_catalogs
from delta_contracts.live import Commit, LiveColumn, LiveTable, commits_from_history
from delta_contracts.plan.ops import Op
from delta_contracts.plan.unity import CATALOG_MANAGED_FEATURES, catalog_managed_refusal
from delta_contracts.sql import expressions as x
from delta_contracts.state.state_table import StateTable
from delta_contracts.tableid import TableId

DATABRICKS_CONF = "spark.databricks.clusterUsageTags.sparkVersion"
# Session settings that change what our statements do, pinned for each of them whatever the cluster's
# defaults: INSERT OVERWRITE (a copy, a copy's first batch) replaces the whole target, never only the
# partitions its rows fall in (`dynamic` would keep a stale partition the source no longer has); an INSERT
# refuses a value its column cannot hold rather than store it cut (`LEGACY`), as Spark's default says.
STATEMENT_SETTINGS = {
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.sql.storeAssignmentPolicy": "ANSI",
}


# Error conditions (Spark's error classes) that mean "no Delta table by that name"; any other error is real.
ABSENT_CONDITIONS = frozenset(
    {
        "TABLE_OR_VIEW_NOT_FOUND",
        "SCHEMA_NOT_FOUND",
        "DELTA_TABLE_NOT_FOUND",
        "DELTA_MISSING_DELTA_TABLE",
        "EXPECT_TABLE_NOT_VIEW",  # a view: not a Delta table (DESCRIBE DETAIL/HISTORY refuse it)
        "_LEGACY_ERROR_TEMP_1013",  # Spark 3.5: "… is a view. 'DESCRIBE DETAIL' expects a table"
    }
)
HISTORY_COLUMNS = (
    "version",
    "operation",
    "unix_millis(timestamp) AS timestamp",  # epoch ms whatever the session time zone
    "userMetadata",
    "engineInfo",
    "operationParameters",
)


def session_state_dir(spark: Any) -> Path:
    """`<the session's spark.sql.warehouse.dir>/_delta_contracts`, where the CLI keeps the ledger and leases
    of the same warehouse; a Databricks `dbfs:/` warehouse is read through its `/dbfs` mount."""
    from urllib.parse import unquote, urlparse

    location = str(spark.conf.get("spark.sql.warehouse.dir", None) or "")
    if not location:
        raise EngineError("the session has no spark.sql.warehouse.dir: give the engine a state_dir")
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path)) / "_delta_contracts"
    if parsed.scheme == "dbfs" and Path("/dbfs").is_dir():
        return Path("/dbfs") / unquote(parsed.path).lstrip("/") / "_delta_contracts"
    raise EngineError(
        f"the session's warehouse {location} is not a local folder: give the engine a state_dir (a folder "
        "every runner of this warehouse shares) for the apply ledger and leases"
    )


class SparkEngine(Engine):
    """Runs every op as the SQL the plan renders; reads tables through SQL only (DESCRIBE EXTENDED/HISTORY,
    SHOW TBLPROPERTIES and the table's schema), so one code serves a classic and a Spark Connect session."""

    name = "spark"

    def __init__(
        self,
        spark: Any,
        state_dir: Path | str | None = None,
        *,
        owns_session: bool = False,
        ledger: TableId | None = None,
    ) -> None:
        self.spark = spark
        self._owns_session = owns_session  # a session the engine made (Connect) is stopped by close()
        # The ledger and leases of the session's warehouse, not of the working directory (issue 29, item 3);
        # read when first needed: engines that never apply (quality checks on a DataFrame) never ask.
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self.ledger = ledger  # a catalog table for the apply ledger (contracts.yml `engine.ledger`)
        self._databricks: bool | None = None
        # Tables on which a statement of this engine lost a commit race to producers: the next op on one
        # holds them off from its first attempt (a backfill's next batch would lose its first race too).
        self._contended: set[TableId] = set()
        self._held: ProducerHold | None = None  # the hold of the run of ops under way (`holding_producers`)
        self._log_versions = LogVersions()  # whose log folders give a table's version (`_version`)
        self._longest_statement = 0.0  # seconds: a run's hold lasts a few times the longest run so far
        # Old name -> the name this engine renamed the table to (a versioned cutover's rename): where the rows
        # of a table a producer creates under the old name before the alias view go (`name_taken`).
        self.renamed_away: dict[TableId, TableId] = {}

    @property
    def state_dir(self) -> Path:
        if self._state_dir is None:
            self._state_dir = session_state_dir(self.spark)
        return self._state_dir

    @state_dir.setter
    def state_dir(self, value: Path) -> None:
        self._state_dir = Path(value)

    def ledger_table(self) -> StateTable:
        if self.ledger is None:
            return super().ledger_table()
        return CatalogStateTable(self.spark, self.ledger)

    def run_statement(
        self, statement: str, *, tag: str | None = None, table: TableId | None = None
    ) -> int | None:
        """One batch of a backfill or copy: retried after a commit conflict (a batch that lost commits
        nothing, and means the same on the newer table), holding producers off `table` as an op does."""
        answers: list[list[dict[str, Any]]] = []
        try:
            with self._statement_settings(tag):
                self._retry_holding_producers(
                    lambda attempt: answers.append(self.sql(statement)),
                    what="a batch",
                    table=table,
                    holds=True,
                    retry=True,
                )
        except spark_statement_errors() as err:
            raise EngineError(one_line(err)) from err
        return rows_written(answers[-1]) if answers else None

    @contextmanager
    def _statement_settings(
        self, tag: str | None, op_settings: Mapping[str, str] | None = None
    ) -> Iterator[None]:
        """The commit tag, and the session settings our statements' meaning depends on (STATEMENT_SETTINGS,
        and those of the op, `Op.session_settings`), set for the statement and put back as they
        were after it."""
        settings = {**STATEMENT_SETTINGS, **({USER_METADATA_CONF: tag} if tag else {}), **(op_settings or {})}
        before = {key: self.spark.conf.get(key, None) for key in settings}
        for key, value in settings.items():
            if before[key] != value:
                self.spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, value in before.items():
                if value == settings[key]:
                    continue
                if value is None:
                    self.spark.conf.unset(key)
                else:
                    self.spark.conf.set(key, value)

    def _backoff(self) -> Backoff:
        return Backoff(patience=self.conflict_patience)

    def close(self) -> None:
        if self._owns_session:
            self.spark.stop()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.spark.sql(statement).collect()]

    def unsupported_reason(self, op: Op) -> str | None:
        if self.in_unity_catalog_oss(op.table):
            why = UNITY_CATALOG_OSS.refusal(op) or self._catalog_managed_refusal(op)
            if why is not None:
                return why
        # The session is asked whether it is Databricks only for what OSS Delta refuses (one conf read).
        refusal = SPARK_OSS_DELTA.refusal(op)
        if refusal is None or not self.on_databricks():
            return refusal
        return SPARK_DATABRICKS.refusal(op)

    def in_unity_catalog_oss(self, table: TableId) -> bool:
        """Whether `table` is in a catalog this session reaches through Unity Catalog OSS's connector."""
        if len(table) < 3:
            return False
        return str(self.spark.conf.get(f"spark.sql.catalog.{table[0]}", "")) == UNITY_CATALOG_CLASS

    def _catalog_managed_refusal(self, op: Op) -> str | None:
        """What a catalog-managed table of Unity Catalog OSS refuses; the table read only for such an op."""
        if catalog_managed_refusal(op, CATALOG_MANAGED_FEATURES) is None:
            return None
        live = self.describe(op.table, with_version=False)
        return None if live is None else catalog_managed_refusal(op, live.writer_features)

    def on_databricks(self) -> bool:
        """Whether the session is a Databricks runtime (which has SET NOT NULL); clusters set this conf."""
        if self._databricks is None:
            self._databricks = self.spark.conf.get(DATABRICKS_CONF, None) is not None
        return self._databricks

    def run(self, op: Op, *, tag: str | None = None) -> OpOutcome:
        reason = self.unsupported_reason(op)
        if reason is not None:
            raise EngineError(f"{op.summary()} on {op.table}: the {self.name} engine cannot: {reason}")
        where = f"{op.summary()} on {op.table}"
        entry = SPARK_OPS[op]
        try:
            with self._statement_settings(tag, {k: v for k, v, _ in op.session_settings()}):
                if entry.creates_schema and len(op.table) > 1:
                    self.sql(x.sql(exp_create_schema(op.table[:-1])))
                self._run_holding_producers(op, where)
        except spark_statement_errors() as err:
            raise EngineError(f"{where}: {one_line(err)}") from err
        target = entry.table_left(op)
        self._follow_rename(op.table, target)
        version = self._version(target) if entry.commits else None
        return OpOutcome(op.kind, target, version, "sql")

    def _run_holding_producers(self, op: Op, where: str) -> None:
        entry = SPARK_OPS[op]
        self._retry_holding_producers(
            lambda attempt: self._execute(op, attempt),
            what=where,
            table=op.table,
            holds=entry.holds(op),
            retry=entry.retried(op),
        )

    @contextmanager
    def holding_producers(self, table: TableId) -> Iterator[None]:
        """Producers held off `table` for a run of ops: from now, for at least SHORTEST_HOLD seconds or
        HOLD_PER_RUN times the longest statement this engine ran so far (a versioned cutover's catch-up runs
        about as long as the copy before it), renewed as the run's statements on the table begin, released
        at its end."""
        shortest = max(SHORTEST_HOLD, HOLD_PER_RUN * self._longest_statement)
        hold = ProducerHold(table, self._hold_statement, shortest=shortest)
        self._held = hold
        try:
            hold.keep()
            yield
        finally:
            self._held = None
            self._release(hold)

    def resumed(self, done: Sequence[Op]) -> None:
        for op in done:
            self._follow_rename(op.table, SPARK_OPS[op].table_left(op))

    def skip_or_check(self, op: Op) -> bool:
        skipped = super().skip_or_check(op)
        left = SPARK_OPS[op].table_left(op)
        if skipped and left != op.table and self.describe(left, with_version=False) is not None:
            self.renamed_away[op.table] = left  # renamed by a run that ended before its ledger said so
        return skipped

    def _follow_rename(self, table: TableId, left: TableId) -> None:
        """A run's hold set on `table` stays on it under the name a rename left it (`left`): its renewals
        and its release go to the old table, not to the view or table that takes its name."""
        if left != table:
            self.renamed_away[table] = left
        if self._held is not None and self._held.table == table:
            self._held.table = left

    def _retry_holding_producers(
        self, action: Callable[[int], object], *, what: str, table: TableId | None, holds: bool, retry: bool
    ) -> None:
        """Run `action` (given its attempt number), again after each lost commit race while the patience
        lasts; from the first lost race on, producers of `table` are held off (`spark.hold`) until it ends,
        and every later statement on that table holds them from its first attempt. Within a run of ops held
        as one (`holding_producers`), the run's hold is kept up instead, and outlasts the statement."""
        attempts = itertools.count()
        # A run of ops is held as one (`holding_producers`): every statement run meanwhile is one of its ops',
        # whatever table it writes (a versioned catch-up writes the new table, holding the old one), and
        # renews the run's hold as it begins.
        run = self._held
        hold = run or (ProducerHold(table, self._hold_statement) if holds and table is not None else None)

        def attempt() -> None:
            if hold is not None:
                hold.attempt_begins()
                if run is not None:
                    run.keep()
                elif hold.table in self._contended and not hold.engaged:
                    hold.engage()
            began = time.monotonic()
            action(next(attempts))
            self._longest_statement = max(self._longest_statement, time.monotonic() - began)

        def lost(conflict: str) -> None:
            self.count_retry(conflict)
            if hold is not None:
                self._contended.add(hold.table)
                hold.engage()

        try:
            retrying(attempt, what=what, retry=retry, on_retry=lost, backoff=self._backoff())
        finally:
            if hold is not None and run is None:
                self._release(hold)

    def _release(self, hold: ProducerHold) -> None:
        try:
            hold.release()
        except spark_statement_errors():
            pass  # the hold runs out by itself; the op's own outcome is what the caller needs

    def _hold_statement(self, statement: str) -> None:
        retrying(
            lambda: self.sql(statement),
            what="hold producers",
            retry=True,
            on_retry=self.count_retry,
            backoff=self._backoff(),
        )

    def _execute(self, op: Op, attempt: int = 0) -> None:
        statement = SPARK_OPS[op].statement(self, op, attempt)  # made again for each attempt
        if statement is not None:
            self.sql(statement)

    def row_mover(self, op: Op) -> RowMover[Any] | None:
        return SPARK_OPS[op].rows

    def _describe_rows(
        self, kind: str, table: TableId, *columns: str, limit: int | None = None
    ) -> list[dict[str, Any]] | None:
        """Rows of DESCRIBE EXTENDED/HISTORY, or None when there is no Delta table by that name (a view is not
        one); every other error propagates as it is."""
        from pyspark.errors import AnalysisException

        try:  # a classic session raises in spark.sql, a Connect one may raise only when rows are fetched
            with errors_expected():
                frame = self.spark.sql(x.sql(_describe(kind, table, limit)))
                rows = (frame.selectExpr(*columns) if columns else frame).collect()
        except AnalysisException as err:
            if error_condition(err) in ABSENT_CONDITIONS:
                return None
            raise
        return [row.asDict(recursive=True) for row in rows]

    def _version(self, table: TableId, location: str | None = None) -> int | None:
        """The table's current version: from its log folder's listing where that is trusted (`log_version`:
        a local folder, checked once against DESCRIBE HISTORY), else from DESCRIBE HISTORY. `location`: the
        table's, when the caller has just read it."""
        if self.in_unity_catalog_oss(table):
            location = None
        elif location is None:
            location = self._location(table)
        if location is not None:
            listed = self._log_versions.version(location)
            if listed is not None:
                return listed
        rows = self._describe_rows("HISTORY", table, "version", limit=1)
        version = int(rows[0]["version"]) if rows else None
        if location is not None:
            self._log_versions.check(location, version)
        return version

    def _location(self, table: TableId) -> str | None:
        rows = self._describe_rows("EXTENDED", table)
        info = None if rows is None else TableInformation.of(rows)
        return None if info is None or info.is_view or not info.location else info.location

    def table_version(self, table: TableId) -> int | None:
        return self._version(table)

    def describe(self, table: TableId, *, with_version: bool = True) -> LiveTable | None:
        # Not DESCRIBE DETAIL, which replays the table's whole state after every commit (spark.describe).
        table = TableId(table)  # a caller's plain tuple names the table as well
        rows = self._describe_rows("EXTENDED", table)
        if rows is None:
            return None
        info = TableInformation.of(rows)
        if info.is_view:
            return None
        if info.provider.lower() != "delta":
            kind = info.provider or "non-Delta"
            raise EngineError(f"{table} is a {kind} table, not a Delta table")
        properties = TableProperties.of(self.sql(x.sql(_show("TBLPROPERTIES", x.table(table)))))
        # Read only when asked: on a table not in a local folder it takes DESCRIBE HISTORY (a Spark job).
        version = self._version(table, info.location or None) if with_version else None
        if with_version and version is None:
            return None  # dropped between the two reads
        checks = {
            k[len(CONSTRAINT_PREFIX) :]: v
            for k, v in properties.configuration.items()
            if k.startswith(CONSTRAINT_PREFIX)
        }
        reader = properties.min_reader_version
        return LiveTable(
            name=str(table),
            location=info.location,
            columns=self._columns(table, info.location, properties),
            properties={
                k: v for k, v in properties.configuration.items() if not k.startswith(CONSTRAINT_PREFIX)
            },
            checks=checks,
            partition_columns=info.partition_columns,
            clustering_columns=properties.clustering_columns,
            min_reader_version=reader,
            min_writer_version=properties.min_writer_version,
            # reader features exist from reader version 3; the list holds reader and writer features together
            reader_features=properties.features if reader >= 3 else (),
            writer_features=properties.features,
            version=version,
            comment=info.comment,
        )

    def _columns(self, table: TableId, location: str, properties: TableProperties) -> tuple[LiveColumn, ...]:
        """The table's columns. Spark's schema of a Delta table leaves out the column metadata Delta keeps
        for itself (identity, generation expressions: DeltaTableV2 removes it), so where the protocol allows
        such columns it is read from the table's Delta log."""
        schema = self.spark.table(x.sql(x.table(table))).schema.json()
        may_have = {"identityColumns", "generatedColumns"} & set(properties.features)
        if not may_have and properties.min_writer_version < 4:  # writer 4-6 imply generated columns
            return columns_from_schema(schema)
        return columns_from_schema(self._log_schema(table, location))

    def _log_schema(self, table: TableId, location: str) -> str:
        """The schema JSON in the table's Delta log, with every field's metadata: through delta-rs, or the
        session's own DeltaLog on a classic session (object stores delta-rs has no credentials for)."""
        try:
            from deltalake import DeltaTable

            return str(DeltaTable(location.removeprefix("file:")).schema().to_json())
        except Exception as rs_error:
            jvm = getattr(self.spark, "_jvm", None)
            if jvm is None:
                raise EngineError(
                    f"{table}: cannot read the column metadata (identity, generated columns) of its Delta "
                    f"log at {location}: {one_line(rs_error)}"
                ) from rs_error
            log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, location)
            return str(log.unsafeVolatileSnapshot().schema().json())

    def views(self) -> Mapping[TableId, str]:
        # SHOW statements, not spark.catalog.listTables: that decodes its rows through an encoder which fails
        # when the session interprets expressions instead of compiling them (EXPRESSION_DECODING_FAILED on
        # Spark 4.2 with spark.sql.codegen.factoryMode=NO_CODEGEN).
        # The session's current catalog by schema.table; each Unity Catalog catalog registered on the
        # session by catalog.schema.table (a catalog Spark has not loaded yet is not in SHOW CATALOGS).
        found: dict[TableId, str] = {}
        for catalog in (None, *sorted(unity_catalogs(self.spark))):
            where = () if catalog is None else (catalog,)
            shown = _show("SCHEMAS") if catalog is None else _show("SCHEMAS IN", x.ident(catalog))
            for schema_row in self.spark.sql(x.sql(shown)).collect():
                schema = (*where, str(schema_row[0]))
                listed = _show("VIEWS IN", _schema_name(schema))
                for row in self.spark.sql(x.sql(listed)).collect():
                    if row["isTemporary"]:
                        continue
                    view = TableId((*schema, str(row["viewName"])))
                    text = self.view_text(view)
                    if text:
                        found[view] = text
        return found

    def view_text(self, view: TableId) -> str | None:
        """One view's text from DESCRIBE EXTENDED, without walking the catalog."""
        from pyspark.errors import AnalysisException

        try:
            with errors_expected():
                rows = self.sql(x.sql(_describe("EXTENDED", view)))
        except AnalysisException as err:
            if error_condition(err) in ABSENT_CONDITIONS:
                return None
            raise
        if not any(r.get("col_name") == "Type" and r.get("data_type") == "VIEW" for r in rows):
            return None  # a table by that name
        text = next((r.get("data_type") for r in rows if r.get("col_name") == "View Text"), None)
        return str(text) if text else None

    def view_types_current(self, view: TableId) -> bool:
        """Whether the view reads its columns in the types its text reads today (its text is the wanted one).

        Spark binds a view's column types when the view is created: after an in-place type change the same
        text no longer serves the table (Spark 4 casts back to the old type; Spark 3.5 cannot read the view,
        CANNOT_UP_CAST_DATATYPE), so a view is the one its op defines only when its types are current."""
        from pyspark.errors import AnalysisException

        text = self.view_text(view)
        try:
            with errors_expected():
                fresh = self.spark.sql(text).schema if text else None
        except AnalysisException:
            return True  # its text reads nothing now (a source gone): recreating it would not help
        try:
            with errors_expected():
                bound = self.spark.table(x.sql(x.table(view))).schema
        except AnalysisException:
            return False  # Spark 3.5: the stored types no longer up-cast from the source's
        if fresh is None:
            return True

        def shape(schema: Any) -> list[tuple[str, Any]]:
            return [(field.name.casefold(), field.dataType) for field in schema.fields]

        return shape(bound) == shape(fresh)

    def history(self, table: TableId) -> list[Commit]:
        rows = self._describe_rows("HISTORY", table, *HISTORY_COLUMNS)
        return commits_from_history(rows or ())


def exp_create_schema(schema: tuple[str, ...]) -> Any:
    from sqlglot import exp

    return exp.Create(this=x.table(schema), kind="SCHEMA", exists=True)


def _show(what: str, name: Any = None) -> Any:
    """SHOW SCHEMAS / SHOW VIEWS IN <schema>: sqlglot has no SHOW for Spark, so a command whose only variable
    part is the name, quoted by sqlglot."""
    from sqlglot import exp

    text = what if name is None else f"{what} {x.sql(name)}"
    return exp.Command(this="SHOW", expression=exp.Literal.string(text))


def _schema_name(parts: tuple[str, ...]) -> Any:
    """A schema, `schema` or `catalog`.`schema`, as a sqlglot expression."""
    from sqlglot import exp

    if len(parts) == 1:
        return x.ident(parts[0])
    return exp.Table(this=x.ident(parts[1]), db=x.ident(parts[0]))


def _describe(kind: str, table: TableId, limit: int | None = None) -> Any:
    """DESCRIBE DETAIL / HISTORY [LIMIT n] / EXTENDED of a table, as a sqlglot statement."""
    from sqlglot import exp

    # sqlglot has no LIMIT slot on DESCRIBE; its `partition` slot is printed right after the table name.
    tail = exp.Limit(expression=exp.Literal.number(limit)) if limit is not None else None
    return exp.Describe(this=x.table(table), style=kind, partition=tail)
