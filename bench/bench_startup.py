"""CLI start-up: `delta-contracts --help` against a bare `python -c pass` baseline, same run. Target < 0.5 s.

Run: .venv/bin/python bench/bench_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def median_seconds(argv: list[str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    baseline = median_seconds([sys.executable, "-c", "pass"])
    help_time = median_seconds([sys.executable, "-m", "delta_contracts", "--help"])
    lint_time = median_seconds([sys.executable, "-m", "delta_contracts", "lint", "contracts"])
    print(f"python -c pass (baseline): {baseline:.3f} s")
    ratio = help_time / baseline
    print(f"delta-contracts --help:    {help_time:.3f} s  ({ratio:.1f}x baseline; target < 0.5 s)")
    print(f"delta-contracts lint:      {lint_time:.3f} s  ({lint_time / baseline:.1f}x baseline)")


if __name__ == "__main__":
    main()
