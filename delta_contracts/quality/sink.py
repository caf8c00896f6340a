"""How a DataFrame lands in a Delta table on each engine, with `userMetadata` on the commit.

The DataFrame writer option `userMetadata` is honoured by delta-spark and by Sail (which ignores the session
conf, DESIGN.md). On the local engine a table lives at `<warehouse>/<schema>/<table>` and Sail's catalog is
rebuilt from there, so it is written by location; on Spark it is written by name into the session catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_contracts.engine.base import USER_METADATA_CONF
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine
    from delta_contracts.engine.local.engine import LocalEngine


def append(engine: Engine, frame: Any, table: TableId, user_metadata: str) -> None:
    """Append `frame` to the Delta table (created on first append), the commit tagged with `user_metadata`."""
    from delta_contracts.engine.local.engine import LocalEngine

    if isinstance(engine, LocalEngine):
        _append_local(engine, frame, table, user_metadata)
        return
    writer = frame.write.format("delta").mode("append").option("userMetadata", user_metadata)
    if len(table) > 1:
        from sqlglot import exp

        schema = x.table(table[:-1])
        engine.sql(x.sql(exp.Create(this=schema, kind="SCHEMA", exists=True)))
    writer.saveAsTable(x.sql(x.table(table)))


def _append_local(engine: LocalEngine, frame: Any, table: TableId, user_metadata: str) -> None:
    """Sail 0.7.2 puts a table's CHECKs on the write's input as a filter that runs before the input's own
    filters, so a quarantined batch's good rows were refused for the bad rows already filtered out. The rows
    to land are staged first as Parquet in the warehouse, by the engine (never through the client: a batch
    of 10M rows is larger than one Spark Connect message), then appended from that plain scan in one
    commit; the staging folder is removed after."""
    import shutil
    import uuid

    staging = engine.state_dir / "staging" / uuid.uuid4().hex
    try:
        frame.write.mode("overwrite").parquet(str(staging))
        staged = engine.spark.read.parquet(str(staging))
        existed = engine.describe(table) is not None
        writer = staged.write.format("delta").mode("append").option("userMetadata", user_metadata)
        writer.save(str(engine.location(table)))
        if not existed:
            engine.register(table)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def run_tagged(engine: Engine, statement: str, user_metadata: str) -> None:
    """Run one DML statement with the session conf naming the commit (honoured by delta-spark, not Sail).

    Not routed through delta-rs' merge on the local engine, although its CommitProperties would tag the
    commit: delta-rs 1.6.6 refuses tables with the allowColumnDefaults feature, and Sail 0.7.2 cannot read
    the string columns of files delta-rs wrote (Utf8View), measured in docs/quality.md."""
    spark = getattr(engine, "spark", None)
    if spark is None:
        engine.sql(statement)
        return
    spark.conf.set(USER_METADATA_CONF, user_metadata)
    try:
        engine.sql(statement)
    finally:
        spark.conf.unset(USER_METADATA_CONF)
