"""`make demo`: the main job end to end on the embedded engine, over the example contracts.

lint → diff against the last commit → plan --check (the committed migrations are current) → create every
table on the local engine (Sail + delta-rs, no JVM) in a fresh demo warehouse → write a few rows → a row
that breaks a contract CHECK is refused by Delta → drift (none) → an out-of-band change → drift finds it →
status.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from delta_contracts.cli import app

WAREHOUSE = Path("warehouse") / "demo"


def _run(*argv: str) -> int:
    print(f"\n$ delta-contracts {' '.join(argv)}", flush=True)
    try:
        app(list(argv), standalone_mode=False)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def _step(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def main() -> int:
    from delta_contracts.engine.local import LocalEngine

    if _run("lint", "contracts") == 2:
        return 2
    _run("diff", "--base", "HEAD", "contracts")
    if _run("plan", "--check") != 0:
        return 1
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
    if _run("create", "--warehouse", str(WAREHOUSE)) != 0:
        return 1
    _step("writing rows through the embedded engine")
    with LocalEngine(WAREHOUSE) as engine:
        engine.sql(
            "INSERT INTO `sales`.`orders__v3` VALUES (1, 42, 129900, 'PLACED', 'web', DATE'2026-11-20', "
            "TIMESTAMP'2026-11-20 10:00:00'), (2, 43, 4500, 'SHIPPED', 'app', DATE'2026-11-21', "
            "TIMESTAMP'2026-11-21 09:30:00')"
        )
        rows = engine.sql("SELECT count(*) AS n FROM `sales`.`orders`")
        print(f"sales.orders (the alias view over sales.orders__v3) has {rows[0]['n']} rows")
        try:
            engine.sql(
                "INSERT INTO `sales`.`orders__v3` VALUES (3, 44, -1, 'PLACED', 'web', DATE'2026-11-22', "
                "TIMESTAMP'2026-11-22 08:00:00')"
            )
        except Exception as refused:  # the contract's CHECK order_total_min, enforced by Delta
            print(f"refused as the contract says: {str(refused).splitlines()[0][:160]}")
    _run("drift", "--warehouse", str(WAREHOUSE))
    _step("an out-of-band change: somebody drops a CHECK by hand")
    from deltalake import DeltaTable

    DeltaTable(str(WAREHOUSE / "payments" / "transactions")).alter.drop_constraint("currency_regex")
    _run("drift", "--warehouse", str(WAREHOUSE))
    _run("status", "--warehouse", str(WAREHOUSE))
    print("\ndemo finished: the warehouse is in", WAREHOUSE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
