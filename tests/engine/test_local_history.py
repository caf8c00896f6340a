"""The local engine never restarts a table's history: ops Sail and delta-rs cannot do in place run with
delta-spark on the same table, and the outcome of every op is checked against the Delta log."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.base import EngineError, PartialOpError
from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.engine.local.routes import TableFacts
from delta_contracts.plan.ops import (
    AddCheck,
    ColumnSpec,
    CreateTable,
    DropColumns,
    Gate,
    Phase,
    SetProperties,
    WidenType,
)

pytestmark = pytest.mark.engine

E = Phase.EXPAND
GATE = Gate("P30D", "P14D", "delta_contracts.deprecated.columns", ("x",))
MAPPING = (
    ("delta.columnMapping.mode", "name"),
    ("delta.minReaderVersion", "2"),
    ("delta.minWriterVersion", "5"),
)
_counter = itertools.count()


def _create(engine: LocalEngine, *, properties: tuple[tuple[str, str], ...] = ()) -> tuple[str, str]:
    table = (f"hist{next(_counter)}", "t")
    engine.apply_op(
        CreateTable(
            table=table,
            phase=E,
            columns=(
                ColumnSpec("id", "bigint", False),
                ColumnSpec("quantity", "int"),
                ColumnSpec("note", "string"),
            ),
            properties=properties,
        )
    )
    engine.sql(f"INSERT INTO `{table[0]}`.`t` VALUES (1, 10, 'one'), (2, 20, 'two'), (3, NULL, NULL)")
    return table


def _rows_at(location: Path, version: int | None = None) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(location), version=version).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def _operations(location: Path) -> list[tuple[int, str]]:
    from deltalake import DeltaTable

    return sorted((int(h["version"]), str(h["operation"])) for h in DeltaTable(str(location)).history())


def test_drop_column_in_place_keeps_time_travel(local_engine: LocalEngine) -> None:
    table = _create(local_engine)
    location = local_engine.location(table)
    local_engine.apply_op(SetProperties(table=table, phase=E, properties=MAPPING))
    before_drop = local_engine.table_version(table)
    assert before_drop is not None
    outcome = local_engine.apply_op(
        DropColumns(table=table, phase=Phase.CONTRACT, columns=("note",), gate=GATE)
    )

    assert outcome.path == "delta-spark" and outcome.version == before_drop + 1
    assert [r.get("note") for r in _rows_at(location)] == [None, None, None]
    assert "note" not in {c.name for c in local_engine.describe(table).columns}  # type: ignore[union-attr]
    # The history goes on from the table's creation: time travel reaches the dropped column's values.
    operations = _operations(location)
    assert [v for v, _ in operations] == list(range(before_drop + 2))
    assert operations[0][1] == "CREATE TABLE" and operations[-1][1] == "DROP COLUMNS"
    assert [r["note"] for r in _rows_at(location, before_drop)] == ["one", "two", None]
    assert [r["note"] for r in _rows_at(location, 1)] == ["one", "two", None]  # the INSERT's version
    # Sail serves the table as it is now (it was registered again after delta-spark's commit).
    rows = local_engine.sql(f"SELECT * FROM `{table[0]}`.`t` ORDER BY `id`")
    assert [sorted(r) for r in rows] == [["id", "quantity"]] * 3


def test_enabling_column_mapping_keeps_history(local_engine: LocalEngine) -> None:
    table = _create(local_engine)
    location = local_engine.location(table)
    before = local_engine.table_version(table)
    outcome = local_engine.apply_op(SetProperties(table=table, phase=E, properties=MAPPING))

    assert outcome.path == "delta-spark" and outcome.version == (before or 0) + 1
    from deltalake import DeltaTable

    schema = json.loads(DeltaTable(str(location)).schema().to_json())
    assert all("delta.columnMapping.physicalName" in f["metadata"] for f in schema["fields"])
    assert [v for v, _ in _operations(location)] == list(range((before or 0) + 2))
    assert [r["note"] for r in _rows_at(location, before)] == ["one", "two", None]
    local_engine.sql(f"INSERT INTO `{table[0]}`.`t` VALUES (4, 40, 'four')")
    assert [r["id"] for r in _rows_at(location)] == [1, 2, 3, 4]
    # Table features (writer 7), not legacy writer 5, which implies CDF: Sail could not commit to it then.
    protocol = DeltaTable(str(location)).protocol()
    assert protocol.min_writer_version == 7 and "columnMapping" in (protocol.writer_features or [])
    local_engine.apply_op(AddCheck(table=table, phase=E, name="id_positive", expression="`id` > 0"))


def _widening_table(warehouse: Path) -> tuple[str, str]:
    with LocalEngine(warehouse) as first:
        return _create(first, properties=(("delta.enableTypeWidening", "true"),))


def test_alter_column_type_on_a_table_of_another_session(tmp_path: Path) -> None:
    """Issue 13 item 2: Sail's ALTER COLUMN TYPE failed on a table it did not create, yet committed."""
    table = _widening_table(tmp_path)
    with LocalEngine(tmp_path) as second:
        before = second.table_version(table)
        outcome = second.apply_op(
            WidenType(table=table, phase=E, column="quantity", from_type="int", to_type="bigint")
        )
        live = second.describe(table)
        assert live is not None and live.column("quantity").type == "bigint"  # type: ignore[union-attr]
        assert outcome.version == (before or 0) + 1 == live.version
        assert _operations(second.location(table))[-1] == (live.version, "CHANGE COLUMN")
        second.sql(f"INSERT INTO `{table[0]}`.`t` VALUES (4, 5000000000, 'big')")
        rows = second.sql(f"SELECT `quantity` FROM `{table[0]}`.`t` WHERE `id` = 4")
        assert rows == [{"quantity": 5000000000}]


