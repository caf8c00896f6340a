"""The Spark settings of the session `--engine spark` starts from the command line, and where its catalog is.

Layers, the later winning: the toolkit's own (small local parallelism, Delta's extensions and jars, and a
catalog that lives with the warehouse), then the user's `spark-defaults.conf` (in SPARK_CONF_DIR, which
spark-submit reads itself), then contracts.yml `engine.spark_conf`, then `--conf k=v`. A key the user set in
any layer is not set by the toolkit at all, so that spark-defaults.conf is not overridden by it.

The catalog: Spark's own default is an in-memory one, which forgets every table when the process ends (a
`create` then a `drift` in a second process would find nothing). Unless the user configures another one, the
session uses Spark's Hive support with an embedded Derby metastore at `<warehouse>/metastore_db`: the jars
ship with PySpark, nothing runs beside the process, and the catalog is wherever the warehouse is. Derby lets
one JVM at a time open that database: a second command on the same warehouse while one runs is refused at
its start (`catalog_locked`), naming the lock and the way out: a metastore several processes share, such as
Derby's network server (`jdbc:derby://host:port/db`), whose client driver the toolkit puts on the class
path itself (`derby_client_settings`).

Starting a session: a local classic one with Delta (`local_delta_session`, for tests, benches and the local
engine's delta-spark path) or the one `--engine spark` starts (`command_line_session`), whose JVM prints
into a log file (`jvm_output_to`), whose catalog is opened at once (`open_catalog`), and on which Ctrl-C
cancels the running jobs cleanly (`interrupt_between_calls`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.engine.base import EngineError
from delta_contracts.engine.retry import one_line
from delta_contracts.engine.spark.errors import (
    error_condition,
    java_causes,
    quiet_query_context_loggers,
    spark_errors,
    spark_statement_errors,
)
from delta_contracts.errors import InputError

if TYPE_CHECKING:
    from delta_contracts.contract.unity import UnityCatalogSettings

CATALOG_IMPLEMENTATION = "spark.sql.catalogImplementation"
METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_DRIVER = "spark.hadoop.javax.jdo.option.ConnectionDriverName"
WAREHOUSE_DIR = "spark.sql.warehouse.dir"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
DRIVER_CLASS_PATH = "spark.driver.extraClassPath"
HMS_ATTEMPTS = "spark.hadoop.hive.hmshandler.retry.attempts"
DERBY_CLIENT_URL = "jdbc:derby://"
DERBY_CLIENT_DRIVER = "org.apache.derby.jdbc.ClientDriver"
METASTORE_FOLDER = "metastore_db"
# Settings that are lists: the user's and the toolkit's are joined (Delta's jars and extension stay in).
LIST_SETTINGS = {"spark.jars": ",", "spark.sql.extensions": ","}
# Any of these set by the user means the catalog is theirs (a remote Hive metastore, another database for
# it, a catalog plugin as spark_catalog): the toolkit then sets no metastore of its own.
USER_CATALOG_KEYS = (
    CATALOG_IMPLEMENTATION,
    METASTORE_URL,
    "javax.jdo.option.ConnectionURL",
    "spark.hadoop.hive.metastore.uris",
    "hive.metastore.uris",
)
# Keys that name a metastore (not only a catalog): with one of them, Hive support is what the user means.
METASTORE_KEYS = USER_CATALOG_KEYS[1:]


class SparkConfError(InputError, ValueError):
    """A `--conf` or spark-defaults.conf entry that is not `key=value`; the message names it."""


# Where docs/engines.md tells how to set up a metastore several processes use at once.
SHARED_METASTORE_DOC = 'docs/engines.md, "A catalog several processes can use"'


class CatalogLockedError(InputError):
    """Another process has the embedded Derby metastore open: the message names it and the ways out."""

    def __init__(self, database: Path | None) -> None:
        self.database = database
        named = f" {database}" if database is not None else ""
        super().__init__(
            f"the catalog is locked: another process has the embedded Derby metastore{named} open, and "
            "Derby lets one process at a time use it. Run this command when that one has ended, or give "
            "every process that uses this catalog a shared metastore (a Derby network server or a Hive "
            f"metastore service: {SHARED_METASTORE_DOC})"
        )


def parse_conf(pairs: Iterable[str], where: str = "--conf") -> dict[str, str]:
    """`k=v` items (`--conf spark.sql.ansi.enabled=false`), split at the first `=`."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SparkConfError(f"{where} {pair!r}: write key=value, e.g. spark.sql.shuffle.partitions=8")
        out[key.strip()] = value.strip()
    return out


