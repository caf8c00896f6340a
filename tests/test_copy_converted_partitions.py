"""copy_converted_partitions, without an engine: which versioned copies the planner batches by the old
table's partitions (a partition column reaching the new table converted), and the batches its mover makes
from the source's partitions: grouped by their converted values, found in the target by those values, and
resumed after the partitions the ledger recorded. Executed on Delta in
tests/engine/test_copy_converted_partitions.py."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

from delta_contracts.contract.model import Contract
from delta_contracts.engine.row_moves import COPY_CONVERTED_PARTITIONS, COPY_ROWS
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.plan.ops import CopyRows, Phase
from delta_contracts.plan.planner import plan
from delta_contracts.plan.render import render
from delta_contracts.plan.serialize import op_from_data, op_to_data
from delta_contracts.plan.versioned import CopyConvertedPartitions
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.recipes import BASE, _column, pair


def _copies(old: Contract, new: Contract) -> list[CopyRows]:
    migration, _ = plan(old, new, Target.DELTA_4)
    return [op for op in migration.ops if isinstance(op, CopyRows)]


def test_a_retyped_partition_column_is_copied_by_the_old_partitions() -> None:
    for versioning in ("in_place", "versioned"):
        old, new = pair("retype_partition_column", versioning)
        (populate,) = _copies(old, new)
        assert isinstance(populate, CopyConvertedPartitions)
        assert populate.kind == "copy_converted_partitions" and populate.phase is Phase.POPULATE
        assert populate.partitioned_by == ("txn_date",)
        assert "by partitions of txn_date (converted)" in populate.summary()
        # the statement is the copy's: batches restrict it, the first overwrites
        plain = CopyRows(**{k: v for k, v in vars_of(populate).items() if k != "partitioned_by"})
        assert render(populate) == render(plain)
        assert op_from_data(op_to_data(populate)) == populate


def vars_of(op: CopyRows) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(op, f.name) for f in dataclasses.fields(op)}


def test_copies_whose_partition_columns_arrive_as_they_were_stay_plain_copies() -> None:
    # narrowed amount (the partition column kept), partitioning dropped (its column kept): the plain copy
    # already batches by partition, as it does for a partition column only renamed
    for recipe in ("narrow_type", "change_partitioning"):
        assert {type(op) for op in _copies(*pair(recipe))} == {CopyRows}
    doc = copy.deepcopy(BASE)
    old = Contract.model_validate(doc)
    _column(doc, "txn_date").update(name="booked_on", renamed_from="txn_date")
    doc["table"]["partitioned_by"] = ["booked_on"]
    doc["version"] = "3.0.0"
    (populate,) = _copies(old, Contract.model_validate(doc))
    assert type(populate) is CopyRows
    assert dict(populate.mapping)["booked_on"] == "`txn_date`"


class _Engine:
    """What the mover asks an engine for: the source's description and the partitions' counts, converted."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.statements: list[str] = []

    def describe(self, table: TableId, *, with_version: bool = True) -> LiveTable:
        columns = (LiveColumn("id", "bigint", True), LiveColumn("ts", "timestamp", True))
        return LiveTable(str(table), "/x", columns, partition_columns=("ts_hour",))

    def sql(self, statement: str) -> list[dict[str, Any]]:
        self.statements.append(statement)
        return self.rows


def _op(expression: str) -> CopyConvertedPartitions:
    return CopyConvertedPartitions(
        table=TableId(("s", "t__v2")),
        phase=Phase.POPULATE,
        source=TableId(("s", "t")),
        mapping=(("id", "`id`"), ("day", expression)),
        partitioned_by=("ts_hour",),
    )


def test_partitions_of_one_converted_value_go_in_one_batch() -> None:
    # three hourly partitions, two of one day: a batch found in the target by its day must hold both
    rows = [
        {"ts_hour": "2026-11-01 10", "dc_rows": 5, "dc_converted_0": date(2026, 11, 1)},
        {"ts_hour": "2026-11-01 11", "dc_rows": 5, "dc_converted_0": date(2026, 11, 1)},
        {"ts_hour": "2026-11-02 09", "dc_rows": 5, "dc_converted_0": date(2026, 11, 2)},
        {"ts_hour": None, "dc_rows": 1, "dc_converted_0": None},
    ]
    engine = _Engine(rows)
    op = _op("CAST(SUBSTR(`ts_hour`, 1, 10) AS DATE)")
    batches = COPY_CONVERTED_PARTITIONS.plan(engine, op, 2, [])  # type: ignore[arg-type]
    assert batches is not None
    assert [b.mark["partitions"] for b in batches] == [
        ['["2026-11-01 10"]', '["2026-11-01 11"]'],
        ['["2026-11-02 09"]'],
        ["[null]"],
    ]
    first, _, nulls = batches
    assert x.sql(first.source) == "`ts_hour` = '2026-11-01 10' OR `ts_hour` = '2026-11-01 11'"
    # in the target, by the conversion of the partition's value, quoted and escaped by sqlglot
    assert x.sql(first.target) == "`day` IS NOT DISTINCT FROM CAST(SUBSTRING('2026-11-01 10', 1, 10) AS DATE)"
    assert x.sql(nulls.source) == "`ts_hour` IS NULL"
    assert x.sql(nulls.target) == "`day` IS NOT DISTINCT FROM CAST(SUBSTRING(NULL, 1, 10) AS DATE)"
    # counted by partition, converted outside the grouping
    (query,) = engine.statements
    assert query == (
        "SELECT `ts_hour`, `dc_rows`, CAST(SUBSTRING(`ts_hour`, 1, 10) AS DATE) AS `dc_converted_0` FROM "
        "(SELECT `ts_hour`, COUNT(*) AS `dc_rows` FROM `s`.`t` GROUP BY `ts_hour`) AS `dc_partitions`"
    )
    # resumed: the partitions recorded done are left out, the others batched as before
    resumed = COPY_CONVERTED_PARTITIONS.plan(engine, op, 2, [first.mark])  # type: ignore[arg-type]
    assert resumed is not None
    assert [b.mark for b in resumed] == [b.mark for b in batches[1:]]


def test_a_literal_partition_value_is_escaped() -> None:
    rows = [{"ts_hour": "it's", "dc_rows": 1, "dc_converted_0": "IT'S"}]
    batches = COPY_CONVERTED_PARTITIONS.plan(_Engine(rows), _op("UPPER(`ts_hour`)"), 10, [])  # type: ignore[arg-type]
    assert batches is not None
    assert x.sql(batches[0].source) == "`ts_hour` = 'it\\'s'"
    assert x.sql(batches[0].target) == "`day` IS NOT DISTINCT FROM UPPER('it\\'s')"


def test_a_mover_for_each_copy() -> None:
    from delta_contracts.engine.local.ops import LOCAL_OPS
    from delta_contracts.engine.spark.ops import SPARK_OPS

    op = _op("CAST(`ts_hour` AS DATE)")
    assert LOCAL_OPS[op].rows is COPY_CONVERTED_PARTITIONS
    assert SPARK_OPS[op].rows is COPY_CONVERTED_PARTITIONS
    assert LOCAL_OPS[CopyRows].rows is SPARK_OPS[CopyRows].rows is COPY_ROWS
