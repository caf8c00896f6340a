"""The sunset gate of `apply` over a readers log collected from a query history: a stale log or a reader of
the dropped column in the lookback keeps the drop held and is named; a clean, fresh log and a passed window
let it run."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.apply.runner import OpStatus
from delta_contracts.contract.load import load_contract
from delta_contracts.engine.base import Engine
from delta_contracts.engine.memory.engine import MemoryEngine
from delta_contracts.engine.spark.engine import SparkEngine
from delta_contracts.plan.migrations import load_history
from delta_contracts.state.ledger import Status
from delta_contracts.state.record import TableRecord, open_ledger
from delta_contracts.telemetry.objects import watched_on
from delta_contracts.telemetry.pipeline import collect
from delta_contracts.telemetry.sources import parse_source, read_source
from tests.engine.apply_support import REPO, insert_rows, with_schema

pytestmark = pytest.mark.engine


@pytest.fixture
def own_engine(runner_engine: Engine, tmp_path: Path) -> Engine:
    """The engine with a state dir of the test's own: the gate counts every source of the readers log in it,
    so a source another test collected would decide this test's gate. The gate's decisions are the runner's
    (the in-memory engine); delta-spark, the reference, in the exhaustive tier."""
    if runner_engine.name == "spark":
        return SparkEngine(runner_engine.spark, tmp_path / "state")  # type: ignore[attr-defined]
    return MemoryEngine(tmp_path / "state")


@pytest.fixture
def reader(own_engine: Engine, request: pytest.FixtureRequest) -> Any:
    """The Spark session that reads the query-history exports: the engine's own, else the embedded one's."""
    if own_engine.name == "spark":
        return own_engine.spark  # type: ignore[attr-defined]
    return request.getfixturevalue("local_engine").spark


def _export(path: Path, rows: list[tuple[str, str, datetime]]) -> Path:
    """A Databricks query-history export (JSON lines) of (user, statement, time)."""
    with path.open("w", encoding="utf-8") as out:
        for n, (user, text, at) in enumerate(rows):
            row = {"statement_id": f"{path.stem}-{n}", "statement_text": text, "executed_by": user,
                   "start_time": at.isoformat(), "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    return path


def _dashboard(schema: str, times: list[datetime]) -> list[tuple[str, str, datetime]]:
    statement = f"SELECT status, count(*) FROM {schema}.orders GROUP BY status"
    return [("dashboard", statement, at) for at in times]


def _collect(engine: Engine, spark: Any, contract: str, export: Path, now: datetime) -> None:
    model = load_contract(REPO / "contracts" / "sales" / "orders.yaml").contract
    watched = watched_on(engine, [model.model_copy(update={"id": contract})])
    frame = read_source(spark, parse_source(f"query-history:{export}"))
    collect(spark, frame, "history", watched, engine.state_dir, now=now)


def test_a_stale_or_read_log_holds_the_drop_and_a_clean_fresh_log_lets_it_run(
    own_engine: Engine, reader: Any, tmp_path: Path
) -> None:
    """One table through three readers logs, the deprecation window passed: a clean log last collected 13 days
    ago (stale: it says nothing of the days since; `readers_freshness` decides), a fresh log with a reader of
    the dropped column, then a fresh log without one, which lets the drops run."""
    engine = own_engine
    root, contract = with_schema(engine, tmp_path)
    schema = contract.split(".")[0]
    assert apply(engine, root, tables=[contract], to_version="1.0.0").exit_code == 0
    insert_rows(engine, schema)
    assert apply(engine, root, tables=[contract], to_version="2.0.0").exit_code == 0
    stored = load_history(root / contract)[2]
    drop = stored.migration.ops[11]  # 0003 op 12: drops coupon_code, marked deprecated by op 7
    assert drop.kind == "drop_columns" and drop.gate.objects == (f"{schema}.orders.coupon_code",)  # type: ignore[attr-defined]
    record = TableRecord(contract, (), open_ledger(engine).entries([contract]))
    marked = record.marked_at(stored.migration_id, 7)  # when the mark op finished
    assert marked is not None
    now = marked + timedelta(days=31)  # the P30D deprecation window has passed

    # A clean log collected up to 13 days before `now` (inside the 14-day lookback).
    old = _dashboard(schema, [now - timedelta(days=d) for d in range(40, 12, -1)])
    _collect(engine, reader, contract, _export(tmp_path / "old.jsonl", old), now - timedelta(days=13))
    stale = apply(engine, root, tables=[contract], to_version="2.0.0", clock=lambda: now)
    # Both drops say what holds them (the stale log), not only the first one.
    first, second = stale.waiting
    (reason,) = first.reasons
    assert reason.startswith("stale readers log: source history was collected up to ")
    assert "(telemetry.freshness)" in reason
    assert second.index == 13
    assert second.reasons == (reason, f"and {stored.migration_id} op 12 is held by its gate")
    lenient = apply(
        engine,
        root,
        tables=[contract],
        to_version="2.0.0",
        clock=lambda: now,
        readers_freshness=timedelta(days=14),
        dry_run=True,
    )
    assert lenient.exit_code == 0 and not lenient.waiting
    would = {r.index: r.status for r in lenient.reports if r.migration_id == stored.migration_id}
    assert would[12] is OpStatus.PLANNED and would[13] is OpStatus.PLANNED

    # 20 days of history up to an hour ago: a dashboard reads the table daily, finance-recon read the
    # deprecated column three days ago (inside the 14-day lookback).
    days = [now - timedelta(days=d, hours=1) for d in range(20, -1, -1)]
    history = _dashboard(schema, days)
    history.append(("finance-recon", f"SELECT order_id, coupon_code FROM {schema}.orders", days[-4]))
    _collect(engine, reader, contract, _export(tmp_path / "day0.jsonl", history), now)

    held = apply(engine, root, tables=[contract], to_version="2.0.0", clock=lambda: now)
    assert held.exit_code == 0
    (waiting,) = held.waiting
    assert (waiting.migration_id, waiting.index) == (stored.migration_id, 12)
    (reason,) = waiting.reasons  # the window passed and the log is fresh: only the reader holds it
    assert reason.startswith(f"{schema}.orders.coupon_code: 1 reader(s) since ")
    assert reason.endswith("finance-recon (Databricks SQL)")
    live = engine.describe((schema, "orders"))
    assert live is not None and live.column("coupon_code") is not None

    # 15 days on, the daily collection went on and finance-recon stopped: nobody read coupon_code since
    # the new window's start, the log is fresh, and the drops run, not forced.
    later = now + timedelta(days=15)
    clean = _dashboard(schema, [later - timedelta(days=d, hours=1) for d in range(15, -1, -1)])
    _collect(engine, reader, contract, _export(tmp_path / "day15.jsonl", clean), later)
    opened = apply(engine, root, tables=[contract], to_version="2.0.0", clock=lambda: later)
    assert opened.exit_code == 0 and not opened.waiting
    ran = {r.index: r.status for r in opened.reports if r.migration_id == stored.migration_id}
    assert ran[12] is OpStatus.SUCCEEDED and ran[13] is OpStatus.SUCCEEDED
    live = engine.describe((schema, "orders"))
    assert live is not None and live.column("coupon_code") is None and live.column("amount") is None
    last = open_ledger(engine).entries([contract])[-1]
    assert last.status == Status.SUCCEEDED and last.reason == ""
