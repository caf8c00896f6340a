"""Spark configuration every test JVM runs with (the session fixture, the Connect server, the delta-3 run and
the crash and race tests' child processes). No pytest here: the delta-3 virtualenv imports it too.

The test tables hold a handful of rows: compiling whole-stage code and re-planning adaptively cost more than
the queries (six recipe cases: 114 s -> 104 s). Neither changes what a statement does.
Tried and dropped (the suite got slower, 41:25 -> 44:12, the spark tests 20-35 % each): one shuffle and one
snapshot partition, a larger generated-code cache and the serial collector. (Interpreted-only expressions,
spark.sql.codegen.factoryMode=NO_CODEGEN, would save more but break spark.catalog.listTables on Spark 4.2:
EXPRESSION_DECODING_FAILED.)
"""

FAST_SMALL_QUERIES = {"spark.sql.codegen.wholeStage": "false", "spark.sql.adaptive.enabled": "false"}
