"""The in-memory engine keeps the Delta rules the runner's tests rest on: a write that breaks a NOT NULL or
a CHECK commits nothing, a new CHECK or NOT NULL is refused on rows that break it, DROP/RENAME COLUMN need
column mapping, time travel reads each version's rows and columns, a rename keeps the history, views read by
name, append-only tables refuse rewrites, and the commits carry Delta's operation names and the op's tag."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.base import EngineError
from delta_contracts.engine.memory.engine import MemoryEngine
from delta_contracts.live import property_set_by
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import Phase, SetProperties
from delta_contracts.plan.recluster import ReclusteredSinceKeysChanged
from delta_contracts.tableid import TableId

pytestmark = pytest.mark.engine

T = TableId(("Shop", "Events"))
MAPPED = "ALTER TABLE shop.events SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
MAPPED += "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"


@pytest.fixture
def engine(tmp_path: Path) -> MemoryEngine:
    made = MemoryEngine(tmp_path / "state")
    made.sql("CREATE SCHEMA IF NOT EXISTS shop")
    made.sql("CREATE TABLE shop.events (id BIGINT NOT NULL, kind STRING, n INT) USING DELTA")
    made.sql("INSERT INTO shop.events VALUES (1, 'view', 1), (2, 'buy', 2)")
    return made


def rows(
    engine: MemoryEngine, query: str = "SELECT * FROM shop.events ORDER BY id"
) -> list[dict[str, object]]:
    return engine.sql(query)


def test_a_write_that_breaks_a_rule_commits_nothing(engine: MemoryEngine) -> None:
    engine.sql("ALTER TABLE shop.events ADD CONSTRAINT n_positive CHECK (n > 0)")
    before = engine.table_version(T)
    with pytest.raises(EngineError, match="CHECK constraint n_positive"):
        engine.sql("INSERT INTO shop.events VALUES (3, 'view', 1), (4, 'view', -1)")
    with pytest.raises(EngineError, match="NOT NULL constraint violated for column: id"):
        engine.sql("UPDATE shop.events SET id = NULL WHERE id = 2")
    with pytest.raises(EngineError, match="n_positive"):  # NULL breaks a CHECK, as in Delta
        engine.sql("UPDATE shop.events SET n = NULL")
    assert engine.table_version(T) == before
    assert [r["id"] for r in rows(engine)] == [1, 2] and [r["n"] for r in rows(engine)] == [1, 2]


def test_a_new_rule_is_refused_on_rows_that_break_it(engine: MemoryEngine) -> None:
    with pytest.raises(EngineError, match=r"1 rows in shop\.events violate the new CHECK"):
        engine.sql("ALTER TABLE shop.events ADD CONSTRAINT few CHECK (n < 2)")
    engine.sql("INSERT INTO shop.events (id, n) VALUES (3, 3)")
    with pytest.raises(EngineError, match="NOT NULL constraint violated for column: kind"):
        engine.sql("ALTER TABLE shop.events ALTER COLUMN kind SET NOT NULL")
    live = engine.describe(T)
    assert live is not None and not live.checks and live.column("kind").nullable  # type: ignore[union-attr]


def test_dropping_or_renaming_a_column_needs_column_mapping(engine: MemoryEngine) -> None:
    with pytest.raises(EngineError, match="needs column mapping"):
        engine.sql("ALTER TABLE shop.events DROP COLUMNS (n)")
    engine.sql(MAPPED)
    engine.sql("ALTER TABLE shop.events RENAME COLUMN kind TO action")
    engine.sql("ALTER TABLE shop.events DROP COLUMN n")
    live = engine.describe(T)
    assert live is not None and [c.name for c in live.columns] == ["id", "action"]
    assert "columnMapping" in live.writer_features or live.min_writer_version >= 5
    ops = [c.operation for c in engine.history(T)]
    assert ops[-2:] == ["RENAME COLUMN", "DROP COLUMNS"]
    # time travel reads the version's own columns and rows
    first = rows(engine, "SELECT * FROM shop.events VERSION AS OF 1 ORDER BY id")
    assert first == [{"id": 1, "kind": "view", "n": 1}, {"id": 2, "kind": "buy", "n": 2}]
    assert rows(engine) == [{"id": 1, "action": "view"}, {"id": 2, "action": "buy"}]


def test_a_renamed_table_keeps_its_history_and_views_read_by_name(engine: MemoryEngine) -> None:
    engine.sql("CREATE OR REPLACE VIEW shop.latest AS SELECT id, kind FROM shop.events")
    versions = [c.version for c in engine.history(T)]
    engine.sql("ALTER TABLE shop.events RENAME TO shop.events__v1")
    assert engine.describe(T) is None
    assert [c.version for c in engine.history(TableId(("shop", "events__v1")))] == versions
    with pytest.raises(EngineError, match="TABLE_OR_VIEW_NOT_FOUND"):
        rows(engine, "SELECT * FROM shop.latest")  # the view reads the name, which is gone
    engine.sql("CREATE OR REPLACE VIEW shop.events AS SELECT id, kind FROM shop.events__v1")
    assert [r["kind"] for r in rows(engine)] == ["view", "buy"]
    assert engine.views()[TableId(("shop", "events"))].startswith("SELECT")
    with pytest.raises(EngineError, match="is a view"):
        engine.sql("DROP TABLE shop.events")


def test_an_append_only_table_refuses_rewrites(engine: MemoryEngine) -> None:
    engine.sql("ALTER TABLE shop.events SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    engine.sql("INSERT INTO shop.events VALUES (3, 'view', 3)")
    for statement in ("UPDATE shop.events SET n = 0", "DELETE FROM shop.events WHERE id = 1"):
        with pytest.raises(EngineError, match="DELTA_CANNOT_MODIFY_APPEND_ONLY"):
            engine.sql(statement)
    assert len(rows(engine)) == 3
    assert "appendOnly" in (engine.describe(T).writer_features or ("appendOnly",))  # type: ignore[union-attr]


def test_commits_carry_deltas_operation_names_and_the_ops_tag(engine: MemoryEngine) -> None:
    mark = SetProperties(table=T, phase=Phase.CUTOVER, properties=(("team.note", "x"),), reason="note")
    outcome = engine.run(mark, tag='{"delta_contracts": {"op": 1}}')
    history = engine.history(T)
    assert outcome.version == history[-1].version == property_set_by(history, "team.note", "x")
    assert history[-1].operation == "SET TBLPROPERTIES"
    assert history[-1].user_metadata == '{"delta_contracts": {"op": 1}}'
    assert [c.operation for c in history[:2]] == ["CREATE TABLE", "WRITE"]
    assert [c.timestamp_ms for c in history] == sorted({c.timestamp_ms for c in history})
    # OPTIMIZE … FULL after CLUSTER BY: what the recluster op's history condition reads
    engine.sql("CREATE TABLE shop.clicks (id BIGINT, day DATE) USING DELTA CLUSTER BY (id)")
    clicks = TableId(("shop", "clicks"))
    done = ReclusteredSinceKeysChanged(clicks)
    engine.sql("ALTER TABLE shop.clicks CLUSTER BY (day)")
    assert not done.holds_in(engine.history(clicks))
    engine.sql("OPTIMIZE shop.clicks FULL")
    assert done.holds_in(engine.history(clicks))
    assert engine.describe(clicks).clustering_columns == ("day",)  # type: ignore[union-attr]


def test_what_it_does_not_model_is_refused_before_anything_runs(engine: MemoryEngine) -> None:
    feed = CatchUpRows(
        table=TableId(("shop", "events__v2")),
        phase=Phase.CUTOVER,
        source=T,
        mapping=(("id", "`id`"),),
        key=("id",),
        strategy=CatchUpStrategy.CHANGE_FEED,
    )
    with pytest.raises(EngineError, match="keeps no change data feed"):
        engine.check_supported([feed])
    with pytest.raises(EngineError, match="does not model"):
        engine.sql("CREATE TABLE shop.ids (id BIGINT GENERATED ALWAYS AS IDENTITY) USING DELTA")
    assert engine.describe(TableId(("shop", "ids"))) is None
