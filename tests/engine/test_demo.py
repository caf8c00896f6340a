"""`delta-contracts demo` (what `make demo` runs), end to end on the example project it ships, from a
folder of the user's own that it neither reads nor changes (issue 47 item 2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.apply_support import REPO
from tests.engine.conftest import JVM_NOISE

pytestmark = pytest.mark.engine


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_demo_runs_the_main_job_end_to_end(tmp_path: Path) -> None:
    # The user's own project: one contract of another id, a contracts.yml, no git repository.
    mine = tmp_path / "mine"
    (mine / "contracts" / "crew").mkdir(parents=True)
    shutil.copy(REPO / "contracts" / "contracts.yml", mine / "contracts" / "contracts.yml")
    own = (
        (REPO / "contracts" / "sales" / "customers.yaml")
        .read_text()
        .replace("sales.customers", "crew.pilots")
    )
    (mine / "contracts" / "crew" / "pilots.yaml").write_text(own)
    before = _snapshot(mine)
    kept = tmp_path / "kept"
    command = Path(sys.executable).with_name("delta-contracts")
    env = {**os.environ, "RUST_LOG": "error", "COLUMNS": "200", "DELTA_CONTRACTS_WAREHOUSE": str(mine)}
    done = subprocess.run(
        [str(command), "demo", "--folder", str(kept)],
        cwd=mine,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert not JVM_NOISE.search(out), out  # the in-place drop's delta-spark JVM prints to its log only
    lines = out.splitlines()
    # The drop of coupon_code waits at its gate, with why: the window, and the reader the telemetry found.
    held = [line for line in lines if line.startswith("waiting sales.orders 0003_1.1.0_to_2.0.0 op 12: ")]
    assert held and "coupon_code" in held[0], out[-4000:]
    assert any(line.startswith("  - deprecation window P30D since ") for line in lines)
    assert any(
        line.startswith("  - sales.orders.coupon_code: ") and "finance-recon (Databricks SQL)" in line
        for line in lines
    ), out[-4000:]
    # 3.0.0 (versioned) built and filled its table, but its cutover waits behind the held drops: readers of
    # sales.orders keep the deprecated columns, and producers are told to write where they read
    cutover = (
        "… sales.orders 0004_2.0.0_to_3.0.0 [cutover] op 9: view sales.orders -> sales.orders__v3 (waiting: "
    )
    assert any(line.startswith(cutover) and "op 12 is held by its gate" in line for line in lines)
    assert any("sales.orders (still the 2.0.0 table" in line for line in lines)
    # the rows it reads back are printed as values, not as Python reprs of dicts and decimals
    assert "  order_id 1, order_total 1299.00, status PLACED" in lines, out[-4000:]
    assert "Decimal(" not in out and "{'" not in out
    assert any(
        line.startswith(
            "sales.orders contract 3.0.0, table sales.orders stamped 2.0.0, next sales.orders__v3 ("
        )
        and "; read and write sales.orders; pending: 0003_1.1.0_to_2.0.0 [contract]" in line
        for line in lines
    ), out[-4000:]
    # 15 days later the telemetry opens the readers gate; then the owner forces the drops, with a reason.
    assert "sunset gate 15 days later: open" in lines
    # Forced, the in-place drops run on the table itself, then 3.0.0's cutover, then its retired table's drop.
    order = [
        "! sales.orders 0003_1.1.0_to_2.0.0 [contract] op 12: drop columns coupon_code (forced",
        "! sales.orders 0003_1.1.0_to_2.0.0 [contract] op 13: drop columns amount (forced",
        "✓ sales.orders 0004_2.0.0_to_3.0.0 [cutover] op 9: view sales.orders -> sales.orders__v3 (succeeded",
        "! sales.orders__v2 0004_2.0.0_to_3.0.0 [contract] op 12: drop table sales.orders__v2 (forced",
    ]
    found = [next((n for n, line in enumerate(lines) if line.startswith(start)), -1) for start in order]
    assert -1 not in found and found == sorted(found), (found, out[-4000:])
    reason = "reason: DEMO-1: finance-recon moved to sales.orders (approved by commerce-platform)"
    assert any("op 12 [contract] drop_table: forced" in line and reason in line for line in lines)
    assert "== summary ==" in lines and (kept / "warehouse" / "_delta_contracts").is_dir()
    assert not any(line.startswith("error:") for line in lines), out[-4000:]
    assert _snapshot(mine) == before  # nothing of the user's folder read into the demo, nothing left in it
    assert "crew.pilots" not in out
