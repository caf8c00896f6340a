"""A Structured Streaming reader of a table renamed in place (a column added, copied, and the old one dropped
on a column-mapped table) keeps going when it is given what docs/migrations.md ("Streaming readers") says it
needs — a `schemaTrackingLocation` under its checkpoint, `skipChangeCommits` (the backfill UPDATEs rewrite
rows), the unblock setting for the drop, and a restart after each schema change — and stops for good
without the schema tracking. delta-spark, on the suite's classic session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.recipe_run import LATE_ROW, ROWS, create_schema, renamed, run_migration, write_rows
from tests.recipes import pair

pytestmark = [pytest.mark.engine, JVM]

# Delta's SQL setting that lets a stream with schema tracking continue past a dropped column
# (delta-spark DeltaSourceMetadataEvolutionSupport.scala); `…allowSourceColumnRenameAndDrop` allows both.
ALLOW_DROP = "spark.databricks.delta.streaming.allowSourceColumnDrop"
# The error classes of a stream that stopped at a schema change it recorded, and must be restarted.
RESTART = ("DELTA_STREAMING_METADATA_EVOLUTION", "DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA")


def drain(spark: Any, source: str, checkpoint: Path, sink: Path, *, tracking: bool) -> str | None:
    """Run the stream over everything committed so far (availableNow); None when it finished, else the
    first line of the error it stopped with."""
    reader = spark.readStream.format("delta").option("skipChangeCommits", "true")
    if tracking:
        reader = reader.option("schemaTrackingLocation", str(checkpoint / "_schema_log"))
    query = (
        reader.table(source)
        .writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start(str(sink))
    )
    try:
        query.awaitTermination()
    except Exception as err:
        return str(err).strip().splitlines()[0]
    return None


def test_a_stream_survives_an_in_place_rename_and_drop(spark_engine: Engine, tmp_path: Path) -> None:
    spark = spark_engine.spark  # type: ignore[attr-defined]
    schema = "streamed"
    create_schema(spark_engine, schema)
    base, wanted = pair("rename_column", "in_place")
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, Target.DELTA_4)
    run_migration(spark_engine, created, "stream create")
    table = x.sql(x.table(state.physical))
    write_rows(spark_engine, state.physical, ROWS)
    tracked, untracked = tmp_path / "tracked", tmp_path / "untracked"
    for folder in (tracked, untracked):
        assert drain(spark, table, folder / "checkpoint", folder / "sink", tracking=folder is tracked) is None
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    run_migration(spark_engine, migration, "stream rename")  # every phase, the drop of the old column too
    write_rows(spark_engine, state.physical, [{**LATE_ROW, "amount_paise": 7}])

    stops: list[str] = []
    spark.conf.set(ALLOW_DROP, "always")  # "true" is not taken (DeltaSourceMetadataEvolutionSupport)
    try:
        for _ in range(6):  # a restart per schema change the stream meets
            error = drain(spark, table, tracked / "checkpoint", tracked / "sink", tracking=True)
            if error is None:
                break
            assert any(code in error for code in RESTART), error
            stops.append(error)
        else:
            pytest.fail(f"the stream never caught up: {stops}")
    finally:
        spark.conf.unset(ALLOW_DROP)
    ids = sorted(r["txn_id"] for r in spark.read.format("delta").load(str(tracked / "sink")).collect())
    assert ids == sorted(r["txn_id"] for r in [*ROWS, LATE_ROW]), ids  # every row once, none twice
    assert stops, "the stream met the drop without stopping: nothing was tested"

    error = drain(spark, table, untracked / "checkpoint", untracked / "sink", tracking=False)
    # without schema tracking the stream stops for good, Delta naming the schema log it needs
    assert error is not None and "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG" in error, error
