"""Diff speed. Prints figures with baselines measured in the same run.

1. One contract pair, warm: `diff` vs a naive structural comparison of `model_dump()` dicts (which finds
   *that* something changed, not what it means). Target: well under 10 ms.
2. `delta-contracts diff --base HEAD` end to end over a generated git repository of 500 contracts with 50
   columns each, 5% edited. Baseline: reading the base versions with one `git show REF:path` per file,
   the obvious implementation. Target: under 3 s.

Run: .venv/bin/python bench/bench_diff.py
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from delta_contracts.contract.load import parse_contract
from delta_contracts.contract.model import Contract
from delta_contracts.diff import diff, verdict

TYPES = ["bigint", "int", "string", "decimal(12,2)", "date", "timestamp", "double", "boolean"]


def contract_doc(n: int, rng: random.Random) -> dict[str, Any]:
    columns = []
    for i in range(50):
        kind = rng.choice(TYPES)
        column: dict[str, Any] = {
            "name": f"col_{i}",
            "type": kind,
            "description": f"Column {i} of table {n}.",
        }
        if kind in ("bigint", "int") and rng.random() < 0.3:
            column["checks"] = {"min": 0}
        if kind == "string" and rng.random() < 0.2:
            column["checks"] = {"enum": ["A", "B", "C"]}
        columns.append(column)
    return {
        "apiVersion": "delta-contracts/v1",
        "id": f"bench.table_{n}",
        "version": "1.0.0",
        "owner": {"team": "bench"},
        "description": f"Generated table {n}.",
        "columns": columns,
        "quality": {"volume": {"min_rows": 10}},
    }


def edited(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    new = yaml.safe_load(yaml.safe_dump(doc))
    new["version"] = "1.1.0"
    new["columns"].append({"name": "added_col", "type": "string"})
    new["columns"][rng.randrange(50)]["description"] = "Edited."
    return new


def naive_compare(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            out += naive_compare(a.get(key), b.get(key), f"{path}.{key}")
        return out
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        out = []
        for i in range(max(len(a), len(b))):
            out += naive_compare(a[i] if i < len(a) else None, b[i] if i < len(b) else None, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


def median_ms(fn: Any, runs: int = 200) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench_pair() -> None:
    rng = random.Random(1)
    doc = contract_doc(0, rng)
    old = Contract.model_validate(doc)
    new = Contract.model_validate(edited(doc, rng))
    diff(old, new)  # warm
    ours = median_ms(lambda: verdict(old, new, diff(old, new)))
    base = median_ms(lambda: naive_compare(old.model_dump(), new.model_dump()))
    print(
        f"diff one pair (50 columns), warm: {ours:.3f} ms   baseline model_dump compare: {base:.3f} ms   "
        f"ratio {ours / base:.2f}x   (target < 10 ms)"
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def bench_repo() -> None:
    rng = random.Random(2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "contracts" / "bench"
        folder.mkdir(parents=True)
        docs = [contract_doc(n, rng) for n in range(500)]
        for n, doc in enumerate(docs):
            (folder / f"table_{n}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
        for n in rng.sample(range(500), 25):  # 5% edited
            (folder / f"table_{n}.yaml").write_text(yaml.safe_dump(edited(docs[n], rng), sort_keys=False))

        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "delta_contracts", "diff", "--base", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
        )
        ours = time.perf_counter() - start
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().endswith("500 contract(s) compared, 0 failing"), done.stdout[-500:]

        start = time.perf_counter()
        for path in sorted(folder.glob("*.yaml")):
            rel = path.relative_to(root).as_posix()
            text = subprocess.run(
                ["git", "show", f"HEAD:{rel}"], cwd=root, capture_output=True, text=True, check=True
            ).stdout
            parse_contract(text, Path(rel), None)
        base = time.perf_counter() - start
        print(
            f"diff --base over 500 contracts x 50 columns (5% edited), end to end: {ours:.2f} s   "
            f"baseline one `git show` per file (reading only): {base:.2f} s   ratio {ours / base:.2f}x   "
            f"(target < 3 s)"
        )


if __name__ == "__main__":
    bench_pair()
    bench_repo()
