"""CLI start-up: `delta-contracts --help`, `lint` and `diff` of one pair against a bare `python -c pass`
baseline, same run. Targets: --help < 0.5 s, diff of one pair <= 0.2 s end to end (idle machine).

Each command runs 9 times; printed are the median wall time and the best CPU time (user + sys of the child,
which a busy machine inflates far less than the wall time), each with its ratio to the baseline's.

`--spark` measures `--engine spark` instead (issue 49), in a project of its own: `status` and one
metadata-only `apply` (a column's comment) cold (each command starts its JVM) and then with the resident
engine (`engine start`), each with its ratio to cold, same run; target with the resident engine: each
under 5 s on an idle 2-core machine. `--runs N` (default 3) runs per command.

Run: .venv/bin/python bench/bench_startup.py [--spark [--runs N]]
"""

from __future__ import annotations

import argparse
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


SPARK_PROJECT = "target: delta-4\nmigrations: ../migrations\nengine:\n  name: spark\n  warehouse: ../wh\n"
SPARK_CONTRACT = """\
apiVersion: delta-contracts/v1
id: bench.events
version: 1.0.{revision}
description: What shoppers did.
owner: {{team: shop}}
columns:
  - {{name: event_id, type: bigint, nullable: false, description: "Event key (revision {revision})."}}
  - {{name: kind, type: string, description: What happened.}}
"""


def _run(root: Path, *args: str) -> float:
    """Wall seconds of one `delta-contracts` command in `root`; a failure ends the bench."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "delta_contracts", *args], cwd=root, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stdout!r} {done.stderr!r}")
    return took


def _metadata_apply(root: Path, revision: int) -> float:
    """Plan a new comment of one column (a metadata-only migration) and time its `apply`."""
    contract = root / "contracts" / "bench" / "events.yaml"
    contract.write_text(SPARK_CONTRACT.format(revision=revision))
    _run(root, "plan", "contracts")
    return _run(root, "apply", "contracts")


def spark_main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "contracts" / "bench").mkdir(parents=True)
        (root / "contracts" / "contracts.yml").write_text(SPARK_PROJECT)
        (root / "wh").mkdir()
        revision = 0
        setup = _metadata_apply(root, revision)  # creates the table
        print(f"create (cold, setup): {setup:.1f} s")
        cold_status = [_run(root, "status", "contracts") for _ in range(runs)]
        cold_apply = []
        for _ in range(runs):
            revision += 1
            cold_apply.append(_metadata_apply(root, revision))
        start = _run(root, "engine", "start", "--idle", "10m")
        try:
            warm_status = [_run(root, "status", "contracts") for _ in range(runs)]
            warm_apply = []
            for _ in range(runs):
                revision += 1
                warm_apply.append(_metadata_apply(root, revision))
        finally:
            _run(root, "engine", "stop")
    print(f"engine start: {start:.1f} s (once)")
    print(f"{'--engine spark, median of ' + str(runs):44s} {'cold':>9s} {'resident':>9s} {'ratio':>7s}")
    for name, cold, warm in (
        ("status", cold_status, warm_status),
        ("apply (one metadata-only op)", cold_apply, warm_apply),
    ):
        c, w = statistics.median(cold), statistics.median(warm)
        verdict = "met" if w < 5 else "not met"
        print(f"{name:44s} {c:7.1f} s {w:7.1f} s {w / c:6.2f}x  target < 5 s: {verdict}")
    load = os.getloadavg()
    print(
        f"load average during the run: {load[0]:.1f} (1 min), {load[2]:.1f} (15 min), {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", action="store_true", help="measure --engine spark cold and resident")
    parser.add_argument("--runs", type=int, default=3, help="runs per --spark command")
    arguments = parser.parse_args()
    if arguments.spark:
        spark_main(arguments.runs)
    else:
        main()
