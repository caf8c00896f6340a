"""Every golden migration executed on real Delta (delta-spark, target delta-4) against a table holding rows.

For each recipe × {in_place, versioned}: create the old table, write rows, apply the migration phase by phase
(an old producer writes one more row between populate and cutover, as producers do), and check that every
statement is accepted, every pre-check counts 0 rows before its op, every postcondition holds after its op,
re-applying the finished migration skips every op, and the rows read through the contract's name are the
expected transformation of the rows written — computed here from the contracts, not by the planner.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan import expressions as x
from delta_contracts.plan.ops import CopyRows, Migration, Op, Phase
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.recipes import RECIPES, pair

pytestmark = pytest.mark.engine

_schemas = itertools.count()

# Rows every contract of the recipe matrix accepts, before and after its change.
ROWS: tuple[dict[str, Any], ...] = (
    {
        "txn_id": "t1",
        "txn_amt_paise": 1250,
        "attempts": 1,
        "status": "OK",
        "legacy_channel": "web",
        "txn_date": date(2026, 11, 1),
    },
    {
        "txn_id": "t2",
        "txn_amt_paise": 99,
        "attempts": None,
        "status": "OK",
        "legacy_channel": None,
        "txn_date": date(2026, 11, 2),
    },
)
# Written by a producer that still writes the old shape, after populate and before cutover.
LATE_ROW: dict[str, Any] = {
    "txn_id": "t3",
    "txn_amt_paise": 7,
    "attempts": 2,
    "status": "OK",
    "legacy_channel": "app",
    "txn_date": date(2026, 11, 2),
}


def checksum(rows: Iterable[Mapping[str, Any]]) -> str:
    """Order-independent digest of rows, values normalised to text (so 12 and Decimal('12') agree)."""

    def text(value: Any) -> str:
        if isinstance(value, Decimal):
            return format(value.normalize(), "f")
        return "NULL" if value is None else str(value)

    lines = sorted(
        json.dumps({k.casefold(): text(v) for k, v in row.items()}, sort_keys=True) for row in rows
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def expected_rows(old: Contract, new: Contract, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the new contract says they must read: renamed, converted, filled, defaulted."""
    out = []
    for row in rows:
        values = {k.casefold(): v for k, v in row.items()}
        shaped: dict[str, Any] = {}
        for column in new.columns:
            source = (column.renamed_from or column.name).casefold()
            if source in values and old.column(source) is not None:
                shaped[column.name] = values[source]
            elif column.fill is not None:
                shaped[column.name] = _evaluate_fill(column.fill, values)
            else:
                shaped[column.name] = column.default
        out.append(shaped)
    return out


def _evaluate_fill(fill: str, values: Mapping[str, Any]) -> Any:
    """Fills in the recipes are literals; anything else would need an evaluator this test does not have."""
    from sqlglot import exp

    tree = x.parse(fill)
    assert isinstance(tree, exp.Literal), f"test recipes use literal fills, got {fill!r}"
    return tree.this if tree.is_string else int(tree.this)


def create_schema(engine: Engine, name: str) -> None:
    from sqlglot import exp

    engine.sql(x.sql(exp.Create(this=x.ident(name), kind="SCHEMA", exists=True)))


def drop_schema(engine: Engine, name: str) -> None:
    """Keep the session's catalog small: view look-ups walk every schema."""
    from sqlglot import exp

    schema = exp.Table(db=x.ident(name))
    engine.sql(x.sql(exp.Drop(tables=[schema], kind="SCHEMA", exists=True, cascade=True)))


def write_rows(engine: Engine, table: tuple[str, ...], rows: Sequence[Mapping[str, Any]]) -> None:
    """Append rows as a producer's DataFrame job does: defaults do not apply, missing columns are NULL."""
    spark = engine.spark  # type: ignore[attr-defined]
    target = spark.table(x.sql(x.table(table)))
    names = list(rows[0])
    frame = spark.createDataFrame([tuple(r[n] for n in names) for r in rows], names)
    for field in target.schema.fields:
        if field.name in names:
            frame = frame.withColumn(field.name, frame[field.name].cast(field.dataType))
    frame.write.format("delta").mode("append").saveAsTable(x.sql(x.table(table)))


def apply_checked(engine: Engine, op: Op, where: str) -> None:
    """Run the op through `apply_op` (which counts its pre-check and stops on a violation), then prove its
    postcondition."""
    outcome = engine.apply_op(op, tag=where)
    post = op.postcondition()
    if isinstance(op, CopyRows):
        # A copy is rerunnable until its source is retired (its postcondition, proven by the re-apply): right
        # after it, the target holds exactly the source's rows.
        assert engine.count_where(op.table, "TRUE") == engine.count_where(op.source, "TRUE"), where
    elif post is not None and outcome.path != "skipped":
        assert engine.holds(post), f"{where}: postcondition {post} does not hold after {op.summary()}"


def run_migration(engine: Engine, migration: Migration, where: str, before_cutover: Any = None) -> None:
    for phase in Phase:
        if phase is Phase.CUTOVER and before_cutover is not None:
            before_cutover()
        for i, op in enumerate(migration.phase(phase)):
            apply_checked(engine, op, f"{where} {phase.value}[{i}] {op.kind}")
    again = [engine.apply_op(op) for op in migration.ops]
    ran = [o.op_kind for o in again if o.path != "skipped"]
    assert ran == [], f"{where}: re-applying ran {ran}"


def read_through_name(engine: Engine, contract: Contract) -> list[dict[str, Any]]:
    return engine.sql(f"SELECT * FROM {x.sql(x.table(contract.table_parts))}")


def renamed(contract: Contract, schema: str) -> Contract:
    return contract.model_copy(update={"id": f"{schema}.transactions"})


# Every recipe × strategy belongs here; these are the ones executed green on delta-spark so far (a loaded
# 2-core machine ran ~2 minutes per case). The others — the versioned copies among them — are still to be
# executed and added.
EXECUTED = {
    ("add_nullable_column", "in_place"),
    ("add_nullable_column", "versioned"),
    ("add_not_null_with_default", "in_place"),
    ("add_not_null_with_default", "versioned"),
    ("add_not_null_without_default", "in_place"),
    ("rename_column", "in_place"),
    ("add_not_null_without_default", "versioned"),
    ("narrow_type", "versioned"),
}
CASES = [
    (recipe, versioning)
    for recipe in RECIPES
    for versioning in ("in_place", "versioned")
    if (recipe, versioning) in EXECUTED
]


@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_recipe_executes_on_delta(spark_engine: Engine, recipe: str, versioning: str) -> None:
    schema = f"recipe{next(_schemas)}"
    create_schema(spark_engine, schema)
    old, new = (renamed(c, schema) for c in pair(recipe, versioning))
    target = Target.DELTA_4
    created, state = plan(None, old, target)
    run_migration(spark_engine, created, f"{recipe}/{versioning} create")
    physical = state.physical
    write_rows(spark_engine, physical, ROWS)
    try:
        migration, _ = plan(old, new, target, state=state)
    except PlanError as err:
        pytest.fail(f"{recipe}/{versioning} refused: {err}")

    def late_write() -> None:
        write_rows(spark_engine, physical, [LATE_ROW])

    run_migration(spark_engine, migration, f"{recipe}/{versioning}", before_cutover=late_write)

    got = read_through_name(spark_engine, new)
    drop_schema(spark_engine, schema)
    assert sorted(got[0]) == sorted(c.name for c in new.columns), "the name serves the contract's columns"
    want = expected_rows(old, new, [*ROWS, LATE_ROW])
    assert checksum(got) == checksum(want), f"{got} != {want}"
