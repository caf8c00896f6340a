"""Each environment's drop gate counts its own deprecation window and its own readers: the window runs from
when the mark was set in *that* environment (its ledger), and only the readers collected into that
environment's readers log (its warehouse's `_delta_contracts`) hold its drop. Staging and prod here are two
in-memory engines' warehouses with their own table names, run as `apply --env` runs them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import ApplyResult, apply
from delta_contracts.apply.runner import OpStatus
from delta_contracts.contract.environments import NameMapping, contract_in_environment
from delta_contracts.contract.load import load_contract
from delta_contracts.engine.base import Engine
from delta_contracts.engine.memory.engine import MemoryEngine
from delta_contracts.plan.migrations import load_history
from delta_contracts.state.ledger import Ledger
from delta_contracts.state.record import TableRecord
from delta_contracts.tableid import TableId
from delta_contracts.telemetry.objects import watched_on
from delta_contracts.telemetry.pipeline import collect
from delta_contracts.telemetry.sources import parse_source, read_source
from tests.engine.apply_support import REPO, insert_rows, orders_migrations

pytestmark = pytest.mark.engine

STAGING = NameMapping(schema_prefix="stg_", one_catalog=True)
PROD = NameMapping(template="{schema}_live.{table}", one_catalog=True)


def _export(path: Path, rows: list[tuple[str, str, datetime]]) -> Path:
    """A Databricks query-history export (JSON lines) of (user, statement, time)."""
    with path.open("w", encoding="utf-8") as out:
        for n, (user, text, at) in enumerate(rows):
            row = {"statement_id": f"{path.stem}-{n}", "statement_text": text, "executed_by": user,
                   "start_time": at.isoformat(), "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    return path


Rows = list[tuple[str, str, datetime]]


def _collect(
    engine: Engine, spark: Any, contract: str, names: NameMapping, rows: Rows, export: Path, now: datetime
) -> None:
    """`telemetry collect --env`: the contract under the environment's table name, into its readers log."""
    model = load_contract(REPO / "contracts" / "sales" / "orders.yaml").contract
    model = model.model_copy(update={"id": contract})
    watched = watched_on(engine, [contract_in_environment(model, names)])
    frame = read_source(spark, parse_source(f"query-history:{_export(export, rows)}"))
    collect(spark, frame, "history", watched, engine.state_dir, now=now)


def _drops(result: ApplyResult, migration_id: str) -> dict[int, OpStatus]:
    ours = [r for r in result.reports if r.migration_id == migration_id]
    return {r.index: r.status for r in ours if r.index in (12, 13)}


def test_each_environment_counts_its_own_window_and_its_own_readers(
    local_engine: Engine, tmp_path: Path
) -> None:
    """The gate's decisions are the runner's: the warehouses are in-memory engines' (their state folders on
    disk), and the embedded engine's session reads the query-history exports."""
    reader = local_engine.spark  # type: ignore[attr-defined]
    root, contract = orders_migrations(tmp_path)
    schema = contract.split(".")[0]
    stored = load_history(root / contract)[2]  # 0003: op 7 marks coupon_code deprecated, op 12 drops it
    envs = {"staging": STAGING, "prod": PROD}
    staging = MemoryEngine(tmp_path / "staging" / "_delta_contracts")
    prod = MemoryEngine(tmp_path / "prod" / "_delta_contracts")
    engines = {"staging": staging, "prod": prod}
    marks = {}
    for name in ("staging", "prod"):  # staging first, prod later: prod's mark is set after staging's
        engine, names = engines[name], envs[name]
        assert apply(engine, root, tables=[contract], to_version="1.0.0", names=names).exit_code == 0
        insert_rows(engine, names.physical(TableId((schema, "orders"))).schema)
        held = apply(engine, root, tables=[contract], to_version="2.0.0", names=names)
        assert held.exit_code == 0 and [w.index for w in held.waiting] == [12, 13]
        drop = load_history(root / contract, names)[2].migration.ops[11]
        assert drop.gate.objects == (f"{names.physical(TableId((schema, 'orders')))}.coupon_code",)  # type: ignore[attr-defined]
        record = TableRecord(contract, (), Ledger(engine.state_dir).entries([contract]))
        marks[name] = record.marked_at(stored.migration_id, 7)
    assert marks["staging"] is not None and marks["prod"] is not None
    assert marks["staging"] < marks["prod"]
    for name, prefix in (("staging", f"stg_{schema}."), ("prod", f"{schema}_live.")):
        tables = {e.table for e in Ledger(engines[name].state_dir).entries() if e.op_index}
        assert tables and all(t.startswith(prefix) for t in tables), tables  # its own names only

    # Between the two windows' ends (P30D): staging's has passed, prod's has not. Both logs are fresh and
    # clean, so the window alone decides.
    between = marks["staging"] + (marks["prod"] - marks["staging"]) / 2 + timedelta(days=30)
    for name in ("staging", "prod"):
        table = envs[name].physical(TableId((schema, "orders")))
        clean = [
            ("dashboard", f"SELECT status FROM {table}", between - timedelta(days=d, hours=1))
            for d in range(20, -1, -1)
        ]
        _collect(engines[name], reader, contract, envs[name], clean, tmp_path / f"{name}-0.jsonl", between)
    dry = {
        name: apply(
            engines[name],
            root,
            tables=[contract],
            to_version="2.0.0",
            names=envs[name],
            clock=lambda: between,
            dry_run=True,
        )
        for name in ("staging", "prod")
    }
    assert _drops(dry["staging"], stored.migration_id) == {12: OpStatus.PLANNED, 13: OpStatus.PLANNED}
    waiting = dry["prod"].waiting[0]
    assert waiting.index == 12
    assert any("deprecation window" in r for r in waiting.reasons), waiting.reasons

    # A day after both windows: a reader of coupon_code in staging's log holds staging's drop only;
    # prod's log is clean, and prod's drop runs. Staging's reader read staging's table, which prod's
    # gate never sees; prod's drop is not held by it.
    later = marks["prod"] + timedelta(days=31)
    for name in ("staging", "prod"):
        table = envs[name].physical(TableId((schema, "orders")))
        rows = [
            ("dashboard", f"SELECT status FROM {table}", later - timedelta(days=d, hours=1))
            for d in range(20, -1, -1)
        ]
        if name == "staging":
            read = f"SELECT order_id, coupon_code FROM {table}"
            rows.append(("qa-suite", read, later - timedelta(days=2)))
        _collect(engines[name], reader, contract, envs[name], rows, tmp_path / f"{name}-1.jsonl", later)
    held = apply(staging, root, tables=[contract], to_version="2.0.0", names=STAGING, clock=lambda: later)
    waiting = held.waiting[0]
    (reason,) = waiting.reasons
    assert reason.startswith(f"stg_{schema}.orders.coupon_code: 1 reader(s) since ")
    assert reason.endswith("qa-suite (Databricks SQL)")
    ran = apply(prod, root, tables=[contract], to_version="2.0.0", names=PROD, clock=lambda: later)
    assert ran.exit_code == 0 and not ran.waiting, [w.reasons for w in ran.waiting]
    assert _drops(ran, stored.migration_id) == {12: OpStatus.SUCCEEDED, 13: OpStatus.SUCCEEDED}
    live = prod.describe(TableId((f"{schema}_live", "orders")))
    assert live is not None and live.column("coupon_code") is None
    kept = staging.describe(TableId((f"stg_{schema}", "orders")))
    assert kept is not None and kept.column("coupon_code") is not None
