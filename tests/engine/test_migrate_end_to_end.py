"""The committed history of sales.orders, applied op by op on the embedded engine, twice.

0001 create → 0002 additive → 0003 rename + drop in place → 0004 versioned table behind the view. Rows written
between migrations survive every step; applying a finished migration again changes nothing (state-based
idempotency: every op's postcondition holds, so every op is skipped).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.plan.migrations import load_history

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]


def test_orders_history_applies_and_resumes(tmp_path: Path) -> None:
    history = load_history(REPO / "migrations" / "sales.orders")
    assert [m.migration_id for m in history] == [
        "0001_create_1.0.0",
        "0002_1.0.0_to_1.1.0",
        "0003_1.1.0_to_2.0.0",
        "0004_2.0.0_to_3.0.0",
    ]
    with LocalEngine(tmp_path) as engine:
        for stored in history:
            for i, op in enumerate(stored.migration.ops):
                engine.apply_op(op, tag=f"{stored.migration_id} op {i + 1}")
            # resuming a finished migration: every op is skipped (its postcondition holds)
            again = [engine.apply_op(op) for op in stored.migration.ops]
            assert {o.op_kind for o in again if o.path != "skipped"} == set(), stored.migration_id
            if stored.migration_id.startswith("0001"):
                engine.sql(
                    "INSERT INTO `sales`.`orders` VALUES (1, 7, 12.00, 'PLACED', DATE'2026-11-01', "
                    "TIMESTAMP'2026-11-01 10:00:00')"
                )
            if stored.migration_id.startswith("0002"):
                # the default fills `channel` for existing rows; producers now write the new column
                assert engine.sql("SELECT `channel` FROM `sales`.`orders`")[0]["channel"] == "web"
                engine.sql(  # added columns come last in the table, whatever the contract's order
                    "INSERT INTO `sales`.`orders` (`order_id`, `customer_id`, `amount`, `status`, "
                    "`coupon_code`, `channel`, `order_date`, `created_at`) "
                    "VALUES (2, 8, 30.00, 'SHIPPED', 'SAVE10', 'app', "
                    "DATE'2026-11-02', TIMESTAMP'2026-11-02 10:00:00')"
                )

        rows = engine.sql("SELECT * FROM `sales`.`orders` ORDER BY `order_id`")  # the alias view
        # 3.0.0 holds minor units: the contract's conversion scales (a bare CAST used to truncate cents)
        assert [(r["order_id"], r["order_total"], r["channel"]) for r in rows] == [
            (1, 1200, "web"),
            (2, 3000, "app"),
        ]
        assert set(rows[0]) == {
            "order_id",
            "customer_id",
            "order_total",
            "status",
            "channel",
            "order_date",
            "created_at",
        }
        live = engine.describe(("sales", "orders__v3"))
        assert live is not None and live.properties["delta_contracts.version"] == "3.0.0"
        assert engine.describe(("sales", "orders__v2")) is None  # dropped after the window …
        compat = engine.sql(
            "SELECT * FROM `sales`.`orders__v2` ORDER BY `order_id`"
        )  # … and served as a view
        assert [str(r["order_total"]) for r in compat] == ["12.00", "30.00"]

        last = history[-1].migration.ops  # the whole last migration again, after its contract phase ran
        assert all(engine.apply_op(op).path == "skipped" for op in last)
        assert engine.sql("SELECT count(*) AS n FROM `sales`.`orders`")[0]["n"] == 2