def spark_defaults_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The spark-defaults.conf spark-submit reads: in SPARK_CONF_DIR, else SPARK_HOME/conf."""
    env = os.environ if environ is None else environ
    folder = env.get("SPARK_CONF_DIR") or (f"{env['SPARK_HOME']}/conf" if env.get("SPARK_HOME") else None)
    if not folder:
        return None
    path = Path(folder) / "spark-defaults.conf"
    return path if path.is_file() else None


def read_spark_defaults(path: Path) -> dict[str, str]:
    """The settings of a spark-defaults.conf: `key value` (or `key=value`) lines, `#` comments."""
    out: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        cut = min((i for i in (line.find(c) for c in " \t=:") if i > 0), default=-1)
        if cut < 0:
            raise SparkConfError(f"{path}:{number}: {line!r} has a key and no value")
        out[line[:cut]] = line[cut:].lstrip(" \t").removeprefix("=").removeprefix(":").strip()
    return out


def warehouse_catalog(warehouse: Path) -> dict[str, str]:
    """A Hive metastore in Derby inside the warehouse, and the warehouse as Spark's managed-table folder."""
    where = warehouse.resolve()
    return {
        CATALOG_IMPLEMENTATION: "hive",
        WAREHOUSE_DIR: str(where),
        METASTORE_URL: f"jdbc:derby:;databaseName={where / METASTORE_FOLDER};create=true",
        # Derby's log beside its database, not derby.log in whatever folder the command ran from
        DRIVER_JAVA_OPTIONS: f"-Dderby.stream.error.file={where / 'derby.log'}",
        # Hive tries to open its metastore ten times, two seconds apart, by default: for a database another
        # process has open that was 22 s of a refused command (and 13,000 lines of derby.log), while an
        # embedded database has no connection that could come back meanwhile.
        HMS_ATTEMPTS: "1",
    }


def session_settings(
    ours: Mapping[str, str],
    warehouse: Path,
    *,
    defaults: Mapping[str, str],
    project: Mapping[str, str],
    command_line: Mapping[str, str],
    derby_client: Callable[[], Path] | None = None,
) -> dict[str, str]:
    """What the builder is given: the toolkit's settings the user did not set, then the user's own (their
    spark-defaults.conf is read by spark-submit and is not repeated, except where a list is joined).
    `derby_client`: where Derby's network client jar is, asked only when the user's metastore URL needs it."""
    user = {**defaults, **project, **command_line}
    toolkit = dict(ours)
    if not any(key in user for key in USER_CATALOG_KEYS):
        toolkit.update(warehouse_catalog(warehouse))
    else:
        if WAREHOUSE_DIR not in user:
            toolkit[WAREHOUSE_DIR] = str(warehouse.resolve())
        # Spark ignores a metastore without Hive support, silently: its in-memory catalog would forget every
        # table the command makes. A metastore the user names is one they mean to use.
        if CATALOG_IMPLEMENTATION not in user and any(key in user for key in METASTORE_KEYS):
            toolkit[CATALOG_IMPLEMENTATION] = "hive"
        if derby_client is not None:
            toolkit.update(derby_client_settings(user, derby_client))
    out = {k: v for k, v in toolkit.items() if k not in user}
    out.update(project)
    out.update(command_line)
    for key, separator in LIST_SETTINGS.items():
        if key in toolkit and key in user:
            theirs = [p for p in user[key].split(separator) if p.strip()]
            out[key] = separator.join(dict.fromkeys([*theirs, *toolkit[key].split(separator)]))
    if DRIVER_JAVA_OPTIONS in toolkit and DRIVER_JAVA_OPTIONS in user:
        out[DRIVER_JAVA_OPTIONS] = f"{user[DRIVER_JAVA_OPTIONS]} {toolkit[DRIVER_JAVA_OPTIONS]}"
    if DRIVER_CLASS_PATH in toolkit and DRIVER_CLASS_PATH in user:
        out[DRIVER_CLASS_PATH] = os.pathsep.join([user[DRIVER_CLASS_PATH], toolkit[DRIVER_CLASS_PATH]])
    return out