class _SailOnly(LocalEngine):
    """The local engine as it was: Sail's ALTER COLUMN whatever its catalog knows of the table."""

    def facts(self, table: tuple[str, ...]) -> TableFacts:
        from dataclasses import replace

        return replace(super().facts(table), sail_knows_schema=True)


def test_an_op_that_fails_after_committing_is_reported_partial(tmp_path: Path) -> None:
    table = _widening_table(tmp_path)
    with _SailOnly(tmp_path) as engine:
        before = engine.table_version(table)
        with pytest.raises(PartialOpError) as raised:
            engine.apply_op(
                WidenType(table=table, phase=E, column="quantity", from_type="int", to_type="bigint")
            )
        assert raised.value.version == (before or 0) + 1 == engine.table_version(table)
        assert f"version {raised.value.version}" in str(raised.value)


def test_refused_before_anything_runs_where_delta_spark_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-jars"
    empty.mkdir()
    monkeypatch.setenv("DELTA_CONTRACTS_DELTA_JARS", str(empty))
    with LocalEngine(tmp_path / "warehouse") as engine:
        table = _create(engine)
        before = engine.table_version(table)
        ops = [
            SetProperties(table=table, phase=E, properties=MAPPING),
            DropColumns(table=table, phase=Phase.CONTRACT, columns=("note",), gate=GATE),
        ]
        with pytest.raises(EngineError) as refused:
            engine.check_supported(ops)
        message = str(refused.value)
        assert "drop columns note" in message and "set delta.columnMapping.mode=name" in message
        assert "Sail and delta-rs have no DROP COLUMNS" in message and "--allow-rewrite" in message
        assert "delta-spark*.jar" in message  # the reason delta-spark cannot start
        with pytest.raises(EngineError):
            engine.apply_op(ops[0])
        assert engine.table_version(table) == before


def test_refused_before_anything_runs_where_the_delta_spark_server_named_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`DELTA_CONTRACTS_DELTA_SPARK_URL` names the Connect server the ops go to: one nobody listens on is
    refused up front, as a missing Java is, with the variable named."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DELTA_CONTRACTS_DELTA_SPARK_URL", f"sc://127.0.0.1:{port}")
    with LocalEngine(tmp_path / "warehouse") as engine:
        table = _create(engine)
        before = engine.table_version(table)
        drop = DropColumns(table=table, phase=Phase.CONTRACT, columns=("note",), gate=GATE)
        with pytest.raises(EngineError) as refused:
            engine.check_supported([SetProperties(table=table, phase=E, properties=MAPPING), drop])
        message = str(refused.value)
        assert "drop columns note" in message and "cannot be reached" in message
        assert f"DELTA_CONTRACTS_DELTA_SPARK_URL: cannot reach Spark Connect at 127.0.0.1:{port}" in message
        assert engine.table_version(table) == before


def test_catalog_rebuild_skips_only_views_whose_tables_are_gone(tmp_path: Path) -> None:
    import shutil

    from delta_contracts.plan.ops import CreateView

    with LocalEngine(tmp_path) as engine:
        kept, dropped = _create(engine), _create(engine)
        engine.apply_op(CreateView(table=(kept[0], "v"), phase=E, source=kept))
        engine.apply_op(CreateView(table=(dropped[0], "v"), phase=E, source=dropped))
        engine.apply_op(CreateView(table=(dropped[0], "w"), phase=E, source=(dropped[0], "v")))
    shutil.rmtree(tmp_path / dropped[0] / dropped[1])
    with pytest.warns(UserWarning, match="the tables they read are gone") as warned:
        engine = LocalEngine(tmp_path)
    with engine:
        assert f"{dropped[0]}.v" in str(warned[0].message) and f"{dropped[0]}.w" in str(warned[0].message)
        assert len(engine.sql(f"SELECT * FROM `{kept[0]}`.`v`")) == 3
    views = tmp_path / "_delta_contracts" / "views.json"
    stored = json.loads(views.read_text(encoding="utf-8"))
    stored[json.dumps([kept[0], "v"])] = f"SELECT `no_such_column` FROM `{kept[0]}`.`t`"
    views.write_text(json.dumps(stored), encoding="utf-8")
    with pytest.raises(EngineError, match=f"cannot re-create the stored view {kept[0]}.v"):
        LocalEngine(tmp_path)


def test_delta_spark_commits_are_tagged_and_set_the_table_comment(local_engine: LocalEngine) -> None:
    from delta_contracts.engine import deltalog
    from delta_contracts.plan.ops import SetTableComment

    table = _create(local_engine, properties=(("delta.feature.allowColumnDefaults", "supported"),))
    outcome = local_engine.apply_op(
        SetTableComment(table=table, phase=E, comment="It's tagged."), tag="m 0002 op 1"
    )
    assert outcome.path == "delta-spark" and "allowColumnDefaults" in outcome.detail
    live = local_engine.describe(table)
    assert live is not None and live.comment == "It's tagged." and live.version == outcome.version
    logged = deltalog.history(str(local_engine.location(table)))
    assert [c.user_metadata for c in logged if c.version == outcome.version] == ["m 0002 op 1"]
    assert all(c.user_metadata is None for c in logged if c.version != outcome.version)
