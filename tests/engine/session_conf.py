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
- The JVM compiles with C1 only and collects with the parallel collector (`TEST_JVM_OPTIONS`). The suite is
  CPU-bound on two cores with three or four JVMs at once, and C2 spends most of its work on code that runs a
  few times: five recipe cases twice in a fresh session (JVM and Python CPU, same machine, one after the
  other): default flags 343 CPU-s (231 s), C1 only 272 CPU-s (241 s), C1 and the parallel collector 238 CPU-s
  (214 s). C1 needs a larger code cache than its 48 MB default, which filled ("CodeCache is full. Compiler has
  been disabled") and made the run slower than the default.
None of these changes what a statement does.
Tried and dropped (the suite got slower, 41:25 -> 44:12, the spark tests 20-35 % each): one shuffle and one
snapshot partition, a larger generated-code cache and the serial collector.
"""

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC"
# For the JVMs the package starts itself (the local engine's delta-spark, in the suite's processes and their
# children), which take no configuration from the tests: PySpark passes these to spark-submit.
SUBMIT_ARGS = f"--driver-java-options '{TEST_JVM_OPTIONS}' pyspark-shell"

FAST_SMALL_QUERIES = {
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.databricks.delta.delta.log.cacheSize": "32",
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
}