def metastore_url(settings: Mapping[str, str]) -> str:
    """The metastore's JDBC URL among the settings, '' when they name none."""
    return settings.get(METASTORE_URL) or settings.get("javax.jdo.option.ConnectionURL") or ""


def derby_client_settings(user: Mapping[str, str], derby_client: Callable[[], Path]) -> dict[str, str]:
    """For a metastore in a Derby network server (`jdbc:derby://host:port/db`), Derby's client driver: its
    class name, and its jar on the driver's class path, unless the user set them.

    The class path, not `spark.jars`: PySpark ships derbytools on the JVM's class path, which holds
    `org.apache.derby.jdbc.ClientDriver` itself, while the class it extends is in derbyclient; a derbyclient
    added by `spark.jars` is in a class loader below it, and the metastore then fails with
    NoClassDefFoundError: org/apache/derby/client/ClientAutoloadedDriver (measured, Spark 4.2)."""
    if not metastore_url(user).startswith(DERBY_CLIENT_URL):
        return {}
    out = {}
    if METASTORE_DRIVER not in user and "javax.jdo.option.ConnectionDriverName" not in user:
        out[METASTORE_DRIVER] = DERBY_CLIENT_DRIVER
    if "derbyclient" not in user.get(DRIVER_CLASS_PATH, ""):
        out[DRIVER_CLASS_PATH] = str(derby_client())
    return out


def uses_warehouse_catalog(settings: Mapping[str, str], warehouse: Path) -> bool:
    """Whether the session's catalog is the metastore inside the warehouse (it then needs the warehouse)."""
    return settings.get(METASTORE_URL) == warehouse_catalog(warehouse)[METASTORE_URL]


def embedded_metastore(settings: Mapping[str, str]) -> Path | None:
    """The folder of the embedded Derby database the settings name as the metastore (the toolkit's default,
    `<warehouse>/metastore_db`, or a `jdbc:derby:` URL of the user's), else None: only one process at a time
    can open it."""
    url = metastore_url(settings)
    if not url.startswith("jdbc:derby:") or url.startswith(DERBY_CLIENT_URL):
        return None
    body = url.removeprefix("jdbc:derby:")
    parts = body.split(";")
    named = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    return Path(parts[0] or named.get("databaseName", "metastore_db"))


# Derby's SQLState for a database another JVM has booted ("Another instance of Derby may have already booted
# the database"); the state is not translated, the message is.
DERBY_LOCKED_STATE = "XSDB6"


def catalog_locked(error_text: str) -> bool:
    """Whether a failure to open the catalog (its whole Java cause chain, as text) is Derby's lock."""
    return DERBY_LOCKED_STATE in error_text


DELTA_EXTENSIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def delta_jars_available() -> tuple[bool, str]:
    """Whether a local delta-spark session can start here, and why not when it cannot."""
    from delta_contracts.engine.jars import availability

    return availability("delta-4")


# Small local sessions: Delta's log replay and our catch-up queries otherwise fan out into 50-200 tasks.
LOCAL_SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}


