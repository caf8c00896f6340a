"""delta-spark's jars, resolved the way Delta users get them and cached for offline runs.

Order: the folder named by DELTA_CONTRACTS_DELTA_JARS (air-gapped sites); else the cache folder of the
target (`~/.cache/delta-contracts/jars/<target>`, or under DELTA_CONTRACTS_CACHE), filled once by Maven
(`mvn dependency:copy-dependencies` over the pinned pom that ships with the package) when `mvn` is on the
PATH; else Spark's own Ivy resolution of the same coordinates (`spark.jars.packages`).

Why Maven first: the 4.4.1 wheel of delta-spark asks `configure_spark_with_delta_pip` for jars of version
4.4.1, which Maven Central does not serve (checked 2026-11: 404; 4.4.0 is the newest jar), and Ivy also
consults the spark-packages repository, which this machine cannot reach. The pinned pom names exactly
what to fetch, and only Delta's own jars are copied: Spark already ships Scala, Jackson, Hadoop and Parquet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from delta_contracts.errors import InputError

JARS_ENV = "DELTA_CONTRACTS_DELTA_JARS"
CACHE_ENV = "DELTA_CONTRACTS_CACHE"
# Groups whose jars delta-spark needs and Spark does not ship.
DELTA_GROUPS = "io.delta,io.unitycatalog,org.roaringbitmap"


@dataclass(frozen=True)
class DeltaArtifacts:
    """The Maven coordinates of one planning target's delta-spark."""

    target: str
    group: str
    artifact: str
    version: str
    spark: str  # the PySpark version these jars are built for

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


TARGETS = {
    "delta-4": DeltaArtifacts("delta-4", "io.delta", "delta-spark_4.2_2.13", "4.4.0", "4.2.0"),
    "delta-3": DeltaArtifacts("delta-3", "io.delta", "delta-spark_2.12", "3.3.2", "3.5.7"),
}


class JarsUnavailableError(InputError):
    """delta-spark's jars cannot be had here; the message says why and what to do."""


def cache_folder(target: str = "delta-4") -> Path:
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "delta-contracts")
    artifacts = TARGETS[target]
    return root / "jars" / f"{target}-{artifacts.version}"


def _jars_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jar"))


def jar_count(folder: Path) -> int:
    """How many jars a target's folder holds, its subfolders included (Unity Catalog's has some)."""
    return len(list(folder.rglob("*.jar")))


def _has_delta(jars: list[Path]) -> bool:
    return any(p.name.startswith("delta-spark") for p in jars)


def pom_text(artifacts: DeltaArtifacts) -> str:
    return _pom(f"delta-jars-{artifacts.target}", [(artifacts.group, artifacts.artifact, artifacts.version)])


def _pom(name: str, dependencies: list[tuple[str, str, str]]) -> str:
    listed = "".join(
        f"""
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>"""
        for group, artifact, version in dependencies
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.delta-contracts</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>{listed}
  </dependencies>
</project>
"""


def _maven_copy(
    pom: str, folder: Path, groups: str, what: str, wanted: str, options: tuple[str, ...] = ()
) -> Path:
    """Copy the jars of `groups` (every group when empty) that the pom's dependencies need into `folder` with
    Maven, unless a jar whose name starts with `wanted` is there already; the folder is reused afterwards.
    `options`: more `-D` settings of copy-dependencies."""
    if any(p.name.startswith(wanted) for p in _jars_in(folder)):
        return folder
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError("Maven (mvn) is not on the PATH")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="delta-jars-") as work:
        pom_file = Path(work) / "pom.xml"
        pom_file.write_text(pom, encoding="utf-8")
        staging = Path(work) / "jars"
        done = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(pom_file),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}",
                *([f"-DincludeGroupIds={groups}"] if groups else []),
                *options,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not any(p.name.startswith(wanted) for p in _jars_in(staging)):
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise JarsUnavailableError(f"Maven could not fetch {what}: " + " | ".join(tail or ["no output"]))
        # A complete folder appears at once: a crash mid-copy leaves no half-filled cache.
        tmp_final = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp_final, ignore_errors=True)
        shutil.copytree(staging, tmp_final)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp_final, folder)
    return folder


def resolve_with_maven(target: str = "delta-4") -> Path:
    """Copy the target's Delta jars into its cache folder with Maven; the folder is reused afterwards."""
    artifacts = TARGETS[target]
    return _maven_copy(
        pom_text(artifacts), cache_folder(target), DELTA_GROUPS, artifacts.coordinates, "delta-spark"
    )


def delta_jars(target: str = "delta-4") -> list[Path] | None:
    """Local jar files for the target, or None when Spark should resolve the coordinates itself (Ivy)."""
    override = os.environ.get(JARS_ENV)
    if override:
        jars = _jars_in(Path(override))
        if not _has_delta(jars):
            raise JarsUnavailableError(f"{JARS_ENV}={override} holds no delta-spark*.jar")
        return jars
    try:
        return _jars_in(resolve_with_maven(target))
    except JarsUnavailableError:
        if shutil.which("mvn") is not None:
            raise
        return None  # no Maven here: Spark's Ivy resolution of the same coordinates


# Derby's network client and server, for a metastore several processes share (docs/engines.md). PySpark
# ships Derby's embedded engine and tools (derby, derbyshared, derbytools) but neither the client driver nor
# the network server; they are fetched in the version PySpark ships, which the Hive client is built against.
DERBY_GROUP = "org.apache.derby"
DERBY_FALLBACK_VERSION = "10.16.1.1"  # PySpark 4.x's


def pyspark_derby_version() -> str:
    """The Derby version of the jars PySpark ships (`pyspark/jars/derby-<version>.jar`), found without
    importing PySpark."""
    from importlib.util import find_spec

    spec = find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        for jar in sorted((Path(location) / "jars").glob("derby-*.jar")):
            return jar.stem.removeprefix("derby-")
    return DERBY_FALLBACK_VERSION


def derby_jars(version: str | None = None) -> Path:
    """A folder holding Derby's client driver (derbyclient) and network server (derbynet, with the derby,
    derbyshared and derbytools jars it runs with), fetched once with Maven into the cache."""
    chosen = version or pyspark_derby_version()
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "delta-contracts")
    pom = _pom(
        f"derby-jars-{chosen}",
        [(DERBY_GROUP, "derbyclient", chosen), (DERBY_GROUP, "derbynet", chosen)],
    )
    folder = root / "jars" / f"derby-{chosen}"
    _maven_copy(pom, folder, DERBY_GROUP, f"{DERBY_GROUP}:derbyclient:{chosen}", "derbyclient")
    return folder


