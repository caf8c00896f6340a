"""create_table round-trips every example; out-of-band changes are drift, data changes are not."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from delta_contracts.contract.load import contract_files, load_contract
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.plan.planner import initial_state
from delta_contracts.state.ledger import Ledger
from delta_contracts.state.record import TableRecord
from delta_contracts.tables.create import ContractMismatchError, create_table
from delta_contracts.tables.drift import commit_drift, table_drift
from tests.engine.conftest import location_of

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = {
    load_contract(p).contract.id: load_contract(p).contract for p in contract_files([REPO / "contracts"])
}
_counter = itertools.count()


def renamed(contract: Contract) -> Contract:
    """The example under a fresh schema name, so every test gets its own table."""
    return contract.model_copy(update={"id": f"drift{next(_counter)}.{contract.table_parts[-1]}"})


def drift_of(engine: Engine, contract: Contract) -> list[str]:
    physical = initial_state(contract).physical
    items = table_drift(contract, engine.describe(physical), physical)
    record = TableRecord(contract.id, (), Ledger(engine.state_dir).entries([contract.id]))
    items += commit_drift(engine.history(physical), lambda version: record.claimed(physical, version))
    return [f"{i.kind}:{i.subject}" for i in items if i.is_drift]


@pytest.mark.parametrize("contract_id", sorted(EXAMPLES))
def test_examples_round_trip_without_drift(local_or_spark: Engine, contract_id: str) -> None:
    contract = renamed(EXAMPLES[contract_id])
    result = create_table(local_or_spark, contract)
    assert result.created
    assert drift_of(local_or_spark, contract) == []
    again = create_table(local_or_spark, contract)  # an existing, matching table is verified, not re-created
    assert not again.created and again.outcomes == ()


def _delta_rs(engine: Engine, contract: Contract) -> object:
    from deltalake import DeltaTable

    return DeltaTable(location_of(engine, initial_state(contract).physical))


def add_column(engine: Engine, contract: Contract) -> None:
    from deltalake.schema import Field

    _delta_rs(engine, contract).alter.add_columns([Field("sneaky", "string")])  # type: ignore[attr-defined]


def drop_constraint(engine: Engine, contract: Contract) -> None:
    _delta_rs(engine, contract).alter.drop_constraint("customer_id_min")  # type: ignore[attr-defined]


def change_property(engine: Engine, contract: Contract) -> None:
    _delta_rs(engine, contract).alter.set_table_properties(  # type: ignore[attr-defined]
        {"quality.tier": "bronze"}, raise_if_not_exists=False
    )


def change_comment(engine: Engine, contract: Contract) -> None:
    _delta_rs(engine, contract).alter.set_column_metadata("email", {"comment": "changed by hand"})  # type: ignore[attr-defined]


def widen_type(engine: Engine, contract: Contract) -> None:
    schema, name = initial_state(contract).physical
    engine.sql(f"ALTER TABLE `{schema}`.`{name}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    widen = f"ALTER TABLE `{schema}`.`{name}` ALTER COLUMN `lifetime_value` TYPE DECIMAL(16,2)"
    if engine.name == "local":  # Sail does not look at CHECKs here
        engine.sql(widen)
        return
    # delta-spark refuses to retype a column a CHECK reads (DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE): one
    # drops the rule, widens, and adds the same rule back.
    live = engine.describe((schema, name))
    assert live is not None
    rule = live.check("lifetime_value_min")
    engine.sql(f"ALTER TABLE `{schema}`.`{name}` DROP CONSTRAINT `lifetime_value_min`")
    engine.sql(widen)
    engine.sql(f"ALTER TABLE `{schema}`.`{name}` ADD CONSTRAINT `lifetime_value_min` CHECK ({rule})")


def change_data(engine: Engine, contract: Contract) -> None:
    schema, name = initial_state(contract).physical
    engine.sql(
        f"INSERT INTO `{schema}`.`{name}` VALUES (7, 'a@example.com', 'IN', 'smb', 12.50, "
        "TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-02 00:00:00')"
    )
    engine.sql(f"UPDATE `{schema}`.`{name}` SET `segment` = 'enterprise' WHERE `customer_id` = 7")
    engine.sql(f"DELETE FROM `{schema}`.`{name}` WHERE `customer_id` = 7")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (add_column, {"extra-column:sneaky", "out-of-band-commit"}),
        (drop_constraint, {"check-missing:customer_id_min", "out-of-band-commit"}),
        (change_property, {"property:quality.tier", "out-of-band-commit"}),
        (change_comment, {"comment:email", "out-of-band-commit"}),
        (widen_type, {"type:lifetime_value", "out-of-band-commit"}),
        (change_data, set()),
    ],
    ids=["add-column", "drop-constraint", "change-property", "change-comment", "widen-type", "data-only"],
)
def test_out_of_band_changes(
    local_or_spark: Engine, change: Callable[[Engine, Contract], None], expected: set[str]
) -> None:
    # delta-rs (the out-of-band writer here) cannot commit to a table with column defaults: drop them.
    base = EXAMPLES["sales.customers"]
    columns = tuple(c.model_copy(update={"default": None}) for c in base.columns)
    contract = renamed(base.model_copy(update={"columns": columns}))
    create_table(local_or_spark, contract)
    change(local_or_spark, contract)
    found = drift_of(local_or_spark, contract)
    assert {f.split(":")[0] if f.startswith("out-of-band") else f for f in found} == expected, found
    if expected:
        with pytest.raises(ContractMismatchError):
            create_table(local_or_spark, contract)


def test_violating_row_fails_with_the_delta_error_class(local_or_spark: Engine) -> None:
    contract = renamed(EXAMPLES["sales.customers"])
    create_table(local_or_spark, contract)
    schema, name = initial_state(contract).physical
    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        local_or_spark.sql(  # country_code 'XX' is outside the contract's enum
            f"INSERT INTO `{schema}`.`{name}` VALUES (8, 'b@example.com', 'XX', 'smb', 1.00, "
            "TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-02 00:00:00')"
        )


def test_a_second_process_sees_tables_and_views(tmp_path: Path) -> None:
    versioned = EXAMPLES["sales.orders"]  # versioned: a table orders__v3 behind the view orders
    with LocalEngine(tmp_path) as first:
        create_table(first, versioned)
        first.sql(
            "INSERT INTO `sales`.`orders__v3` VALUES (1, 2, 300, 'PLACED', 'web', DATE'2024-01-01', "
            "TIMESTAMP'2024-01-01 10:00:00')"
        )
    script = textwrap.dedent(
        f"""
        from delta_contracts.engine.local.engine import LocalEngine
        with LocalEngine({str(tmp_path)!r}) as second:
            print(second.sql("SELECT count(*) AS n FROM `sales`.`orders`")[0]["n"])
            print(second.sql("SELECT `order_total` FROM `sales`.`orders__v3`")[0]["order_total"])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "300"]