def local_delta_session(
    app_name: str = "delta-contracts",
    warehouse: Path | None = None,
    extra: dict[str, str] | None = None,
    target: str = "delta-4",
    jvm_log: Path | None = None,
) -> Any:
    """A local classic SparkSession with Delta Lake (jars: see `engine.jars`); `target` names the Delta line
    (`delta-3` runs only in a PySpark 3.5 virtualenv). Its catalog is Spark's default (in memory). What the
    JVM prints goes to `jvm_log` (see `jvm_output_to`), by default `spark-driver.log` in the warehouse."""
    settings = {**LOCAL_SESSION_CONF, **DELTA_EXTENSIONS, **(extra or {})}
    if warehouse is not None:
        settings["spark.sql.warehouse.dir"] = str(warehouse)
    log = jvm_log or (warehouse / JVM_LOG if warehouse is not None else None)
    jars = delta_jar_settings(target)
    if "spark.jars" in settings and "spark.jars" in jars:  # the caller's jars beside delta-spark's
        jars["spark.jars"] = f"{jars['spark.jars']},{settings['spark.jars']}"
    return _start_session(app_name, {**settings, **jars}, log)


def delta_jar_settings(target: str = "delta-4") -> dict[str, str]:
    """Where the session finds delta-spark: local jar files, else Maven coordinates for Spark to resolve."""
    from delta_contracts.engine.jars import TARGETS, delta_jars

    jars = delta_jars(target)
    if jars is not None:
        return {"spark.jars": ",".join(str(p) for p in jars)}
    return {"spark.jars.packages": TARGETS[target].coordinates}


JVM_LOG = "spark-driver.log"


def _start_session(app_name: str, settings: Mapping[str, str], jvm_log: Path | None = None) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(app_name)
    # Python workers (mapInArrow, UDFs) must run this interpreter, which has the driver's packages (pyarrow):
    # classic PySpark takes the worker's python from PYSPARK_PYTHON only, else `python3` on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with jvm_output_to(jvm_log):
        session = _get_or_create(builder)
    session.sparkContext.setLogLevel("ERROR")
    quiet_query_context_loggers()
    return session


JVM_START_ATTEMPTS = 3


def _get_or_create(builder: Any) -> Any:
    """`builder.getOrCreate()`, started again when the JVM died before it sent its port (JAVA_GATEWAY_EXITED).

    A process that imported gRPC (a Spark Connect client) before `without_grpc_fork_handlers` could run — a
    notebook, a test runner — keeps gRPC's fork handlers, and then about one JVM start in eight dies between
    fork and exec (grpc/grpc#43055). Nothing has started then, so starting again is safe; a JVM that cannot
    start at all (no Java) fails the same way in milliseconds, and the last error is the one raised."""
    attempt = 1
    while True:
        try:
            return builder.getOrCreate()
        except spark_errors() as err:
            if error_condition(err) != "JAVA_GATEWAY_EXITED" or attempt == JVM_START_ATTEMPTS:
                raise
            attempt += 1