def derby_client_jar(version: str | None = None) -> Path:
    """Derby's network client driver (`org.apache.derby.jdbc.ClientDriver`), for a metastore URL
    `jdbc:derby://host:port/…`."""
    return next(p for p in _jars_in(derby_jars(version)) if p.name.startswith("derbyclient"))


def availability(target: str = "delta-4") -> tuple[bool, str]:
    """Whether a local delta-spark session can start here, and why not when it cannot."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return False, "no Java runtime (java) on this machine: delta-spark needs Java 17"
    try:
        delta_jars(target)
    except JarsUnavailableError as err:
        return False, f"delta-spark's jars cannot be had: {err}; set {JARS_ENV} to a folder of them"
    return True, ""


# Unity Catalog OSS 0.6.0's server and Spark connector, installed into the jar cache beside delta-spark's.
#
# Maven Central serves neither `unitycatalog-server` nor any `unitycatalog-spark_*` build (checked 2026-11),
# so the two jars come from a folder the site provides (built from the v0.6.0 source, Apache 2.0): the folder
# named by DELTA_CONTRACTS_UNITYCATALOG, else the nearest `shared/unitycatalog` above the checkout (where CI
# puts it). They are copied into `<cache>/jars/unitycatalog-0.6.0/`, and what Maven Central does serve is
# fetched there with Maven: the connector's `jackson-databind-nullable` (neither Spark nor delta-spark ships
# it; delta-spark's folder already holds unitycatalog-client and -hadoop 0.6.0) and the server's 258
# third-party runtime jars, as the folder's `server-runtime-pom.xml` names them (~160 MB; 1 min 42 s cold on a
# loaded 2-core machine).
UNITY_SOURCE_ENV = "DELTA_CONTRACTS_UNITYCATALOG"
UNITY_VERSION = "0.6.0"
UNITY_SERVER_JAR = f"unitycatalog-server-{UNITY_VERSION}.jar"
UNITY_CONNECTOR_JAR = f"unitycatalog-spark_4.2_2.13-{UNITY_VERSION}.jar"
UNITY_SERVER_CLASS = "io.unitycatalog.server.UnityCatalogServer"
UNITY_CATALOG_CLASS = "io.unitycatalog.spark.UCSingleCatalog"
UNITY_NULLABLE = ("org.openapitools", "jackson-databind-nullable", "0.2.6")


def unity_source_folder() -> Path:
    """Where the two jars built from source are: DELTA_CONTRACTS_UNITYCATALOG, else the nearest
    `shared/unitycatalog` above the checkout."""
    named = os.environ.get(UNITY_SOURCE_ENV)
    folder = Path(named) if named else _beside_checkout()
    missing = [
        n
        for n in (UNITY_SERVER_JAR, UNITY_CONNECTOR_JAR, "server-runtime-pom.xml")
        if not (folder / n).is_file()
    ]
    if missing:
        raise JarsUnavailableError(
            f"Unity Catalog's jars are not in {folder} (missing {', '.join(missing)}): set "
            f"{UNITY_SOURCE_ENV} to the folder holding the server and connector built from Unity Catalog "
            'v0.6.0 (docs/engines.md, "Unity Catalog")'
        )
    return folder


def _beside_checkout() -> Path:
    # the nearest `shared/unitycatalog` above the checkout (a worktree may sit a level deeper than the clone)
    checkout = Path(__file__).resolve().parents[2]
    for folder in checkout.parents:
        if (folder / "shared" / "unitycatalog").is_dir():
            return folder / "shared" / "unitycatalog"
    return checkout.parent / "shared" / "unitycatalog"


def unity_cache_folder() -> Path:
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "delta-contracts")
    return root / "jars" / f"unitycatalog-{UNITY_VERSION}"


def _copy_once(source: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    if not target.is_file() or target.stat().st_size != source.stat().st_size:
        partial = target.with_name(target.name + ".tmp")
        shutil.copyfile(source, partial)
        os.replace(partial, target)


def unity_connector_jars() -> list[Path]:
    """The jars a Spark session adds to `spark.jars` to use `UCSingleCatalog` (beside delta-spark's)."""
    folder = unity_cache_folder() / "spark"
    if not (folder / UNITY_CONNECTOR_JAR).is_file():
        _copy_once(unity_source_folder() / UNITY_CONNECTOR_JAR, folder)
    group, artifact, version = UNITY_NULLABLE
    nullable = unity_cache_folder() / "spark-deps"
    _maven_copy(
        _pom("uc-connector-deps", [UNITY_NULLABLE]),
        nullable,
        group,
        f"{group}:{artifact}:{version}",
        artifact,
    )
    return [folder / UNITY_CONNECTOR_JAR, *_jars_in(nullable)]


def unity_server_class_path() -> list[Path]:
    """The server's jar and its third-party runtime jars (fetched once with Maven)."""
    folder = unity_cache_folder() / "server"
    source: Path | None = None
    if not (folder / UNITY_SERVER_JAR).is_file():
        source = unity_source_folder()
        _copy_once(source / UNITY_SERVER_JAR, folder)
    deps = unity_cache_folder() / "server-deps"
    if not any(p.name.startswith("armeria") for p in _jars_in(deps)):
        pom = ((source or unity_source_folder()) / "server-runtime-pom.xml").read_text(encoding="utf-8")
        # every group, no transitive ones: the pom lists each jar itself, as sbt resolved them
        _maven_copy(
            pom, deps, "", "the Unity Catalog server's runtime jars", "armeria", ("-DexcludeTransitive=true",)
        )
    return [folder / UNITY_SERVER_JAR, *_jars_in(deps)]


def unity_fetch_all() -> Path:
    """Fill the cache with what a Unity Catalog run needs (the `unitycatalog` jars target): the folder."""
    unity_connector_jars()
    unity_server_class_path()
    unity_server_conf()
    return unity_cache_folder()


def unity_server_conf() -> Path:
    """The server's configuration folder (`etc/conf`) from the source folder, copied into the cache."""
    folder = unity_cache_folder() / "conf"
    if not (folder / "server.properties").is_file():
        conf = unity_source_folder() / "etc" / "conf"
        shutil.copytree(conf, folder, dirs_exist_ok=True)
        for path in folder.iterdir():
            path.chmod(0o644)
    return folder


def fetch(target: str) -> tuple[Path, str]:
    """Fill the jar cache for one target (`delta-4`, `delta-3`, `derby` or `unitycatalog`): the folder of its
    jars and the Maven coordinates they came from."""
    if target == "unitycatalog":
        return unity_fetch_all(), f"Unity Catalog {UNITY_VERSION}"
    if target == "derby":
        return derby_jars(), f"{DERBY_GROUP}:derbynet:{pyspark_derby_version()}"
    return resolve_with_maven(target), TARGETS[target].coordinates


def main(argv: list[str] | None = None) -> int:
    """`python -m delta_contracts.engine.jars [TARGET…]`: fill the jar cache (the Makefile runs this); the
    target `derby` fetches Derby's network client and server (a shared metastore, docs/engines.md), the target
    `unitycatalog` Unity Catalog's server and Spark connector (docs/engines.md, "Unity Catalog")."""
    targets = (argv if argv is not None else sys.argv[1:]) or ["delta-4"]
    for target in targets:
        try:
            folder, what = fetch(target)
        except JarsUnavailableError as err:
            print(f"error: {target}: {err}", file=sys.stderr)
            return err.exit_code
        print(f"{target}: {what} -> {folder} ({jar_count(folder)} jars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
