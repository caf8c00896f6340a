"""Statements that mean the same whatever the cluster's session defaults: the suite's delta-spark session is
given `spark.sql.sources.partitionOverwriteMode=dynamic` and `spark.sql.ansi.enabled=false` (both common on
clusters: the first in jobs that overwrite partitions, the second the Spark 3 default), and then

- a copy (INSERT OVERWRITE) into a partitioned table holding a partition its source does not have: the
  target must end with the source's rows exactly (with `dynamic`, a plain INSERT OVERWRITE keeps the stale
  partition);
- one executed recipe whose versioned migration copies with a narrowing CAST (`narrow_type`, versioned):
  copy, conversion pre-check, catch-up and cutover, read back through the contract's name.

Why this subset: INSERT OVERWRITE (copies and a batched copy's first batch) is the only statement form whose
result depends on partitionOverwriteMode, and the conversion CASTs of a versioned copy are where ANSI mode
changes a result; every other op is DDL or a MERGE/UPDATE whose meaning neither setting changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import CopyRows, Phase
from tests.engine.conftest import JVM
from tests.engine.recipe_run import create_schema, execute_case

pytestmark = [pytest.mark.engine, JVM]

CLUSTER_DEFAULTS = {"spark.sql.sources.partitionOverwriteMode": "dynamic", "spark.sql.ansi.enabled": "false"}


@contextmanager
def session_defaults(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def test_a_copy_replaces_the_whole_target_under_dynamic_partition_overwrite(spark_engine: Engine) -> None:
    create_schema(spark_engine, "cluster_defaults")
    source, target = ("cluster_defaults", "source"), ("cluster_defaults", "target")
    for schema, name in (source, target):
        columns = "(`id` BIGINT, `day` INT) USING DELTA PARTITIONED BY (`day`)"
        spark_engine.sql(f"CREATE TABLE `{schema}`.`{name}` {columns}")
    spark_engine.sql("INSERT INTO `cluster_defaults`.`source` VALUES (1, 1), (2, 2)")
    spark_engine.sql("INSERT INTO `cluster_defaults`.`target` VALUES (9, 3)")  # a partition gone from source
    copy = CopyRows(
        table=target, phase=Phase.POPULATE, source=source, mapping=(("id", "`id`"), ("day", "`day`"))
    )
    with session_defaults(spark_engine.spark, CLUSTER_DEFAULTS):  # type: ignore[attr-defined]
        spark_engine.run(copy)
        mode = spark_engine.spark.conf.get("spark.sql.sources.partitionOverwriteMode")  # type: ignore[attr-defined]
    assert mode == "dynamic"  # the session's own setting is put back after the statement
    rows = spark_engine.sql("SELECT `id`, `day` FROM `cluster_defaults`.`target` ORDER BY `id`")
    assert rows == [{"id": 1, "day": 1}, {"id": 2, "day": 2}]


def test_a_versioned_narrowing_copy_under_cluster_defaults(spark_engine: Engine) -> None:
    with session_defaults(spark_engine.spark, CLUSTER_DEFAULTS):  # type: ignore[attr-defined]
        run = execute_case(spark_engine, "narrow_type", "versioned", clone_old=True)
    assert run.served_types == run.wanted_types
    assert run.served == run.expected, "rows served differ from the contract's"
