"""Issue 36: every Delta table feature survives every migration, on delta-spark, or the plan refuses it.

The matrix (tests/engine/features.py) runs each feature × change cell: rows identical by key, the feature
present afterwards as Delta stores it (log column metadata and domain metadata, DESCRIBE DETAIL, the table
properties; never the contract), and a writer that uses the feature on the table readers are served. The
cells whose code path no other cell takes run in `make test`; the rest in the exhaustive tier.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from sqlglot import exp

from delta_contracts.contract.delta_properties import BOOKKEEPING_PROPERTIES
from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import SetColumnDefault
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.sql.normalize import same_expression
from delta_contracts.target import Target
from tests.engine.conftest import JVM
from tests.engine.features import (
    BASE as BASE_DOC,
)
from tests.engine.features import (
    CHANGES,
    FEATURES,
    NEW_ROW,
    Cell,
    Refused,
    apply_all,
    contracts,
    detail,
    fresh_schema,
    insert,
    log_fields,
    rows_of,
    run_cell,
)
from tests.tiers import EXHAUSTIVE

pytestmark = [pytest.mark.engine, JVM]

# What a plan refuses, with the words its reason must contain: the change would lose what the feature keeps.
REFUSED = {("identity_always", "versioned_change"): "GENERATED ALWAYS AS IDENTITY"}
# The cells of `make test`: each takes a code path of its own (the rest take one of these).
FIRST_TIER = {
    ("identity_by_default", "versioned_change"),  # ids copied, identity synced twice
    ("identity_always", "versioned_change"),  # refused before anything changes
    ("generated_column", "rename_column"),  # the expression names the renamed column: a new table
    ("literal_default", "rename_column"),  # the default only after the old column is dropped
    ("liquid_clustering", "rename_column"),  # CLUSTER BY a column ADD COLUMNS adds in the same phase
    ("liquid_clustering", "versioned_change"),  # the clustering domain after INSERT OVERWRITE
    ("row_tracking_deletion_vectors", "versioned_change"),  # Delta's bookkeeping never copied
    ("check_constraint", "rename_column"),  # a CHECK on the renamed column
}
CELLS = [
    pytest.param(feature, change, marks=() if (feature, change) in FIRST_TIER else (EXHAUSTIVE,))
    for feature in FEATURES
    for change in CHANGES
]


def status_name(cell: Cell) -> str:
    return "state" if cell.new.column("state") is not None else "status"


def location(cell: Cell) -> str:
    return cell.after_live.location


# -- rows identical by key -----------------------------------------------------------------------------------
def assert_rows_identical_by_key(cell: Cell) -> None:
    assert set(cell.after) == set(cell.before), (sorted(cell.before), sorted(cell.after))
    for key, before in cell.before.items():
        after = cell.after[key]
        for column in cell.new.columns:
            source = column.renamed_from or column.name
            if cell.old.column(source) is None:
                continue  # a new column
            assert after[column.name] == before[source], (key, column.name, before, after)


# -- the feature, as Delta stores it -------------------------------------------------------------------------
def _identity_present(cell: Cell) -> None:
    metadata = log_fields(location(cell))["seq"]["metadata"]
    identity = cell.new.column("seq").identity  # type: ignore[union-attr]
    assert identity is not None
    assert metadata["delta.identity.start"] == identity.start, metadata
    assert metadata["delta.identity.step"] == identity.step, metadata
    assert metadata["delta.identity.allowExplicitInsert"] is (identity.generated.value == "by_default")


def _generated_present(cell: Cell) -> None:
    metadata = log_fields(location(cell))["status_code"]["metadata"]
    assert status_name(cell) in metadata["delta.generationExpression"].casefold(), metadata


def _default_present(column: str, expected: str) -> Callable[[Cell], None]:
    def check(cell: Cell) -> None:
        name = status_name(cell) if column == "status" else column
        metadata = log_fields(location(cell))[name]["metadata"]
        assert same_expression(metadata.get("CURRENT_DEFAULT", ""), expected), metadata

    return check


def _clustering_present(cell: Cell, engine: Engine) -> None:
    assert detail(engine, cell.served)["clusteringColumns"] == [status_name(cell)]


def _property_present(key: str, value: str) -> Callable[[Cell, Engine], None]:
    def check(cell: Cell, engine: Engine) -> None:
        assert cell.after_live.properties.get(key) == value, cell.after_live.properties

    return check


def _row_tracking_present(cell: Cell, engine: Engine) -> None:
    live = cell.after_live
    assert {"rowTracking", "deletionVectors"} <= set(live.writer_features), live.writer_features
    assert live.properties.get("delta.enableRowTracking") == "true"
    assert live.properties.get("delta.enableDeletionVectors") == "true"
    if cell.served != cell.old_physical:  # a new table: Delta named its own bookkeeping, nothing was copied
        for key in BOOKKEEPING_PROPERTIES & set(cell.before_live.properties):
            assert live.properties.get(key) != cell.before_live.properties[key], key


def _check_present(cell: Cell, engine: Engine) -> None:
    expression = cell.after_live.check("status_known")
    assert expression is not None and status_name(cell) in expression.casefold(), cell.after_live.checks


def _comments_present(cell: Cell, engine: Engine) -> None:
    for column in cell.new.columns:
        if column.description:
            live = cell.after_live.column(column.name)
            assert live is not None and live.comment == column.description, (column.name, live)
    assert cell.after_live.comment == cell.new.description


PRESENT: dict[str, Callable[[Cell, Engine], None]] = {
    "identity_by_default": lambda cell, engine: _identity_present(cell),
    "identity_always": lambda cell, engine: _identity_present(cell),
    "generated_column": lambda cell, engine: _generated_present(cell),
    "expression_default": lambda cell, engine: _default_present("created_at", "current_timestamp()")(cell),
    "literal_default": lambda cell, engine: _default_present("status", "'new'")(cell),
    "liquid_clustering": _clustering_present,
    "change_data_feed": _property_present("delta.enableChangeDataFeed", "true"),
    "row_tracking_deletion_vectors": _row_tracking_present,
    "column_mapping": _property_present("delta.columnMapping.mode", "name"),
    "check_constraint": _check_present,
    "comments": _comments_present,
}


# -- a writer using the feature ------------------------------------------------------------------------------
def _new_row(cell: Cell, **extra: Any) -> dict[str, Any]:
    row = dict(NEW_ROW)
    row.update(extra)
    return row


def _identity_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell))
    rows = rows_of(engine, cell.served)
    given = rows["z9"]["seq"]
    earlier = [r["seq"] for k, r in rows.items() if k != "z9"]
    assert given is not None and given > max(earlier), (given, earlier)


def _generated_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell, **{status_name(cell): "fresh"}))
    assert rows_of(engine, cell.served)["z9"]["status_code"] == "FRESH"


def _expression_default_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell))
    assert rows_of(engine, cell.served)["z9"]["created_at"] is not None


def _literal_default_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell))
    assert rows_of(engine, cell.served)["z9"][status_name(cell)] == "new"


def _change_feed_writer(cell: Cell, engine: Engine) -> None:
    version = engine.table_version(cell.served)
    insert(engine, cell.served, _new_row(cell))
    feed = exp.Table(
        this=exp.Anonymous(
            this="table_changes",
            expressions=[exp.Literal.string(x.sql(x.table(cell.served))), exp.Literal.number(version + 1)],
        )
    )
    changes = engine.sql(x.sql(exp.select("txn_id", "_change_type").from_(feed)))
    assert [(r["txn_id"], r["_change_type"]) for r in changes] == [("z9", "insert")]


def _row_tracking_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell))
    gone = exp.EQ(this=x.column("txn_id"), expression=x.literal("a1"))
    engine.sql(x.sql(exp.Delete(this=x.table(cell.served), where=exp.Where(this=gone))))
    assert "a1" not in rows_of(engine, cell.served)
    if engine.name != "spark":
        return  # `_metadata.row_id` is delta-spark's
    ids = engine.sql(
        x.sql(exp.select(exp.column("row_id", table="_metadata").as_("id")).from_(x.table(cell.served)))
    )
    values = [r["id"] for r in ids]
    assert len(values) == len(cell.before) and None not in values and len(set(values)) == len(values)


def _check_writer(cell: Cell, engine: Engine) -> None:
    with pytest.raises(Exception, match=r"status_known|CHECK|violate"):
        insert(engine, cell.served, _new_row(cell, **{status_name(cell): ""}))
    insert(engine, cell.served, _new_row(cell, **{status_name(cell): "ok"}))


def _plain_writer(cell: Cell, engine: Engine) -> None:
    insert(engine, cell.served, _new_row(cell))
    assert "z9" in rows_of(engine, cell.served)


WRITER: dict[str, Callable[[Cell, Engine], None]] = {
    "identity_by_default": _identity_writer,
    "identity_always": _identity_writer,
    "generated_column": _generated_writer,
    "expression_default": _expression_default_writer,
    "literal_default": _literal_default_writer,
    "liquid_clustering": lambda cell, engine: (
        _plain_writer(cell, engine),
        _clustering_present(cell, engine),
    ),
    "change_data_feed": _change_feed_writer,
    "row_tracking_deletion_vectors": _row_tracking_writer,
    "column_mapping": _plain_writer,
    "check_constraint": _check_writer,
    "comments": _plain_writer,
}


@pytest.mark.parametrize(("feature", "change"), CELLS)
def test_a_feature_survives_a_change(spark_engine: Engine, feature: str, change: str) -> None:
    check_cell(spark_engine, feature, change)


def check_cell(engine: Engine, feature: str, change: str) -> None:
    result = run_cell(engine, feature, change)
    refusal = REFUSED.get((feature, change))
    if refusal is not None:
        assert isinstance(result, str), f"{feature} × {change} should be refused by the plan"
        assert refusal in result, result
        return
    if isinstance(result, Refused):  # the engine's capability table: before anything ran, with the reason
        assert engine.name == "local", result.reason
        assert "cannot run this migration" in result.reason, result.reason
        assert result.version_after == result.version_before, result
        return
    assert isinstance(result, Cell), result
    assert_rows_identical_by_key(result)
    PRESENT[feature](result, engine)
    WRITER[feature](result, engine)


# On the embedded engine each cell runs to the same end, or is refused before anything changes.
LOCAL_FIRST_TIER = {
    ("generated_column", "versioned_change"),
    ("row_tracking_deletion_vectors", "drop_column"),
}
LOCAL_CELLS = [
    pytest.param(feature, change, marks=() if (feature, change) in LOCAL_FIRST_TIER else (EXHAUSTIVE,))
    for feature in FEATURES
    for change in CHANGES
]


@pytest.mark.parametrize(("feature", "change"), LOCAL_CELLS)
def test_local_keeps_a_feature_or_refuses_before_anything(
    local_engine: Engine, feature: str, change: str
) -> None:
    check_cell(local_engine, feature, change)


def test_a_rename_with_a_default_keeps_what_an_old_producer_wrote(spark_engine: Engine) -> None:
    """Item 5: during the window an old producer inserts (txn_id, …, status) only; the new column `state`
    has no default yet, so the catch-up copies the producer's value and the drop's pre-check finds none
    missing. Before the fix `state` got 'new' from its default, the catch-up skipped the row and the drop
    lost 'held'."""
    schema = fresh_schema(spark_engine)
    old, new = contracts("literal_default", "rename_column", schema)
    created, state = plan(None, old, Target.DELTA_4)
    apply_all(spark_engine, created)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    defaults = [op for op in migration.ops if isinstance(op, SetColumnDefault)]
    assert [op.phase.value for op in defaults] == ["contract"], [op.summary() for op in migration.ops]
    kinds = [op.kind for op in migration.phase(migration.ops[-1].phase)]
    assert kinds.index("drop_columns") < kinds.index("set_column_default"), kinds
    for phase in ("expand", "populate"):
        for op in migration.ops:
            if op.phase.value == phase:
                spark_engine.apply_op(op)
    insert(
        spark_engine,
        state.physical,
        {"txn_id": "p1", "amount": 3, "status": "held", "txn_date": NEW_ROW["txn_date"]},
    )
    for op in migration.ops:
        if op.phase.value in ("cutover", "contract"):
            spark_engine.apply_op(op)
    assert rows_of(spark_engine, state.physical)["p1"]["state"] == "held"


# Every feature at once (clustering instead of partitioning): what `init --from-table` adopts, created again
# in another schema, must give the same table definition.
KITCHEN_SINK = [
    "identity_by_default",
    "generated_column",
    "expression_default",
    "literal_default",
    "liquid_clustering",
    "change_data_feed",
    "row_tracking_deletion_vectors",
    "column_mapping",
    "check_constraint",
    "comments",
]


def definition(engine: Engine, table: Any) -> dict[str, Any]:
    """A table's definition as Delta stores it, field by field (nothing of the contract): each column's type,
    nullability, comment, default, identity and generation expression (log metadata), the CHECKs, the
    properties a user sets (not Delta's bookkeeping, not the contract stamp), partitioning, clustering (the
    domain metadata, through DESCRIBE DETAIL) and the table features."""
    from delta_contracts.sql.normalize import normalized

    live = engine.describe(table)
    assert live is not None
    found = detail(engine, table)
    fields = log_fields(live.location)
    return {
        "columns": [
            {
                "name": c.name,
                "type": c.type,
                "nullable": c.nullable,
                "comment": c.comment,
                "default": c.default,
                "identity": c.identity,
                "generated": None if c.generated is None else normalized(c.generated),
                # Delta's own per-table bookkeeping left out: physical names and ids of column mapping, and
                # an identity's high-water mark (the ids the table has given, not its definition)
                "log_metadata_keys": sorted(
                    k
                    for k in fields[c.name]["metadata"]
                    if not k.startswith("delta.columnMapping") and k != "delta.identity.highWaterMark"
                ),
            }
            for c in live.columns
        ],
        "checks": dict(live.checks),
        "properties": {
            k: v
            for k, v in live.properties.items()
            if k not in BOOKKEEPING_PROPERTIES and not k.startswith("delta_contracts.")
        },
        "partitioning": list(live.partition_columns),
        "clustering": found["clusteringColumns"],
        "features": sorted(found["tableFeatures"]),
        "comment": live.comment,
    }


@pytest.mark.parametrize(
    "features",
    [pytest.param(KITCHEN_SINK, id="every-feature")]
    + [pytest.param([f], id=f, marks=EXHAUSTIVE) for f in FEATURES],
)
def test_an_adopted_table_created_elsewhere_has_the_same_definition(
    spark_engine: Engine, features: list[str]
) -> None:
    from delta_contracts.contract.model import Contract
    from delta_contracts.tables.adopt import contract_data
    from delta_contracts.tables.create import create_table

    schema = fresh_schema(spark_engine)
    doc = copy.deepcopy(BASE_DOC)
    doc["id"] = f"{schema}.orders"
    for feature in features:
        FEATURES[feature](doc)
    original = Contract.model_validate(doc)
    created, state = plan(None, original, Target.DELTA_4)
    apply_all(spark_engine, created)
    insert(spark_engine, state.physical, dict(NEW_ROW, status="open"))
    live = spark_engine.describe(state.physical)
    assert live is not None
    adopted = contract_data(live, state.physical)
    elsewhere = fresh_schema(spark_engine)
    data = {**adopted.data, "id": f"{elsewhere}.orders", "owner": {"team": "orders"}}
    assert create_table(spark_engine, Contract.model_validate(data)).created
    copied, first = definition(spark_engine, (elsewhere, "orders")), definition(spark_engine, state.physical)
    for field in first:  # field by field, so that a difference names its field
        if field == "columns":
            for was, now in zip(first["columns"], copied["columns"], strict=True):
                assert now == was, (was, now)
        assert copied[field] == first[field], field
