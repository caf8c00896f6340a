"""Pinned reads of sales.orders across its committed history (migrations/sales.orders), op by op.

1.x lived in place; 2.0.0 renamed amount in place (the 1.x columns stay, deprecated, until the contract
phase drops them); 3.0.0 moved to a versioned table behind the alias view, the 2.0.0 table deprecated and,
after its drop, replaced by a compatibility view.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.plan.ops import Phase
from delta_contracts.quality.read import (
    DeprecatedVersionWarning,
    PinNotServedError,
    parse_spec,
    read,
    resolve,
)

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]
MIGRATIONS = REPO / "migrations"


@pytest.fixture
def orders_engine(engine: Engine) -> Iterator[Engine]:
    yield engine
    for view in ("`sales`.`orders`", "`sales`.`orders__v2`"):
        if engine.name == "spark":
            engine.sql(f"DROP VIEW IF EXISTS {view}")
    if engine.name == "spark":
        for table in ("`sales`.`orders`", "`sales`.`orders__v2`", "`sales`.`orders__v3`"):
            engine.sql(f"DROP TABLE IF EXISTS {table}")


def served(engine: Engine, spec: str) -> tuple[str, str, str]:
    found = resolve(engine, "sales.orders", spec, migrations=MIGRATIONS)
    return found.kind, found.version, found.name


def test_specs() -> None:
    assert parse_spec("^2").allows("2.9.1") and not parse_spec("^2").allows("3.0.0")
    assert parse_spec("~2.1").allows("2.1.7") and not parse_spec("~2.1").allows("2.2.0")
    assert parse_spec("2.1.0").allows("2.1.0") and not parse_spec("2.1.0").allows("2.1.1")
    assert parse_spec("2.x").allows("2.0.0") and parse_spec("^0.3").allows("0.3.9")
    assert not parse_spec("^0.3").allows("0.4.0")
    with pytest.raises(ValueError, match="not a version spec"):
        parse_spec(">=2")


def test_pinned_reads_across_the_orders_history(orders_engine: Engine, tmp_path: Path) -> None:
    engine = orders_engine
    engine.sql("CREATE SCHEMA IF NOT EXISTS `sales`")
    first, second, third, fourth = load_history(MIGRATIONS / "sales.orders")

    def apply(ops: object) -> None:
        for op in ops:  # type: ignore[attr-defined]
            engine.apply_op(op)

    apply(first.migration.ops)
    engine.sql(
        "INSERT INTO `sales`.`orders` VALUES (1, 7, 12.00, 'PLACED', DATE'2026-11-01', "
        "TIMESTAMP'2026-11-01 10:00:00')"
    )
    assert served(engine, "^1") == ("in_place", "1.0.0", "sales.orders")
    apply(second.migration.ops)
    assert served(engine, "^1") == ("in_place", "1.1.0", "sales.orders")

    expanding = [op for op in third.migration.ops if op.phase is not Phase.CONTRACT]
    apply(expanding)
    assert served(engine, "^2") == ("in_place", "2.0.0", "sales.orders")
    # 1.x readers keep their columns (deprecated) until the contract phase drops them
    assert served(engine, "^1") == ("deprecated_columns", "1.1.0", "sales.orders")
    with pytest.warns(DeprecatedVersionWarning, match=r"sales.orders 1.1.0 .* move to sales.orders 3.0.0"):
        old = read(engine, "sales.orders", "^1", migrations=MIGRATIONS)
    assert old.columns == [c.name for c in second.contract.columns]
    assert [str(r["amount"]) for r in old.collect()] == ["12.00"]
    apply([op for op in third.migration.ops if op.phase is Phase.CONTRACT])
    with pytest.raises(
        PinNotServedError, match=r"(?s)\^1 is not served any more.*2.0.0: column amount renamed"
    ):
        read(engine, "sales.orders", "^1", migrations=MIGRATIONS)

    apply([op for op in fourth.migration.ops if op.phase is not Phase.CONTRACT])
    assert served(engine, "^3") == ("alias_view", "3.0.0", "sales.orders")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current version reads without a warning
        current = read(engine, "sales.orders", "^3", migrations=MIGRATIONS)
    assert [(r["order_id"], r["order_total"]) for r in current.collect()] == [(1, 1200)]  # minor units
    assert served(engine, "^2") == ("versioned_table", "2.0.0", "sales.orders__v2")
    with pytest.warns(DeprecatedVersionWarning, match="deprecation window left"):
        read(engine, "sales.orders", "^2", migrations=MIGRATIONS)

    apply([op for op in fourth.migration.ops if op.phase is Phase.CONTRACT])  # drop, then compatibility view
    assert served(engine, "^2") == ("compatibility_view", "2.0.0", "sales.orders__v2")
    with pytest.warns(DeprecatedVersionWarning, match="compatibility_view"):
        compat = read(engine, "sales.orders", "~2.0", migrations=MIGRATIONS)
    assert [str(r["order_total"]) for r in compat.collect()] == ["12.00"]
    with pytest.raises(PinNotServedError, match=r"read version \^3 instead"):
        read(engine, "sales.orders", "^1", migrations=MIGRATIONS)
    with pytest.raises(PinNotServedError, match=r"no version matching \^4"):
        read(engine, "sales.orders", "^4", migrations=MIGRATIONS)
