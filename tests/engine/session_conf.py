"""Spark configuration every test JVM runs with (the session fixture, the Connect server, the delta-3 run and
the crash and race tests' child processes). No pytest here: the delta-3 virtualenv imports it too.

The test tables hold a handful of rows, and the suite is CPU-bound on two cores (every JVM busy at once), so
what counts is the CPU a statement costs, not only its latency. None of these changes what a statement does:
- no whole-stage code and no adaptive re-planning: compiling and re-planning cost more than the queries (six
  recipe cases: 114 s -> 104 s);
- one shuffle partition and one Delta snapshot partition: one task per stage instead of two, for a few rows;
- a larger cache of generated expression code (default 100): the suite runs thousands of distinct statements
  and recompiled the same projections with Janino when they fell out of it;
- the serial collector: a heap of a few hundred MB, and G1's concurrent threads competed with the queries.
History apply of sales.orders plus four recipe cases on one warm session, measured together: JVM CPU 171 s ->
127 s, wall 136 s -> 121 s.
(Interpreted-only expressions, spark.sql.codegen.factoryMode=NO_CODEGEN, would save more but break
spark.catalog.listTables on Spark 4.2: EXPRESSION_DECODING_FAILED.)
"""

TEST_JVM_OPTIONS = "-XX:+UseSerialGC"
FAST_SMALL_QUERIES = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.codegen.cache.maxEntries": "5000",
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
}
