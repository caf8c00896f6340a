"""Pinned reads of sales.orders across its committed history (migrations/sales.orders, copied under a schema
of the test's own), applied step by step with the apply API.

1.x lived in place; 2.0.0 renamed amount in place (the 1.x columns stay, deprecated, until the contract
phase drops them: that is what serves ^1, then ^1 fails); 3.0.0 moved to a versioned table behind the alias
view, the 2.0.0 table deprecated and, after its drop, replaced by a compatibility view (that is what serves
^2 from then on: no committed migration drops it). No version of this history leaves a compatibility view in
the 1.x shape, since 1.x -> 2.0.0 was in place: the deprecated 1.x columns play that part for ^1.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.quality.read import (
    DeprecatedVersionWarning,
    PinNotServedError,
    parse_spec,
    read,
    resolve,
    unreadable_view,
)
from delta_contracts.tables.drift import compatibility_drift
from tests.engine.apply_support import ROWS, insert_rows, with_schema

pytestmark = pytest.mark.engine


def served(engine: Engine, contract: str, spec: str, migrations: Path) -> tuple[str, str, str]:
    found = resolve(engine, contract, spec, migrations=migrations)
    return found.kind, found.version, found.name.split(".", 1)[1]


def test_specs() -> None:
    assert parse_spec("^2").allows("2.9.1") and not parse_spec("^2").allows("3.0.0")
    assert parse_spec("~2.1").allows("2.1.7") and not parse_spec("~2.1").allows("2.2.0")
    assert parse_spec("2.1.0").allows("2.1.0") and not parse_spec("2.1.0").allows("2.1.1")
    assert parse_spec("2.x").allows("2.0.0") and parse_spec("^0.3").allows("0.3.9")
    assert not parse_spec("^0.3").allows("0.4.0")
    with pytest.raises(ValueError, match="not a version spec"):
        parse_spec(">=2")


def test_pinned_reads_across_the_orders_history(engine: Engine, tmp_path: Path) -> None:
    """Each step is applied with the apply API, its contract phase held by the gate until forced."""
    migrations, contract = with_schema(engine, tmp_path)
    schema = contract.split(".")[0]

    def step(to_version: str | None = None, force: str | None = None) -> list[str]:
        """Apply up to `to_version`; return the ops left waiting at a shut gate ("<migration>/<op>")."""
        result = apply(engine, migrations, tables=[contract], to_version=to_version, force_reason=force)
        assert result.exit_code == 0, (result.refused, result.failure)
        return [f"{r.migration_id[:4]}/{r.index}" for r in result.waiting]

    def pinned(spec: str) -> tuple[str, str, str]:
        return served(engine, contract, spec, migrations)

    def pinned_read(spec: str) -> Any:
        return read(engine, contract, spec, migrations=migrations)

    assert step("1.0.0") == []
    insert_rows(engine, schema, ROWS[:1])
    assert pinned("^1") == ("in_place", "1.0.0", "orders")
    assert step("1.1.0") == []
    assert pinned("^1") == ("in_place", "1.1.0", "orders")

    # 2.0.0 renames amount in place: 1.x readers keep their columns, deprecated, while the drop waits
    assert step("2.0.0") == ["0003/12", "0003/13"]  # each held drop listed, with its own reasons
    assert pinned("^2") == ("in_place", "2.0.0", "orders")
    # the pin gets 2.0.0's shape, not the deprecated 1.x columns still in the table awaiting their drop
    shape_2 = [c.name for c in load_history(migrations / contract)[2].contract.columns]
    assert engine.describe((schema, "orders")).column("amount") is not None  # type: ignore[union-attr]
    assert "amount" not in shape_2 and pinned_read("^2").columns == shape_2
    assert pinned("^1") == ("deprecated_columns", "1.1.0", "orders")
    with pytest.warns(DeprecatedVersionWarning, match=r"orders 1.1.0 .* move to \S+ 2.0.0.*window left"):
        old = pinned_read("^1")
    assert old.columns == [c.name for c in load_history(migrations / contract)[1].contract.columns]
    assert [str(r["amount"]) for r in old.collect()] == ["12.00"]
    # the contract phase, forced past its window: the 1.x columns are dropped and ^1 fails, saying why
    assert step("2.0.0", force="test: 1.x readers moved") == []
    assert engine.describe((schema, "orders")).column("amount") is None  # type: ignore[union-attr]
    with pytest.raises(
        PinNotServedError, match=r"(?s)\^1 is not served any more.*2.0.0: column amount renamed"
    ):
        pinned_read("^1")

    # 3.0.0 moves to a versioned table behind the alias view; the 2.0.0 table waits for its drop
    assert step() == ["0004/12"]
    assert pinned("^3") == ("alias_view", "3.0.0", "orders")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current version reads without a warning
        current = pinned_read("^3")
    assert [(r["order_id"], r["order_total"]) for r in current.collect()] == [(1, 1200)]  # minor units
    assert pinned("^2") == ("versioned_table", "2.0.0", "orders__v2")
    with pytest.warns(DeprecatedVersionWarning, match="deprecation window left"):
        pinned_read("^2")

    # its contract phase, forced: the 2.0.0 table is dropped and a compatibility view serves ^2 instead
    assert step(force="test: 2.0.0 readers moved") == []
    assert engine.describe((schema, "orders__v2")) is None
    assert pinned("^2") == ("compatibility_view", "2.0.0", "orders__v2")
    with pytest.warns(DeprecatedVersionWarning, match="compatibility_view"):
        compat = pinned_read("~2.0")
    assert [str(r["order_total"]) for r in compat.collect()] == ["12.00"]
    with pytest.raises(PinNotServedError, match=r"read version \^3 instead"):
        pinned_read("^1")
    with pytest.raises(PinNotServedError, match=r"no version matching \^4"):
        pinned_read("^4")

    # a later drop on the 3.x table of a column the 2.0.0 compatibility view reads (customer_id): ^2 is not
    # served any more, and read, drift and status say so instead of failing on the view
    history = load_history(migrations / contract)
    mapping, drop = history[2].migration.ops[0], history[2].migration.ops[11]
    v3 = (schema, "orders__v3")
    engine.apply_op(replace(mapping, table=v3))
    engine.apply_op(replace(drop, table=v3, columns=("customer_id",)))
    with pytest.raises(PinNotServedError, match=r"compatibility view \S+orders__v2 .* no longer reads"):
        pinned_read("~2.0")
    latest = history[-1].contract
    items = compatibility_drift(latest, engine.views(), lambda view: unreadable_view(engine, view))
    assert [(i.kind, i.subject) for i in items] == [("compatibility-view", f"{schema}.orders__v2")]
