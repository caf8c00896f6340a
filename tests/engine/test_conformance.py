"""Every op kind on real Delta tables, read back independently from the Delta log with delta-rs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from delta_contracts.engine import deltalog
from delta_contracts.engine.base import Engine, EngineError, PreconditionFailedError, Reads
from delta_contracts.live import LiveTable
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    Backfill,
    ColumnSpec,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropNotNull,
    DropTable,
    Gate,
    MarkDeprecated,
    Phase,
    RenameTable,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    StampContract,
    WidenType,
)
from tests.engine.conftest import location_of, log_row_count, log_state

pytestmark = pytest.mark.engine

E = Phase.EXPAND
GATE = Gate("P30D", "P14D", "delta_contracts.deprecated.columns", ("x",))
_counter = itertools.count()


@pytest.fixture
def engine(every_engine: Engine) -> Engine:
    """The conformance suite runs on every engine, `connect` included."""
    return every_engine


def fresh_table(engine: Engine, *, rows: bool = True) -> tuple[str, str]:
    table = (f"conf{next(_counter)}", "t")
    create = CreateTable(
        table=table,
        phase=E,
        columns=(
            ColumnSpec("id", "bigint", False, "Row id."),
            ColumnSpec("amount", "int", True, None),
            ColumnSpec("note", "string", True, "A note."),
            ColumnSpec("day", "date", False, None),
        ),
        partitioned_by=("day",),
        comment="Conformance table.",
        properties=(("owner.team", "qa"),),
    )
    engine.apply_op(create)
    if rows:
        engine.sql(
            f"INSERT INTO `{table[0]}`.`t` VALUES "
            "(1, 10, 'a', DATE'2024-01-01'), (2, NULL, NULL, DATE'2024-01-02')"
        )
    return table


def test_create_table(engine: Engine) -> None:
    table = fresh_table(engine)
    state = log_state(location_of(engine, table))
    assert list(state["fields"]) == ["id", "amount", "note", "day"]
    assert state["fields"]["id"]["nullable"] is False and state["fields"]["id"]["type"] == "long"
    assert state["fields"]["id"]["metadata"]["comment"] == "Row id."
    assert state["partitions"] == ["day"]
    assert state["description"] == "Conformance table."
    assert state["configuration"]["owner.team"] == "qa"
    assert log_row_count(location_of(engine, table)) == 2


def test_add_column_reports_version_and_path(engine: Engine) -> None:
    table = fresh_table(engine)
    before = log_state(location_of(engine, table))["version"]
    outcome = engine.apply_op(
        AddColumn(table=table, phase=E, column=ColumnSpec("extra", "decimal(12,2)", True, "X."))
    )
    state = log_state(location_of(engine, table))
    assert (
        state["fields"]["extra"]["type"] == "decimal(12,2)" and state["fields"]["extra"]["nullable"] is True
    )
    assert state["fields"]["extra"]["metadata"]["comment"] == "X."
    assert outcome.version == state["version"] > before
    assert engine.sql(f"SELECT count(*) AS n FROM `{table[0]}`.`t` WHERE `extra` IS NULL")[0]["n"] == 2


def test_ops_are_skipped_once_their_postcondition_holds(engine: Engine) -> None:
    table = fresh_table(engine)
    op = AddColumn(table=table, phase=E, column=ColumnSpec("extra", "string"))
    assert engine.apply_op(op).path != "skipped"
    assert engine.apply_op(op).path == "skipped"


def test_an_op_is_decided_on_one_describe_of_each_table(
    local_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skip check and the pre-check share what they read (`Reads`): deciding on a copy describes its
    source and its target once each, though both checks name the source."""
    source = fresh_table(local_engine)
    target = (source[0], "t__v2")
    local_engine.apply_op(CreateTable(table=target, phase=E, columns=(ColumnSpec("id", "bigint", False),)))
    copy = CopyRows(
        table=target, phase=Phase.POPULATE, source=source, mapping=(("id", "`id`"),), rejects="`id` IS NULL"
    )
    described: list[tuple[str, ...]] = []
    real = local_engine.describe

    def counting(table: tuple[str, ...], *, with_version: bool = True) -> LiveTable | None:
        described.append(tuple(table))
        return real(table, with_version=with_version)

    monkeypatch.setattr(local_engine, "describe", counting)
    reads = Reads()
    assert not local_engine.postcondition_holds(copy, reads)  # its source still stands
    local_engine.check_precondition(copy, reads)
    assert sorted(described) == sorted([source, target])


