"""Which version a batch is written as and what fills each live column (delta_contracts/quality/shape.py),
without an engine: the batch schemas are pyspark's types, the live tables what `describe` returns in each
phase of tests/recipes.py's migrations. tests/engine/test_write_phases.py writes the same on real tables."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pyspark.sql.types import DataType, DateType, IntegerType, LongType, StringType, StructField, StructType

from delta_contracts.contract.model import Contract
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.quality.shape import ShapeNotStampedError, batch_shape, fills
from delta_contracts.sql import expressions as x
from tests.recipes import BASE, RECIPES, bump

TYPES: dict[str, DataType] = {
    "string": StringType(),
    "bigint": LongType(),
    "int": IntegerType(),
    "date": DateType(),
}


def versions(recipe: str) -> tuple[Contract, Contract]:
    level, mutate = RECIPES[recipe]
    new = copy.deepcopy(BASE)
    mutate(new)
    new["version"] = bump(BASE["version"], level)
    return Contract.model_validate(BASE), Contract.model_validate(new)


def schema_of(contract: Contract) -> StructType:
    return StructType([StructField(c.name, TYPES[c.type]) for c in contract.columns])


def live(stamp: str | None, columns: list[tuple[str, str]], **extra: Any) -> LiveTable:
    properties = {STAMP_VERSION: stamp} if stamp else {}
    cols = tuple(LiveColumn(name, type_, **extra.get(name, {})) for name, type_ in columns)
    return LiveTable("`payments`.`transactions`", "/tmp/t", cols, properties)


def columns_of(*contracts: Contract) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for contract in contracts:
        for column in contract.columns:
            seen.setdefault(column.name, column.type)
    return list(seen.items())


OLD, RENAMED = versions("rename_column")
WINDOW = columns_of(OLD, RENAMED)  # an in-place rename from its expand to its drop: both names live


def test_the_stamped_shape_is_written_and_the_other_refused_naming_the_shape_to_write() -> None:
    before = live(OLD.version, WINDOW)
    assert batch_shape(schema_of(OLD), RENAMED, before, [OLD, RENAMED], cast=False) is OLD
    with pytest.raises(ShapeNotStampedError) as early:
        batch_shape(schema_of(RENAMED), RENAMED, before, [OLD, RENAMED], cast=False)
    assert "is written once the cutover stamps 3.0.0" in str(early.value)
    assert "until then write the 2.4.0 shape (this batch: missing column txn_amt_paise" in str(early.value)

    after = live(RENAMED.version, WINDOW)
    assert batch_shape(schema_of(RENAMED), OLD, after, [OLD, RENAMED], cast=False) is RENAMED
    with pytest.raises(ShapeNotStampedError) as late:
        batch_shape(schema_of(OLD), RENAMED, after, [OLD, RENAMED], cast=False)
    assert "no longer written since the cutover stamped 3.0.0; write the 3.0.0 shape" in str(late.value)


def test_an_unstamped_table_takes_the_callers_version_and_one_shape_the_stamped() -> None:
    assert batch_shape(schema_of(OLD), OLD, live(None, WINDOW), [OLD, RENAMED], cast=False) is OLD
    old, moved = versions("change_partitioning")  # two versions, one shape
    stamped = live(old.version, columns_of(old))
    assert batch_shape(schema_of(old), moved, stamped, [old, moved], cast=False) is old


def test_a_batch_of_no_version_gets_the_stamped_versions_problems() -> None:
    odd = StructType([StructField("txn_id", StringType())])
    assert batch_shape(odd, RENAMED, live(OLD.version, WINDOW), [OLD, RENAMED], cast=False) is OLD


def test_a_stamp_the_migrations_do_not_hold_is_named() -> None:
    """The migrations folder not found (write() run from elsewhere): the old-shape batch the docs allow
    before the stamp fits only the caller's new version's problems; the refusal says what is missing."""
    with pytest.raises(ShapeNotStampedError) as unknown:
        batch_shape(schema_of(OLD), RENAMED, live(OLD.version, WINDOW), [RENAMED], cast=False)
    message = str(unknown.value)
    assert "is stamped 2.4.0, and the migrations folder holds no contract payments.transactions 2.4.0" in (
        message
    )
    assert "missing column amount_paise" in message


def filled(table: LiveTable, shape: Contract, known: list[Contract]) -> dict[str, tuple[str, bool]]:
    return {f.column: (x.sql(f.value), f.determined) for f in fills(table, shape, known)}


def test_a_rename_fills_both_names_from_either_shape() -> None:
    table = live(OLD.version, WINDOW)
    old_shape = filled(table, OLD, [OLD, RENAMED])
    assert old_shape["amount_paise"] == ("`txn_amt_paise` AS `amount_paise`", True)
    assert old_shape["txn_amt_paise"] == ("`txn_amt_paise` AS `txn_amt_paise`", True)
    new_shape = filled(table, RENAMED, [OLD, RENAMED])
    assert new_shape["txn_amt_paise"] == ("`amount_paise` AS `txn_amt_paise`", True)
    # the rename known only from the caller's contract (no migrations folder) fills it as well
    assert filled(table, RENAMED, [RENAMED])["txn_amt_paise"] == new_shape["txn_amt_paise"]


def test_a_dropped_column_is_null_and_not_determined_a_widened_one_cast() -> None:
    old, dropped = versions("drop_column")
    assert filled(live(dropped.version, columns_of(old)), dropped, [old, dropped])["legacy_channel"] == (
        "CAST(NULL AS STRING) AS `legacy_channel`",
        False,
    )
    old, widened = versions("widen_type")
    assert filled(live(old.version, columns_of(widened)), old, [old, widened])["attempts"] == (
        "CAST(`attempts` AS BIGINT) AS `attempts`",
        True,
    )


def test_generated_columns_are_left_to_delta_and_a_batch_column_without_a_home_refused() -> None:
    day_of = {"generated": "day(txn_date)"}
    generated = live(OLD.version, [*columns_of(OLD), ("day_of", "int")], day_of=day_of)
    assert "day_of" not in filled(generated, OLD, [OLD])
    drifted = live(OLD.version, [c for c in columns_of(OLD) if c[0] != "status"])
    with pytest.raises(ShapeNotStampedError, match=r"has no column status of payments\.transactions 2\.4\.0"):
        fills(drifted, OLD, [OLD])
