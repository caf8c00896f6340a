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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from delta_contracts.errors import InputError

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


class CatalogLocked(InputError):
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
