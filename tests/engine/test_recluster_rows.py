"""OPTIMIZE … FULL after new clustering keys, on a real table with rows: every data file is rewritten, the
history shows a full OPTIMIZE by the new keys after the CLUSTER BY, the rows are those before it, and a
second apply skips it. On delta-spark as the `spark` engine runs it; the local engine refuses it
as it refuses every clustering op (Sail has no CLUSTER BY)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.engine.base import Engine, EngineError, OpOutcome
from delta_contracts.plan.ops import ColumnSpec, CreateTable, Phase, SetClustering
from delta_contracts.plan.recluster import ReclusterRows
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from tests.engine.conftest import JVM, location_of

pytestmark = [pytest.mark.engine, JVM]

ROWS = [(i, f"region-{i % 3}", 100 - i) for i in range(12)]


def _files(location: str) -> set[str]:
    from deltalake import DeltaTable

    return set(DeltaTable(location).file_uris())


def _rows(engine: Engine, table: TableId) -> list[dict[str, Any]]:
    query = exp.select(exp.Star()).from_(x.table(table)).order_by(x.column("id"))
    return engine.sql(x.sql(query))


def _recluster_after_new_keys(engine: Engine, schema: str) -> OpOutcome:
    table = TableId((schema, "events"))
    columns = (ColumnSpec("id", "bigint"), ColumnSpec("region", "string"), ColumnSpec("score", "int"))
    engine.apply_op(CreateTable(table=table, phase=Phase.EXPAND, columns=columns, clustered_by=("id",)))
    for start in range(0, len(ROWS), 4):  # several commits: several files laid out by the old key
        values = exp.values([tuple(x.literal(v) for v in row) for row in ROWS[start : start + 4]])
        engine.sql(x.sql(exp.insert(values, x.table(table))))
    recluster = ReclusterRows(table=table, phase=Phase.POPULATE, columns=("region", "score"))
    with pytest.raises(EngineError, match="clustered by"):  # before the keys change: the old layout again
        engine.skip_or_check(recluster)
    engine.apply_op(SetClustering(table=table, phase=Phase.EXPAND, columns=("region", "score")))
    location = location_of(engine, table)
    before_files, before_rows = _files(location), _rows(engine, table)
    assert not engine.postcondition_holds(recluster)

    outcome = engine.apply_op(recluster)

    assert _rows(engine, table) == before_rows == [{"id": i, "region": r, "score": s} for i, r, s in ROWS]
    assert _files(location).isdisjoint(before_files)  # every file rewritten
    last = engine.history(table)[-1]
    assert (last.operation, last.parameters["isFull"]) == ("OPTIMIZE", "true")
    assert json.loads(last.parameters["clusterBy"]) == ["region", "score"]
    assert outcome.version == last.version
    assert engine.apply_op(recluster).path == "skipped"  # the history shows it after the keys changed
    return outcome


def test_recluster_after_new_keys_on_delta_spark(spark_engine: Engine) -> None:
    assert _recluster_after_new_keys(spark_engine, "recluster_spark").path == "sql"


def test_the_local_engine_refuses_it_as_it_refuses_every_clustering_op(local_engine: Engine) -> None:
    recluster = ReclusterRows(table=TableId(("s", "t")), phase=Phase.POPULATE, columns=("a",))
    clustering = SetClustering(table=TableId(("s", "t")), phase=Phase.EXPAND, columns=("a",))
    reason = local_engine.unsupported_reason(recluster)
    assert reason is not None and reason == local_engine.unsupported_reason(clustering)