def test_versioned_table_needs_its_alias_view(local_or_spark: Engine) -> None:
    from delta_contracts.tables.drift import alias_drift

    contract = renamed(EXAMPLES["sales.orders"])
    create_table(local_or_spark, contract)
    physical = initial_state(contract).physical
    assert physical[-1] == "orders__v3"
    assert alias_drift(contract, physical, local_or_spark.views()) == []
    schema = contract.table_parts[0]
    local_or_spark.sql(f"CREATE OR REPLACE VIEW `{schema}`.`orders` AS SELECT 1 AS `x`")  # pointed elsewhere
    (item,) = alias_drift(contract, physical, {contract.table_parts: "SELECT 1 AS `x`"})
    assert item.kind == "alias-view" and "does not read" in item.message
    (missing,) = alias_drift(contract, physical, {})
    assert "is missing" in missing.message


def test_what_the_local_engine_cannot_do_is_refused_before_anything_runs(local_engine: Engine) -> None:
    from delta_contracts.engine.base import EngineError

    base = EXAMPLES["payments.transactions"]
    hostile = base.model_copy(
        update={
            "id": f"drift{next(_counter)}.hostile",
            "table": base.table.model_copy(update={"properties": {"delta.columnMapping.mode": "name"}}),
            "columns": (
                *base.columns,
                base.columns[1].model_copy(update={"name": "amount; paid", "checks": base.columns[2].checks}),
            ),
        }
    )
    with pytest.raises(
        EngineError, match=r"stores CHECK expressions without identifier quotes.*amount; paid"
    ):
        create_table(local_engine, hostile)
    assert local_engine.describe(initial_state(hostile).physical) is None  # nothing half-created


