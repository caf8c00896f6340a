"""CLI start-up: `delta-contracts --help`, `lint` and `diff` of one pair against a bare `python -c pass`
baseline, same run. Targets: --help < 0.5 s, diff of one pair <= 0.2 s end to end (idle machine).

Each command runs 9 times; printed are the median wall time and the best CPU time (user + sys of the child,
which a busy machine inflates far less than the wall time), each with its ratio to the baseline's.

Run: .venv/bin/python bench/bench_startup.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 9
ROOT = Path(__file__).resolve().parents[1]


def measure(argv: list[str]) -> tuple[float, float]:
    """Median wall seconds and best CPU seconds of `argv` run from the repository root."""
    walls, cpus = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return statistics.median(walls), min(cpus)


def changed_copy(folder: Path) -> Path:
    """An older sales/orders.yaml outside the project: one column fewer, another description, 2.9.0."""
    text = (ROOT / "contracts" / "sales" / "orders.yaml").read_text()
    start, end = text.index("  - name: channel\n"), text.index("  - name: order_date\n")
    older = (text[:start] + text[end:]).replace("version: 3.0.0", "version: 2.9.0")
    path = folder / "orders.yaml"
    path.write_text(older.replace("One row per customer order.", "One row per order."))
    return path


def main() -> None:
    cli = [sys.executable, "-m", "delta_contracts"]
    orders = "contracts/sales/orders.yaml"
    with tempfile.TemporaryDirectory() as folder:
        rows = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "delta-contracts --help": [*cli, "--help"],
            "delta-contracts lint": [*cli, "lint", "contracts"],
            "diff A A (one pair)": [*cli, "diff", orders, orders],
            "diff A' A (one pair, changed)": [*cli, "diff", str(changed_copy(Path(folder))), orders],
        }
        results = {name: measure(argv) for name, argv in rows.items()}
    base_wall, base_cpu = results["python -c pass (baseline)"]
    targets = {"delta-contracts --help": "< 0.5 s", "diff A A (one pair)": "<= 0.2 s"}
    targets["diff A' A (one pair, changed)"] = "<= 0.2 s"
    print(f"{'':32s} {'wall (median)':>22s} {'CPU (best)':>22s}")
    for name, (wall, cpu) in results.items():
        target = f"  target {targets[name]}" if name in targets else ""
        walls = f"{wall:7.3f} s ({wall / base_wall:5.1f}x)"
        print(f"{name:32s} {walls} {cpu:9.3f} s ({cpu / base_cpu:5.1f}x){target}")
    diff_wall, diff_cpu = results["diff A A (one pair)"]
    verdict = "met" if diff_cpu <= 0.2 else "not met"
    print(f"diff of one pair: CPU {diff_cpu / 0.2:.2f}x the 0.2 s target ({verdict}); wall {diff_wall:.3f} s")


if __name__ == "__main__":
    main()