@contextmanager
def jvm_output_to(log: Path | None) -> Iterator[None]:
    """Start the JVM with its standard output and error in `log` (appended), for its whole life.

    Everything the JVM prints goes there: spark-submit's and log4j's start-up lines, the JDK's own warnings
    ("Using incubator modules"), WARN lines of Spark, Hadoop and Delta, and whatever a job logs later. Log4j
    settings alone cannot do it: the JDK's warning and log4j's "Using Spark's default log4j profile" are
    printed before any configuration is read. The JVM inherits file descriptors 1 and 2 when PySpark starts
    it (`launch_gateway`), so they point at the log for that moment only and this process's own output is
    untouched. Errors of statements still reach Python through Py4J. When the JVM already runs (a session in
    this process), nothing is started and nothing is redirected."""
    from pyspark import SparkContext

    if log is None or SparkContext._gateway is not None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        try:
            yield
        except Exception as err:
            raise EngineError(
                f"the Spark session did not start: {one_line(err)} (the JVM's output: {log})"
            ) from err
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def command_line_session(
    warehouse: Path,
    project: Mapping[str, str],
    command_line: Mapping[str, str],
    *,
    unity: UnityCatalogSettings | None = None,
) -> Any:
    """The session `--engine spark` starts when there is no active one: its catalog persists with the
    warehouse unless the user configures another (see the settings above). `unity`: a Unity Catalog server
    whose catalogs it registers, with the connector's jars beside delta-spark's."""
    from delta_contracts.engine.jars import derby_client_jar

    found = spark_defaults_file()
    defaults = read_spark_defaults(found) if found is not None else {}
    ours = {**LOCAL_SESSION_CONF, **DELTA_EXTENSIONS, **delta_jar_settings()}
    if unity is not None:
        from delta_contracts.engine.spark.unity import catalog_settings, connector_jar_settings

        jars = connector_jar_settings()["spark.jars"]
        ours["spark.jars"] = ",".join(p for p in (ours.get("spark.jars", ""), jars) if p)
        ours.update(catalog_settings(unity))
    settings = session_settings(
        ours,
        warehouse,
        defaults=defaults,
        project=project,
        command_line=command_line,
        derby_client=derby_client_jar,
    )
    session = _start_session("delta-contracts", settings, warehouse / "_delta_contracts" / JVM_LOG)
    open_catalog(session, {**defaults, **settings})
    return session


def open_catalog(session: Any, settings: Mapping[str, str]) -> None:
    """Open a Hive catalog's metastore now: one that cannot be opened then stops the command before it does
    anything, with the reason, and not at its first statement with a 48-line traceback whose reason (Derby's)
    is only in derby.log. A locked embedded metastore (another process has it open) is `CatalogLockedError`;
    the session is stopped either way."""
    if str(session.conf.get(CATALOG_IMPLEMENTATION, "in-memory")) != "hive":
        return  # Spark's in-memory catalog, or one the user plugged in: nothing to open
    try:
        session.sql("SHOW NAMESPACES IN spark_catalog").collect()
    except spark_statement_errors() as err:
        causes = java_causes(err)
        session.stop()
        if catalog_locked("\n".join(causes)):
            raise CatalogLockedError(embedded_metastore(settings)) from None
        url = metastore_url(settings)
        where = f" ({url})" if url else ""
        raise EngineError(f"the catalog's metastore{where} cannot be opened: {causes[-1]}") from None


def interrupt_between_calls(session: Any) -> None:
    """Ctrl-C while a statement runs: cancel the session's jobs, then raise KeyboardInterrupt once the
    call into the JVM has returned, so the command can say one line and exit 130.

    PySpark's own SIGINT handler calls `cancelAllJobs` from inside the interrupted call, on the same Py4J
    connection, which is then mid-answer ("RuntimeError: reentrant call inside <_io.BufferedReader>"); the
    KeyboardInterrupt it raises there leaves the connection broken, and every later call (the ledger row,
    stopping the session) traces. Here the jobs are cancelled from a thread of their own (its own
    connection), and the interrupt waits for the first moment no Py4J frame is on the main thread's stack.
    A second Ctrl-C interrupts at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    context = session.sparkContext
    pending = False

    def in_py4j(frame: Any) -> bool:
        while frame is not None:
            if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
                return True
            frame = frame.f_back
        return False

    def raise_when_out(frame: Any, event: str, arg: Any) -> None:
        if not in_py4j(frame if event != "return" else frame.f_back):
            sys.setprofile(None)
            raise KeyboardInterrupt

    def handler(signum: int, frame: Any) -> None:
        nonlocal pending
        if pending or not in_py4j(frame):
            sys.setprofile(None)
            raise KeyboardInterrupt
        pending = True
        threading.Thread(target=_cancel_jobs, args=(context,), daemon=True).start()
        sys.setprofile(raise_when_out)

    signal.signal(signal.SIGINT, handler)


def _cancel_jobs(context: Any) -> None:
    import contextlib

    with contextlib.suppress(Exception):  # the JVM may already be going away: the interrupt still happens
        context.cancelAllJobs()
