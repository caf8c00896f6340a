"""Spark configuration every test JVM runs with (the session fixture, the Connect server, the delta-3 run and
the crash and race tests' child processes). No pytest here: the delta-3 virtualenv imports it too.

The test tables hold a handful of rows: compiling code for them costs more than running the queries.
- No whole-stage code and no adaptive re-planning (six recipe cases: 114 s -> 104 s).
- No generated code at all: expressions are interpreted (spark.sql.codegen.factoryMode=NO_CODEGEN). With code
  generation on, a recording of the recipe cases (JFR, 60 s) had 17 % of the JVM's samples in the regex that
  strips comments from each generated class before its cache look-up (Spark's CodeFormatter), and the C2
  compiler thread at about 57 % of a core compiling generated classes; eight recipe cases on a warm session:
  162.7 s -> 124.5 s, JVM CPU 236 s -> 175 s. Spark keeps both paths equivalent (its own tests run both), and
  `spark.catalog.listTables`, which fails to decode its rows in this mode, is not used by the engine.
- A bounded DeltaLog cache (32 tables instead of 10 000 for 60 minutes) and a short UI history: the suite
  creates hundreds of tables, and each cached DeltaLog kept its snapshot's state plans alive (a class
  histogram of the session's JVM after 27 minutes: 673 MB live of a 1 GB heap, mostly Catalyst trees; its G1
  marking thread had used 196 s of CPU).
- The parallel collector, and C1 only in the JVMs that live seconds (`CHILD_JVM_OPTIONS`: the crash and
  race tests' children). The suite is CPU-bound on two cores with three or four JVMs at once: five recipe
  cases twice in a fresh session (JVM and Python CPU, same machine, one after the other): default flags 343
  CPU-s (231 s), C1 only 272 CPU-s (241 s), C1 and the parallel collector 238 CPU-s (214 s). C1 needs a
  larger code cache than its 48 MB default, which filled ("CodeCache is full. Compiler has been disabled").
  The JVMs that live through the run (`SESSION_JVM_OPTIONS`: the suite's session, the Connect server, the
  delta-3 run of the exhaustive tier; `make test`'s runs one case, tests/engine/delta3_launch.py) keep C2,
  which pays off over minutes: sixteen recipe cases in a fresh session with the parallel collector, C1
  only 235.4 s and 256.4 JVM CPU-s, C1 and C2 182.0 s and 250.4 CPU-s.
- In those JVMs C2 compiles only the hottest code (tier-4 thresholds about five times the defaults) and
  keeps what it compiled (no code-cache flushing, a 512 MB cache). Seven recipe cases in a fresh session
  (the JVM's CPU by thread, from /proc): with the defaults the compiler threads took 132-133 of its 332-338
  CPU-s, the statements 124-127; with these, 86 of 287, the statements 126 (wall 219-225 s -> 213 s). Five
  times again (86 -> 64 CPU-s of compiling) ran the statements slower by as much (287 -> 286 CPU-s in all,
  228 s).
- PySpark starts its JVM with PYSPARK_SUBMIT_ARGS when it is set, and spark-submit's `--driver-java-options`
  there wins over the session's `spark.driver.extraJavaOptions` (measured: a session given both ran with the
  former), so the suite sets the variable for its processes (tests/conftest.py): C1 only, as most of its
  JVMs live a minute or less (the demo's, the event-log applications', the crash tests' children); the
  suite's session and the Connect server set `SESSION_JVM_OPTIONS` (`long_lived_jvm`, `server_command`).
None of these changes what a statement does.
Tried and dropped (the suite got slower, 41:25 -> 44:12, the spark tests 20-35 % each): one shuffle and one
snapshot partition, a larger generated-code cache and the serial collector.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

SESSION_JVM_OPTIONS = (
    "-XX:+UseParallelGC -XX:-UseCodeCacheFlushing -XX:ReservedCodeCacheSize=512m"
    " -XX:Tier4InvocationThreshold=20000 -XX:Tier4CompileThreshold=30000 -XX:Tier4BackEdgeThreshold=200000"
)
CHILD_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC"


def submit_args(jvm_options: str) -> str:
    """PYSPARK_SUBMIT_ARGS for the JVMs the package starts itself (the local engine's delta-spark), which take
    no configuration from the tests."""
    return f"--driver-java-options '{jvm_options}' pyspark-shell"


SUBMIT_ARGS = submit_args(SESSION_JVM_OPTIONS)
CHILD_SUBMIT_ARGS = submit_args(CHILD_JVM_OPTIONS)


@contextmanager
def long_lived_jvm() -> Iterator[None]:
    """Start the JVM of a classic session made in the block with `SESSION_JVM_OPTIONS` (the suite's default
    is `CHILD_JVM_OPTIONS`: tests/conftest.py)."""
    saved = os.environ.get("PYSPARK_SUBMIT_ARGS")
    os.environ["PYSPARK_SUBMIT_ARGS"] = SUBMIT_ARGS
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = saved


FAST_SMALL_QUERIES = {
    "spark.driver.extraJavaOptions": SESSION_JVM_OPTIONS,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.databricks.delta.delta.log.cacheSize": "32",
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
}
