"""The Spark settings of the session `--engine spark` starts from the command line, and where its catalog is.

Layers, the later winning: the toolkit's own (small local parallelism, Delta's extensions and jars, and a
catalog that lives with the warehouse), then the user's `spark-defaults.conf` (in SPARK_CONF_DIR, which
spark-submit reads itself), then contracts.yml `engine.spark_conf`, then `--conf k=v`. A key the user set in
any layer is not set by the toolkit at all, so that spark-defaults.conf is not overridden by it.

The catalog: Spark's own default is an in-memory one, which forgets every table when the process ends (a
`create` then a `drift` in a second process would find nothing). Unless the user configures another one, the
session uses Spark's Hive support with an embedded Derby metastore at `<warehouse>/metastore_db`: the jars
ship with PySpark, nothing runs beside the process, and the catalog is wherever the warehouse is. Derby lets
one JVM at a time open that database: a second command on the same warehouse while one runs fails at its
start (Derby: "Another instance of Derby may have already booted the database").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from delta_contracts.errors import InputError

CATALOG_IMPLEMENTATION = "spark.sql.catalogImplementation"
METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
WAREHOUSE_DIR = "spark.sql.warehouse.dir"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
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


class SparkConfError(InputError, ValueError):
    """A `--conf` or spark-defaults.conf entry that is not `key=value`; the message names it."""


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
    }


def session_settings(
    ours: Mapping[str, str],
    warehouse: Path,
    *,
    defaults: Mapping[str, str],
    project: Mapping[str, str],
    command_line: Mapping[str, str],
) -> dict[str, str]:
    """What the builder is given: the toolkit's settings the user did not set, then the user's own (their
    spark-defaults.conf is read by spark-submit and is not repeated, except where a list is joined)."""
    user = {**defaults, **project, **command_line}
    toolkit = dict(ours)
    if not any(key in user for key in USER_CATALOG_KEYS):
        toolkit.update(warehouse_catalog(warehouse))
    elif WAREHOUSE_DIR not in user:
        toolkit[WAREHOUSE_DIR] = str(warehouse.resolve())
    out = {k: v for k, v in toolkit.items() if k not in user}
    out.update(project)
    out.update(command_line)
    for key, separator in LIST_SETTINGS.items():
        if key in toolkit and key in user:
            theirs = [p for p in user[key].split(separator) if p.strip()]
            out[key] = separator.join(dict.fromkeys([*theirs, *toolkit[key].split(separator)]))
    if DRIVER_JAVA_OPTIONS in toolkit and DRIVER_JAVA_OPTIONS in user:
        out[DRIVER_JAVA_OPTIONS] = f"{user[DRIVER_JAVA_OPTIONS]} {toolkit[DRIVER_JAVA_OPTIONS]}"
    return out


def uses_warehouse_catalog(settings: Mapping[str, str], warehouse: Path) -> bool:
    """Whether the session's catalog is the metastore inside the warehouse (it then needs the warehouse)."""
    return settings.get(METASTORE_URL) == warehouse_catalog(warehouse)[METASTORE_URL]