def test_clustering_keys_are_checked(spark_engine: Engine) -> None:
    base = EXAMPLES["payments.transactions"]  # partitioned in the example: cluster it instead
    table = base.table.model_copy(update={"partitioned_by": (), "clustered_by": ("txn_date",)})
    contract = renamed(base.model_copy(update={"table": table}))
    spark_engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{contract.table_parts[0]}`")
    create_table(spark_engine, contract)
    assert drift_of(spark_engine, contract) == []
    other = contract.model_copy(update={"table": table.model_copy(update={"clustered_by": ("txn_id",)})})
    assert drift_of(spark_engine, other) == ["clustering:"]


def test_a_rule_the_engine_cannot_type_creates_nothing(engine: Engine) -> None:
    from delta_contracts.contract.model import Checks
    from delta_contracts.engine.base import EngineError

    base = EXAMPLES["sales.customers"]  # created_at is a timestamp: `created_at >= 0` does not type
    columns = tuple(
        c.model_copy(update={"checks": Checks(min=0)}) if c.name == "created_at" else c for c in base.columns
    )
    contract = renamed(base.model_copy(update={"columns": columns}))
    with pytest.raises(EngineError, match=r"nothing was created:\n  CHECK created_at_min"):
        create_table(engine, contract)
    assert engine.describe(initial_state(contract).physical) is None


def test_an_op_failing_after_the_table_exists_leaves_no_table(local_or_spark: Engine) -> None:
    from delta_contracts.contract.model import TableConstraint

    base = EXAMPLES["sales.customers"]  # an aggregate: a SELECT accepts it, a CHECK constraint does not
    odd = TableConstraint(name="coin_flip", expression="max(customer_id) > 0")
    contract = renamed(base.model_copy(update={"constraints": (*base.constraints, odd)}))
    # the engine's own error (the precondition query fails), raised as it is once the create is undone
    with pytest.raises(
        Exception, match=r"(?i)aggregate[\s\S]*nothing was left behind: the create was undone"
    ):
        create_table(local_or_spark, contract)
    assert local_or_spark.describe(initial_state(contract).physical) is None


def test_date_and_timestamp_bounds_are_enforced(local_or_spark: Engine) -> None:
    from datetime import datetime

    from delta_contracts.contract.model import Checks

    base = EXAMPLES["sales.customers"]
    since = Checks(min=datetime(2020, 1, 1))
    columns = tuple(
        c.model_copy(update={"checks": since}) if c.name == "created_at" else c for c in base.columns
    )
    contract = renamed(base.model_copy(update={"columns": columns}))
    create_table(local_or_spark, contract)
    assert drift_of(local_or_spark, contract) == []
    schema, name = initial_state(contract).physical
    row = "(9, 'c@example.com', 'IN', 'smb', 1.00, TIMESTAMP'{}', TIMESTAMP'2024-01-02 00:00:00')"
    local_or_spark.sql(f"INSERT INTO `{schema}`.`{name}` VALUES " + row.format("2024-01-01 00:00:00"))
    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        local_or_spark.sql(f"INSERT INTO `{schema}`.`{name}` VALUES " + row.format("2019-12-31 23:59:59"))
    assert local_or_spark.sql(f"SELECT count(*) AS n FROM `{schema}`.`{name}`") == [{"n": 1}]
