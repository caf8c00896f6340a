"""`make demo`: the main job end to end on the embedded engine — the life of the example tables.

lint → diff against the last commit → plan --check → in a fresh warehouse: `apply` sales.orders up to 1.0.0,
load rows, `apply` every committed migration (additive; rename + drop in place; versioned table behind the
alias view) — the drops wait at their gates and the demo says why → the other tables created from their
contracts, a row that breaks a CHECK refused by Delta → deprecation telemetry: a consumer that keeps reading
the retired version is collected from a query history, named in the report, and keeps the gate shut →
history, status, drift (and an out-of-band change it finds) → the drops forced with a recorded reason →
a summary with timings. Only the in-place DROP COLUMNS reaches delta-spark (the JVM); the rest runs on Sail.
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer

WAREHOUSE = Path("warehouse") / "demo"
TIMINGS: list[tuple[str, float]] = []


def _run(*argv: str) -> int:
    from delta_contracts.cli import build_app  # the whole command line, which holds this command too

    print(f"\n$ delta-contracts {' '.join(argv)}", flush=True)
    try:
        build_app()(list(argv), standalone_mode=False)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def _step(title: str) -> None:
    TIMINGS.append((title, time.perf_counter()))
    print(f"\n== {title} ==", flush=True)


def _warehouse(*argv: str) -> tuple[str, ...]:
    return (*argv, "--warehouse", str(WAREHOUSE))


def main() -> int:
    from delta_contracts.engine.local.engine import LocalEngine

    started = time.perf_counter()
    _step("the contracts: lint, diff against the last commit, migrations current")
    if _run("lint", "contracts") == 2:
        return 2
    _run("diff", "--base", "HEAD", "contracts")
    if _run("plan", "--check") != 0:
        return 1
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
    WAREHOUSE.mkdir(parents=True)

    _step("sales.orders at 1.0.0, with rows")
    if _run(*_warehouse("apply", "--table", "sales.orders", "--to", "1.0.0")) != 0:
        return 1
    with LocalEngine(WAREHOUSE) as engine:
        engine.sql(
            "INSERT INTO `sales`.`orders` VALUES "
            "(1, 42, 1299.00, 'PLACED', DATE'2026-11-20', TIMESTAMP'2026-11-20 10:00:00'), "
            "(2, 43, 45.00, 'SHIPPED', DATE'2026-11-21', TIMESTAMP'2026-11-21 09:30:00'), "
            "(3, 44, 7.50, 'DELIVERED', DATE'2026-11-21', TIMESTAMP'2026-11-21 11:15:00')"
        )
        print("loaded 3 orders into sales.orders (1.0.0)")

    _step("every committed migration of sales.orders; the drops wait at their gates")
    if _run(*_warehouse("apply", "--table", "sales.orders")) != 0:
        return 1
    with LocalEngine(WAREHOUSE) as engine:
        rows = engine.sql("SELECT `order_id`, `order_total`, `status` FROM `sales`.`orders` ORDER BY 1")
        if ("sales", "orders") in {key[-2:] for key in engine.views()}:
            print("sales.orders (the alias view over sales.orders__v3) now reads:")
        else:  # 3.0.0 is versioned: its cutover waits behind 2.0.0's held drops (docs/migrations.md)
            print("sales.orders (still the 2.0.0 table: 3.0.0's cutover waits behind the held drops) reads:")
        for row in rows:
            print(f"  {row}")

    _step("the other tables, created from their contracts; Delta enforces the rules")
    if _run(*_warehouse("create", "contracts/payments", "contracts/sales/customers.yaml")) != 0:
        return 1
    _refused_row()

    _telemetry()

    _step("what ran, where each table stands, and drift")
    _run(*_warehouse("history", "sales.orders"))
    _run(*_warehouse("status"))
    _run(*_warehouse("drift"))
    print("\nan out-of-band change: somebody drops a CHECK by hand")
    from deltalake import DeltaTable

    DeltaTable(str(WAREHOUSE / "payments" / "transactions")).alter.drop_constraint("currency_regex")
    _run(*_warehouse("drift", "contracts/payments"))

    _step("the owner approves the drops: forced, with the reason recorded")
    reason = "DEMO-1: finance-recon moved to sales.orders (approved by commerce-platform)"
    if _run(*_warehouse("apply", "--table", "sales.orders", "--force", "--reason", reason)) != 0:
        return 1
    _run(*_warehouse("history", "sales.orders"))
    _run(*_warehouse("status", "contracts/sales/orders.yaml"))

    TIMINGS.append(("end", time.perf_counter()))
    print("\n== summary ==")
    for (title, at), (_, after) in itertools.pairwise(TIMINGS):
        print(f"  {after - at:6.1f} s  {title}")
    print(f"  {time.perf_counter() - started:6.1f} s  in all; the warehouse is in {WAREHOUSE}")
    return 0


def _refused_row() -> None:
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(WAREHOUSE) as engine:
        statement = (
            "INSERT INTO `sales`.`orders__v3` VALUES (9, 44, -1, 'PLACED', 'web', DATE'2026-11-22', "
            "TIMESTAMP'2026-11-22 08:00:00')"
        )
        try:
            engine.sql(statement)
        except Exception as refused:  # Sail reports Delta's violation as a Spark Connect AnalysisException
            message = str(refused).strip()
            if "DELTA_VIOLATE_CONSTRAINT" not in message:
                raise
            print(
                f"a negative order_total was refused, as the contract says: {message.splitlines()[0][:140]}"
            )
            return
        raise SystemExit("the row breaking order_total_min was accepted: the CHECK is missing")


def _history(path: Path, batch: str, start: datetime, days: int, still_reading: bool) -> None:
    """A query-history export: a dashboard reads sales.orders daily; `finance-recon` (no declared consumer)
    reads its deprecated `coupon_code` and `amount` while still_reading."""
    rows = []
    for day in range(days):
        at = start + timedelta(days=day, hours=9)
        rows.append(("analytics-mart", "SELECT status, count(*) FROM sales.orders GROUP BY status", at))
        if still_reading:
            rows.append(("finance-recon", f"SELECT coupon_code FROM sales.orders WHERE order_id = {day}", at))
            rows.append(("finance-recon", "SELECT order_id, amount FROM sales.orders WHERE order_id = 1", at))
    if still_reading:  # a broken statement naming the table: a possible reader
        rows.append(("finance-recon", "SELECT amount FROM sales.orders WHERE", start))
    with path.open("w", encoding="utf-8") as out:
        for n, (user, text, at) in enumerate(rows):
            row = {"statement_id": f"{batch}-{n}", "statement_text": text, "executed_by": user,
                   "start_time": at.isoformat(), "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")


def _telemetry() -> None:
    from delta_contracts.telemetry.gate import readers_gate

    _step("deprecation telemetry: who still reads deprecated objects")
    now = datetime.now(UTC).replace(microsecond=0)
    dropped = ["sales.orders__v2", "sales.orders.coupon_code", "sales.orders.amount"]
    # The same source collected daily (here: an export rewritten between runs)
    export = WAREHOUSE / "query_history.jsonl"
    _history(export, "day0", now - timedelta(days=31), 31, still_reading=True)
    _run("telemetry", "collect", "--source", f"query-history:{export}", "--warehouse", str(WAREHOUSE))
    _run("telemetry", "report", "--since", "30d", "--warehouse", str(WAREHOUSE))
    _run("telemetry", "report", "--format", "html", "-o", str(WAREHOUSE / "readers.html"), "--warehouse",
         str(WAREHOUSE))  # fmt: skip
    verdict = readers_gate(WAREHOUSE / "_delta_contracts", dropped, timedelta(days=14), now)
    print(f"sunset gate now: {'open' if verdict.open else 'SHUT'}")
    for reason in verdict.reasons:
        print(f"  {reason}")
    print("\napply meets the same gate: the drops stay held, with the readers named")
    _run(*_warehouse("apply", "--table", "sales.orders"))
    _step("15 days later: finance-recon stopped reading; the daily collection goes on")
    later = now + timedelta(days=15)
    _history(export, "day15", now + timedelta(days=1), 15, still_reading=False)
    _run("telemetry", "collect", "--source", f"query-history:{export}", "--warehouse", str(WAREHOUSE))
    verdict = readers_gate(WAREHOUSE / "_delta_contracts", dropped, timedelta(days=14), later)
    print(f"sunset gate 15 days later: {'open' if verdict.open else 'SHUT'}")
    for reason in verdict.reasons:
        print(f"  {reason}")


def demo_command() -> None:
    """The life of the example tables in a fresh warehouse/demo: apply every committed migration of
    sales.orders, the drops held at their gates and why, telemetry naming a reader, history, status, drift,
    then the drops forced with a recorded reason. Run it from the project's folder (contracts/ below it)."""
    raise typer.Exit(main())