def test_defaults(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(
        SetProperties(table=table, phase=E, properties=(("delta.feature.allowColumnDefaults", "supported"),))
    )
    engine.apply_op(SetColumnDefault(table=table, phase=E, column="note", default="'n/a'"))
    assert log_state(location_of(engine, table))["fields"]["note"]["metadata"]["CURRENT_DEFAULT"] == "'n/a'"
    engine.apply_op(DropColumnDefault(table=table, phase=E, column="note"))
    assert "CURRENT_DEFAULT" not in log_state(location_of(engine, table))["fields"]["note"]["metadata"]


def test_comments(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(SetColumnComment(table=table, phase=E, column="amount", comment='It\'s "quoted"; ok'))
    engine.apply_op(SetTableComment(table=table, phase=E, comment="New table comment."))
    state = log_state(location_of(engine, table))
    assert state["fields"]["amount"]["metadata"]["comment"] == 'It\'s "quoted"; ok'
    assert state["description"] == "New table comment."


def test_widen_type_keeps_rows(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(SetProperties(table=table, phase=E, properties=(("delta.enableTypeWidening", "true"),)))
    engine.apply_op(WidenType(table=table, phase=E, column="amount", from_type="int", to_type="bigint"))
    state = log_state(location_of(engine, table))
    assert state["fields"]["amount"]["type"] == "long"
    assert engine.sql(f"SELECT sum(`amount`) AS s FROM `{table[0]}`.`t`")[0]["s"] == 10


def test_properties_mark_and_stamp(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(MarkDeprecated.of(table, columns=("note",), since="2.0.0", reason=""))
    engine.apply_op(
        StampContract(table=table, phase=Phase.CUTOVER, properties=(("delta_contracts.version", "2.0.0"),))
    )
    config = log_state(location_of(engine, table))["configuration"]
    assert config["delta_contracts.deprecated.columns"] == '["note"]'
    assert config["delta_contracts.version"] == "2.0.0"


def test_checks_validate_enforce_and_drop(engine: Engine) -> None:
    table = fresh_table(engine)
    with pytest.raises(PreconditionFailedError) as caught:
        engine.apply_op(
            AddCheck(table=table, phase=Phase.CUTOVER, name="amount_min", expression="`amount` >= 0")
        )
    assert caught.value.count == 1  # the NULL row: Delta counts NULL as a violation
    safe = AddCheck(
        table=table, phase=Phase.CUTOVER, name="amount_min", expression="`amount` IS NULL OR `amount` >= 0"
    )
    engine.apply_op(safe)
    assert "delta.constraints.amount_min" in log_state(location_of(engine, table))["configuration"]
    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        engine.sql(f"INSERT INTO `{table[0]}`.`t` VALUES (3, -5, 'bad', DATE'2024-01-03')")
    engine.apply_op(DropCheck(table=table, phase=E, name="amount_min"))
    assert "delta.constraints.amount_min" not in log_state(location_of(engine, table))["configuration"]
    engine.sql(
        f"INSERT INTO `{table[0]}`.`t` VALUES (3, -5, 'ok now', DATE'2024-01-03')"
    )  # no longer enforced


def test_add_check_on_violating_rows_fails_with_the_delta_error_class(engine: Engine) -> None:
    table = fresh_table(engine)
    with pytest.raises(EngineError, match="DELTA_NEW_CHECK_CONSTRAINT_VIOLATION"):
        engine.run(AddCheck(table=table, phase=Phase.CUTOVER, name="id_big", expression="`id` > 100"))


def test_drop_not_null(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(DropNotNull(table=table, phase=E, column="id"))
    assert log_state(location_of(engine, table))["fields"]["id"]["nullable"] is True


def test_backfill_is_resumable(engine: Engine) -> None:
    table = fresh_table(engine)
    op = Backfill(table=table, phase=Phase.POPULATE, column="note", expression="CAST(`id` AS STRING)")
    engine.apply_op(op)
    rows = engine.sql(f"SELECT `id`, `note` FROM `{table[0]}`.`t` ORDER BY `id`")
    assert [(r["id"], r["note"]) for r in rows] == [(1, "a"), (2, "2")]
    assert engine.apply_op(op).path == "skipped"


def test_copy_rows_rename_and_views(engine: Engine) -> None:
    source = fresh_table(engine)
    target = (source[0], "t__v2")
    engine.apply_op(
        CreateTable(
            table=target, phase=E, columns=(ColumnSpec("id", "bigint", False), ColumnSpec("amount", "bigint"))
        )
    )
    copy = CopyRows(
        table=target,
        phase=Phase.POPULATE,
        source=source,
        mapping=(("id", "`id`"), ("amount", "CAST(`amount` AS BIGINT)")),
    )
    engine.apply_op(copy)
    engine.apply_op(copy)  # an overwrite: running it twice leaves the same rows
    assert engine.sql(f"SELECT count(*) AS n FROM `{target[0]}`.`t__v2`")[0]["n"] == 2
    retired = (source[0], "t__v1")
    engine.apply_op(RenameTable(table=source, phase=Phase.CUTOVER, new_name=retired))
    assert engine.describe(source) is None and engine.describe(retired) is not None
    view = CreateView(table=source, phase=Phase.CUTOVER, source=target)
    engine.apply_op(view)
    assert engine.sql(f"SELECT count(*) AS n FROM `{source[0]}`.`t`")[0]["n"] == 2
    assert engine.apply_op(view).path == "skipped"
    engine.apply_op(DropTable(table=retired, phase=Phase.CONTRACT, gate=GATE))
    assert engine.describe(retired) is None


def test_column_mapping_then_drop_columns_keeps_other_data(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(
        AddCheck(
            table=table,
            phase=Phase.CUTOVER,
            name="note_len",
            expression="`note` IS NULL OR length(`note`) < 10",
        )
    )
    engine.apply_op(
        SetProperties(
            table=table,
            phase=E,
            properties=(
                ("delta.columnMapping.mode", "name"),
                ("delta.minReaderVersion", "2"),
                ("delta.minWriterVersion", "5"),
            ),
        )
    )
    state = log_state(location_of(engine, table))
    assert state["configuration"]["delta.columnMapping.mode"] == "name"
    assert "delta.columnMapping.physicalName" in state["fields"]["id"]["metadata"]
    engine.apply_op(AddColumn(table=table, phase=E, column=ColumnSpec("later", "string")))
    engine.apply_op(DropCheck(table=table, phase=Phase.CUTOVER, name="note_len"))
    outcome = engine.apply_op(DropColumns(table=table, phase=Phase.CONTRACT, columns=("note",), gate=GATE))
    state = log_state(location_of(engine, table))
    assert "note" not in state["fields"] and "later" in state["fields"]
    assert state["fields"]["id"]["metadata"]["comment"] == "Row id."
    assert state["partitions"] == ["day"] and state["description"] == "Conformance table."
    rows = engine.sql(f"SELECT `id`, `amount`, `day` FROM `{table[0]}`.`t` ORDER BY `id`")
    assert [(r["id"], r["amount"]) for r in rows] == [(1, 10), (2, None)]
    assert outcome.version == state["version"]


def test_set_not_null(engine: Engine) -> None:
    table = fresh_table(engine)
    op = SetNotNull(table=table, phase=Phase.CUTOVER, column="note")
    with pytest.raises(PreconditionFailedError):
        engine.apply_op(op)  # a NULL note exists
    engine.apply_op(Backfill(table=table, phase=Phase.POPULATE, column="note", expression="'x'"))
    # Every engine here runs OSS Delta (Sail + delta-rs, delta-spark): only Databricks has SET NOT NULL, and
    # delta-spark's own refusal ("Cannot change nullable column to non-nullable") is caught before running.
    with pytest.raises(EngineError, match="OSS Delta has no SET NOT NULL"):
        engine.apply_op(op)
    assert log_state(location_of(engine, table))["fields"]["note"]["nullable"] is True


def test_metadata_ops_on_a_table_with_column_defaults(engine: Engine) -> None:
    table = fresh_table(engine)
    engine.apply_op(
        SetProperties(table=table, phase=E, properties=(("delta.feature.allowColumnDefaults", "supported"),))
    )
    engine.apply_op(SetColumnDefault(table=table, phase=E, column="note", default="'n/a'"))
    engine.apply_op(AddColumn(table=table, phase=E, column=ColumnSpec("later", "int", True, "Later.")))
    engine.apply_op(SetColumnComment(table=table, phase=E, column="amount", comment="Amount."))
    engine.apply_op(DropNotNull(table=table, phase=E, column="id"))
    state = log_state(location_of(engine, table))
    assert state["fields"]["later"]["metadata"]["comment"] == "Later."
    assert state["fields"]["amount"]["metadata"]["comment"] == "Amount."
    assert state["fields"]["note"]["metadata"]["CURRENT_DEFAULT"] == "'n/a'"
    assert state["fields"]["id"]["nullable"] is True
    assert engine.sql(f"SELECT count(*) AS n FROM `{table[0]}`.`t`")[0]["n"] == 2


def test_commits_are_tagged_where_the_path_allows(engine: Engine) -> None:
    table = fresh_table(engine)
    outcome = engine.apply_op(
        SetTableComment(table=table, phase=E, comment="Tagged."), tag="migration 0002 op 3"
    )
    commit = next(c for c in engine.history(table) if c.version == outcome.version)
    # local: through delta-rs CommitProperties; spark: the commitInfo.userMetadata conf.
    assert outcome.path == ("delta-rs" if engine.name == "local" else "sql")
    assert commit.user_metadata == "migration 0002 op 3"
    # The tag is in the Delta log's commitInfo itself, as delta-rs reads it.
    logged = deltalog.history(location_of(engine, table))
    assert [c.user_metadata for c in logged if c.version == outcome.version] == ["migration 0002 op 3"]
    assert all(c.user_metadata is None for c in logged if c.version != outcome.version)


def test_an_unreadable_table_is_an_error_not_an_absent_table(engine: Engine) -> None:
    """Only "no such table" means absent: an op on a table whose log cannot be read stops with the error
    instead of being skipped as if its postcondition (e.g. the table being gone) held."""
    table = fresh_table(engine, rows=False)
    log = Path(location_of(engine, table)) / "_delta_log"
    next_version = 1 + max(int(p.stem) for p in log.glob("*.json"))
    (log / f"{next_version:020d}.json").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(Exception):  # noqa: B017 - the log reader's own error (Spark's or delta-rs'), as it is
        engine.describe(table)
    with pytest.raises(Exception):  # noqa: B017
        engine.apply_op(RenameTable(table=table, phase=Phase.CUTOVER, new_name=(table[0], "gone")))
